// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The console's protocol module over the byte-exact vectors of the C unit
// tests (tests/unit/test_codec.c, test_answer.c, test_hlc.c). Each vector
// is written here as the C literal it is there, and the test first checks
// that the C file still holds that literal, so the two cannot drift apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as P from '../src/proto.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const csource = (name) => readFileSync(`${root}tests/unit/${name}`, 'latin1');
const codecC = csource('test_codec.c');
const answerC = csource('test_answer.c');
const hlcC = csource('test_hlc.c');

// The bytes of a C string literal's body: \r \n \0 \\ \" and \xHH (the C
// files never let a hex escape run into a following hex digit).
function cbytes(lit) {
    const out = [];
    for (let i = 0; i < lit.length; i++) {
        const c = lit[i];
        if (c !== '\\') {
            out.push(c.charCodeAt(0));
            continue;
        }
        const e = lit[++i];
        if (e === 'r') out.push(13);
        else if (e === 'n') out.push(10);
        else if (e === '0') out.push(0);
        else if (e === '\\' || e === '"') out.push(e.charCodeAt(0));
        else if (e === 'x') {
            out.push(parseInt(lit.substr(i + 1, 2), 16));
            i += 2;
        } else throw new Error(`escape \\${e} not handled`);
    }
    return Uint8Array.from(out);
}

// A vector: the literal must still be in the C file, then its bytes.
function vec(source, lit) {
    assert.ok(source.includes(`"${lit}"`), `the C tests no longer hold "${lit}"`);
    return cbytes(lit);
}

const text = (s) => new TextEncoder().encode(s);

test('requests encode to the bytes core/codec decodes', () => {
    const cases = [
        [String.raw`*3\r\n$3\r\nSET\r\n$7\r\ntestkey\r\n$9\r\ntestvalue\r\n`, ['SET', 'testkey', 'testvalue']],
        [String.raw`*2\r\n$3\r\nGET\r\n$7\r\ntestkey\r\n`, ['GET', 'testkey']],
        [String.raw`*2\r\n$3\r\nDEL\r\n$7\r\ntestkey\r\n`, ['DEL', 'testkey']],
        [String.raw`*3\r\n$4\r\nVDEL\r\n$7\r\ntestkey\r\n$9\r\ntestvalue\r\n`, ['VDEL', 'testkey', 'testvalue']],
        [String.raw`*2\r\n$9\r\nKEYNOTIFY\r\n$7\r\nSOMEKEY\r\n`, ['KEYNOTIFY', 'SOMEKEY']],
        [String.raw`*3\r\n$9\r\nKEYNOTIFY\r\n$7\r\nSOMEKEY\r\n$4\r\nSTOP\r\n`, ['KEYNOTIFY', 'SOMEKEY', 'STOP']],
        [String.raw`*2\r\n$3\r\nGET\r\n$0\r\n\r\n`, ['GET', '']],
    ];
    for (const [lit, args] of cases) assert.deepEqual(P.encodeRequest(args), vec(codecC, lit));
    // SET with NX and PX: one literal split over two lines in the C file.
    const setnx = String.raw`*6\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n1000\r\n`;
    assert.deepEqual(P.encodeRequest(['SET', 'key', 'value', 'NX', 'PX', '1000']), vec(codecC, setnx));
    // Binary arguments go as they are: NUL, CR LF, bytes that are not UTF-8.
    const bin = String.raw`*2\r\n$3\r\nGET\r\n$6\r\n\0\r\n\xff\x80$\r\n`;
    const key = Uint8Array.from([0, 13, 10, 0xff, 0x80, 0x24]);
    assert.deepEqual(P.encodeRequest(['GET', key]), vec(codecC, bin));
    assert.throws(() => P.encodeRequest([]), P.ProtoError);
    assert.throws(() => P.encodeRequest(new Array(17).fill('x')), P.ProtoError);
    assert.equal(P.encodeRequest(new Array(16).fill('x')).length, 4 + 16 * 7 + 1);
});

