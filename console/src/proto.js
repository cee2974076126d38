// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The state store protocol as bytes: RESP3 requests and answers, SCAN
// pages, notifications and their topics, HLC stamps (docs/PROTOCOL.md).
// No I/O and no DOM: bytes in, values out, so that Node's tests run it
// over the same vectors as core/codec. Every parser bounds what it reads
// and throws a ProtoError ('incomplete' or 'syntax') on anything else.

export const GUID = 'FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8';
export const REQUEST_TOPIC = `statestore/v1/${GUID}/command/invoke`;
export const ADMIN_TOPIC = 'statestore/admin/v1/invoke';
export const NOTIFY_PREFIX = `clients/statestore/v1/${GUID}/`;
export const MAX_ARGS = 16;

// Lengths and counts are decimal; more digits than this cannot be a
// payload's (and stay exact in a double).
const MAX_DIGITS = 15;

const encoder = new TextEncoder();
// ignoreBOM: a byte order mark is kept as the character it is. By
// default a decoder drops one at the start of what it decodes, and the
// labels decode a character at a time: every U+FEFF of a key or value
// vanished (two keys looked alike, a value shown and edited without it).
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class ProtoError extends Error {
    constructor(code, message) {
        super(message);
        this.code = code; // 'incomplete' | 'syntax'
    }
}

/** Bytes of a string (UTF-8) or the bytes themselves. */
export function bytesOf(x) {
    return typeof x === 'string' ? encoder.encode(x) : x;
}

/** Text of bytes; invalid UTF-8 becomes U+FFFD. */
export function textOf(bytes) {
    return decoder.decode(bytes);
}

/** Whether bytes are valid UTF-8 (strictly). */
export function isUtf8(bytes) {
    try {
        strictDecoder.decode(bytes);
        return true;
    } catch {
        return false;
    }
}

/** Upper-case base16 (RFC 4648), as the notification topic writes keys. */
export function hex(bytes) {
    let s = '';
    for (const b of bytes) s += (b < 16 ? '0' : '') + b.toString(16).toUpperCase();
    return s;
}

/** Bytes of base16 text (either case); null when it is not base16. */
export function unhex(text) {
    if (text.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(text)) return null;
    const out = new Uint8Array(text.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(i * 2, 2), 16);
    return out;
}

function concat(parts) {
    let n = 0;
    for (const p of parts) n += p.length;
    const out = new Uint8Array(n);
    let off = 0;
    for (const p of parts) {
        out.set(p, off);
        off += p.length;
    }
    return out;
}

/** A request payload: an array of bulk strings (strings or bytes). */
export function encodeRequest(args) {
    if (args.length === 0 || args.length > MAX_ARGS) throw new ProtoError('syntax', 'a request has 1 to 16 arguments');
    const parts = [encoder.encode(`*${args.length}\r\n`)];
    for (const a of args) {
        const b = bytesOf(a);
        parts.push(encoder.encode(`$${b.length}\r\n`), b, encoder.encode('\r\n'));
    }
    return concat(parts);
}

