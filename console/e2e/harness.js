// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// What the console's browser tests stand on: a real mosquitto with the
// plugin (an MQTT listener and a websockets listener that serves the built
// console, both on 127.0.0.1 only), a single-member etcd when asked, the
// real command line tool, and Debian's Chromium driven by playwright-core.
// Everything is started here on free loopback ports and stopped by its PID.
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const env = (name, fallback) => process.env[name] || fallback;
const root = resolve(new URL('../..', import.meta.url).pathname);
export const PLUGIN = env('SS_PLUGIN', join(root, 'build/plain/statestore.so'));
export const CLI = env('SS_CLI', join(root, 'build/plain/statestore'));
export const CONSOLE_DIR = env('SS_CONSOLE_DIR', join(root, 'build/console'));
export const ETCD_BIN = env('SS_ETCD_BIN', join(root, 'build/etcd/root/usr/bin'));
export const SHOTS = env('SS_CONSOLE_SHOTS', join(root, 'build/console-shots'));
const STARTUP_MS = 10000;

export function tempDir(name) {
    return mkdtempSync(join(tmpdir(), `ss-console-${name}-`));
}

/** A TCP port free on 127.0.0.1 now. */
export function freePort() {
    return new Promise((res, rej) => {
        const s = createServer();
        s.on('error', rej);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => res(port));
        });
    });
}

/** Whether host:port takes a TCP connection (within 1 s). */
export function reachable(host, port) {
    return new Promise((res) => {
        const sock = connect({ host, port, timeout: 1000 });
        sock.on('connect', () => {
            sock.destroy();
            res(true);
        });
        sock.on('error', () => res(false));
        sock.on('timeout', () => {
            sock.destroy();
            res(false);
        });
    });
}

async function waitFor(what, check, child) {
    const deadline = Date.now() + STARTUP_MS;
    while (Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
        if (await check()) return;
        await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${what} did not start within ${STARTUP_MS} ms`);
}

function stopChild(child, signal = 'SIGTERM') {
    return new Promise((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res();
        child.once('exit', () => res());
        process.kill(child.pid, signal);
    });
}

/**
 * mosquitto with the plugin: { mqttPort, wsPort, url, dir, stop() }.
 * opts: acl (the key ACL file's text), etcd (endpoints), sysInterval,
 * extra (more configuration lines).
 */
export async function startBroker(opts = {}) {
    const dir = tempDir('broker');
    const mqttPort = await freePort();
    const wsPort = await freePort();
    const lines = [];
    if (process.getuid() === 0) lines.push('user root');
    lines.push(
        `listener ${mqttPort} 127.0.0.1`,
        'allow_anonymous true',
        'set_tcp_nodelay true',
        // Without socket_domain, Mosquitto 2.0's websockets listener
        // ignores its address and listens on every interface.
        `listener ${wsPort} 127.0.0.1`,
        'protocol websockets',
        'socket_domain ipv4',
        `http_dir ${CONSOLE_DIR}`,
        `sys_interval ${opts.sysInterval ?? 1}`,
        `log_dest file ${join(dir, 'broker.log')}`,
        `plugin ${PLUGIN}`,
    );
    if (opts.etcd) lines.push('plugin_opt_backend etcd', `plugin_opt_etcd_endpoints ${opts.etcd}`);
    else lines.push(`plugin_opt_data_dir ${join(dir, 'data')}`);
    lines.push(...(opts.extra ?? []));
    if (opts.acl !== undefined) {
        writeFileSync(join(dir, 'keys.acl'), opts.acl);
        lines.push(`plugin_opt_acl_file ${join(dir, 'keys.acl')}`);
    }
    if (opts.importFile) {
        // A store filled offline before the broker opens it (statestore import).
        await run(CLI, ['import', opts.importFile, join(dir, 'data')]);
    }
    writeFileSync(join(dir, 'mosquitto.conf'), lines.join('\n') + '\n');
    // Under make test SAN=1 or SAN=thread the plugin needs its sanitizer's
    // runtime in the broker (SS_BROKER_PRELOAD, as the C harness does).
    const benv = { ...process.env };
    if (process.env.SS_BROKER_PRELOAD) benv.LD_PRELOAD = process.env.SS_BROKER_PRELOAD;
    const up = async () => (await reachable('127.0.0.1', mqttPort)) && (await reachable('127.0.0.1', wsPort));
    const start = async () => {
        const c = spawn('mosquitto', ['-c', join(dir, 'mosquitto.conf')], { stdio: 'ignore', env: benv });
        await waitFor('mosquitto', up, c);
        return c;
    };
    let child = await start();
    return {
        dir,
        mqttPort,
        wsPort,
        url: `http://127.0.0.1:${wsPort}/`,
        // The same broker (ports, data) stopped, then started again.
        async restart() {
            await stopChild(child);
            child = await start();
        },
        // Frozen (SIGSTOP): it answers nothing, and keeps its connections.
        pause() {
            process.kill(child.pid, 'SIGSTOP');
        },
        // Killed (SIGKILL: it may be frozen), then started again.
        async restartKilled() {
            await stopChild(child, 'SIGKILL');
            child = await start();
        },
        async stop() {
            await stopChild(child);
            rmSync(dir, { recursive: true, force: true });
        },
    };
}

