#!/bin/sh
# SPDX-License-Identifier: ISC
# deps.sh: make sure what `make demo` (demo), `make check` (check) or
# `make valgrind` (valgrind) needs is installed; on Debian as root, apt-get
# what is missing, else say what.
set -eu
what=${1:-check}
need="pkg-config:pkg-config cc:build-essential pg_config:libpq-dev
psql:postgresql-client runuser:util-linux ss:iproute2"
[ -e /usr/include/openssl/sha.h ] || need="$need missing-ssl:libssl-dev"
[ -e /usr/include/zlib.h ] || need="$need missing-zlib:zlib1g-dev"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
	need="$need missing-initdb:postgresql"
[ "$what" = valgrind ] && need="$need valgrind:valgrind" && what=check
if [ "$what" = check ]; then
	need="$need bats:bats mandoc:mandoc col:bsdextrautils clang:clang
python3:python3 pgbouncer:pgbouncer script:bsdutils strace:strace"
	[ -d /usr/lib/bats/bats-assert ] || need="$need missing-assert:bats-assert"
	[ -d /usr/lib/bats/bats-support ] || need="$need missing-support:bats-support"
	# Debian's python3, which apt's python3-psycopg2 serves (not pyenv's).
	/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
		need="$need missing-psycopg2:python3-psycopg2"
	ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
	    >/dev/null 2>&1 || [ "$(uname -m)" != x86_64 ] ||
		need="$need missing-fuzzer:libclang-rt-14-dev"
fi
pkgs=
for pair in $need; do
	cmd=${pair%%:*} pkg=${pair#*:}
	case $cmd in
	missing-*) pkgs="$pkgs $pkg" ;;
	*) command -v "$cmd" >/dev/null 2>&1 || pkgs="$pkgs $pkg" ;;
	esac
done

# apt_install PKGS: apt-get them as root on Debian; else name them and fail.
apt_install() {
	[ -z "$1" ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "deps.sh: installing$1" >&2
		export DEBIAN_FRONTEND=noninteractive
		# make sanitize and make valgrind may run side by side: one
		# apt at a time.
		exec 9>/tmp/pglock-deps.lock
		flock 9
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $1 >/dev/null
		exec 9>&-
	else
		echo "deps.sh: please install:$1" >&2
		return 69
	fi
}
apt_install "$pkgs" || exit 69
