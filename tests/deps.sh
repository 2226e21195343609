#!/bin/sh
# SPDX-License-Identifier: ISC
# deps.sh [TARGET...]: make sure what `make TARGET` needs is installed, for
# TARGET demo, check (the default), sanitize, valgrind, mutants, lint or ha. As
# root with apt-get (Debian, even a bare debootstrap), install what is
# missing; elsewhere name the packages and exit 69. The README's set-up
# commands and CI (.ci/run) install through here, and nowhere else.
set -eu
[ $# -gt 0 ] || set -- check

# What the build needs, make itself included.
build="make:make pkg-config:pkg-config cc:build-essential pg_config:libpq-dev"
[ -e /usr/include/openssl/sha.h ] || build="$build missing-ssl:libssl-dev"
[ -e /usr/include/zlib.h ] || build="$build missing-zlib:zlib1g-dev"
# The throwaway cluster (tests/pg.sh): initdb, runuser, ss.
cluster="runuser:util-linux ss:iproute2 psql:postgresql-client"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
	cluster="$cluster missing-initdb:postgresql"

# check_needs: what `make check` needs beyond the cluster, by the command
# the tests run (ps, pgrep and pkill in native.bats and signals.bats, ip in
# lost.bats, col for the manual, script and python3 for terminals, faketime
# for a client clock off by minutes (native.bats), the
# example scripts of the manual checked by shellcheck, ...).
check_needs() {
	echo "bats:bats mandoc:mandoc col:bsdextrautils clang:clang
python3:python3 pgbouncer:pgbouncer script:bsdutils strace:strace
ps:procps pgrep:procps pkill:procps ip:iproute2 shellcheck:shellcheck
faketime:faketime promtool:prometheus"
	[ -d /usr/lib/bats/bats-assert ] || echo missing-assert:bats-assert
	[ -d /usr/lib/bats/bats-support ] || echo missing-support:bats-support
	# Debian's python3, which apt's python3-psycopg2 serves (not pyenv's).
	/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
		echo missing-psycopg2:python3-psycopg2
	# Prometheus' own parser reads --status --metrics (operate.bats).
	/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
		echo missing-prometheus:python3-prometheus-client
	# libFuzzer (fuzz/run.sh), and ASan/UBSan's runtime for clang.
	ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
	    >/dev/null 2>&1 || [ "$(uname -m)" != x86_64 ] ||
		echo missing-fuzzer:libclang-rt-14-dev
}

need=$build
for what in "$@"; do
	case $what in
	demo) need="$need $cluster" ;;
	check|sanitize) need="$need $cluster $(check_needs)" ;;
	valgrind) need="$need $cluster $(check_needs) valgrind:valgrind" ;;
	mutants) need="$need $cluster $(check_needs) git:git" ;;
	lint) need="$need mandoc:mandoc clang:clang cppcheck:cppcheck clang-tidy:clang-tidy" ;;
	ha)
		need="$need $cluster patroni:patroni etcd:etcd-server haproxy:haproxy setpriv:util-linux"
		# Patroni's etcd3 client is built on python-etcd's.
		/usr/bin/python3 -c 'import etcd' 2>/dev/null ||
			need="$need missing-pyetcd:python3-etcd"
		;;
	*)
		echo "usage: deps.sh [demo|check|sanitize|valgrind|mutants|lint|ha]..." >&2
		exit 64
		;;
	esac
done

pkgs=
for pair in $need; do
	cmd=${pair%%:*} pkg=${pair#*:}
	case " $pkgs " in *" $pkg "*) continue ;; esac
	case $cmd in
	missing-*) pkgs="$pkgs $pkg" ;;
	*) command -v "$cmd" >/dev/null 2>&1 || pkgs="$pkgs $pkg" ;;
	esac
done
[ -n "$pkgs" ] || exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "deps.sh: please install:$pkgs" >&2
	exit 69
fi
echo "deps.sh: installing$pkgs" >&2
export DEBIAN_FRONTEND=noninteractive
# make sanitize and make valgrind may run side by side: one apt at a time.
exec 9>/tmp/pglock-deps.lock
flock 9
# Another apt or dpkg (unattended-upgrades at boot) holds its lock: wait
# for it, up to five minutes, rather than fail at once. DPkg::Lock::Timeout
# waits for dpkg's lock, which install takes; update takes the package
# lists' lock, which it does not wait for: update is tried again each
# second while that lock is what it fails on (in the C locale, to tell).
wait_lock="-o DPkg::Lock::Timeout=300"
waited=0
# shellcheck disable=SC2086
until out=$(LC_ALL=C apt-get $wait_lock update -qq 2>&1); do
	case $out in
	*"Could not get lock"*) [ "$waited" -lt 300 ] ;;
	*) false ;;
	esac || { printf '%s\n' "$out" >&2; exit 69; }
	[ "$waited" -gt 0 ] || echo "deps.sh: another apt holds the package" \
	    "lists' lock: waiting for it, up to 5 minutes" >&2
	sleep 1
	waited=$((waited + 1))
done
[ -z "$out" ] || printf '%s\n' "$out" >&2
# shellcheck disable=SC2086
apt-get $wait_lock install -y -qq --no-install-recommends $pkgs >/tmp/pglock-deps.log 2>&1 ||
	{ cat /tmp/pglock-deps.log >&2; exit 69; }