// A cursor over one payload. "Need more bytes" and "not this grammar"
// are told apart, as core/codec does.
class Reader {
    constructor(bytes) {
        this.b = bytes;
        this.pos = 0;
    }
    byte() {
        if (this.pos >= this.b.length) throw new ProtoError('incomplete', 'more bytes are needed');
        return this.b[this.pos++];
    }
    // The rest of a line up to CR LF, as text; the line may not hold CR or LF.
    line() {
        const start = this.pos;
        for (;;) {
            const c = this.byte();
            if (c === 0x0a) throw new ProtoError('syntax', 'LF without CR');
            if (c === 0x0d) {
                if (this.byte() !== 0x0a) throw new ProtoError('syntax', 'CR without LF');
                return this.b.subarray(start, this.pos - 2);
            }
        }
    }
    // A decimal integer line: optional '-' (when allowed), 1..15 digits.
    integer(allowNegative) {
        const s = textOf(this.line());
        const re = allowNegative ? /^-?[0-9]{1,15}$/ : /^[0-9]{1,15}$/;
        if (!re.test(s)) throw new ProtoError('syntax', 'not a bounded decimal integer');
        return Number(s);
    }
    // $<n>\r\n<n bytes>\r\n after the '$' has been read; null for $-1.
    bulkBody() {
        const n = this.integer(true);
        if (n === -1) return null;
        if (n < 0) throw new ProtoError('syntax', 'negative length');
        if (this.b.length - this.pos < n + 2) {
            // The declared bytes are not all there yet; wrong bytes where
            // they are present are already a syntax error.
            const have = this.b.length - this.pos;
            if (have > n && this.b[this.pos + n] !== 0x0d) throw new ProtoError('syntax', 'bulk not ended by CR LF');
            throw new ProtoError('incomplete', 'more bytes are needed');
        }
        const v = this.b.subarray(this.pos, this.pos + n);
        this.pos += n;
        if (this.byte() !== 0x0d || this.byte() !== 0x0a) throw new ProtoError('syntax', 'bulk not ended by CR LF');
        return v;
    }
    bulk() {
        if (this.byte() !== 0x24) throw new ProtoError('syntax', 'a bulk string is expected');
        return this.bulkBody();
    }
    // *<n>\r\n after which n elements follow. n is bounded by max when
    // given, else by the bytes left (each element takes at least 4 bytes),
    // so that no count makes us hold more than the payload could.
    arrayHeader(max) {
        if (this.byte() !== 0x2a) throw new ProtoError('syntax', 'an array is expected');
        const n = this.integer(false);
        const bound = max === undefined ? (this.b.length - this.pos) / 4 : max;
        if (n > bound) throw new ProtoError('syntax', 'more elements than allowed');
        return n;
    }
    end() {
        if (this.pos !== this.b.length) throw new ProtoError('syntax', 'trailing bytes');
    }
}

/**
 * One answer: { type: 'ok' | 'simple' | 'error' | 'int' | 'bulk' | 'null', ... }.
 * 'simple' carries text, 'error' the text after "-ERR " (the protocol's
 * own wording), 'int' a number, 'bulk' bytes. Arrays are SCAN's: decodeScan.
 */
export function decodeReply(bytes) {
    const r = new Reader(bytes);
    const kind = r.byte();
    let out;
    if (kind === 0x2b) {
        const text = textOf(r.line());
        out = text === 'OK' ? { type: 'ok', text } : { type: 'simple', text };
    } else if (kind === 0x2d) {
        const text = textOf(r.line());
        out = { type: 'error', text: text.startsWith('ERR ') ? text.slice(4) : text };
    } else if (kind === 0x3a) {
        out = { type: 'int', value: r.integer(true) };
    } else if (kind === 0x24) {
        const v = r.bulkBody();
        out = v === null ? { type: 'null' } : { type: 'bulk', value: v };
    } else {
        throw new ProtoError('syntax', 'not an answer');
    }
    r.end();
    return out;
}

/**
 * A SCAN page: { keys: Uint8Array[], token: Uint8Array | null }; an
 * error answer gives { error: text }. The payload must be whole.
 */
export function decodeScan(bytes) {
    if (bytes.length > 0 && bytes[0] === 0x2d) return { error: decodeReply(bytes).text };
    const r = new Reader(bytes);
    const outer = r.arrayHeader(2);
    if (outer === 0) throw new ProtoError('syntax', 'a page has one or two elements');
    const n = r.arrayHeader();
    const keys = [];
    for (let i = 0; i < n; i++) {
        const k = r.bulk();
        if (k === null) throw new ProtoError('syntax', 'a null key');
        keys.push(k);
    }
    let token = null;
    if (outer === 2) {
        token = r.bulk();
        if (token === null) throw new ProtoError('syntax', 'a null token');
    }
    r.end();
    return { keys, token };
}

/** A notification payload: { kind: 'SET', value } or { kind: 'DELETE' }. */
export function decodeNotify(bytes) {
    const r = new Reader(bytes);
    const n = r.arrayHeader(4);
    const words = [];
    for (let i = 0; i < n; i++) words.push(r.bulk());
    r.end();
    const word = (i, w) => words[i] !== null && textOf(words[i]) === w;
    if (n === 4 && word(0, 'NOTIFY') && word(1, 'SET') && word(2, 'VALUE') && words[3] !== null)
        return { kind: 'SET', value: words[3] };
    if (n === 2 && word(0, 'NOTIFY') && word(1, 'DELETE')) return { kind: 'DELETE' };
    throw new ProtoError('syntax', 'not a notification');
}

