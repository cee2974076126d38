// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The Locks view: keys with a deadline, as the SDKs' leases and
// `statestore lock` make them (SET holder NEX PX), found with the
// administrative KEYS listing, which gives each key's time to live and
// fencing token in one answer. The holder is the key's value.
import * as P from './proto.js';
import { keyLabel } from './keys.js';

const PAGE = 1000;
const MAX_PAGES = 200; // 200,000 keys looked at, at most, per refresh
const MAX_HOLDERS = 200; // values read per refresh
const REFRESH_MS = 5000;

const $ = (id) => document.getElementById(id);

export class LocksView {
    constructor(ctx) {
        this.ctx = ctx;
        this.client = ctx.client;
        this.locks = [];
        this.visible = false;
        this.busy = false;
        $('locks-refresh').addEventListener('click', () => this.refresh());
        setInterval(() => this.visible && this.refresh(), REFRESH_MS);
        setInterval(() => this.visible && this.render(), 500);
    }

    show(visible) {
        this.visible = visible;
        if (visible) this.refresh();
    }

    async refresh() {
        if (this.busy || !this.client.connected) return;
        this.busy = true;
        try {
            const found = [];
            let cursor = '';
            let complete = false;
            for (let page = 0; page < MAX_PAGES; page++) {
                const text = await this.client.admin(['KEYS', '*', cursor, String(PAGE)]);
                if (text.startsWith('error ')) {
                    $('locks-count').textContent = text.slice(6).trim();
                    return;
                }
                const lines = text.split('\n');
                for (const line of lines) {
                    const k = P.parseKeyLine(line);
                    if (k && k.ttlMs !== null) found.push({ ...k, deadline: Date.now() + k.ttlMs, holder: null });
                }
                const c = lines[0].startsWith('cursor ') ? lines[0].slice(7) : '-';
                if (c === '-') {
                    complete = true;
                    break;
                }
                cursor = c;
            }
            for (const lock of found.slice(0, MAX_HOLDERS)) {
                const { reply } = await this.client.request(['GET', lock.key]);
                lock.holder = reply.type === 'bulk' ? P.preview(reply.value, 80) : reply.type === 'error' ? reply.text : '(gone)';
            }
            // The table is redrawn twice a second: the first MAX_HOLDERS
            // rows, the ones whose holders were read (every key with a
            // deadline, thousands of them, froze the page).
            this.locks = found.slice(0, MAX_HOLDERS);
            // What was not looked at is said, not passed over.
            const parts = [complete ? `${found.length} keys with a deadline` : `at least ${found.length} keys with a deadline (the listing stopped after ${MAX_PAGES * PAGE} keys)`];
            if (found.length > MAX_HOLDERS) parts.push(`the first ${MAX_HOLDERS} shown`);
            $('locks-count').textContent = parts.join('; ');
            this.render();
        } catch (err) {
            $('locks-count').textContent = err.message;
        } finally {
            this.busy = false;
        }
    }

    render() {
        const body = $('locks');
        body.textContent = '';
        const now = Date.now();
        for (const l of this.locks) {
            const left = l.deadline - now;
            const tr = document.createElement('tr');
            const cells = [keyLabel(l.key), l.holder ?? '…', left > 0 ? `${(left / 1000).toFixed(1)} s` : 'expired', l.ft || l.version];
            for (const text of cells) {
                const td = document.createElement('td');
                td.textContent = text;
                td.title = text;
                tr.append(td);
            }
            body.append(tr);
        }
    }
}
