// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The Keys view: a SCAN listing loaded page by page as the list scrolls,
// one key's value and metadata (GET and the administrative INSPECT), and
// the edit form (SET with its options, DEL, VDEL). Answers that are errors
// are shown in the protocol's own words.
import * as P from './proto.js';
import { VirtualList } from './vlist.js';

const ROW_HEIGHT = 22;
const CHANGE_FLASH_MS = 3000;
// Pages with no key (their keys did not match) are followed at once, up to
// this many in a row before waiting for the user to scroll again.
const EMPTY_PAGES_IN_A_ROW = 50;

const $ = (id) => document.getElementById(id);

function hexDump(bytes) {
    const lines = [];
    for (let off = 0; off < bytes.length; off += 16) {
        const row = bytes.subarray(off, off + 16);
        const hx = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
        const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
        lines.push(`${off.toString(16).padStart(8, '0')}  ${hx.padEnd(47)}  ${ascii}`);
    }
    return lines.join('\n');
}

function looksBinary(bytes) {
    return !P.isUtf8(bytes) || /[\u0000-\u0008\u000e-\u001f\u007f]/.test(P.textOf(bytes));
}

function prettyJson(bytes) {
    return P.indentJson(P.textOf(bytes));
}

/** A key as a person reads it, no two alike (proto.js: label). */
export function keyLabel(key) {
    return P.label(key, 4096);
}

function describe(reply, what) {
    if (reply.type === 'error') return { ok: false, text: reply.text };
    return { ok: true, text: what(reply) };
}

export class KeysView {
    constructor(ctx) {
        this.ctx = ctx;
        this.client = ctx.client;
        this.keys = []; // Uint8Array each, in SCAN order
        this.index = new Map(); // hex(key) -> position
        this.changed = new Map(); // hex(key) -> when it changed
        this.pattern = '*';
        this.token = null;
        this.listing = 0; // a new SCAN makes older pages' answers stale
        this.loading = false;
        this.current = null; // { key, value, version, deadline, ft }
        this.mode = null;
        this.list = new VirtualList($('keylist'), ROW_HEIGHT, {
            render: (row, i) => this.renderRow(row, i),
            onSelect: (i) => this.open(this.keys[i]),
            onNearEnd: () => this.more(),
        });
        this.all = false;
        $('load-all').addEventListener('click', () => this.loadAll(!this.all));
        $('scan-form').addEventListener('submit', (e) => {
            e.preventDefault();
            this.scan($('pattern').value);
        });
        for (const r of document.querySelectorAll('input[name="mode"]'))
            r.addEventListener('change', () => this.show(r.value));
        // The bytes themselves when they are text (a label's \\ and \\xHH, a
        // view's indenting or hex dump, would name another key or value);
        // else the label, and the value in plain hex as the form takes it.
        $('copy-key').addEventListener('click', () => this.current && ctx.copy(P.isUtf8(this.current.key) ? P.textOf(this.current.key) : keyLabel(this.current.key)));
        $('copy-value').addEventListener('click', () => {
            const v = this.current && this.current.value;
            if (v) ctx.copy(P.isUtf8(v) ? P.textOf(v) : P.hex(v));
        });
        for (const b of document.querySelectorAll('button.copy'))
            b.addEventListener('click', () => ctx.copy($(b.dataset.copy).textContent));
        $('refresh-key').addEventListener('click', () => this.current && this.open(this.current.key));
        $('observe-key').addEventListener('click', () => this.current && ctx.observe(this.current.key));
        $('edit').addEventListener('submit', (e) => {
            e.preventDefault();
            this.set();
        });
        $('do-del').addEventListener('click', () => this.del(false));
        $('do-vdel').addEventListener('click', () => this.del(true));
        this.client.addEventListener('notify', (e) => this.noticeChange(e.detail));
        setInterval(() => this.tick(), 250);
    }

    renderRow(row, i) {
        const key = this.keys[i];
        row.textContent = keyLabel(key);
        row.title = row.textContent;
        const at = this.changed.get(P.hex(key));
        if (at && Date.now() - at < CHANGE_FLASH_MS) row.classList.add('changed');
    }

    /** Start a listing of pattern from its first page. */
    async scan(pattern) {
        this.pattern = pattern;
        this.keys = [];
        this.index.clear();
        this.token = null;
        this.listing++;
        this.loading = false;
        this.loadAll(false);
        this.list.el.scrollTop = 0;
        this.list.setCount(0);
        this.countText('listing…');
        await this.page(true);
    }

    more() {
        if (this.token !== null && !this.loading) this.page(false);
    }

