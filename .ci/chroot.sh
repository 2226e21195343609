#!/bin/sh
# SPDX-License-Identifier: ISC
# chroot.sh: the README's two set-up commands, verbatim, on a fresh minimal
# Debian 12 (debootstrap --variant=minbase bookworm), as root, in a copy of
# this checkout under /root/pglock, as a new user would clone it. Fails if
# either command fails, if the demo prints an error from the postgres
# account, or if a test skips (CI can run every one). Run as root.
#   .ci/chroot.sh [BASE.tar]   BASE.tar: a minbase tree to start from
#                              instead of debootstrap (to iterate locally)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
root=$(mktemp -d /tmp/pglock-minbase.XXXXXX)
chmod 755 "$root"	# its / (mktemp made it 700)
out=$(mktemp -d /tmp/pglock-minbase-log.XXXXXX)

# Whatever runs inside (a server the tests failed to stop) is stopped,
# then every mount is undone before the tree is removed.
cleanup() {
	set +e
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] &&
			kill -KILL "${p#/proc/}" 2>/dev/null
	done
	sleep 0.2
	awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' \
	    /proc/self/mounts | sort -r | while read -r m; do
		umount -l "$m"
	done
	if awk -v r="$root" '$2 == r || index($2, r "/") == 1 { bad = 1 } END { exit !bad }' \
	    /proc/self/mounts; then
		echo "chroot: mounts left under $root" >&2
	else
		rm -rf "$root"
	fi
	rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# fail WHAT LOG: say what failed, show its log, exit 1.
fail() {
	echo "chroot: $1" >&2
	[ -f "$2" ] && cat "$2"
	exit 1
}

start=$(date +%s)
if [ -n "${1:-}" ]; then
	tar -xf "$1" -C "$root"
else
	command -v debootstrap >/dev/null || {
		echo "chroot: needs debootstrap" >&2
		exit 69
	}
	timeout 900 debootstrap --variant=minbase bookworm "$root" \
	    >"$out/debootstrap.log" 2>&1 &
	wait "$!" || fail "debootstrap failed" "$out/debootstrap.log"
fi
echo "chroot: minbase tree ready after $(( $(date +%s) - start )) s"

# What a booted machine has: / is a mount point (ip netns exec remounts
# below it), /proc, /sys, /dev, /dev/pts, /dev/shm and /run as tmpfs
# (libfaketime's shared memory, under tests/schedule.bats, needs /dev/shm).
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o mode=755 tmpfs "$root/run"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A chroot runs no services: packages (postgresql) install, start nothing.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# This checkout's files, where a new user would clone them.
mkdir -p "$root/root/pglock"
(cd "$top" && git ls-files -z | xargs -0 tar -cf - --ignore-failed-read) |
	tar -xf - -C "$root/root/pglock"

# The README's set-up block: the lines of the first ```sh block after
# "## Set up", run as they read.
awk '/^## Set up/ { s = 1 } s && /^```sh$/ { b = 1; next }
	b && /^```$/ { exit } b' "$top/README.md" >"$out/commands"
[ "$(grep -c . "$out/commands")" -eq 2 ] || {
	echo "chroot: README.md's set-up block should hold two commands:" >&2
	cat "$out/commands" >&2
	exit 1
}
n=0
while IFS= read -r cmd; do
	n=$((n + 1))
	echo "chroot: # $cmd"
	t=$(date +%s)
	timeout 1800 chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
	    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	    /bin/sh -c "cd /root/pglock && $cmd" </dev/null >"$out/$n.log" 2>&1 &
	# A wait, which a TERM interrupts (then the trap stops what runs inside).
	wait "$!" || fail "README command $n failed: $cmd" "$out/$n.log"
	echo "chroot: ok after $(( $(date +%s) - t )) s"
	if grep -n 'Permission denied\|could not change directory' "$out/$n.log"; then
		fail "README command $n printed the errors above" "$out/$n.log"
	fi
	# Every skip must be one CI cannot run: in this chroot there is none.
	if grep -n '# skip' "$out/$n.log"; then
		fail "README command $n skipped tests CI can run" "$out/$n.log"
	fi
done <"$out/commands"
cat "$out/1.log" "$out/2.log"
echo "chroot: README's set-up commands green in $(( $(date +%s) - start )) s"
