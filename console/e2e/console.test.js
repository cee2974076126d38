// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The console in a real browser against a real broker with the plugin
// (LMDB), cross-checked with the real command line tool. The broker runs
// a key ACL: the console connects anonymously and may write app/*, only
// read ro/*, and not see secret/*; the tool connects as admin.
import { describe, before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import * as H from './harness.js';

const ACL = 'user admin readwrite *\nany readwrite app/*\nany read ro/*\n';
const BROWSE_KEYS = 2000;

// JSON lines for `statestore import`: keys prefix000000.. with value v.
function records(prefix, n, digits) {
    const lines = [];
    for (let i = 0; i < n; i++) {
        const key = `${prefix}${String(i).padStart(digits, '0')}`;
        lines.push(
            JSON.stringify({
                key,
                key_base64: Buffer.from(key).toString('base64'),
                value_base64: Buffer.from(`value ${i}`).toString('base64'),
                version: '1700000000000:0:StateStore',
                fencing_token: null,
                expires_at_ms: null,
            }),
        );
    }
    return lines.join('\n') + '\n';
}

const admin = (b, args, input) => H.cli(b, ['-u', 'admin', ...args], input);

async function showTab(page, name) {
    await page.click(`#tabs button[data-view="${name}"]`);
    await page.waitForSelector(`#view-${name}:not([hidden])`);
}

// A new listing of pattern; waits for its end, or (whole false) its first keys.
async function scan(page, pattern, whole = true) {
    await showTab(page, 'keys');
    await page.fill('#pattern', pattern);
    await page.click('#scan-form button');
    if (whole) await page.waitForSelector('#count[data-complete="true"]');
    else await page.waitForFunction(() => Number(document.querySelector('#count').dataset.count) > 0);
}

async function openKey(page, label) {
    await page.click(`#keylist .vrow:text-is("${label}")`);
    await page.waitForFunction((l) => document.querySelector('#detail-key').textContent === l && document.querySelector('#meta-version').textContent !== '–', label);
}

describe('the console on LMDB', () => {
    let b, browser, page;

    before(async () => {
        const dir = H.tempDir('import');
        writeFileSync(join(dir, 'keys.jsonl'), records('app/k', BROWSE_KEYS, 4));
        b = await H.startBroker({ acl: ACL, importFile: join(dir, 'keys.jsonl') });
        rmSync(dir, { recursive: true, force: true }); // imported: the broker has its own copy
        browser = await H.launchBrowser();
        page = await H.openConsole(browser, b);
    });

    after(async () => {
        if (browser) await browser.close();
        if (b) await b.stop();
    });

    // How fast it loads is measured by make bench-console (docs/BENCHMARKS.md);
    // here the figures are printed, and a console that does not start
    // within 5 s fails.
    test('the page weighs under 500 KB, and starts', async () => {
        // What the page loads: NOTICES.txt goes with the copy of MQTT.js for
        // its licences, and no page asks for it.
        let bytes = 0;
        const files = readdirSync(H.CONSOLE_DIR).filter((f) => f !== 'NOTICES.txt');
        for (const f of files) bytes += statSync(join(H.CONSOLE_DIR, f)).size;
        console.log(`# console: ${bytes} bytes served (${files.length} files)`);
        assert.ok(bytes < 500 * 1024, `${bytes} bytes`);
        const p = await browser.context.newPage();
        let fetched = 0;
        p.on('response', async (r) => {
            if (r.url().startsWith('http:')) fetched += (await r.body().catch(() => Buffer.alloc(0))).length;
        });
        const t0 = Date.now();
        await p.goto(`${b.url}index.html`);
        await p.waitForSelector('html[data-ready="true"]');
        const readyMs = Date.now() - t0;
        await p.waitForSelector('#status[data-state="connected"]');
        const connectedMs = Date.now() - t0;
        const nav = await p.evaluate(() => performance.getEntriesByType('navigation')[0].toJSON());
        console.log(`# console: load event at ${nav.loadEventEnd.toFixed(0)} ms, running after ${readyMs} ms, connected after ${connectedMs} ms, ${fetched} bytes fetched`);
        assert.ok(readyMs < 5000, `running after ${readyMs} ms`);
        assert.ok(fetched < 500 * 1024, `${fetched} bytes fetched`);
        await p.close();
    });

    test('browses 2,000 keys across pages, scrolling loads the next ones', async () => {
        await scan(page, 'app/k*', false);
        // The first page is not the whole listing: SCAN pages hold up to 1000 keys.
        const first = Number(await page.getAttribute('#count', 'data-count'));
        assert.ok(first > 0 && first < BROWSE_KEYS, `first pages: ${first} keys`);
        for (let i = 0; i < 20; i++) {
            if ((await page.getAttribute('#count', 'data-complete')) === 'true') break;
            await page.$eval('#keylist', (el) => (el.scrollTop = el.scrollHeight));
            await page.waitForTimeout(150);
        }
        assert.equal(await page.getAttribute('#count', 'data-complete'), 'true');
        assert.equal(await page.getAttribute('#count', 'data-count'), String(BROWSE_KEYS));
        assert.equal(await page.textContent('#count'), '2,000 keys');
        await page.$eval('#keylist', (el) => (el.scrollTop = el.scrollHeight));
        await page.waitForSelector('#keylist .vrow:text-is("app/k1999")');
        // The CLI's listing of the same pattern agrees.
        const r = await admin(b, ['scan', 'app/k*']);
        assert.equal(r.code, 0);
        assert.equal(r.stdout.toString().trim().split('\n').length, BROWSE_KEYS);
        // Keyboard: Home selects the first key and opens it.
        await page.focus('#keylist');
        await page.keyboard.press('Home');
        await page.waitForFunction(() => document.querySelector('#detail-key').textContent === 'app/k0000');
        await page.waitForFunction(() => document.querySelector('#value').textContent === 'value 0');
        await page.screenshot({ path: join(H.SHOTS, 'keys.png') });
    });

    test('a SET and a DEL made in the console are seen by statestore get', async () => {
        await showTab(page, 'keys');
        await page.fill('#edit-key', 'app/from-console');
        await page.fill('#edit-value', '{"made": "in the console"}');
        await page.selectOption('#edit-cond', '');
        await page.fill('#edit-px', '');
        await page.click('#do-set');
        await page.waitForFunction(() => /^OK: version \d+:\d+:/.test(document.querySelector('#edit-result').textContent));
        let r = await admin(b, ['get', 'app/from-console']);
        assert.equal(r.code, 0);
        assert.equal(r.stdout.toString(), '{"made": "in the console"}');
        // The detail shows it as pretty JSON.
        await page.waitForFunction(() => document.querySelector('#value').dataset.mode === 'json');
        assert.equal(await page.textContent('#value'), '{\n  "made": "in the console"\n}');
        // NX on a key that exists: not applied, and said so.
        await page.selectOption('#edit-cond', 'NX');
        await page.click('#do-set');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'not set: the NX condition was not met');
        await page.selectOption('#edit-cond', '');
        // VDEL with another value: refused; the key stays.
        await page.fill('#edit-value', 'something else');
        page.once('dialog', () => assert.fail('a native dialog'));
        await page.click('#do-vdel');
        await page.click('#confirm-ok');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'not deleted: the value differs');
        assert.equal((await admin(b, ['get', 'app/from-console'])).code, 0);
        // DEL asks first; Cancel keeps the key.
        await page.click('#do-del');
        assert.match(await page.textContent('#confirm-text'), /Delete "app\/from-console"\?/);
        await page.keyboard.press('Escape');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'not deleted');
        assert.equal((await admin(b, ['get', 'app/from-console'])).code, 0);
        await page.click('#do-del');
        await page.click('#confirm-ok');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'deleted');
        r = await admin(b, ['get', 'app/from-console']);
        assert.equal(r.code, 1, 'absent after the console deleted it');
        // PX and a fencing token (its node id with a space and quotes):
        // INSPECT shows the deadline and the token as they are.
        await page.fill('#edit-key', 'app/fenced');
        await page.fill('#edit-value', 'guarded');
        await page.fill('#edit-px', '60000');
        await page.fill('#edit-ft', '1700000000000:1:the "holder"');
        await page.click('#do-set');
        await page.waitForFunction(() => document.querySelector('#meta-ft').textContent === '1700000000000:1:the "holder"');
        assert.match(await page.textContent('#meta-ttl'), /^(59|60)\.\d s$/);
        const j = JSON.parse((await admin(b, ['--json', 'inspect', 'app/fenced'])).stdout.toString());
        assert.equal(j.fencing_token, '1700000000000:1:the "holder"');
        assert.equal(j.version, await page.textContent('#meta-version'));
        // Without the token the protocol refuses; its text is shown as it is.
        await page.fill('#edit-ft', '');
        await page.fill('#edit-px', '');
        await page.click('#do-set');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'a fencing token is required for this request');
        assert.equal(await page.getAttribute('#edit-result', 'class'), 'result error');
    });

    test('an ACL refusal is shown as such', async () => {
        assert.equal((await admin(b, ['set', 'ro/setting', 'fixed'])).code, 0);
        assert.equal((await admin(b, ['set', 'secret/s', 'hidden'])).code, 0);
        await page.fill('#edit-key', 'ro/setting');
        await page.fill('#edit-value', 'changed');
        await page.fill('#edit-ft', '');
        await page.click('#do-set');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'not authorized');
        assert.equal(await page.getAttribute('#edit-result', 'class'), 'result error');
        assert.equal((await admin(b, ['get', 'ro/setting'])).stdout.toString(), 'fixed');
        // Readable, so listed and shown; secret/* is not even listed.
        await scan(page, 'ro/*');
        await openKey(page, 'ro/setting');
        assert.equal(await page.textContent('#value'), 'fixed');
        await scan(page, 'secret/*');
        assert.equal(await page.textContent('#count'), '0 keys');
        await page.screenshot({ path: join(H.SHOTS, 'acl-refusal.png') });
    });

    test('the edit form acts on the key opened, not on its label', async () => {
        // A key with a newline: its label escapes it (a text field would
        // drop it), and another key is what dropping it would give.
        assert.equal((await admin(b, ['set', 'app/nl\nkey', 'one'])).code, 0);
        assert.equal((await admin(b, ['set', 'app/nlkey', 'other'])).code, 0);
        await scan(page, 'app/nl*');
        // (A backslash would be an escape in a selector's text: by filter.)
        const label = 'app/nl\\x0Akey';
        await page.locator('#keylist .vrow').filter({ hasText: label }).first().click();
        await page.waitForFunction((l) => document.querySelector('#detail-key').textContent === l && document.querySelector('#meta-version').textContent !== '–', label);
        assert.equal(await page.inputValue('#edit-key'), 'app/nl\\x0Akey');
        await page.click('#do-del');
        assert.match(await page.textContent('#confirm-text'), /Delete "app\/nl\\x0Akey"\?/);
        await page.click('#confirm-ok');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent === 'deleted');
        assert.equal((await admin(b, ['get', 'app/nl\nkey'])).code, 1, 'the opened key is gone');
        assert.equal((await admin(b, ['get', 'app/nlkey'])).code, 0, 'the other stays');
        // Typed over, the field is a key of its own (as text).
        await page.fill('#edit-key', 'app/nlkey');
        await page.fill('#edit-value', 'typed');
        await page.selectOption('#edit-cond', '');
        await page.fill('#edit-px', '');
        await page.fill('#edit-ft', '');
        await page.click('#do-set');
        await page.waitForFunction(() => /^OK: version /.test(document.querySelector('#edit-result').textContent));
        assert.equal((await admin(b, ['get', 'app/nlkey'])).stdout.toString(), 'typed');
    });

    test('a binary value is shown as hex', async () => {
        const bytes = Buffer.from([0x00, 0x01, 0xff, 0x80, 0x0d, 0x0a, 0x41]);
        const file = join(b.dir, 'binary');
        writeFileSync(file, bytes);
        assert.equal((await admin(b, ['set', 'app/binary', '-f', file])).code, 0);
        await scan(page, 'app/binary');
        await openKey(page, 'app/binary');
        assert.equal(await page.getAttribute('#value', 'data-mode'), 'hex');
        assert.equal(await page.textContent('#value'), `00000000  ${'00 01 ff 80 0d 0a 41'.padEnd(47)}  ......A`);
        assert.equal(await page.textContent('#meta-size'), '7 bytes');
        assert.equal(await page.inputValue('#edit-value'), '0001FF800D0A41');
        assert.equal(await page.isChecked('#edit-hex'), true);
        await page.screenshot({ path: join(H.SHOTS, 'binary.png') });
    });

    test('the edit form holds the bytes of the value shown: CR LF, and after a DEL', async () => {
        // A textarea turns CR LF into LF: as text, VDEL of the value shown
        // would be refused and a SET of it would change it.
        writeFileSync(join(b.dir, 'crlf'), 'line1\r\nline2\r\n');
        assert.equal((await admin(b, ['set', 'app/crlf', '-f', join(b.dir, 'crlf')])).code, 0);
        await scan(page, 'app/crlf');
        await openKey(page, 'app/crlf');
        await page.selectOption('#edit-cond', '');
        await page.fill('#edit-px', '');
        await page.fill('#edit-ft', '');
        await page.evaluate(() => (document.querySelector('#edit-result').textContent = ''));
        await page.click('#do-set');
        await page.waitForFunction(() => /^OK: version /.test(document.querySelector('#edit-result').textContent));
        assert.equal((await admin(b, ['get', 'app/crlf'])).stdout.toString(), 'line1\r\nline2\r\n');
        await page.evaluate(() => (document.querySelector('#edit-result').textContent = ''));
        await page.click('#do-vdel');
        await page.click('#confirm-ok');
        await page.waitForFunction(() => document.querySelector('#edit-result').textContent !== '');
        assert.equal(await page.textContent('#edit-result'), 'deleted');
        // Deleted, the key is absent; the form still holds its value (as
        // hex, said so): SET puts back the same bytes.
        await page.waitForFunction(() => document.querySelector('#value').textContent === '(absent)');
        await page.evaluate(() => (document.querySelector('#edit-result').textContent = ''));
        await page.click('#do-set');
        await page.waitForFunction(() => /^OK: version /.test(document.querySelector('#edit-result').textContent));
        assert.equal((await admin(b, ['get', 'app/crlf'])).stdout.toString(), 'line1\r\nline2\r\n');
    });

    test('a change made with the CLI appears in the live view within 1 s', async () => {
        assert.equal((await admin(b, ['set', 'app/live/a', 'first'])).code, 0);
        await scan(page, 'app/live/*');
        await showTab(page, 'live');
        await page.fill('#watch-input', 'app/live/*');
        await page.click('#watch-form button');
        await page.waitForSelector('#watches li:has-text("pattern app/live/*")');
        await page.fill('#observe-input', 'app/one');
        await page.click('#observe-form button');
        await page.waitForSelector('#watches li:has-text("key app/one")');
        const t0 = Date.now();
        const set = await admin(b, ['--json', 'set', 'app/live/a', 'second value']);
        assert.equal(set.code, 0);
        await page.waitForSelector('#stream tr.ev-SET td:text-is("app/live/a")', { timeout: 1000 });
        const seenMs = Date.now() - t0;
        console.log(`# console: the CLI's SET shown in the live view after ${seenMs} ms (CLI process included)`);
        const row = await page.$$eval('#stream tr', (trs) => Array.from(trs[0].children, (td) => td.textContent));
        assert.equal(row[1], 'SET');
        assert.equal(row[2], 'app/live/a');
        assert.equal(row[4], 'second value');
        const get = JSON.parse((await admin(b, ['--json', 'get', 'app/live/a'])).stdout.toString());
        assert.equal(row[3], get.version, 'the version is the one GET reports');
        // The key's row in the key list lights up.
        await showTab(page, 'keys');
        await page.waitForSelector('#keylist .vrow.changed:text-is("app/live/a")');
        await showTab(page, 'live');
        // A KEYNOTIFY'd key, a deletion, pause, filter and clear.
        await admin(b, ['set', 'app/one', '1']);
        await page.waitForSelector('#stream td:text-is("app/one")', { timeout: 1000 });
        await page.click('#pause');
        await admin(b, ['del', 'app/live/a']);
        await page.waitForFunction(() => /1 new while paused/.test(document.querySelector('#stream-count').textContent));
        assert.equal(await page.$$eval('#stream tr.ev-DELETE', (r) => r.length), 0);
        await page.click('#pause');
        await page.waitForSelector('#stream tr.ev-DELETE td:text-is("app/live/a")');
        await page.fill('#filter', 'one');
        assert.deepEqual(await page.$$eval('#stream tr td:nth-child(3)', (t) => t.map((x) => x.textContent)), ['app/one']);
        await page.fill('#filter', '');
        await page.screenshot({ path: join(H.SHOTS, 'live.png') });
        await page.click('#clear');
        assert.equal(await page.$$eval('#stream tr', (r) => r.length), 0);
        // Stopping the pattern watch: no more rows for it.
        await page.click('#watches li:has-text("pattern app/live/*") button');
        await page.waitForFunction(() => !/pattern app\/live/.test(document.querySelector('#watches').textContent));
        await admin(b, ['set', 'app/live/b', 'unseen']);
        await admin(b, ['set', 'app/one', '2']);
        await page.waitForSelector('#stream td:text-is("app/one")');
        assert.equal(await page.$$eval('#stream td:text-is("app/live/b")', (r) => r.length), 0);
    });

    test('a burst of 1,500 notifications leaves the newest 1,000 rows, in order', async () => {
        await showTab(page, 'live');
        await page.click('#clear');
        await page.fill('#watch-input', 'app/burst/*');
        await page.click('#watch-form button');
        await page.waitForSelector('#watches li:has-text("pattern app/burst/*")');
        // Three sessions of 500: the broker queues at most 1,000 messages
        // for a client (max_queued_messages), and drops the rest.
        const t0 = Date.now();
        for (let from = 0; from < 1500; from += 500) {
            let lines = '';
            for (let i = from; i < from + 500; i++) lines += `set app/burst/${String(i).padStart(4, '0')} v${i}\n`;
            const r = await admin(b, [], lines);
            assert.equal(r.code, 0, r.stderr);
            const last = `app/burst/${String(from + 499).padStart(4, '0')}`;
            await page.waitForSelector(`#stream td:text-is("${last}")`, { timeout: 10000 });
        }
        console.log(`# console: 1,500 SETs from three CLI sessions shown in the live view after ${Date.now() - t0} ms`);
        const keys = await page.$$eval('#stream tr td:nth-child(3)', (t) => t.map((x) => x.textContent));
        const want = [];
        for (let i = 1499; i >= 500; i--) want.push(`app/burst/${String(i).padStart(4, '0')}`);
        assert.deepEqual(keys, want);
        assert.equal(await page.textContent('#stream-count'), '1000 events');
        // The filter draws again from the events kept.
        await page.fill('#filter', 'app/burst/05');
        assert.equal(await page.$$eval('#stream tr', (t) => t.length), 100);
        await page.fill('#filter', '');
        await page.click('#watches li:has-text("pattern app/burst/*") button');
        await page.waitForFunction(() => !/pattern app\/burst/.test(document.querySelector('#watches').textContent));
        await page.click('#clear');
        assert.deepEqual(page.errors, []);
    });

    test("the dashboard's charts update", async () => {
        await showTab(page, 'dash');
        // sys_interval 1: a sample a second.
        await page.waitForFunction(() => Number(document.querySelector('#tiles [data-name="samples"] b').textContent) >= 2);
        const canvas = '#charts .chart:first-child canvas';
        const before = Number(await page.getAttribute(canvas, 'data-draws'));
        for (let i = 0; i < 5; i++) await admin(b, ['set', `app/dash/${i}`, 'x']);
        await page.waitForFunction(
            (n) => Number(document.querySelector('#charts .chart:first-child canvas').dataset.draws) >= n + 2,
            before,
        );
        await page.waitForSelector('#charts .chart:first-child .legend span:has-text("set/ok")');
        assert.ok(Number(await page.getAttribute(canvas, 'data-points')) > 0);
        // The keys tile is the store's count, as `statestore stats` reads it.
        const stats = JSON.parse((await admin(b, ['--json', 'stats'])).stdout.toString());
        await page.waitForFunction(
            (k) => document.querySelector('#tiles [data-name="keys"] b').textContent.replace(/,/g, '') === k,
            String(stats.keys),
        ).catch(async () => assert.fail(`keys tile ${await page.textContent('#tiles [data-name="keys"] b')}, stats ${stats.keys}`));
        assert.equal(await page.textContent('#tiles [data-name="backend"] b'), 'lmdb');
        const titles = await page.$$eval('#charts .chart:not([hidden]) h3', (h) => h.map((x) => x.textContent));
        assert.deepEqual(titles, [
            'Requests per second, by verb and outcome',
            'Commit and fsync (µs)',
            'Keys against max_keys',
            'Bytes against max_store_bytes',
            'Notifications per second',
            'Expiry backlog (keys)',
        ]);
        await page.screenshot({ path: join(H.SHOTS, 'dashboard.png') });
    });

    test('the locks view shows a lease held by statestore lock', async () => {
        const holder = spawn(H.CLI, ['-h', '127.0.0.1', '-p', String(b.mqttPort), '-u', 'admin', 'lock', 'app/lock/job', '--ttl', '30000', '--holder', 'worker-7', '--', 'sleep', '20'], { stdio: 'ignore' });
        try {
            await showTab(page, 'locks');
            const deadline = Date.now() + 5000;
            while (Date.now() < deadline && !(await page.$('#locks td:text-is("app/lock/job")'))) {
                await page.click('#locks-refresh');
                await page.waitForTimeout(200);
            }
            const row = await page.$$eval('#locks tr', (trs) =>
                trs.map((tr) => Array.from(tr.children, (td) => td.textContent)).find((r) => r[0] === 'app/lock/job'),
            );
            assert.ok(row, 'the lock is listed');
            assert.equal(row[1], 'worker-7');
            assert.match(row[2], /^(2\d|30)\.\d s$/);
            const j = JSON.parse((await admin(b, ['--json', 'inspect', 'app/lock/job'])).stdout.toString());
            assert.equal(row[3], j.fencing_token || j.version);
            await page.screenshot({ path: join(H.SHOTS, 'locks.png') });
        } finally {
            process.kill(holder.pid, 'SIGTERM');
        }
    });

    test('works in a narrow window', async () => {
        await showTab(page, 'keys');
        await page.setViewportSize({ width: 420, height: 800 });
        const list = await page.$eval('#keylist', (el) => el.getBoundingClientRect().toJSON());
        const detail = await page.$eval('#detail', (el) => el.getBoundingClientRect().toJSON());
        assert.ok(detail.top >= list.bottom, 'the detail goes under the list');
        assert.ok(list.width <= 420 && detail.right <= 420, 'nothing wider than the window');
        await page.screenshot({ path: join(H.SHOTS, 'narrow.png') });
        await page.setViewportSize({ width: 1280, height: 800 });
    });

    test('refuses to run inside a frame of another page', async () => {
        const p = await browser.context.newPage();
        let sockets = 0;
        p.on('websocket', () => sockets++);
        await p.setContent(`<iframe src="${b.url}index.html" width="900" height="600"></iframe>`);
        const frame = await (await p.waitForSelector('iframe')).contentFrame();
        await frame.waitForSelector('body.framed');
        assert.equal(
            await frame.textContent('body'),
            'The statestore console does not run inside a frame of another page: open it in a window of its own.',
        );
        assert.equal(await frame.$('#connect'), null, 'no form left to click');
        await new Promise((r) => setTimeout(r, 500));
        assert.equal(sockets, 0, 'no connection to the broker');
        await p.close();
    });

    test('the websockets port is reachable on loopback only', async () => {
        // Every socket listening on the port, from the kernel's tables.
        const listening = [];
        for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
            let text = '';
            try {
                text = readFileSync(table, 'utf8');
            } catch {
                continue; // no IPv6 in this kernel
            }
            for (const line of text.trim().split('\n').slice(1)) {
                const f = line.trim().split(/\s+/);
                const [addr, port] = f[1].split(':');
                if (parseInt(port, 16) === b.wsPort && f[3] === '0A') listening.push(addr);
            }
        }
        assert.deepEqual(listening, ['0100007F'], 'one listening socket, on 127.0.0.1');
        assert.equal(await H.reachable('127.0.0.1', b.wsPort), true);
        for (const list of Object.values(networkInterfaces()))
            for (const a of list) {
                if (a.internal || a.family !== 'IPv4') continue;
                assert.equal(await H.reachable(a.address, b.wsPort), false, `reachable on ${a.address}`);
            }
    });

    test('reconnects after the broker restarts, says so, and watches again', async () => {
        await showTab(page, 'live');
        await page.fill('#watch-input', 'app/again/*');
        await page.click('#watch-form button');
        await page.waitForSelector('#watches li:has-text("pattern app/again/*")');
        const states = [];
        await page.exposeFunction('recordState', (s) => states.push(s));
        await page.evaluate(() => {
            new MutationObserver(() => window.recordState(document.querySelector('#status').dataset.state)).observe(
                document.querySelector('#status'),
                { attributes: true },
            );
        });
        const renewals = Number(await page.getAttribute('#watches', 'data-renewals'));
        await b.restart();
        await page.waitForFunction(() => document.querySelector('#status').dataset.state === 'connected' && /connected to/.test(document.querySelector('#status').textContent), null, { timeout: 15000 });
        assert.ok(states.some((s) => s === 'offline' || s === 'reconnecting'), `states seen: ${states.join(' ')}`);
        // The pattern watch is made again on the new connection.
        await page.waitForFunction((n) => Number(document.querySelector('#watches').dataset.renewals) > n, renewals);
        assert.equal((await admin(b, ['set', 'app/again/x', 'after the restart'])).code, 0);
        await page.waitForSelector('#stream td:text-is("after the restart")', { timeout: 2000 });
    });

    test('a request that had no answer never runs after a reconnect', async () => {
        // The broker is frozen: a SET goes out and gets no answer, and the
        // console says so. The broker dies and comes back: the console
        // reconnects on a new client, which does not send the SET again
        // (MQTT.js's own would: it resends what was not acknowledged).
        await showTab(page, 'keys');
        await page.evaluate(() => (document.querySelector('#edit-result').textContent = ''));
        b.pause();
        try {
            await page.fill('#edit-key', 'app/ghost');
            await page.fill('#edit-value', 'written later');
            await page.uncheck('#edit-hex');
            await page.selectOption('#edit-cond', '');
            await page.fill('#edit-px', '');
            await page.fill('#edit-ft', '');
            await page.click('#do-set');
            await page.waitForFunction(() => document.querySelector('#edit-result').textContent !== '', null, { timeout: 15000 });
            assert.equal(await page.textContent('#edit-result'), 'no answer within 10 s: the outcome is unknown');
        } finally {
            await b.restartKilled();
        }
        await page.waitForFunction(() => document.querySelector('#status').dataset.state === 'connected', null, { timeout: 15000 });
        await new Promise((r) => setTimeout(r, 500)); // time for a resend to land, were there one
        assert.equal((await admin(b, ['get', 'app/ghost'])).code, 1, 'the SET that had no answer did not run');
    });

    test('the browser asked nothing of any host but the broker', async () => {
        const origin = `http://127.0.0.1:${b.wsPort}/`;
        const others = browser.requests.filter((u) => !u.startsWith(origin) && !u.startsWith('blob:') && !u.startsWith('data:'));
        assert.deepEqual(others, []);
        assert.ok(browser.requests.some((u) => u === `${origin}mqtt.esm.js`));
        assert.deepEqual(page.errors, []);
    });
});