    // One SCAN page (the first when first), then more while pages come
    // back empty with a token, while the list does not fill its view, or
    // until the end when "Load all" asked for everything.
    async page(first) {
        const listing = this.listing;
        this.loading = true;
        try {
            for (let empty = 0; ; ) {
                const args = first ? ['SCAN', this.pattern] : ['SCAN', this.pattern, this.token];
                first = false;
                const { reply } = await this.client.request(args);
                if (listing !== this.listing) return;
                if (reply.error !== undefined) {
                    this.token = null;
                    this.countText(reply.error, true);
                    return;
                }
                for (const k of reply.keys) {
                    this.index.set(P.hex(k), this.keys.length);
                    this.keys.push(k);
                }
                this.token = reply.token;
                this.list.setCount(this.keys.length);
                this.countText();
                if (this.token === null) return;
                empty = reply.keys.length === 0 ? empty + 1 : 0;
                if (this.all) continue;
                if (empty >= EMPTY_PAGES_IN_A_ROW) return;
                if (empty === 0 && this.keys.length * ROW_HEIGHT > this.list.el.clientHeight * 2) return;
            }
        } catch (err) {
            if (listing === this.listing) {
                this.countText(err.message, true);
                // "Load all" ends with the page that failed (a lost
                // connection): pressed again, it goes on from its token.
                this.loadAll(false);
            }
        } finally {
            if (listing === this.listing) {
                this.loading = false;
                if (this.token === null) this.loadAll(false);
            }
        }
    }

    /** Load every page of the listing (on), or stop doing so. */
    loadAll(on) {
        this.all = on;
        $('load-all').textContent = on ? 'Stop' : 'Load all';
        $('load-all').setAttribute('aria-pressed', String(on));
        if (on && !this.loading && this.token !== null) this.page(false);
    }

    countText(text, isError) {
        const el = $('count');
        el.className = isError ? 'error-text' : 'muted';
        if (text) {
            el.dataset.complete = String(Boolean(isError));
            el.dataset.count = String(this.keys.length);
            el.textContent = text;
            return;
        }
        const n = this.keys.length.toLocaleString('en');
        const noun = this.keys.length === 1 ? 'key' : 'keys';
        el.textContent = this.token === null ? `${n} ${noun}` : `${n} ${noun} so far; scroll for more`;
        el.dataset.count = String(this.keys.length);
        el.dataset.complete = String(this.token === null);
    }

    /**
     * Show one key: its value (GET) and metadata (INSPECT). refresh: the
     * key shown changed; the edit form, which the user may be filling in,
     * stays as it is.
     */
    /**
     * The shown key changed: read it again, one read at a time (a key
     * changed a thousand times a second made as many GETs and INSPECTs),
     * and once more after the last change that came during one.
     */
    refreshDetail(key) {
        if (this.refreshing) {
            this.refreshAgain = true;
            return;
        }
        this.refreshing = true;
        this.open(key, true).finally(() => {
            this.refreshing = false;
            // Again for the key shown now (another may have been opened
            // meanwhile, and changed since).
            if (this.refreshAgain && this.detailKey) {
                this.refreshAgain = false;
                this.refreshDetail(this.detailKey);
            }
        });
    }

    async open(key, refresh = false) {
        // What was shown of another key goes first: nothing stale stays
        // beside this key's name; and the answers of a key opened before
        // it, should they come last, are dropped.
        const opening = (this.opening = (this.opening || 0) + 1);
        this.detailHex = P.hex(key);
        this.detailKey = key;
        this.current = null;
        $('detail-key').textContent = keyLabel(key);
        for (const id of ['meta-size', 'meta-version', 'meta-ttl', 'meta-ft']) $(id).textContent = '–';
        $('value').textContent = '';
        $('value').dataset.mode = '';
        $('detail-error').textContent = '';
        if (!refresh) {
            // The form acts on the key's bytes, not on its label, for as
            // long as the label in the field is left as it was shown.
            $('edit-key').value = keyLabel(key);
            this.formKey = { bytes: key, shown: $('edit-key').value };
            // "value is hex" changes only with the value it describes
            // (below): an absent key leaves both, after a DEL as well.
        }
        try {
            const [get, inspect] = await Promise.all([
                this.client.request(['GET', key]),
                this.client.admin(['INSPECT', key]),
            ]);
            if (opening !== this.opening) return;
            const r = get.reply;
            const cur = { key, value: null, version: get.version, deadline: null, ft: null, size: null };
            if (r.type === 'error') $('detail-error').textContent = r.text;
            else if (r.type === 'bulk') cur.value = r.value;
            const meta = P.parseKeyLine(inspect.trim());
            if (meta) {
                cur.size = meta.size;
                cur.version = meta.version;
                cur.ft = meta.ft;
                cur.deadline = meta.ttlMs === null ? null : Date.now() + meta.ttlMs;
            } else if (inspect.startsWith('error ') && r.type !== 'error') {
                $('detail-error').textContent = inspect.slice(6).trim();
            }
            this.current = cur;
            this.showMeta();
            if (cur.value !== null) {
                const mode = looksBinary(cur.value) ? 'hex' : prettyJson(cur.value) !== null ? 'json' : 'text';
                this.show(mode);
                if (!refresh) {
                    // A textarea turns CR LF and CR into LF: a value holding a
                    // CR goes into the form as hex, or VDEL and SET of the
                    // form would not be its bytes.
                    const asHex = mode === 'hex' || cur.value.includes(0x0d);
                    $('edit-value').value = asHex ? P.hex(cur.value) : P.textOf(cur.value);
                    $('edit-hex').checked = asHex;
                }
            } else {
                $('value').textContent = r.type === 'null' ? '(absent)' : '';
                $('value').dataset.mode = '';
            }
        } catch (err) {
            if (opening === this.opening) $('detail-error').textContent = err.message;
        }
    }

