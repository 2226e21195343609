#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# peers.sh: installs what bench/run.sh needs and the peers it measures
# pglock against, where they are missing: apt-get as root, npm into
# bench/node_modules. A peer that cannot be installed is not fatal: one
# row TOOL<TAB>REASON goes to stdout, and the report says "not available".
# Exits non-zero only when the benchmark itself cannot run.
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
updated=0

say() { printf 'bench: %s\n' "$*" >&2; }
missing() { printf '%s\t%s\n' "$1" "$2"; }

# apt_get PKG: install one Debian package; failure is reported, not fatal.
apt_get() {
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		say "$1: not installed, and apt-get needs root"
		return 1
	fi
	if [ "$updated" = 0 ]; then
		say "apt-get update"
		timeout 300 apt-get update -qq >&2 || true
		updated=1
	fi
	say "apt-get install $1"
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq \
	    --no-install-recommends "$1" >&2
}

# need CMD PKG: CMD exists, or PKG is installed and then it does.
need() {
	command -v "$1" >/dev/null && return 0
	apt_get "$2" && command -v "$1" >/dev/null
}

pgbin() {
	find /usr/lib/postgresql -path '*/bin/initdb' 2>/dev/null | sort -V |
	    tail -n 1
}
if [ -z "$(pgbin)" ]; then
	apt_get postgresql || { say "PostgreSQL server: cannot install"; exit 1; }
	# Debian's package starts a cluster of its own: not ours to keep.
	if command -v pg_lsclusters >/dev/null; then
		pg_lsclusters -h | while read -r ver name _; do
			pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true
		done
	fi
fi
need psql postgresql-client || { say "psql: cannot install"; exit 1; }
need python3 python3 || { say "python3: cannot install"; exit 1; }
need flock util-linux || missing flock "util-linux: cannot install"
need gnuplot gnuplot-nox || say "gnuplot not available: no chart"
[ -x /usr/bin/time ] || apt_get time || say "GNU time not available: no peak RSS"

if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
	had_etcd=0
	command -v etcd >/dev/null && had_etcd=1
	if ! { need etcd etcd-server && need etcdctl etcd-client; }; then
		missing "etcdctl lock" "etcd-server/etcd-client: cannot install"
	fi
	# A system etcd the package may have started is not ours to keep.
	if [ "$had_etcd" = 0 ] && command -v systemctl >/dev/null; then
		systemctl stop etcd 2>/dev/null || true
	fi
fi

if [ ! -x "$bench/node_modules/.bin/withlock" ]; then
	if command -v npm >/dev/null || apt_get npm; then
		say "npm install advisory-lock@2"
		timeout 300 npm install --prefix "$bench" --no-save --no-audit \
		    --no-fund --loglevel=error advisory-lock@2 >&2 ||
		    say "npm install advisory-lock@2 failed"
		[ -x "$bench/node_modules/.bin/withlock" ] ||
		    missing withlock "npm advisory-lock@2: install failed"
	else
		missing withlock "npm: cannot install"
	fi
fi