// The whole listing of 100,000 keys takes about 100 SCAN pages, each a
// few turns of Mosquitto's loop over websockets: make bench-console loads
// them all (SS_CONSOLE_LOAD_KEYS=100000); make test loads 10,000 of them.
const LOAD_KEYS = Number(process.env.SS_CONSOLE_LOAD_KEYS || 10000);

describe('a store of 100,000 keys', () => {
    const N = 100000;
    let b, browser;

    before(async () => {
        const dir = H.tempDir('import');
        writeFileSync(join(dir, 'keys.jsonl'), records('big/', N, 6));
        b = await H.startBroker({ importFile: join(dir, 'keys.jsonl') });
        rmSync(dir, { recursive: true, force: true });
        browser = await H.launchBrowser();
    });

    after(async () => {
        if (browser) await browser.close();
        if (b) await b.stop();
    });

    test(`lists ${LOAD_KEYS.toLocaleString('en')} of them while the DOM holds only a window of rows`, async () => {
        const page = await H.openConsole(browser, b);
        const t0 = Date.now();
        await page.waitForFunction(() => Number(document.querySelector('#count').dataset.count) > 0);
        const firstMs = Date.now() - t0;
        // The first pages only: nothing loads what nobody scrolled to.
        await page.waitForTimeout(300);
        assert.ok(Number(await page.getAttribute('#count', 'data-count')) <= 2000);
        assert.match(await page.textContent('#count'), /keys so far; scroll for more$/);
        await page.click('#load-all');
        await page.waitForFunction((n) => Number(document.querySelector('#count').dataset.count) >= n, LOAD_KEYS, {
            timeout: 120000,
        });
        if (LOAD_KEYS < N) await page.click('#load-all'); // Stop
        const loadMs = Date.now() - t0;
        const loaded = Number(await page.getAttribute('#count', 'data-count'));
        if (LOAD_KEYS >= N) assert.equal(await page.textContent('#count'), '100,000 keys');
        // Jump about the list: the rows in the DOM stay a window of it.
        const frames = await page.evaluate(async () => {
            const el = document.querySelector('#keylist');
            const times = [];
            for (let i = 0; i < 30; i++) {
                const t = performance.now();
                el.scrollTop = ((i * 7919) % 100) * (el.scrollHeight / 100);
                await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
                times.push(performance.now() - t);
            }
            return times;
        });
        const rows = await page.$$eval('#keylist .vrow', (r) => r.length);
        assert.ok(rows > 0 && rows < 100, `${rows} rows in the DOM`);
        await page.$eval('#keylist', (el) => (el.scrollTop = 5000 * 22));
        await page.waitForSelector('#keylist .vrow:text-is("big/005000")');
        frames.sort((x, y) => x - y);
        console.log(
            `# console: store of 100,000 keys: first page after ${firstMs} ms; ${loaded} keys listed after ${loadMs} ms; ` +
                `${rows} rows in the DOM; a jump across the list took ${frames[15].toFixed(1)} ms (median of 30, two frames), ${frames[29].toFixed(1)} ms at most`,
        );
        await page.screenshot({ path: join(H.SHOTS, 'keys-100000.png') });
        assert.deepEqual(page.errors, []);
    });

    test('"Load all" ends when the connection drops under it, and goes on when pressed again', async () => {
        const page = await H.openConsole(browser, b);
        await page.waitForFunction(() => Number(document.querySelector('#count').dataset.count) > 0);
        await page.click('#load-all');
        await page.waitForFunction(() => Number(document.querySelector('#count').dataset.count) >= 3000, null, {
            timeout: 60000,
        });
        await b.restart();
        await page.waitForFunction(() => document.querySelector('#status').dataset.state === 'connected', null, {
            timeout: 15000,
        });
        // It used to stay at "Stop", loading nothing.
        await page.waitForFunction(() => document.querySelector('#load-all').textContent === 'Load all', null, {
            timeout: 15000,
        });
        assert.equal(await page.getAttribute('#load-all', 'aria-pressed'), 'false');
        const before = Number(await page.getAttribute('#count', 'data-count'));
        assert.ok(before < N, `${before} keys listed before the restart`);
        await page.click('#load-all');
        await page.waitForFunction((n) => Number(document.querySelector('#count').dataset.count) >= n + 2000, before, {
            timeout: 60000,
        });
        await page.click('#load-all'); // Stop
        assert.deepEqual(page.errors, []);
    });
});
