#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# The checks of make test-package, run by scripts/test-package.sh inside the
# bootstrapped Debian where the packages were just installed, as a service
# of that system booted with systemd-nspawn (a network namespace with only
# loopback, and a PID namespace of its own).
set -u
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1"; }
check() { # NAME COMMAND...: passes when the command succeeds
    local name=$1
    shift
    if "$@"; then ok "$name"; else fail "$name"; fi
}
expect() { # NAME WANT GOT
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: want '$2', got '$3'"; fi
}

LINK=/etc/mosquitto/conf.d/statestore.conf
CONF=/etc/statestore/mosquitto-plugin.conf
DATA=/var/lib/statestore
PLUGIN_DEB=$(ls /root/debs/mosquitto-statestore_*.deb)

broker_pid() { systemctl show -p MainPID --value mosquitto.service; }
broker_alive() { systemctl is-active --quiet mosquitto.service; }
# Up to 10 s for the store to answer a ping.
wait_store() {
    local i
    for i in $(seq 50); do
        statestore --timeout 500 ping > /dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}
# Up to 10 s for a broker to listen on 1883 (with or without the plugin).
wait_listening() {
    local i
    for i in $(seq 50); do
        grep -q ':075B [0-9A-F:]* 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}
status_of() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | tr -d ' '; }

echo "== installed"
for p in mosquitto-statestore statestore libstatestore-client0 libstatestore-client-dev mosquitto; do
    expect "$p is installed" ii "$(status_of "$p")"
done
expect "the drop-in links to the package's conffile" "$CONF" "$(readlink "$LINK")"
check "the conffile is marked as one" \
    sh -c "dpkg-query -W -f='\${Conffiles}' mosquitto-statestore | grep -q ' $CONF '"
expect "$DATA belongs to mosquitto, mode 0750" "mosquitto:mosquitto 750" "$(stat -c '%U:%G %a' "$DATA")"
version=$(dpkg-query -W -f='${Version}' statestore)
expect "statestore --version is the package's" "statestore $version" "$(statestore --version)"
expect "statestore.pc carries the same version" "Version: $version" \
    "$(grep '^Version:' /usr/lib/*/pkgconfig/statestore.pc)"
check "the shared library's file is named by the version" \
    test -f "$(echo /usr/lib/*/libstatestore-client.so."$version")"
check "the web console is installed" test -s /usr/share/statestore/console/index.html -a \
    -s /usr/share/statestore/console/mqtt.esm.js -a -s /usr/share/statestore/console/modules.json
check "the notices of MQTT.js and of what it bundles go with it" sh -c \
    'n=/usr/share/statestore/console/NOTICES.txt
     grep -q "^mqtt 5" $n && grep -q "^@jspm/core 2" $n && grep -q "^lru-cache .* (ISC)" $n &&
     grep -q "Copyright 2008 Fair Oaks Labs" $n && grep -q "Copyright 2018-2021 Guy Bedford" $n'
check "the drop-in documents the console's listener, off" \
    sh -c "grep -q '^#   http_dir /usr/share/statestore/console$' $CONF && ! grep -q '^http_dir' $CONF"
check "Debian's stock mosquitto.conf is untouched" \
    sh -c "dpkg-query -W -f='\${Conffiles}' mosquitto |
           awk '\$1 == \"/etc/mosquitto/mosquitto.conf\" { print \$2 \"  \" \$1 }' | md5sum -c --quiet"

echo "== mosquitto, started at boot by Debian's mosquitto.service"
# Its stock /etc/mosquitto/mosquitto.conf, run as root, and mosquitto drops
# to its own user.
check "the store answers" wait_store
pid=$(broker_pid)
expect "mosquitto runs as the mosquitto user" mosquitto "$(stat -c %U "/proc/$pid" 2>/dev/null)"
# Debian's stock config has no listener: mosquitto listens on loopback only.
listeners=$(awk '$4 == "0A" { print $2 }' /proc/net/tcp /proc/net/tcp6 | sort | tr '\n' ' ')
expect "it listens on loopback port 1883 only" \
    "00000000000000000000000001000000:075B 0100007F:075B " "$listeners"

