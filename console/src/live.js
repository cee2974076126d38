// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The Live view: keys observed with KEYNOTIFY and patterns watched with
// the administrative WATCH, and the stream of their SET and DELETE
// notifications. Registrations end with the connection (PROTOCOL.md §6),
// so they are made again after each reconnection.
import * as P from './proto.js';
import { keyLabel } from './keys.js';

const MAX_ROWS = 1000;
const PREVIEW_BYTES = 80;

const $ = (id) => document.getElementById(id);

export class LiveView {
    constructor(ctx) {
        this.ctx = ctx;
        this.client = ctx.client;
        this.keys = new Map(); // hex(key) -> key bytes
        this.patterns = new Set();
        this.events = []; // newest last, each with its seq
        this.seq = 0;
        this.fresh = []; // events not yet shown (at most MAX_ROWS: more means redraw all)
        this.drawing = false; // a frame is asked for
        this.paused = false;
        this.held = 0; // events that arrived while paused
        $('observe-form').addEventListener('submit', (e) => {
            e.preventDefault();
            const k = $('observe-input').value;
            if (k) this.observe(P.bytesOf(k));
        });
        $('watch-form').addEventListener('submit', (e) => {
            e.preventDefault();
            const p = $('watch-input').value;
            if (p) this.watch(p);
        });
        $('pause').addEventListener('click', () => this.pause(!this.paused));
        $('clear').addEventListener('click', () => {
            this.events = [];
            this.held = 0;
            this.render();
        });
        $('filter').addEventListener('input', () => this.render());
        this.client.addEventListener('notify', (e) => this.add(e.detail));
        this.client.addEventListener('status', (e) => {
            if (e.detail.state === 'connected') this.again();
        });
    }

    async observe(key) {
        try {
            const { reply } = await this.client.request(['KEYNOTIFY', key]);
            if (reply.type === 'error') return this.ctx.say(`KEYNOTIFY ${keyLabel(key)}: ${reply.text}`, true);
            this.keys.set(P.hex(key), key);
            this.chips();
            this.ctx.say(`observing ${keyLabel(key)}`);
        } catch (err) {
            this.ctx.say(err.message, true);
        }
    }

    async watch(pattern) {
        try {
            const answer = (await this.client.admin(['WATCH', pattern])).trim();
            if (answer !== 'ok') return this.ctx.say(`WATCH ${pattern}: ${answer.replace(/^error /, '')}`, true);
            this.patterns.add(pattern);
            this.chips();
            this.ctx.say(`watching ${pattern}`);
        } catch (err) {
            this.ctx.say(err.message, true);
        }
    }

    async stop(kind, id) {
        try {
            if (kind === 'key') {
                await this.client.request(['KEYNOTIFY', this.keys.get(id), 'STOP']);
                this.keys.delete(id);
            } else {
                await this.client.admin(['WATCH', id, 'STOP']);
                this.patterns.delete(id);
            }
        } catch (err) {
            this.ctx.say(err.message, true);
        }
        this.chips();
    }

    // After a reconnection: the broker forgot them with the old connection.
    // One it refuses now (a limit, rules reloaded) is no longer watched:
    // its chip goes, and the refusal is said. The count of renewals is on
    // the list, for people and tests to see.
    async again() {
        for (const [h, key] of [...this.keys]) {
            const { reply } = await this.client.request(['KEYNOTIFY', key]).catch(() => ({ reply: null }));
            if (reply && reply.type === 'error') {
                this.keys.delete(h);
                this.ctx.say(`no longer observing ${keyLabel(key)}: ${reply.text}`, true);
            }
        }
        for (const p of [...this.patterns]) {
            const answer = (await this.client.admin(['WATCH', p]).catch(() => 'ok')).trim();
            if (answer !== 'ok') {
                this.patterns.delete(p);
                this.ctx.say(`no longer watching ${p}: ${answer.replace(/^error /, '')}`, true);
            }
        }
        this.chips();
        this.renewals = (this.renewals || 0) + 1;
        $('watches').dataset.renewals = String(this.renewals);
    }