test('answers decode as core/codec reads them', () => {
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`+OK\r\n`)), { type: 'ok', text: 'OK' });
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`:-1\r\n`)), { type: 'int', value: -1 });
    assert.deepEqual(P.decodeReply(text(':1\r\n')), { type: 'int', value: 1 });
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`$-1\r\n`)), { type: 'null' });
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`$0\r\n\r\n`)), { type: 'bulk', value: new Uint8Array(0) });
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`$3\r\na\r\n\r\n`)), { type: 'bulk', value: text('a\r\n') });
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`$9\r\ntestvalue\r\n`)), {
        type: 'bulk',
        value: text('testvalue'),
    });
    // An error's text is the protocol's own, after "-ERR ".
    assert.deepEqual(P.decodeReply(vec(codecC, String.raw`-ERR syntax error\r\n`)), {
        type: 'error',
        text: 'syntax error',
    });
    for (const lit of [
        String.raw`-ERR not authorized\r\n`,
        String.raw`-ERR a fencing token is required for this request\r\n`,
        String.raw`-ERR the quota has been exceeded\r\n`,
        String.raw`-ERR invalid continuation token\r\n`,
    ])
        assert.equal(P.decodeReply(vec(codecC, lit)).text, lit.slice(5, -4));
    const incomplete = (lit) => assert.throws(() => P.decodeReply(vec(codecC, lit)), { code: 'incomplete' });
    const syntax = (lit) => assert.throws(() => P.decodeReply(vec(codecC, lit)), { code: 'syntax' });
    incomplete(String.raw`$3\r\nab`);
    syntax(String.raw`+OK\r\nx`);
    syntax(String.raw`$-2\r\n`);
    syntax(String.raw`*1\r\n`);
});

test('notifications decode, and every proper prefix is incomplete', () => {
    const set = String.raw`*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nhi\r\n`;
    assert.deepEqual(P.decodeNotify(vec(codecC, set)), { kind: 'SET', value: text('hi') });
    const crlf = String.raw`*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nv\r\n\r\n`;
    assert.deepEqual(P.decodeNotify(vec(codecC, crlf)), { kind: 'SET', value: text('v\r\n') });
    const del = String.raw`*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n`;
    assert.deepEqual(P.decodeNotify(vec(codecC, del)), { kind: 'DELETE' });
    assert.throws(() => P.decodeNotify(vec(codecC, String.raw`*2\r\n$6\r\nNOTIFY\r\n$3\r\nDEL\r\n`)), {
        code: 'syntax',
    });
    assert.throws(() => P.decodeNotify(vec(codecC, String.raw`*2\r\n$6\r\nNOTIFX\r\n$6\r\nDELETE\r\n`)), {
        code: 'syntax',
    });
    assert.throws(() => P.decodeNotify(vec(codecC, String.raw`*2\r\n$6\r\nNOTIFY\r\n%6\r\nDELETE\r\n`)), {
        code: 'syntax',
    });
    const whole = cbytes(set);
    for (let k = 0; k < whole.length; k++)
        assert.throws(() => P.decodeNotify(whole.subarray(0, k)), { code: 'incomplete' }, `prefix of ${k} bytes`);
});

test('notification topics as PROTOCOL.md §1.1 writes them', () => {
    const topic =
        'clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/636C69656E742D696431/command/notify/534F4D454B4559';
    assert.equal(P.notifyTopic('client-id1', 'SOMEKEY'), topic);
    const parsed = P.parseNotifyTopic(topic);
    assert.deepEqual(parsed, { clientId: text('client-id1'), key: text('SOMEKEY') });
    assert.equal(P.parseNotifyTopic(topic.replace('command/notify', 'command/x')), null);
    assert.equal(P.parseNotifyTopic(topic + 'Z'), null); // odd hex
    assert.equal(P.parseNotifyTopic(topic.replace('534F', '5G4F')), null);
    assert.equal(P.parseNotifyTopic('clients/other/x'), null);
    assert.equal(P.parseNotifyTopic(topic.replace(/[0-9A-F]+$/, '')), null); // empty key
    // Binary keys: upper-case hex of the bytes.
    assert.equal(P.hex(Uint8Array.from([0, 0xff, 0x0a])), '00FF0A');
    assert.deepEqual(P.unhex('00ff0A'), Uint8Array.from([0, 0xff, 0x0a]));
});

