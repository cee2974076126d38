#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# make test-package: the Debian packages of build/deb installed into a
# freshly bootstrapped Debian bookworm, and tried there the way a user
# would: apt-get install, mosquitto run by Debian's own service under
# systemd, the README's tour with the installed tool, a reinstall over the
# data, remove, and purge (scripts/test-package-inside.sh).
#
# The bootstrapped tree (debootstrap --variant=minbase, with systemd) is
# made once and kept as build/pkgtest/bookworm.tar; every run unpacks a
# fresh copy. apt-get reaches Debian's archive only to install the
# packages' dependencies, in a chroot where no service may start. Then the
# tree boots with systemd-nspawn --private-network: a network namespace
# with only a loopback interface (port 1883 is the test's own) and a PID
# namespace, so that every process of the test ends when it powers off.
#
# Needs root (debootstrap, chroot, namespaces). Prints one line per check
# and ends with "N passed, N failed".
set -u
top=$(pwd)
work=$top/build/pkgtest
cache=$work/bookworm.tar
boot_timeout=${PKGTEST_TIMEOUT:-300}
root=$work/root
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
start=$(date +%s)

if [ "$(id -u)" != 0 ]; then
    echo "make test-package needs root (debootstrap, chroot, namespaces)" >&2
    exit 1
fi
scripts/deps.sh debootstrap systemd-container util-linux tar || exit 1

debs=$(ls "$top"/build/deb/*.deb 2>/dev/null)
[ -n "$debs" ] || { echo "no packages in build/deb: run make deb" >&2; exit 1; }

mkdir -p "$work"
if [ ! -f "$cache" ]; then
    echo "bootstrapping Debian bookworm (minbase, with systemd) from $mirror, once"
    rm -rf "$work/boot"
    if ! debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$work/boot" "$mirror" \
            > "$work/debootstrap.log" 2>&1; then
        tail -20 "$work/debootstrap.log" >&2
        echo "debootstrap failed (the whole log: $work/debootstrap.log)" >&2
        exit 1
    fi
    tar -C "$work/boot" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
    rm -rf "$work/boot"
fi
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$cache"
mkdir -p "$root/root/debs"
cp $debs "$root/root/debs/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# What Debian's installer writes and debootstrap does not: without it
# "localhost" (the tool's default host) does not resolve.
[ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
    > "$root/etc/hosts"
cp "$top/scripts/test-package-inside.sh" "$root/root/inside.sh"

# A service started by a maintainer script during the install would run on
# the machine's own network: none may start then. (Debian's way for
# chroots: policy-rc.d; the tour sets its own later.)
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"

# Every step in the chroot runs with /proc of its own, and the mount goes
# with the namespace.
in_root() {
    unshare --mount --propagation private -- /bin/sh -c \
        'mount -t proc proc "$0/proc" && exec chroot "$0" /usr/bin/env -i \
         PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
         DEBIAN_FRONTEND=noninteractive "$@"' "$root" "$@"
}

echo "installing the packages with apt-get (mosquitto from Debian)"
if ! in_root sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends /root/debs/*.deb' \
        > "$work/install.log" 2>&1; then
    tail -30 "$work/install.log" >&2
    echo "apt-get install failed (the whole log: $work/install.log)" >&2
    exit 1
fi

# The rest needs no network. The checks run as a service of the booted
# system, after mosquitto's, and power it off when they end.
rm -f "$root/usr/sbin/policy-rc.d"
cat > "$root/etc/systemd/system/package-test.service" <<'EOF2'
[Unit]
Description=statestore package test
After=mosquitto.service
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/bin/bash -c '/bin/bash /root/inside.sh > /root/result.log 2>&1; echo $? > /root/result.rc'
EOF2
ln -s /etc/systemd/system/package-test.service "$root/etc/systemd/system/multi-user.target.wants/"
echo "booting it with systemd-nspawn --private-network (at most $boot_timeout s)"
timeout "$boot_timeout" systemd-nspawn -q -D "$root" --private-network --register=no --keep-unit -b \
    > "$work/console.log" 2>&1 < /dev/null
if [ ! -f "$root/root/result.rc" ]; then
    tail -30 "$work/console.log" >&2
    echo "the booted system ended without a result (its console: $work/console.log)" >&2
    exit 1
fi
cp "$root/root/result.log" "$work/result.log"
cat "$work/result.log"
rc=$(cat "$root/root/result.rc")
echo "make test-package: $(( $(date +%s) - start )) s"
exit "$rc"