/** The topic on which client clientId hears of key (§1.1). */
export function notifyTopic(clientId, key) {
    return `${NOTIFY_PREFIX}${hex(bytesOf(clientId))}/command/notify/${hex(bytesOf(key))}`;
}

/** { clientId, key } of a notification topic (bytes each), or null. */
export function parseNotifyTopic(topic) {
    if (!topic.startsWith(NOTIFY_PREFIX)) return null;
    const parts = topic.slice(NOTIFY_PREFIX.length).split('/');
    if (parts.length !== 4 || parts[1] !== 'command' || parts[2] !== 'notify') return null;
    const clientId = unhex(parts[0]);
    const key = unhex(parts[3]);
    if (clientId === null || key === null || key.length === 0) return null;
    return { clientId, key };
}

// HLC stamps: "<wall ms>:<counter>:<node id>" (§4), parsed as core/hlc
// does: decimal digits only (zero padding allowed, at most 20 digits),
// wall clock within 64 bits, counter within 32 bits, node id any text
// without ':'.
const U64_MAX = 18446744073709551615n;
const U32_MAX = 4294967295n;
const MAX_NODE_BYTES = 255;
const MAX_AHEAD_MS = 60000;

/** { wall: bigint, counter: number, node: string } or null. */
export function parseHlc(text) {
    const parts = text.split(':');
    if (parts.length !== 3) return null;
    const [w, c, node] = parts;
    if (!/^[0-9]{1,20}$/.test(w) || !/^[0-9]{1,20}$/.test(c)) return null;
    if (bytesOf(node).length > MAX_NODE_BYTES) return null;
    const wall = BigInt(w);
    const counter = BigInt(c);
    if (wall > U64_MAX || counter > U32_MAX) return null;
    return { wall, counter: Number(counter), node };
}

/** The canonical text of a stamp: no padding. */
export function formatHlc(h) {
    return `${h.wall}:${h.counter}:${h.node}`;
}

function compareBytes(a, b) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Order of stamps: wall clock, counter, then node id as bytes. */
export function compareHlc(a, b) {
    if (a.wall !== b.wall) return a.wall < b.wall ? -1 : 1;
    if (a.counter !== b.counter) return a.counter < b.counter ? -1 : 1;
    return compareBytes(bytesOf(a.node), bytesOf(b.node));
}

/**
 * A client's clock: next(nowMs) gives a stamp greater than every stamp it
 * gave or merged; merge(stamp) takes in a server version so that our next
 * request's __ts is newer than what we have seen.
 */
export class HlcClock {
    constructor(node) {
        this.node = node;
        this.last = { wall: 0n, counter: 0, node };
    }
    next(nowMs) {
        const now = BigInt(Math.floor(nowMs));
        if (now > this.last.wall) this.last = { wall: now, counter: 0, node: this.node };
        else this.last = { wall: this.last.wall, counter: this.last.counter + 1, node: this.node };
        return formatHlc(this.last);
    }
    // A stamp more than MAX_AHEAD_MS ahead of nowMs is not taken in, as
    // core/hlc's client does not: it would put every later request's
    // __ts as far ahead, and the broker refuses those (PROTOCOL.md §4).
    merge(text, nowMs = Date.now()) {
        const h = parseHlc(text);
        if (h && h.wall > BigInt(Math.floor(nowMs)) + BigInt(MAX_AHEAD_MS)) return;
        if (h && (h.wall > this.last.wall || (h.wall === this.last.wall && h.counter > this.last.counter)))
            this.last = { wall: h.wall, counter: h.counter, node: this.node };
    }
}

/**
 * A version or fencing token of the administrative answers: a space, a
 * backslash, a control byte or DEL came as \xHH (a node id may hold
 * them); the text, or null when an escape is broken.
 */
export function unfield(text) {
    if (!/^(?:[^\\]|\\x[0-9a-fA-F]{2})*$/.test(text)) return null;
    const bytes = [];
    const raw = bytesOf(text);
    for (let i = 0; i < raw.length; i++) {
        if (raw[i] === 0x5c) {
            bytes.push(parseInt(String.fromCharCode(raw[i + 2], raw[i + 3]), 16));
            i += 3;
        } else bytes.push(raw[i]);
    }
    return textOf(Uint8Array.from(bytes));
}

