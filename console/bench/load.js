// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// How long the console takes to load from Mosquitto's websockets listener
// on loopback: 10 loads in a fresh browser context each (nothing cached),
// each timed to the load event, to the console running, and to the MQTT
// connection being up. The same loads, interleaved, from a broker with
// plugin_opt_websockets_wake_ms 0 (Mosquitto's own 100 ms loop) are the
// baseline of the same run. Prints one line each and the ratios.
import * as H from '../e2e/harness.js';

const LOADS = 10;
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

async function loadOnce(b, t) {
    const browser = await H.launchBrowser();
    try {
        const page = await browser.context.newPage();
        const t0 = Date.now();
        await page.goto(`${b.url}index.html`);
        await page.waitForSelector('html[data-ready="true"]');
        t.ready.push(Date.now() - t0);
        await page.waitForSelector('#status[data-state="connected"]');
        t.connected.push(Date.now() - t0);
        t.load.push(await page.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventEnd));
    } finally {
        await browser.close();
    }
}

const sides = [
    { name: 'websockets_wake_ms 5 (default)', extra: [], t: { load: [], ready: [], connected: [] } },
    { name: 'websockets_wake_ms 0 (baseline)', extra: ['plugin_opt_websockets_wake_ms 0'], t: { load: [], ready: [], connected: [] } },
];
for (const s of sides) s.broker = await H.startBroker({ extra: s.extra });
try {
    for (let i = 0; i < LOADS; i++) for (const s of sides) await loadOnce(s.broker, s.t);
} finally {
    for (const s of sides) await s.broker.stop();
}
const f = (a) => `median ${Math.round(median(a))} ms, max ${Math.round(Math.max(...a))} ms`;
for (const s of sides)
    console.log(`console load, ${s.name} (${LOADS} loads, fresh browser each): load event ${f(s.t.load)}; running ${f(s.t.ready)}; connected ${f(s.t.connected)}`);
const r = (k) => (median(sides[0].t[k]) / median(sides[1].t[k])).toFixed(2);
console.log(`default / baseline, medians: load event ${r('load')}, running ${r('ready')}, connected ${r('connected')}`);