test('SCAN pages as the client library reads them', () => {
    const last = String.raw`*1\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n`;
    assert.deepEqual(P.decodeScan(vec(answerC, last)), { keys: [text('key1'), text('key2')], token: null });
    const more = String.raw`*2\r\n*1\r\n$3\r\n\xc3\xa9\x00\r\n$3\r\n\x00\xffx\r\n`;
    assert.deepEqual(P.decodeScan(vec(answerC, more)), {
        keys: [Uint8Array.from([0xc3, 0xa9, 0])],
        token: Uint8Array.from([0, 0xff, 0x78]),
    });
    assert.deepEqual(P.decodeScan(vec(answerC, String.raw`*2\r\n*0\r\n$0\r\n\r\n`)), {
        keys: [],
        token: new Uint8Array(0),
    });
    assert.deepEqual(P.decodeScan(vec(answerC, String.raw`*1\r\n*0\r\n`)), { keys: [], token: null });
    assert.deepEqual(P.decodeScan(vec(answerC, String.raw`*1\r\n*1\r\n$0\r\n\r\n`)), {
        keys: [new Uint8Array(0)],
        token: null,
    });
    assert.deepEqual(P.decodeScan(vec(answerC, String.raw`-ERR invalid continuation token\r\n`)), {
        error: 'invalid continuation token',
    });
    const bad = [
        String.raw`*0\r\n`,
        String.raw`*3\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\n1;1;\r\n$5\r\nextra\r\n`,
        String.raw`*1\r\n*a\r\n`,
        String.raw`*1\r\n$0\r\n\r\n`,
        String.raw`*1\r\n*1\r\n$4\r\nkey\r\n`,
        String.raw`*2\r\n*0\r\n`,
        String.raw`*1\r\n*0\r\ntrailing`,
        String.raw`*1\r\n*-1\r\n`,
        String.raw`*1\r\n*1\r\n$-1\r\n`,
        String.raw`*1\r\n*1\r\n+key\r\n`,
        String.raw`*2\r\n*0\r\n:1\r\n`,
        String.raw`*1\r\n*2\r\n$1\r\na\r\n`,
        String.raw`*1\r\n*999999999999999999\r\n`,
        String.raw`*1\r\n*9999999999999999999\r\n`,
        String.raw`*1\r\n*1\r\n$1\r\naXY`,
        String.raw`*1\r\n*0\n`,
        String.raw`*+1\r\n*0\r\n`,
        '',
        '*',
    ];
    for (const lit of bad) assert.throws(() => P.decodeScan(vec(answerC, lit)), P.ProtoError, `accepted "${lit}"`);
    const good = cbytes(String.raw`*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$3\r\n\x00\xffx\r\n`);
    assert.ok(answerC.includes(String.raw`"*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$3\r\n\x00\xffx\r\n"`));
    for (let n = 0; n < good.length; n++)
        assert.throws(() => P.decodeScan(good.subarray(0, n)), P.ProtoError, `prefix of ${n} bytes`);
    assert.equal(P.decodeScan(good).keys.length, 2);
});