echo "== the README's tour, with the installed statestore"
expect "set" OK "$(statestore set greeting hello)"
expect "get" hello "$(statestore get greeting)"
statestore set greeting bye --nx > /dev/null 2>&1
expect "set --nx on a present key exits 2" 2 "$?"
expect "get after the refused set" hello "$(statestore get greeting)"
expect "a value starting with -" OK "$(statestore set temperature -5)"
statestore watch greeting > /tmp/watch.out 2>&1 &
watcher=$!
sleep 1
statestore set greeting hi --px 2000 > /dev/null
sleep 3
kill "$watcher"
wait "$watcher" 2> /dev/null
check "watch printed the SET" grep -q '^[0-9]*:[0-9]*:[^ ]* SET greeting hi$' /tmp/watch.out
check "watch printed the expiry's DELETE" grep -q '^[0-9]*:[0-9]*:[^ ]* DELETE greeting$' /tmp/watch.out
out=$(statestore lock deploy --ttl 5000 -- sh -c 'echo "inside, token $STATESTORE_LOCK_TOKEN"')
check "lock ran the command with a fencing token ($out)" \
    grep -q '^inside, token [0-9][0-9]*:[0-9][0-9]*:' <<< "$out"
statestore set greeting back > /dev/null
expect "del" 1 "$(statestore del greeting)"
check "keys lists what is left" sh -c "statestore keys | grep -q '^temperature  size=2 '"
check "stats names the backend" sh -c "statestore stats | grep -q '^backend  *lmdb$'"
check "ping" sh -c "statestore ping | grep -q '^answered in '"

echo "== reinstalled over a running broker"
for i in $(seq 0 49); do statestore set "key/$i" "value $i" > /dev/null; done
before=$(broker_pid)
dpkg -i "$PLUGIN_DEB" > /tmp/reinstall.log 2>&1
check "dpkg -i of the plugin again" test $? = 0
check "the store answers again" wait_store
after=$(broker_pid)
check "the running broker was restarted ($before, then $after)" test "$before" != "$after"
keys_intact() {
    local i
    [ "$(statestore get temperature)" = -5 ] || return 1
    for i in $(seq 0 49); do
        [ "$(statestore get "key/$i")" = "value $i" ] || return 1
    done
}
check "every key is still there" keys_intact
files=$(dpkg -L mosquitto-statestore)

echo "== apt-get remove"
apt-get remove -y -q mosquitto-statestore > /tmp/remove.log 2>&1
check "apt-get remove" test $? = 0
expect "the package is removed, its configuration kept" rc "$(status_of mosquitto-statestore)"
left=""
for f in $files; do
    [ -d "$f" ] && continue
    [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done
expect "of its files only the conffile is left" " $CONF" "$left"
check "the drop-in link is gone" test ! -e "$LINK" -a ! -L "$LINK"
check "the data is kept" test -s "$DATA/data.mdb"
broker_back() { sleep 0.5; wait_listening && broker_alive; }
check "mosquitto runs again, without the plugin" broker_back
statestore --timeout 1000 ping > /dev/null 2>&1
expect "and the store no longer answers (exit 4)" 4 "$?"

echo "== installed again over the data"
dpkg -i "$PLUGIN_DEB" > /tmp/install-again.log 2>&1
check "dpkg -i" test $? = 0
expect "the drop-in link is back" "$CONF" "$(readlink "$LINK")"
check "the store answers" wait_store
check "every key is still there" keys_intact

echo "== apt-get purge"
apt-get purge -y -q mosquitto-statestore > /tmp/purge.log 2>&1
check "apt-get purge" test $? = 0
expect "the package is gone" "" "$(status_of mosquitto-statestore | grep -v '^un$\|^pn$')"
check "the conffile and its directory are gone" test ! -e "$CONF" -a ! -e /etc/statestore
check "the drop-in link is gone" test ! -e "$LINK" -a ! -L "$LINK"
check "a store that holds keys is kept" test -s "$DATA/data.mdb"
check "purge says where the store was kept" grep -q "the store in $DATA was kept" /tmp/purge.log
systemctl stop mosquitto.service
rm -rf "$DATA"
dpkg -i "$PLUGIN_DEB" > /dev/null 2>&1
check "installed again on a machine without a store" test -d "$DATA"
dpkg --purge mosquitto-statestore > /dev/null 2>&1
check "purge of a store that holds nothing removes its directory" test ! -e "$DATA"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