    chips() {
        const ul = $('watches');
        ul.textContent = '';
        const chip = (label, kind, id) => {
            const li = document.createElement('li');
            const b = document.createElement('button');
            b.className = 'small';
            b.textContent = '×';
            b.title = 'stop';
            b.setAttribute('aria-label', `stop ${label}`);
            b.addEventListener('click', () => this.stop(kind, id));
            li.append(label + ' ', b);
            ul.append(li);
        };
        for (const [h, key] of this.keys) chip(`key ${keyLabel(key)}`, 'key', h);
        for (const p of this.patterns) chip(`pattern ${p}`, 'pattern', p);
    }

    // Notifications may come by the thousand a second: rows are added to
    // the top once a frame, and those whose events fell off the end go,
    // rather than the table being drawn again for each one.
    add(n) {
        // Only a preview's bytes are kept: a thousand events of values of
        // a megabyte would hold a gigabyte.
        if (n.value && n.value.length > PREVIEW_BYTES + 1) n = { ...n, value: n.value.subarray(0, PREVIEW_BYTES + 1).slice() };
        n.seq = ++this.seq;
        this.events.push(n);
        if (this.events.length > MAX_ROWS) this.events.splice(0, this.events.length - MAX_ROWS);
        if (this.paused) {
            this.held++;
            this.count();
            return;
        }
        if (this.fresh.length <= MAX_ROWS) this.fresh.push(n);
        if (!this.drawing) {
            this.drawing = true;
            requestAnimationFrame(() => this.flush());
        }
    }

    flush() {
        this.drawing = false;
        const fresh = this.fresh;
        this.fresh = [];
        if (this.paused || fresh.length === 0) return;
        if (fresh.length > MAX_ROWS) return this.render();
        const filter = $('filter').value;
        const rows = document.createDocumentFragment();
        for (let i = fresh.length - 1; i >= 0; i--) {
            if (fresh[i].seq < this.events[0].seq) break; // fell off already
            const tr = this.row(fresh[i], filter);
            if (tr) rows.append(tr);
        }
        const body = $('stream');
        body.prepend(rows);
        const oldest = this.events[0].seq;
        while (body.lastElementChild && Number(body.lastElementChild.dataset.seq) < oldest) body.lastElementChild.remove();
        this.count();
    }

    pause(on) {
        this.paused = on;
        $('pause').setAttribute('aria-pressed', String(on));
        $('pause').textContent = on ? 'Resume' : 'Pause';
        if (!on) {
            this.held = 0;
            this.render();
        } else this.count();
    }

    count() {
        const held = this.paused && this.held ? `, ${this.held} new while paused` : '';
        $('stream-count').textContent = `${this.events.length} events${held}`;
    }

    // The row of event n, or null when filter leaves it out.
    row(n, filter) {
        const key = keyLabel(n.key);
        if (filter && !key.includes(filter)) return null;
        const tr = document.createElement('tr');
        tr.className = `ev-${n.kind}`;
        tr.dataset.seq = String(n.seq);
        const time = new Date(n.at).toISOString().slice(11, 23);
        const value = n.value ? P.preview(n.value, PREVIEW_BYTES) : '';
        for (const text of [time, n.kind, key, n.version || '', value]) {
            const td = document.createElement('td');
            td.textContent = text;
            td.title = text;
            tr.append(td);
        }
        return tr;
    }

    // Everything again: the filter changed, the stream was cleared or
    // resumed, or more came in a frame than the table holds.
    render() {
        this.fresh = [];
        const filter = $('filter').value;
        const rows = document.createDocumentFragment();
        for (let i = this.events.length - 1; i >= 0; i--) {
            const tr = this.row(this.events[i], filter);
            if (tr) rows.append(tr);
        }
        $('stream').replaceChildren(rows);
        this.count();
    }
}