    showMeta() {
        const c = this.current;
        $('meta-size').textContent = c.size === null ? (c.value ? `${c.value.length} bytes` : '–') : `${c.size} bytes`;
        $('meta-version').textContent = c.version || '–';
        $('meta-ft').textContent = c.ft || 'none';
        this.tick();
    }

    // The TTL counts down between refreshes; the change flashes fade.
    tick() {
        const c = this.current;
        if (c) {
            const el = $('meta-ttl');
            if (c.deadline === null) el.textContent = 'none';
            else {
                const left = c.deadline - Date.now();
                el.textContent = left > 0 ? `${(left / 1000).toFixed(1)} s` : 'expired';
            }
        }
        if (this.changed.size) {
            const now = Date.now();
            for (const [k, at] of this.changed) if (now - at >= CHANGE_FLASH_MS) this.changed.delete(k);
            this.list.schedule();
        }
    }

    show(mode) {
        const c = this.current;
        if (!c || c.value === null) return;
        let text;
        if (mode === 'json') text = prettyJson(c.value) ?? '(not JSON)';
        else if (mode === 'hex') text = hexDump(c.value);
        else text = P.textOf(c.value);
        $('value').textContent = text;
        $('value').dataset.mode = mode;
        for (const r of document.querySelectorAll('input[name="mode"]')) r.checked = r.value === mode;
    }

    noticeChange(n) {
        const h = P.hex(n.key);
        if (!this.index.has(h)) return;
        this.changed.set(h, Date.now());
        this.list.schedule();
        if (this.detailHex === h) this.refreshDetail(n.key);
    }

    // The edit form's key and value as bytes (the value from hex when
    // asked). The key is the opened key's own bytes while its label is
    // left in the field as shown (a label is not the key: \x escapes, a
    // key cut at 4096 bytes); else the text typed, as UTF-8.
    editArgs() {
        const text = $('edit-key').value;
        const f = this.formKey;
        const key = f && text === f.shown ? f.bytes : P.bytesOf(text);
        let value = P.bytesOf($('edit-value').value);
        if ($('edit-hex').checked) {
            value = P.unhex($('edit-value').value.replace(/\s+/g, ''));
            if (value === null) throw new Error('the value is not hex');
        }
        if (key.length === 0) throw new Error('a key is needed');
        return { key, label: keyLabel(key), value, ft: $('edit-ft').value.trim() || undefined };
    }

    result(r) {
        const out = $('edit-result');
        out.textContent = r.text;
        out.className = `result ${r.ok ? 'ok' : 'error'}`;
    }

    async set() {
        try {
            const { key, value, ft } = this.editArgs();
            const args = ['SET', key, value];
            const cond = $('edit-cond').value;
            if (cond) args.push(cond);
            const px = $('edit-px').value.trim();
            if (px) args.push('PX', px);
            const { reply, version } = await this.client.request(args, { ft });
            this.result(
                describe(reply, (x) =>
                    x.type === 'ok' ? `OK: version ${version}` : x.type === 'int' && x.value === -1 ? `not set: the ${cond} condition was not met` : `answer ${x.type}`,
                ),
            );
            if (reply.type === 'ok') this.open(key);
        } catch (err) {
            this.result({ ok: false, text: err.message });
        }
    }

    async del(byValue) {
        let a;
        try {
            a = this.editArgs();
        } catch (err) {
            this.result({ ok: false, text: err.message });
            return;
        }
        const what = byValue ? `Delete "${a.label}" if its value is the one in the form?` : `Delete "${a.label}"?`;
        if (!(await this.ctx.confirm(what))) {
            this.result({ ok: false, text: 'not deleted' });
            return;
        }
        try {
            const args = byValue ? ['VDEL', a.key, a.value] : ['DEL', a.key];
            const { reply } = await this.client.request(args, { ft: a.ft });
            const texts = { 1: 'deleted', 0: 'absent: nothing deleted', '-1': 'not deleted: the value differs' };
            this.result(describe(reply, (x) => texts[x.value] ?? `answer ${x.type}`));
            if (reply.type === 'int' && reply.value === 1) this.open(a.key);
        } catch (err) {
            this.result({ ok: false, text: err.message });
        }
    }
}
