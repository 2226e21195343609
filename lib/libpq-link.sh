#!/bin/sh
# SPDX-License-Identifier: ISC
# libpq-link.sh [auto|static|shared]: print the compiler arguments that
# link pglock with libpq, libcrypto and zlib.
# libpq-link.sh package: print the Debian package that static needs.
#
# libpq.so pulls in libldap, and with it GnuTLS and ten more libraries,
# for one rarely used feature (LDAP lookups in pg_service.conf); loading
# them costs about 1.6 ms of every run. static links libpq.a, the rest
# of libpq.so's libraries by their full paths, and lib/ldap.c in place of
# libldap: it loads the real one on first use. auto (the default) is
# static when libpq.a and the libpgcommon_shlib.a and libpgport_shlib.a of
# libpq's major version (its server-dev package) are installed, else shared.
set -eu
mode=${1:-auto}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}

say() { echo "libpq-link.sh: $*" >&2; }

shared() {
	$PKG_CONFIG --libs libpq libcrypto zlib 2>/dev/null ||
		echo "-L$(pg_config --libdir) -lpq -lcrypto -lz"
}

# The major version pg_config reports: on Debian, its wrapper's, that of
# the newest server-dev package installed.
pg_config_major() {
	pg_config --version 2>/dev/null | sed 's/^PostgreSQL \([0-9]*\).*/\1/'
}

# libpq's major version: libpq-dev's own, from libpq.pc.
major() {
	if v=$($PKG_CONFIG --modversion libpq 2>/dev/null); then
		echo "${v%%.*}"
	else
		pg_config_major
	fi
}

# Set libdir and helpers, or fail with the reason in why.
find_static() {
	why="needs pkg-config or pg_config, objdump and ldd"
	command -v objdump >/dev/null && command -v ldd >/dev/null || return 1
	m=$(major) || return 1
	libdir=$($PKG_CONFIG --variable=libdir libpq 2>/dev/null) ||
		libdir=$(pg_config --libdir) || return 1
	helpers=/usr/lib/postgresql/$m/lib
	if [ ! -f "$helpers/libpgcommon_shlib.a" ] &&
	    [ "$(pg_config_major)" = "$m" ]; then
		helpers=$(pg_config --pkglibdir)
	fi
	why="needs $libdir/libpq.a (libpq-dev) and libpgcommon_shlib.a and"
	why="$why libpgport_shlib.a of PostgreSQL $m (postgresql-server-dev-$m)"
	[ -f "$libdir/libpq.a" ] && [ -f "$libdir/libpq.so" ] &&
	    [ -f "$helpers/libpgcommon_shlib.a" ] &&
	    [ -f "$helpers/libpgport_shlib.a" ]
}

case $mode in
package)
	m=$(major) && [ -n "$m" ] || { say "libpq-dev is not installed"; exit 69; }
	echo "postgresql-server-dev-$m"; exit 0 ;;
shared) shared; exit 0 ;;
auto) find_static || { shared; exit 0; } ;;
static) find_static || { say "static $why"; exit 69; } ;;
*) say "LIBPQ must be auto, static or shared"; exit 64 ;;
esac

# libpq.so's own libraries, by full path, except libldap and liblber.
so=$libdir/libpq.so
args="$libdir/libpq.a $helpers/libpgcommon_shlib.a $helpers/libpgport_shlib.a"
needed=$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }')
paths=$(ldd "$so")
[ -n "$needed" ] || { say "objdump lists no libraries for $so"; exit 69; }
for lib in $needed; do
	case $lib in
	libldap*) args="$args -DPGLOCK_LDAP_SO=\"$lib\" lib/ldap.c" ;;
	liblber*|libc.so.*) ;;
	*)
		path=$(echo "$paths" | awk -v l="$lib" '$1 == l { print $3 }')
		[ -f "$path" ] || { say "$lib, which $so needs, not found"; exit 69; }
		args="$args $path"
		;;
	esac
done
echo "$args $($PKG_CONFIG --libs libcrypto zlib 2>/dev/null || echo -lcrypto -lz) -lm"
