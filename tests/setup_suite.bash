# SPDX-License-Identifier: ISC
# One throwaway PostgreSQL for the whole bats run (tests/pg.sh), stopped at
# the end even when tests fail.

setup_suite() {
	export PGLOCK_TEST_DIR
	PGLOCK_TEST_DIR=$(mktemp -d /tmp/pglock-test.XXXXXX)
	chmod 755 "$PGLOCK_TEST_DIR"
	"$BATS_TEST_DIRNAME/pg.sh" start "$PGLOCK_TEST_DIR/pg"
	# shellcheck disable=SC1091
	. "$PGLOCK_TEST_DIR/pg/env"
	# A new server imposes its lock-delay, the default lease (20 s), on
	# every new holder's command: tests start once it has passed.
	timeout 60 sh -c 'until [ "$(psql -XAtc "SELECT now() - pg_postmaster_start_time() > interval '\''20.5 s'\''")" = t ]; do sleep 0.5; done'
}

teardown_suite() {
	"$BATS_TEST_DIRNAME/pg.sh" stop "$PGLOCK_TEST_DIR/pg"
	rm -rf "$PGLOCK_TEST_DIR"
}
