// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The console's entry: the connection form, the tabs and the keyboard.
// Credentials go to the broker and nowhere else: they are never stored.
import { StoreClient } from './client.js';
import { KeysView } from './keys.js';
import { LiveView } from './live.js';
import { DashView } from './dash.js';
import { LocksView } from './locks.js';

const $ = (id) => document.getElementById(id);

function defaultUrl() {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    return `${scheme}://${location.host}/mqtt`;
}

const client = new StoreClient();
const ctx = {
    client,
    say(text, isError) {
        const s = $('status');
        s.textContent = text;
        s.className = `status ${isError ? 'error' : client.connected ? 'connected' : ''}`;
    },
    copy(text) {
        navigator.clipboard.writeText(text).then(
            () => ctx.say('copied'),
            () => ctx.say('the browser refused the clipboard', true),
        );
    },
    // A confirmation for destructive actions, answered by keyboard or mouse.
    confirm(text) {
        const d = $('confirm');
        $('confirm-text').textContent = text;
        // Escape closes without a value: it must not find the last one.
        d.returnValue = '';
        d.showModal();
        return new Promise((resolve) => d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true }));
    },
    observe(key) {
        live.observe(key);
    },
};

const keys = new KeysView(ctx);
const live = new LiveView(ctx);
const dash = new DashView(ctx);
const locks = new LocksView(ctx);
const views = { keys: null, live: null, dash, locks };

function showView(name) {
    for (const b of document.querySelectorAll('#tabs button')) b.setAttribute('aria-selected', String(b.dataset.view === name));
    for (const v of Object.keys(views)) $(`view-${v}`).hidden = v !== name;
    for (const [v, view] of Object.entries(views)) if (view) view.show(v === name);
    location.hash = name;
}

client.addEventListener('status', (e) => {
    const { state, text } = e.detail;
    const s = $('status');
    s.textContent = text;
    s.className = `status ${state}`;
    s.dataset.state = state;
    if (state === 'connected' && keys.keys.length === 0) keys.scan($('pattern').value);
});

$('connect').addEventListener('submit', (e) => {
    e.preventDefault();
    const url = $('url').value.trim() || defaultUrl();
    client.connect(url, $('username').value, $('password').value);
    $('clientid').textContent = `client id ${client.clientId}`;
});

for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => showView(b.dataset.view));

// Alt+1..4 switch views; "/" goes to the pattern box from anywhere but a field.
document.addEventListener('keydown', (e) => {
    const names = ['keys', 'live', 'dash', 'locks'];
    if (e.altKey && e.key >= '1' && e.key <= '4') {
        e.preventDefault();
        showView(names[Number(e.key) - 1]);
    } else if (e.key === '/' && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) {
        e.preventDefault();
        showView('keys');
        $('pattern').focus();
        $('pattern').select();
    }
});

$('url').placeholder = defaultUrl();
showView(['keys', 'live', 'dash', 'locks'].includes(location.hash.slice(1)) ? location.hash.slice(1) : 'keys');
// Same-origin brokers are usually open to the page: connect at once
// unless the URL asks to wait (…/index.html?manual) for credentials.
if (!new URLSearchParams(location.search).has('manual')) $('connect').requestSubmit();
else ctx.say('not connected: enter the credentials and Connect');
performance.mark('console-ready');
document.documentElement.dataset.ready = 'true';
