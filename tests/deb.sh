#!/bin/sh
# SPDX-License-Identifier: ISC
# deb.sh: build the Debian package from the tracked files in a scratch copy,
# lintian it (no error, no warning), install it, take locks with
# /usr/bin/pglock against a throwaway cluster, check the completions are
# where bash, zsh and fish look, then remove it. As root on Debian (make
# deb, CI); it installs what it needs with apt-get. Exit 0 only if all pass.
set -eu
cd "$(dirname "$0")/.."

fail() {
	echo "deb.sh: $*" >&2
	exit 1
}

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "deb.sh: needs root on Debian (apt-get, dpkg)" >&2
	exit 69
fi
# Installing the package would replace, and removing it delete, a pglock
# this script did not put there.
dpkg-query -W -f '${Status}' pglock 2>/dev/null | grep -qx 'install ok installed' &&
	fail "the pglock package is installed already: dpkg -r pglock first"
[ -e /usr/bin/pglock ] && fail "/usr/bin/pglock exists already"

tmp=$(mktemp -d /tmp/pglock-deb.XXXXXX)
chmod 755 "$tmp"	# the cluster runs as postgres, which must reach it
installed=''
holder=
cleanup() {
	rc=$?
	trap - EXIT INT TERM
	[ -z "$holder" ] || kill -KILL -- "-$holder" 2>/dev/null || true
	if [ -e "$tmp/pg/env" ]; then
		timeout 60 tests/pg.sh stop "$tmp/pg" || rc=1
	fi
	if [ -n "$installed" ]; then
		timeout 300 dpkg -r pglock >/dev/null || rc=1
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Tracked files only, as they are now: build products stay out of the
# package and out of the tree (dpkg-buildpackage writes to the parent).
mkdir "$tmp/src"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$tmp/src"

# What the build needs (debian/control), what checks it, and what runs it:
# a cluster for the lock, the three shells for their completions. One apt
# at a time, as tests/deps.sh does.
export DEBIAN_FRONTEND=noninteractive
need=
for p in dpkg-dev debhelper fakeroot lintian postgresql bash-completion \
    zsh fish; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -qx 'install ok installed' ||
		need="$need $p"
done
if [ -n "$need" ] || ! (cd "$tmp/src" && dpkg-checkbuilddeps) 2>/dev/null; then
	echo "deb.sh: installing$need and the build dependencies" >&2
	exec 9>/tmp/pglock-deps.lock
	flock 9
	timeout 600 apt-get update -qq
	# shellcheck disable=SC2086
	[ -z "$need" ] || timeout 900 apt-get install -y -qq \
	    --no-install-recommends $need >/dev/null
	timeout 900 apt-get build-dep -y -qq --no-install-recommends \
	    "$tmp/src" >/dev/null
	exec 9>&-
fi

echo "deb.sh: dpkg-buildpackage -us -uc -b" >&2
(cd "$tmp/src" && timeout 900 dpkg-buildpackage -us -uc -b) \
    >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build failed"; }
version=$(cd "$tmp/src" && dpkg-parsechangelog -S Version)
deb=$tmp/pglock_${version}_$(dpkg --print-architecture).deb
changes=${deb%.deb}.changes
[ -f "$deb" ] || fail "no $deb"

# Every package of the build (the .changes names them): an info tag is
# fine, an error or a warning fails. Lintian says on stderr it runs as root.
echo "deb.sh: lintian" >&2
timeout 600 lintian --fail-on error,warning --display-info "$changes" \
    >"$tmp/lintian.log" 2>&1 || { cat "$tmp/lintian.log"; fail "lintian"; }
grep -v '^running with root privileges' "$tmp/lintian.log" ||
	echo "deb.sh: lintian: no tags" >&2
! grep -q '^[EW]: ' "$tmp/lintian.log" || fail "lintian: errors or warnings"
# An info tag, but the Makefile promises dpkg-buildflags' hardening (the
# fortify one appears when CPPFLAGS is not passed).
! grep -q ' hardening-' "$tmp/lintian.log" || fail "lintian: hardening"

dpkg-deb -f "$deb" Depends | grep -q 'libpq5' ||
	fail "Depends names no libpq5: $(dpkg-deb -f "$deb" Depends)"

echo "deb.sh: dpkg -i" >&2
installed=1
timeout 300 dpkg -i "$deb" >/dev/null 2>&1 ||
	timeout 600 apt-get -f install -y -qq --no-install-recommends >/dev/null
dpkg-query -W -f '${Status}' pglock | grep -qx 'install ok installed' ||
	fail "the package did not install"
for f in /usr/bin/pglock /usr/share/man/man1/pglock.1.gz \
    /usr/share/bash-completion/completions/pglock \
    /usr/share/zsh/vendor-completions/_pglock \
    /usr/share/fish/vendor_completions.d/pglock.fish \
    /usr/share/doc/pglock/copyright /usr/share/doc/pglock/README.md.gz; do
	dpkg -L pglock | grep -qx "$f" || fail "dpkg -L pglock lacks $f"
	[ -f "$f" ] || fail "$f is not installed"
done

v=$(timeout 10 /usr/bin/pglock --version | head -n 1)
case $v in
"pglock $version "* | "pglock $version") ;;
*) fail "pglock --version says '$v', the package is $version" ;;
esac
ldd /usr/bin/pglock | grep -q 'libpq\.so\.5 ' || fail "pglock links no libpq.so.5"
! command -v man >/dev/null || timeout 10 man -w pglock >/dev/null ||
	fail "man -w pglock finds no manual"

