// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The Dashboard: the plugin's figures under $SYS/broker/statestore/
// (docs/OPERATIONS.md), kept for the last minutes. The broker publishes
// them one topic at a time every sys_interval; a sample is taken once a
// burst of them has settled. Counters are shown as rates per second,
// gauges as they are.
import { LineChart, formatNumber } from './chart.js';

const WINDOW_MS = 10 * 60 * 1000;
const SETTLE_MS = 250;

const $ = (id) => document.getElementById(id);

// Each chart: its title and the series it draws, from a sample's figures
// (cur), the previous sample's (prev) and the seconds between them (dt).
const rate = (name) => (cur, prev, dt) =>
    prev && dt > 0 && name in cur && name in prev ? Math.max(0, (Number(cur[name]) - Number(prev[name])) / dt) : NaN;
const gauge = (name) => (cur) => (name in cur ? Number(cur[name]) : NaN);

const CHARTS = [
    { title: 'Requests per second, by verb and outcome', requests: true },
    {
        title: 'Commit and fsync (µs)',
        series: [
            ['commit p50', gauge('commit/p50_us')],
            ['commit p99', gauge('commit/p99_us')],
            ['fsync p50', gauge('fsync/p50_us')],
            ['fsync p99', gauge('fsync/p99_us')],
        ],
    },
    { title: 'Keys against max_keys', series: [['keys', gauge('keys')], ['max_keys', gauge('limits/max_keys')]] },
    { title: 'Bytes against max_store_bytes', series: [['bytes', gauge('bytes')], ['max_bytes', gauge('limits/max_bytes')]] },
    {
        title: 'Notifications per second',
        series: [['sent', rate('notifications/sent')], ['dropped', rate('notifications/dropped')]],
    },
    { title: 'Expiry backlog (keys)', series: [['backlog', gauge('expiry/backlog')]] },
    {
        title: 'etcd: Txns and conflicts per second',
        etcd: true,
        series: [
            ['txns', rate('etcd/txns')],
            ['conflicts', rate('etcd/conflicts')],
            ['watch restarts', rate('etcd/watch_restarts')],
        ],
    },
    { title: 'etcd: watch revision', etcd: true, series: [['revision', gauge('etcd/watch_revision')]] },
];

const TILES = [
    ['backend', 'backend'],
    ['keys', 'keys'],
    ['bytes', 'bytes'],
    ['requests/total', 'requests'],
    ['registrations', 'KEYNOTIFY registrations'],
    ['pattern_watches', 'pattern watches'],
    ['etcd/endpoint', 'etcd endpoint'],
    ['etcd/reachable', 'etcd reachable'],
    ['etcd/leader', 'etcd leader'],
];

// Endpoint n's tile (etcd/endpoints/n/...): its URL, then healthy (and
// leader), unhealthy and why, or not asked yet just after the broker
// started; null when the broker published none.
function endpointTile(f, n) {
    const at = (leaf) => f[`etcd/endpoints/${n}/${leaf}`];
    if (at('url') === undefined) return null;
    const state =
        at('healthy') === '1'
            ? `healthy${at('leader') === '1' ? ', leader' : ''}, raft index ${at('raft_index')}`
            : at('error') === 'not asked yet'
              ? 'not asked yet'
              : `unhealthy: ${at('error') !== 'none' ? at('error') : 'no answer'}`;
    return { url: at('url'), state, healthy: at('healthy') === '1' };
}

const EVERY = 'Figures arrive every sys_interval seconds of the broker (Mosquitto’s default: 10).';
// After this long without a figure, the note says why there may be none.
const SILENCE_MS = 30000;

export class DashView {
    constructor(ctx) {
        this.client = ctx.client;
        this.latest = {};
        this.samples = []; // { t, figures }
        this.timer = 0;
        this.visible = false;
        this.charts = CHARTS.map((c) => ({ spec: c, chart: new LineChart($('charts'), c.title) }));
        this.silence = 0;
        this.client.addEventListener('sys', (e) => {
            this.latest[e.detail.name] = e.detail.value;
            clearTimeout(this.timer);
            this.timer = setTimeout(() => this.sample(), SETTLE_MS);
            if (this.silence) {
                clearTimeout(this.silence);
                this.silence = 0;
                $('sys-note').textContent = EVERY;
            }
        });
        this.client.addEventListener('sysaccess', (e) => {
            $('sys-note').textContent = e.detail.allowed
                ? EVERY
                : 'The broker refused this user $SYS/broker/statestore/#: no figures (docs/OPERATIONS.md).';
            // Mosquitto grants a subscription its ACL does not let the user
            // read, and then delivers nothing: said after a while of silence.
            clearTimeout(this.silence);
            this.silence = e.detail.allowed
                ? setTimeout(() => {
                      this.silence = 0;
                      $('sys-note').textContent = `${EVERY} None has arrived in ${SILENCE_MS / 1000} s: the broker's sys_interval may be longer, or its ACL may not let this user read $SYS/broker/statestore/# (Mosquitto accepts the subscription either way).`;
                  }, SILENCE_MS)
                : 0;
        });
    }

    sample() {
        const t = Number(this.latest.published_ms) || Date.now();
        const last = this.samples[this.samples.length - 1];
        if (last && last.t === t) last.figures = { ...this.latest };
        else this.samples.push({ t, figures: { ...this.latest } });
        while (this.samples.length && this.samples[0].t < t - WINDOW_MS) this.samples.shift();
        this.draw();
    }

    show(visible) {
        this.visible = visible;
        if (visible) this.draw();
    }

    // Series of one chart over the samples kept.
    series(spec) {
        let defs = spec.series;
        if (spec.requests) {
            const names = new Set();
            for (const s of this.samples)
                for (const n of Object.keys(s.figures)) if (n.startsWith('requests/') && n !== 'requests/total') names.add(n);
            defs = [...names].sort().map((n) => [n.slice('requests/'.length), rate(n)]);
        }
        return defs.map(([name, f]) => ({
            name,
            points: this.samples.map((s, i) => {
                const prev = i > 0 ? this.samples[i - 1] : null;
                return [s.t, f(s.figures, prev && prev.figures, prev ? (s.t - prev.t) / 1000 : 0)];
            }),
        }));
    }

    draw() {
        this.tiles();
        if (!this.visible || this.samples.length === 0) return;
        const etcd = this.latest.backend === 'etcd';
        const t1 = this.samples[this.samples.length - 1].t;
        for (const { spec, chart } of this.charts) {
            chart.box.hidden = Boolean(spec.etcd) && !etcd;
            if (!chart.box.hidden) chart.draw(this.series(spec), t1 - WINDOW_MS, t1);
        }
    }

    tiles() {
        const box = $('tiles');
        box.textContent = '';
        const etcd = this.latest.backend === 'etcd';
        const add = (label, value, name) => {
            const d = document.createElement('div');
            d.className = 'tile';
            d.dataset.name = name;
            const b = document.createElement('b');
            b.textContent = value;
            const s = document.createElement('span');
            s.textContent = label;
            d.append(b, s);
            box.append(d);
        };
        for (const [name, label] of TILES) {
            if (!(name in this.latest)) continue;
            const v = this.latest[name];
            add(label, /^[0-9]+$/.test(v) ? formatNumber(Number(v)) : v, name);
        }
        // Each etcd endpoint, as statestore status shows it.
        for (let n = 1; etcd; n++) {
            const e = endpointTile(this.latest, n);
            if (!e) break;
            add(e.state, e.url, `etcd/endpoints/${n}`);
            box.lastChild.classList.toggle('bad', !e.healthy);
        }
        add('samples', String(this.samples.length), 'samples');
    }
}