/**
 * One line of the administrative KEYS/INSPECT answer:
 * "key HEXKEY SIZE VERSION TTL_MS|- FT|-" -> { key, size, version, ttlMs, ft }.
 */
export function parseKeyLine(line) {
    const f = line.split(' ');
    if (f.length !== 6 || f[0] !== 'key') return null;
    const key = unhex(f[1]);
    const version = unfield(f[3]);
    const ft = f[5] === '-' ? null : unfield(f[5]);
    if (key === null || version === null || (f[5] !== '-' && ft === null)) return null;
    if (!/^[0-9]+$/.test(f[2]) || (f[4] !== '-' && !/^[0-9]+$/.test(f[4]))) return null;
    return { key, size: Number(f[2]), version, ttlMs: f[4] === '-' ? null : Number(f[4]), ft };
}

// Characters a page shows as nothing, as a space, or that move the text
// around them: controls (C0, DEL, C1), the soft hyphen, zero-width
// characters, direction marks, embeddings, overrides and isolates, line
// and paragraph separators, the byte order mark, interlinear annotation
// marks and tags. Shown as they are, two different keys could look alike,
// or a key like another ("x\u202Etxt.exe" as "xexe.txt").
const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]|\udb40[\udc00-\udc7f]/;

/** Bytes as a readable preview (values): text when UTF-8 with nothing unseen, else hex. */
export function preview(bytes, max) {
    const b = bytes.length > max ? bytes.subarray(0, max) : bytes;
    const more = bytes.length > max ? '…' : '';
    if (isUtf8(b) && !UNSEEN.test(textOf(b))) return textOf(b) + more;
    return '0x' + hex(b) + more;
}

/**
 * A key as a person reads it, and no two keys alike (as the command line
 * shows them): its text, each byte of what is unseen (above) or not UTF-8
 * as \xHH, a backslash as \\; cut at max bytes with "…".
 */
export function label(bytes, max) {
    const b = bytes.length > max ? bytes.subarray(0, max) : bytes;
    let out = '';
    for (let i = 0; i < b.length; ) {
        const n = utf8Length(b, i);
        const ch = n ? textOf(b.subarray(i, i + n)) : null;
        if (ch !== null && !UNSEEN.test(ch)) {
            out += ch === '\\' ? '\\\\' : ch;
            i += n;
            continue;
        }
        for (let k = 0; k < (n || 1); k++) out += '\\x' + hex(b.subarray(i + k, i + k + 1));
        i += n || 1;
    }
    return out + (bytes.length > max ? '…' : '');
}

// Bytes of the well-formed UTF-8 character at b[i], or 0.
function utf8Length(b, i) {
    const c = b[i];
    const n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > b.length) return 0;
    return isUtf8(b.subarray(i, i + n)) ? n : 0;
}

/**
 * JSON text indented by two spaces, or null when it is not JSON (or nests
 * deeper than maxDepth). The value's own text is kept: its numbers and
 * strings as written, duplicate keys all there (a JSON.parse and
 * JSON.stringify round trip shows 12345678901234567891 as
 * 12345678901234567000, 1.10 as 1.1, and one of two "a" keys).
 */
export function indentJson(text, maxDepth = 64) {
    try {
        JSON.parse(text);
    } catch {
        return null;
    }
    const space = (ch) => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';
    let out = '';
    let depth = 0;
    const pad = () => '\n' + '  '.repeat(depth);
    for (let i = 0; i < text.length; ) {
        const ch = text[i];
        if (ch === '"') {
            let j = i + 1;
            while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
            out += text.slice(i, j + 1);
            i = j + 1;
        } else if (space(ch)) {
            i++;
        } else if (ch === '{' || ch === '[') {
            let j = i + 1;
            while (j < text.length && space(text[j])) j++;
            if (text[j] === (ch === '{' ? '}' : ']')) {
                out += ch + text[j];
                i = j + 1;
                continue;
            }
            if (++depth > maxDepth) return null;
            out += ch + pad();
            i++;
        } else if (ch === '}' || ch === ']') {
            depth--;
            out += pad() + ch;
            i++;
        } else if (ch === ',') {
            out += ',' + pad();
            i++;
        } else if (ch === ':') {
            out += ': ';
            i++;
        } else {
            out += ch;
            i++;
        }
    }
    return out;
}
