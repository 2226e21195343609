# SPDX-License-Identifier: ISC
# One throwaway PostgreSQL for the whole bats run (tests/pg.sh), stopped at
# the end even when tests fail. With PGLOCK_SHARED_PG (tests/mutants.sh: a
# cluster started once, for every run), a database of this run's own on it
# instead, dropped at the end: each run starts from nothing, and none waits
# out a new server's lock-delay again.

setup_suite() {
	export PGLOCK_TEST_DIR
	PGLOCK_TEST_DIR=$(mktemp -d /tmp/pglock-test.XXXXXX)
	chmod 755 "$PGLOCK_TEST_DIR"
	if [ -n "${PGLOCK_SHARED_PG:-}" ]; then
		mkdir "$PGLOCK_TEST_DIR/pg"
		ln -s "$PGLOCK_SHARED_PG/data" "$PGLOCK_TEST_DIR/pg/data"
		ln -s "$PGLOCK_SHARED_PG/log" "$PGLOCK_TEST_DIR/pg/log"
		{ cat "$PGLOCK_SHARED_PG/env"; echo "export PGDATABASE=${PGLOCK_TEST_DIR##*.}"; } \
		    >"$PGLOCK_TEST_DIR/pg/env"
		# shellcheck disable=SC1091
		. "$PGLOCK_TEST_DIR/pg/env"
		psql -XAtq -d postgres -c "CREATE DATABASE \"$PGDATABASE\""
	else
		"$BATS_TEST_DIRNAME/pg.sh" start "$PGLOCK_TEST_DIR/pg"
		# shellcheck disable=SC1091
		. "$PGLOCK_TEST_DIR/pg/env"
	fi
	# A new server imposes its lock-delay, the default lease (20 s), on
	# every new holder's command: tests start once it has passed.
	timeout 60 sh -c 'until [ "$(psql -XAtc "SELECT now() - pg_postmaster_start_time() > interval '\''20.5 s'\''")" = t ]; do sleep 0.5; done'
}

teardown_suite() {
	if [ -n "${PGLOCK_SHARED_PG:-}" ]; then
		psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS \"$PGDATABASE\" WITH (FORCE)"
	else
		"$BATS_TEST_DIRNAME/pg.sh" stop "$PGLOCK_TEST_DIR/pg"
	fi
	rm -rf "$PGLOCK_TEST_DIR"
}