test('HLC stamps parse and format as core/hlc does', () => {
    const round = (lit, want) => {
        vec(hlcC, lit);
        const h = P.parseHlc(lit);
        assert.ok(h, lit);
        assert.equal(P.formatHlc(h), want);
        return h;
    };
    let h = round('1696374425000:1:StateStore', '1696374425000:1:StateStore');
    assert.deepEqual(h, { wall: 1696374425000n, counter: 1, node: 'StateStore' });
    h = round(
        '001696374425000:00007:5e2e8a1e-7b38-4c7f-9f3c-0c8a0a2f2b1d',
        '1696374425000:7:5e2e8a1e-7b38-4c7f-9f3c-0c8a0a2f2b1d',
    );
    assert.equal(h.counter, 7);
    round('0:0:n', '0:0:n');
    h = round('18446744073709551615:4294967295:x', '18446744073709551615:4294967295:x');
    assert.equal(h.wall, 18446744073709551615n);
    assert.equal(P.parseHlc('5:6:').node, '');
    const bad = [
        '',
        '1',
        '1:2',
        '1:2:n:x',
        ':2:n',
        '1::n',
        'a:2:n',
        '1:b:n',
        '-1:2:n',
        '1:-2:n',
        '+1:2:n',
        '1 :2:n',
        '1:2 :n',
        '0x1:2:n',
        '1.5:2:n',
        '18446744073709551616:0:n',
        '1:4294967296:n',
        '99999999999999999999999:0:n',
        '0000000000000000000000001:0:n',
    ];
    for (const lit of bad) {
        vec(hlcC, lit);
        assert.equal(P.parseHlc(lit), null, `accepted "${lit}"`);
    }
    assert.equal(P.parseHlc('1:2:' + 'n'.repeat(256)), null);
    assert.ok(P.parseHlc('1:2:' + 'n'.repeat(255)));
});

test('HLC order: wall clock, counter, node id as bytes', () => {
    const h = (s) => P.parseHlc(s);
    // The order of tests/unit/test_hlc.c's hlc_compare.
    assert.equal(P.compareHlc(h('10:5:B'), h('11:0:A')), -1);
    assert.equal(P.compareHlc(h('10:5:B'), h('10:6:A')), -1);
    assert.equal(P.compareHlc(h('10:5:B'), h('10:5:C')), -1);
    assert.equal(P.compareHlc(h('10:5:B'), h('10:5:BB')), -1);
    assert.equal(P.compareHlc(h('10:5:B'), h('000010:00005:B')), 0);
    assert.equal(P.compareHlc(h('11:0:A'), h('10:5:B')), 1);
});

test("the console's clock is newer than all it gave and merged", () => {
    const c = new P.HlcClock('console-1');
    assert.equal(c.next(1000), '1000:0:console-1');
    assert.equal(c.next(1000), '1000:1:console-1');
    assert.equal(c.next(999), '1000:2:console-1'); // a clock going back does not
    c.merge('5000:7:StateStore');
    assert.equal(c.next(1001), '5000:8:console-1');
    c.merge('not a stamp');
    assert.equal(c.next(6000), '6000:0:console-1');
    // A stamp more than 60 s ahead is not taken in (core/hlc's client does
    // not either): every later __ts would be refused as too far ahead.
    c.merge('70000:0:StateStore', 6000);
    assert.equal(c.next(6001), '6001:0:console-1');
    c.merge('66000:0:StateStore', 6001);
    assert.equal(c.next(6002), '66000:1:console-1');
});

test('administrative key lines', () => {
    assert.deepEqual(P.parseKeyLine('key 6C6F636B 1 1795439146584:0:StateStore 59907 1700000000000:3:me'), {
        key: text('lock'),
        size: 1,
        version: '1795439146584:0:StateStore',
        ttlMs: 59907,
        ft: '1700000000000:3:me',
    });
    assert.deepEqual(P.parseKeyLine('key 00FF 2 1:0:N - -'), {
        key: Uint8Array.from([0, 255]),
        size: 2,
        version: '1:0:N',
        ttlMs: null,
        ft: null,
    });
    // A version's or fencing token's node id may hold a space, a backslash
    // or a quote: the first two come escaped, and come back as they were.
    const odd = P.parseKeyLine('key 6c6b 1 1796552817515:0:node\\x20one - 1700000000000:1:a\\x20"b\\x5c\\x5cx20');
    assert.equal(odd.version, '1796552817515:0:node one');
    assert.equal(odd.ft, '1700000000000:1:a "b\\\\x20');
    assert.equal(P.parseKeyLine('key 6c6b 1 1796552817515:0:StateStore - 1700000000000:1:a b'), null);
    assert.equal(P.parseKeyLine('key 6c6b 1 1:0:a\\x2 - -'), null);
    assert.equal(P.parseKeyLine('key 6c6b 1 1:0:a\\ - -'), null);
    assert.equal(P.parseKeyLine('absent'), null);
    assert.equal(P.parseKeyLine('key ZZ 2 1:0:N - -'), null);
    assert.equal(P.parseKeyLine('key 00 x 1:0:N - -'), null);
});