# Each shell finds the completion where the package put it, by itself.
echo "deb.sh: completions" >&2
# (The loader returns 124, "completion loaded, try again", on success.)
out=$(timeout 30 bash -c '. /usr/share/bash-completion/bash_completion &&
    { _completion_loader pglock; complete -p pglock; }')
[ "$out" = 'complete -F _pglock pglock' ] || fail "bash: '$out'"
timeout 30 zsh -n /usr/share/zsh/vendor-completions/_pglock || fail "zsh -n"
# shellcheck disable=SC2016 # zsh expands it
timeout 30 zsh -fc 'print -l -- $fpath' | grep -qx /usr/share/zsh/vendor-completions ||
	fail "zsh's fpath lacks /usr/share/zsh/vendor-completions"
timeout 30 fish -n /usr/share/fish/vendor_completions.d/pglock.fish || fail "fish -n"
out=$(HOME=$tmp timeout 30 fish -c 'complete -C "pglock --scope "' | cut -f1 | tr '\n' ' ')
[ "$out" = 'auto session transaction ' ] || fail "fish: --scope offers '$out'"
out=$(HOME=$tmp timeout 30 fish -c 'complete -C "pglock -n k ech"' | cut -f1)
echo "$out" | grep -qx echo || fail "fish: no command after KEY: '$out'"

echo "deb.sh: a lock with /usr/bin/pglock" >&2
timeout 120 tests/pg.sh start "$tmp/pg" >/dev/null
# shellcheck disable=SC1091
. "$tmp/pg/env"
# A new server imposes its lock-delay, the default lease (20 s), on every
# new holder: -n would be told the lock is in it. Wait it out first.
timeout 60 sh -c 'until [ "$(psql -XAtc "SELECT now() - pg_postmaster_start_time() > interval '\''20.5 s'\''")" = t ]; do sleep 0.5; done'
rc=0
timeout 60 /usr/bin/pglock -n deb-key true || rc=$?
[ "$rc" = 0 ] || fail "pglock -n deb-key true exits $rc"

# A holder in its own session, all streams redirected; it says it holds
# the lock by a file, and lets go when another appears.
# shellcheck disable=SC2016 # the holder's sh expands them
setsid timeout 120 /usr/bin/pglock deb-key sh -c \
    ': >"$1/held"; while [ ! -e "$1/release" ]; do sleep 0.05; done' sh "$tmp" \
    </dev/null >"$tmp/holder.log" 2>&1 &
holder=$!
i=0
until [ -e "$tmp/held" ]; do
	i=$((i + 1))
	[ "$i" -le 600 ] || fail "the holder took no lock in 30 s: $(cat "$tmp/holder.log")"
	sleep 0.05
done
rc=0
timeout 60 /usr/bin/pglock -n deb-key true 2>"$tmp/n.err" || rc=$?
[ "$rc" = 1 ] || fail "-n while held exits $rc, not 1: $(cat "$tmp/n.err")"
rc=0
timeout 60 /usr/bin/pglock -n -E 7 deb-key true 2>/dev/null || rc=$?
[ "$rc" = 7 ] || fail "-n -E 7 while held exits $rc, not 7"
: >"$tmp/release"
rc=0
wait "$holder" || rc=$?
[ "$rc" = 0 ] || fail "the holder exits $rc: $(cat "$tmp/holder.log")"
holder=
rc=0
timeout 60 /usr/bin/pglock -n deb-key true || rc=$?
[ "$rc" = 0 ] || fail "-n after the holder let go exits $rc"

echo "deb.sh: dpkg -r" >&2
timeout 300 dpkg -r pglock >/dev/null
installed=
[ ! -e /usr/bin/pglock ] || fail "/usr/bin/pglock is still there after dpkg -r"
[ ! -e /usr/share/bash-completion/completions/pglock ] ||
	fail "the bash completion is still there after dpkg -r"
echo "deb.sh: ok (pglock $version: built, lintian-clean, installed, locked, removed)" >&2