/** A single-member etcd on loopback ports: { endpoint, stop() }. */
export async function startEtcd() {
    const dir = tempDir('etcd');
    const client = await freePort();
    const peer = await freePort();
    const child = spawn(
        join(ETCD_BIN, 'etcd'),
        [
            '--name', 'm1', '--data-dir', join(dir, 'data'),
            '--listen-client-urls', `http://127.0.0.1:${client}`,
            '--advertise-client-urls', `http://127.0.0.1:${client}`,
            '--listen-peer-urls', `http://127.0.0.1:${peer}`,
            '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
            '--initial-cluster', `m1=http://127.0.0.1:${peer}`,
            '--log-level', 'error',
        ],
        { stdio: 'ignore' },
    );
    const endpoint = `http://127.0.0.1:${client}`;
    const healthy = async () => {
        try {
            const r = await fetch(`${endpoint}/health`);
            return r.ok && (await r.json()).health === 'true';
        } catch {
            return false;
        }
    };
    await waitFor('etcd', healthy, child);
    return {
        endpoint,
        async stop() {
            await stopChild(child);
            rmSync(dir, { recursive: true, force: true });
        },
    };
}

/** Run a program: { code, stdout (Buffer), stderr }; never rejects. */
export function run(file, args, input) {
    return new Promise((res) => {
        const child = execFile(file, args, { encoding: 'buffer', timeout: 30000, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
            res({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr: stderr.toString() }),
        );
        if (input !== undefined) child.stdin.end(input);
    });
}

/** The command line tool against broker b. */
export function cli(b, args, input) {
    return run(CLI, ['-h', '127.0.0.1', '-p', String(b.mqttPort), ...args], input);
}

/**
 * Debian's Chromium, headless, with a throwaway profile. Every request
 * the pages make is recorded in requests, to check that they go nowhere
 * but the broker.
 */
export async function launchBrowser() {
    const profile = tempDir('chromium');
    const context = await chromium.launchPersistentContext(profile, {
        executablePath: '/usr/bin/chromium',
        headless: true,
        viewport: { width: 1280, height: 800 },
        args: [
            '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
            '--disable-background-networking', '--disable-component-update', '--disable-sync',
        ],
    });
    const requests = [];
    context.on('request', (r) => requests.push(r.url()));
    mkdirSync(SHOTS, { recursive: true });
    return {
        context,
        requests,
        async close() {
            await context.close();
            rmSync(profile, { recursive: true, force: true });
        },
    };
}

/** A page of the console on broker b, connected. */
export async function openConsole(browser, b, query = '') {
    const page = await browser.context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.errors = errors;
    await page.goto(`${b.url}index.html${query}`);
    if (!query.includes('manual')) await page.waitForSelector('#status[data-state="connected"]', { timeout: 10000 });
    return page;
}
