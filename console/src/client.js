// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The console's connection: one MQTT 5 client (MQTT.js over WebSockets)
// that sends state store requests and administrative requests, matches
// their answers by correlation data, and hands notifications and $SYS
// figures to whoever listens. It knows nothing of the page.
//
// Each connection is a new MQTT.js client: MQTT.js sends a client's
// unacknowledged QoS 1 PUBLISHes again when it reconnects, even with a
// clean start, so a request the page was told had failed (no answer, the
// connection lost) would run later after all, perhaps over a newer value.
// When a connection is lost, its requests fail ("outcome unknown") and
// the client goes; a new one connects RETRY_MS later.
import mqtt from './mqtt.esm.js';
import * as P from './proto.js';

const TIMEOUT_MS = 10000;
const RETRY_MS = 2000;
const SYS_FILTER = '$SYS/broker/statestore/#';
const SYS_PREFIX = '$SYS/broker/statestore/';

function randomId(bytes) {
    const b = new Uint8Array(bytes);
    crypto.getRandomValues(b);
    return b;
}

export class StoreClient extends EventTarget {
    // Events: 'status' (detail: {state, text}), 'notify' (detail: {key,
    // kind, value, version, at}), 'sys' (detail: {name, value}).
    constructor() {
        super();
        this.mqtt = null;
        this.retry = null; // the timer of the next connection
        this.clientId = 'console-' + P.hex(randomId(6)).toLowerCase();
        this.clock = new P.HlcClock(this.clientId);
        this.pending = new Map(); // hex(correlation data) -> {resolve, reject, timer}
        // Response topics under clients/<client id>/, the pattern an
        // acl_file grants each client (docs/SECURITY.md).
        this.responseTopic = `clients/${this.clientId}/services/statestore/v1/${P.GUID}/command/invoke/response`;
        this.adminResponseTopic = `clients/${this.clientId}/statestore/admin/v1/response`;
    }

    /** Connect to url (ws: or wss:); username and password may be empty. */
    connect(url, username, password) {
        this.close();
        this.open(url, username, password, false);
    }

    // One connection, on a client of its own (see the top of this file).
    open(url, username, password, again) {
        const options = {
            protocolVersion: 5,
            clientId: this.clientId,
            clean: true,
            reconnectPeriod: 0, // a new client instead
            connectTimeout: 5000,
            keepalive: 30,
        };
        if (username) options.username = username;
        if (password) options.password = password;
        const c = mqtt.connect(url, options);
        this.mqtt = c;
        if (again) this.status('reconnecting', `reconnecting to ${url}…`);
        else this.status('connecting', `connecting to ${url}`);
        let lost = false;
        let refused = null;
        const gone = () => {
            if (lost || this.mqtt !== c) return;
            if (refused) {
                // The broker refused these credentials: trying them again
                // every 2 s changes nothing, and would hide why.
                lost = true;
                this.fail('the connection was lost: the outcome is unknown');
                c.end(true);
                this.mqtt = null;
                this.status('error', `${refused}; not retried: check the user and password, then Connect`);
                return;
            }
            lost = true;
            this.fail('the connection was lost: the outcome is unknown');
            c.end(true);
            this.mqtt = null;
            this.status('offline', 'connection lost; reconnecting');
            this.retry = setTimeout(() => {
                this.retry = null;
                this.open(url, username, password, true);
            }, RETRY_MS);
        };
        c.on('connect', () => {
            // Answers, then the figures: each subscription may be refused
            // by the broker's ACL without the other being lost.
            c.subscribe([this.responseTopic, this.adminResponseTopic], { qos: 1 }, (err) => {
                if (err) this.status('error', `could not subscribe to the response topics: ${err.message}`);
                else this.status('connected', `connected to ${url} as ${this.clientId}`);
            });
            c.subscribe(SYS_FILTER, { qos: 0 }, (err, granted) => {
                const refused = err || (granted && granted.some((g) => g.qos >= 0x80));
                this.dispatchEvent(new CustomEvent('sysaccess', { detail: { allowed: !refused } }));
            });
        });
        c.on('close', gone);
        c.on('offline', gone);
        c.on('error', (err) => {
            // CONNACK refusals: bad user name or password (4, 0x86), not
            // authorized (5, 0x87), banned (0x8A), bad authentication method (0x8C).
            if ([4, 5, 0x86, 0x87, 0x8a, 0x8c].includes(err.code)) refused = err.message;
            this.status('error', err.message);
        });
        c.on('message', (topic, payload, packet) => this.onMessage(topic, payload, packet));
    }

