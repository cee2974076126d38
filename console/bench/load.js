// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// How long the console takes to load from Mosquitto's websockets listener
// on loopback: 10 loads in a fresh browser context each (nothing cached),
// each timed to the load event, to the console running, and to the MQTT
// connection being up. Prints one summary line.
import * as H from '../e2e/harness.js';

const LOADS = 10;
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const b = await H.startBroker();
const load = [], ready = [], connected = [];
try {
    for (let i = 0; i < LOADS; i++) {
        const browser = await H.launchBrowser();
        try {
            const page = await browser.context.newPage();
            const t0 = Date.now();
            await page.goto(`${b.url}index.html`);
            await page.waitForSelector('html[data-ready="true"]');
            ready.push(Date.now() - t0);
            await page.waitForSelector('#status[data-state="connected"]');
            connected.push(Date.now() - t0);
            load.push(await page.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventEnd));
        } finally {
            await browser.close();
        }
    }
} finally {
    await b.stop();
}
const f = (a) => `median ${Math.round(median(a))} ms, max ${Math.round(Math.max(...a))} ms`;
console.log(`console load (${LOADS} loads, fresh browser each): load event ${f(load)}; running ${f(ready)}; connected ${f(connected)}`);
