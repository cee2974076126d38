// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// Loads the console's ES modules. Mosquitto's http_dir serves files
// without a Content-Type, and browsers refuse a module script without a
// JavaScript type (classic scripts they sniff). So this classic script
// fetches the modules' text and imports each from a blob: URL of the right
// type, dependencies first, with each `from './name.js'` pointed at the
// blob of that module. Only our own relative imports are rewritten.
//
// The build packs our modules into one file, modules.json ({name: text});
// MQTT.js stays a file of its own. Mosquitto 2.0 answers each HTTP request
// in a few turns of its loop (about 100 ms each) and closes the connection,
// so fewer files load faster.
(function () {
    'use strict';
    // A page of another site could show the console in a frame, hidden
    // or disguised, and lead a user's clicks onto its buttons (a DEL, a
    // SET) with the user's connection (clickjacking). The headers that
    // forbid framing (X-Frame-Options, CSP's frame-ancestors, which a
    // <meta> cannot carry) are not ours to send: Mosquitto's web server
    // sends its own. So the console refuses to run in any frame: nothing
    // loads, nothing connects, and the page says why.
    if (window.top !== window.self) {
        var refuse = function () {
            document.body.textContent = 'The statestore console does not run inside a frame of another page: ' +
                'open it in a window of its own.';
            document.body.className = 'framed';
        };
        if (document.body) refuse();
        else document.addEventListener('DOMContentLoaded', refuse);
        return;
    }
    // Dependencies before the modules that import them.
    var order = ['mqtt.esm.js', 'proto.js', 'client.js', 'chart.js', 'vlist.js', 'keys.js', 'live.js',
        'dash.js', 'locks.js', 'app.js'];
    var urls = {};
    function fail(err) {
        var s = document.getElementById('status');
        if (s) {
            s.textContent = 'the console could not load: ' + err.message;
            s.className = 'status error';
        }
    }
    function get(name, how) {
        return fetch(name).then(function (r) {
            if (!r.ok) throw new Error(name + ': HTTP ' + r.status);
            return r[how]();
        });
    }
    Promise.all([get('mqtt.esm.js', 'text'), get('modules.json', 'json')]).then(function (got) {
        performance.mark('console-fetched');
        var texts = got[1];
        texts['mqtt.esm.js'] = got[0];
        order.forEach(function (name) {
            if (typeof texts[name] !== 'string') throw new Error(name + ' is missing from the build');
            var src = texts[name].replace(/from '\.\/([A-Za-z0-9_.-]+\.js)'/g, function (m, dep) {
                if (!urls[dep]) throw new Error(name + ' imports ' + dep + ' before it is loaded');
                return "from '" + urls[dep] + "'";
            });
            urls[name] = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
        });
        performance.mark('console-blobs');
        return import(urls['app.js']);
    }).catch(fail);
})();
