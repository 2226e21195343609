#!/bin/sh
# SPDX-License-Identifier: ISC
# libpq-link.sh [auto|static|shared]: print the compiler arguments that
# link pglock with libpq, libcrypto and zlib.
#
# libpq.so pulls in libldap, and with it GnuTLS and nine more libraries,
# for one rarely used feature (LDAP lookups in pg_service.conf); loading
# them costs about 1.6 ms of a 7.5 ms run. static links libpq.a, the rest
# of libpq.so's libraries by their full paths, and lib/ldap.c in place of
# libldap: it loads the real one on first use. auto (the default) is
# static when libpq.a and the server-dev package's libpgcommon_shlib.a and
# libpgport_shlib.a are installed, else shared.
set -eu
mode=${1:-auto}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}

shared() {
	$PKG_CONFIG --libs libpq libcrypto zlib 2>/dev/null ||
		echo "-L$(pg_config --libdir) -lpq -lcrypto -lz"
}

libdir=$(pg_config --libdir)
pkglibdir=$(pg_config --pkglibdir)
so=$libdir/libpq.so
have_static() {
	[ -f "$libdir/libpq.a" ] && [ -f "$pkglibdir/libpgcommon_shlib.a" ] &&
	    [ -f "$pkglibdir/libpgport_shlib.a" ] && [ -e "$so" ]
}

case $mode in
shared) shared; exit 0 ;;
auto) have_static || { shared; exit 0; } ;;
static)
	have_static || {
		echo "libpq-link.sh: no static libpq: install libpq-dev and" \
		    "postgresql-server-dev-$(pg_config --version |
		    sed 's/^PostgreSQL \([0-9]*\).*/\1/')" >&2
		exit 69
	} ;;
*) echo "libpq-link.sh: LIBPQ must be auto, static or shared" >&2; exit 64 ;;
esac

# libpq.so's own libraries, by full path, except libldap and liblber.
args="$libdir/libpq.a $pkglibdir/libpgcommon_shlib.a $pkglibdir/libpgport_shlib.a"
paths=$(ldd "$so")
for lib in $(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }'); do
	case $lib in
	libldap*) args="$args -DPGLOCK_LDAP_SO=\"$lib\" lib/ldap.c" ;;
	liblber*|libc.so.*) ;;
	*)
		path=$(echo "$paths" | awk -v l="$lib" '$1 == l { print $3 }')
		[ -n "$path" ] || { echo "libpq-link.sh: $lib not found" >&2; exit 69; }
		args="$args $path"
		;;
	esac
done
echo "$args $($PKG_CONFIG --libs libcrypto zlib 2>/dev/null || echo -lcrypto -lz) -lm"