    // Every request waiting for its answer fails with text.
    fail(text) {
        for (const [, p] of this.pending) {
            clearTimeout(p.timer);
            p.reject(new Error(text));
        }
        this.pending.clear();
    }

    close() {
        if (this.retry) clearTimeout(this.retry);
        this.retry = null;
        this.fail('disconnected');
        const c = this.mqtt;
        this.mqtt = null; // before end: its close is not a loss
        if (c) c.end(true);
    }

    get connected() {
        return this.mqtt !== null && this.mqtt.connected;
    }

    status(state, text) {
        this.dispatchEvent(new CustomEvent('status', { detail: { state, text } }));
    }

    onMessage(topic, payload, packet) {
        const props = (packet && packet.properties) || {};
        const user = props.userProperties || {};
        const first = (v) => (Array.isArray(v) ? v[0] : v);
        if (topic === this.responseTopic || topic === this.adminResponseTopic) {
            if (!props.correlationData) return;
            const id = P.hex(props.correlationData);
            const p = this.pending.get(id);
            if (!p) return;
            this.pending.delete(id);
            clearTimeout(p.timer);
            const ts = first(user.__ts);
            if (ts) this.clock.merge(ts);
            p.resolve({ payload: new Uint8Array(payload), version: ts || null, status: first(user.__stat) || null });
            return;
        }
        if (topic.startsWith(SYS_PREFIX)) {
            const name = topic.slice(SYS_PREFIX.length);
            this.dispatchEvent(new CustomEvent('sys', { detail: { name, value: P.textOf(payload) } }));
            return;
        }
        const t = P.parseNotifyTopic(topic);
        if (!t) return;
        let n;
        try {
            n = P.decodeNotify(new Uint8Array(payload));
        } catch {
            return; // not a notification of ours: nothing to show
        }
        const version = first(user.__ts) || null;
        this.dispatchEvent(
            new CustomEvent('notify', { detail: { key: t.key, kind: n.kind, value: n.value || null, version, at: Date.now() } }),
        );
    }

    // Publish payload on topic with a response topic and fresh correlation
    // data; resolves with the answer or rejects after TIMEOUT_MS.
    invoke(topic, responseTopic, payload, userProperties) {
        if (!this.connected) return Promise.reject(new Error('not connected'));
        const corr = randomId(16);
        const id = P.hex(corr);
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                this.pending.delete(id);
                // Unanswered, it may still run while this connection lasts
                // (never after: see the top of this file).
                reject(new Error('no answer within 10 s: the outcome is unknown'));
            }, TIMEOUT_MS);
            this.pending.set(id, { resolve, reject, timer });
            const properties = { responseTopic, correlationData: corr };
            // An empty user property list makes MQTT.js write no packet at all.
            if (userProperties && Object.keys(userProperties).length) properties.userProperties = userProperties;
            this.mqtt.publish(topic, payload, { qos: 1, properties }, (err) => {
                if (!err) return;
                clearTimeout(timer);
                this.pending.delete(id);
                reject(err);
            });
        });
    }

    /**
     * A state store request; args are strings or bytes. opts.ft adds a
     * fencing token. Resolves with { reply (decodeReply's), version, raw }.
     */
    async request(args, opts = {}) {
        const user = { __ts: this.clock.next(Date.now()), __protVer: '1.0' };
        if (opts.ft) user.__ft = opts.ft;
        const a = await this.invoke(P.REQUEST_TOPIC, this.responseTopic, P.encodeRequest(args), user);
        if (a.status !== '200') {
            const text = P.textOf(a.payload);
            return { reply: { type: 'error', text: `status ${a.status}: ${text}` }, version: null, raw: a.payload };
        }
        const reply = String(args[0]).toUpperCase() === 'SCAN' ? P.decodeScan(a.payload) : P.decodeReply(a.payload);
        return { reply, version: a.version, raw: a.payload };
    }

    /** An administrative request (KEYS, INSPECT, WATCH): its text answer. */
    async admin(args) {
        const a = await this.invoke(P.ADMIN_TOPIC, this.adminResponseTopic, P.encodeRequest(args), null);
        return P.textOf(a.payload);
    }
}
