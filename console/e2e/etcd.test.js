// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The console on a broker whose store is on etcd (a single member on
// loopback ports): browsing, a SET seen by the command line tool, a change
// through the tool in the live view, and the dashboard's etcd figures.
import { describe, before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as H from './harness.js';

describe('the console on etcd', () => {
    let etcd, b, browser, page;

    before(async () => {
        etcd = await H.startEtcd();
        b = await H.startBroker({ etcd: etcd.endpoint });
        browser = await H.launchBrowser();
    });

    after(async () => {
        if (browser) await browser.close();
        if (b) await b.stop();
        if (etcd) await etcd.stop();
    });

    test('lists, sets, watches and charts the store on etcd', async () => {
        for (let i = 0; i < 3; i++) assert.equal((await H.cli(b, ['set', `e/${i}`, `v${i}`])).code, 0);
        page = await H.openConsole(browser, b);
        await page.waitForSelector('#count[data-complete="true"]');
        assert.equal(await page.textContent('#count'), '3 keys');
        await page.click('#keylist .vrow:text-is("e/1")');
        await page.waitForFunction(() => document.querySelector('#value').textContent === 'v1');
        // A SET in the console, read back by the tool.
        await page.fill('#edit-key', 'e/console');
        await page.fill('#edit-value', 'on etcd');
        await page.click('#do-set');
        await page.waitForFunction(() => /^OK: version/.test(document.querySelector('#edit-result').textContent));
        const got = await H.cli(b, ['get', 'e/console']);
        assert.equal(got.code, 0);
        assert.equal(got.stdout.toString(), 'on etcd');
        // A change through the tool, in the live view.
        await page.click('#tabs button[data-view="live"]');
        await page.fill('#watch-input', 'e/*');
        await page.click('#watch-form button');
        await page.waitForSelector('#watches li:has-text("pattern e/*")');
        assert.equal((await H.cli(b, ['set', 'e/2', 'changed'])).code, 0);
        await page.waitForSelector('#stream td:text-is("changed")', { timeout: 1000 });
        // The dashboard: the backend, and the etcd charts with points.
        await page.click('#tabs button[data-view="dash"]');
        await page.waitForFunction(() => document.querySelector('#tiles [data-name="backend"] b')?.textContent === 'etcd');
        await page.waitForSelector('#tiles [data-name="etcd/endpoint"]');
        assert.equal(await page.textContent('#tiles [data-name="etcd/endpoint"] b'), etcd.endpoint);
        // The leader, and each endpoint's health (a single member: it leads).
        await page.waitForFunction((u) => document.querySelector('#tiles [data-name="etcd/leader"] b')?.textContent === u, etcd.endpoint);
        assert.equal(await page.textContent('#tiles [data-name="etcd/endpoints/1"] b'), etcd.endpoint);
        assert.match(await page.textContent('#tiles [data-name="etcd/endpoints/1"] span'), /^healthy, leader, raft index [0-9]+$/);
        assert.equal(await page.$('#tiles [data-name="etcd/endpoints/2"]'), null);
        await page.waitForFunction(() => {
            const c = [...document.querySelectorAll('#charts .chart')].find((x) => x.querySelector('h3').textContent === 'etcd: watch revision');
            return c && !c.hidden && Number(c.querySelector('canvas').dataset.points) >= 2;
        });
        await page.screenshot({ path: join(H.SHOTS, 'dashboard-etcd.png') });
        assert.deepEqual(page.errors, []);
        const origin = `http://127.0.0.1:${b.wsPort}/`;
        assert.deepEqual(browser.requests.filter((u) => !u.startsWith(origin) && !u.startsWith('blob:')), []);
    });
});
