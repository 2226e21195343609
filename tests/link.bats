#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# How pglock links libpq (lib/libpq-link.sh): statically where it can,
# without libldap, which lib/ldap.c loads for an ldap:// service entry.

load helper

# Is the pglock under test linked against a static libpq? The Makefile
# keeps the link arguments it used in build/libpq.link.
static_libpq() {
	grep -q 'libpq\.a' "$BATS_TEST_DIRNAME/../build/libpq.link"
}

# ldap_service: a fake LDAP server whose entry names the test cluster,
# and a pg_service.conf whose service "viapldap" points at it.
ldap_service() {
	bg ldapd timeout 60 "$PYTHON" "$BATS_TEST_DIRNAME/ldapd.py" \
	    "$BATS_TEST_TMPDIR/ldap.port" \
	    "host=$PGHOST port=$PGPORT dbname=postgres application_name=via-ldap"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/ldap.port"
	printf '[vialdap]\nldap://127.0.0.1:%s/dc=pglock?description?one?(cn=pglock)\n' \
	    "$(cat "$BATS_TEST_TMPDIR/ldap.port")" >"$BATS_TEST_TMPDIR/services"
}

@test "an ldap:// entry in pg_service.conf is looked up, and the lock taken where it says" {
	ldap_service
	# No PGHOST or PGPORT: only the LDAP entry can name the cluster.
	run -0 env -u PGHOST -u PGPORT PGSERVICEFILE="$BATS_TEST_TMPDIR/services" \
	    timeout 20 "$PGLOCK" -d service=vialdap ldap-key \
	    psql -h "$PGHOST" -p "$PGPORT" -XAtc \
	    "SELECT application_name FROM pg_stat_activity a JOIN pg_locks l USING (pid)
	     WHERE l.locktype = 'advisory' AND l.granted"
	assert_output via-ldap
}

@test "a libldap that cannot be loaded is a connection error, exit 69" {
	static_libpq || skip "pglock links libpq.so, which loads libldap at start"
	ldap_service
	mkdir "$BATS_TEST_TMPDIR/lib"
	echo 'not a library' >"$BATS_TEST_TMPDIR/lib/$(
	    objdump -p "$(pg_config --libdir)/libpq.so" |
	    awk '$1 == "NEEDED" && $2 ~ /^libldap/ { print $2 }')"
	run -69 --separate-stderr env -u PGHOST -u PGPORT \
	    LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/lib" \
	    PGSERVICEFILE="$BATS_TEST_TMPDIR/services" \
	    timeout 20 "$PGLOCK" -d service=vialdap ldap-key true
	assert_output ''
	[ "$stderr" = "pglock: could not create LDAP structure" ]
}

@test "pglock starts without libldap and GnuTLS when libpq is static, with them when not" {
	bg holder pglock maps-key sleep 30
	wait_until 10 held "$(sha_id maps-key)"
	# libcrypto, which pglock always maps, shows the look works.
	maps=$(grep -Eo '/[^ ]*lib(crypto|ldap|gnutls|pq)[^ /]*$' "/proc/$(bgpid holder)/maps" |
	    sed 's|.*/||; s|\.so.*||' | sort -u | tr '\n' ' ')
	if static_libpq; then
		[ "$maps" = "libcrypto " ]
	else
		[ "$maps" = "libcrypto libgnutls libldap-2.5 libpq " ] ||
		    [ "$maps" = "libcrypto libgnutls libldap libpq " ]
	fi
}