test('key labels: no two keys alike, nothing unseen', () => {
    assert.equal(P.label(text('sensors/1'), 4096), 'sensors/1');
    // Controls, a byte that is not UTF-8, a backslash: escaped, so the
    // key \x01abc and the key "0x01616263" differ, and neither reads as the other.
    assert.equal(P.label(Uint8Array.from([1, 0x61, 0x62, 0x63]), 4096), '\\x01abc');
    assert.equal(P.label(text('0x01616263'), 4096), '0x01616263');
    assert.equal(P.label(Uint8Array.from([0x61, 0x0a, 0x62]), 4096), 'a\\x0Ab');
    assert.equal(P.label(Uint8Array.from([0x61, 0x09, 0x62]), 4096), 'a\\x09b');
    assert.equal(P.label(Uint8Array.from([0x61, 0x5c, 0x62]), 4096), 'a\\\\b');
    assert.equal(P.label(Uint8Array.from([0x61, 0xff]), 4096), 'a\\xFF');
    // A right-to-left override (U+202E, 3 bytes) and a zero-width space:
    // each byte shown.
    assert.equal(P.label(text('x\u202Etxt.exe'), 4096), 'x\\xE2\\x80\\xAEtxt.exe');
    assert.equal(P.label(text('a\u200Bb'), 4096), 'a\\xE2\\x80\\x8Bb');
    assert.equal(P.label(text('é'), 4096), 'é');
    // As cli/output.c hides them: the Arabic letter mark, the Mongolian
    // vowel separator, the deprecated format characters U+206A..U+206F.
    assert.equal(P.label(text('a\u061Cy'), 4096), 'a\\xD8\\x9Cy');
    assert.equal(P.label(text('a\u180Ey'), 4096), 'a\\xE1\\xA0\\x8Ey');
    assert.equal(P.label(text('a\u206Ay'), 4096), 'a\\xE2\\x81\\xAAy');
    assert.equal(P.label(text('abcdef'), 3), 'abc…');
});

test('previews: text when it reads as text, else hex', () => {
    assert.equal(P.preview(text('hello'), 10), 'hello');
    assert.equal(P.preview(text('hello world'), 5), 'hello…');
    assert.equal(P.preview(Uint8Array.from([0, 1, 0xff]), 10), '0x0001FF');
    assert.equal(P.preview(Uint8Array.from([0xc3, 0x28]), 10), '0xC328');
    assert.equal(P.preview(text('a\u202Eb'), 10), '0x61E280AE62'); /* unseen: hex */
});

test('JSON indented as written: numbers, strings and duplicate keys kept', () => {
    const text = '{"id": 12345678901234567891, "price": 1.10, "a": 1, "a": 2, "s": "x,{:}\\"", "e": [], "o": {}, "l": [1,[2]]}';
    assert.equal(
        P.indentJson(text),
        '{\n  "id": 12345678901234567891,\n  "price": 1.10,\n  "a": 1,\n  "a": 2,\n  "s": "x,{:}\\"",\n  "e": [],\n  "o": {},\n  "l": [\n    1,\n    [\n      2\n    ]\n  ]\n}',
    );
    // What JSON.stringify would print for plain values.
    const plain = { a: [1, { b: 'c' }], d: null, t: true };
    assert.equal(P.indentJson(JSON.stringify(plain)), JSON.stringify(plain, null, 2));
    assert.equal(P.indentJson(' 5 '), '5');
    assert.equal(P.indentJson('{"a":'), null);
    assert.equal(P.indentJson('[[[1]]]', 2), null);
    assert.equal(P.label(P.bytesOf('a\ufeffb'), 100), 'a\\xEF\\xBB\\xBFb');
    assert.equal(P.textOf(P.bytesOf('\ufeffhello')), '\ufeffhello');
});
