#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Check `make install`: into a scratch DESTDIR, then look at what landed.
# Only the public headers, static and shared client library (with its
# soname), the man pages, an example config without placeholders, the web
# console, and the examples built against the installed files alone,
# linking the shared library.
# Usage: check-install.sh SCRATCH_DIR   (exit 0 when everything holds)
set -u
dest=$1
prefix=/usr
root=$dest$prefix
rm -rf "$dest"
fail() { echo "install check: $*"; exit 1; }
${MAKE:-make} --no-print-directory install DESTDIR="$dest" PREFIX=$prefix SAN=0 >"$dest.log" 2>&1 ||
    fail "make install failed (see $dest.log)"
headers=$(cd "$root/include/statestore" && ls | tr '\n' ' ')
[ "$headers" = "client.h client_ev.h errors.h leader.h lease.h " ] || fail "headers installed: $headers"
for f in lib/libstatestore-client.a lib/libstatestore-client.so.0 lib/libstatestore-client.so \
         lib/statestore/statestore.so bin/statestore lib/pkgconfig/statestore.pc \
         share/man/man1/statestore.1 share/man/man3/statestore-client.3 share/statestore/examples/mosquitto.conf \
         share/bash-completion/completions/statestore share/statestore/console/index.html \
         share/statestore/console/boot.js share/statestore/console/modules.json \
         share/statestore/console/mqtt.esm.js; do
    [ -e "$root/$f" ] || fail "missing $prefix/$f"
done
[ ! -e "$root/lib/libstatestore-core.a" ] || fail "the plugin's internal library was installed"
conf=$root/share/statestore/examples/mosquitto.conf
! grep -q '@' "$conf" || fail "placeholders left in the example config: $(grep '@' "$conf")"
grep -q "^plugin $prefix/lib/statestore/statestore.so$" "$conf" || fail "the example config's plugin path"
grep -q "^plugin_opt_data_dir /var/lib/statestore$" "$conf" || fail "the example config's data_dir"
# The documented example, against the installed headers and shared library.
cflags=$(PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$root/lib/pkgconfig pkg-config --cflags --libs statestore) ||
    fail "pkg-config cannot read statestore.pc"
cc -std=c11 -o "$dest/example" "$root/share/statestore/examples/client_example.c" $cflags ||
    fail "the example does not build against the installed files"
# The other examples (event loop, leader election) link the shared
# library's exports of those parts.
for e in poll_example leader_example; do
    cc -std=c11 -D_DEFAULT_SOURCE -o "$dest/$e" "$root/share/statestore/examples/$e.c" $cflags ||
        fail "$e does not build against the installed files"
done
# The libev adapter is a header of its own, with libev's.
printf '#include <ev.h>\n#include <statestore/client_ev.h>\nint main(void) { return 0; }\n' > "$dest/ev.c"
cc -std=c11 -Wall -Werror -c -o "$dest/ev.o" "$dest/ev.c" $(PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$root/lib/pkgconfig \
    pkg-config --cflags statestore) || fail "client_ev.h does not compile against the installed files"
readelf -d "$dest/example" | grep -q 'NEEDED.*\[libstatestore-client.so.0\]' ||
    fail "the example does not link the shared library"
LD_LIBRARY_PATH=$root/lib ldd "$dest/example" | grep -q "libstatestore-client.so.0 => $root/lib/" ||
    fail "the example does not find the installed shared library"
echo "install check: headers $headers; shared and static library; example config; example built"
