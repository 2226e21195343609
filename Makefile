# SPDX-License-Identifier: ISC
# pglock: one portable Makefile. `make check` runs every test against a
# throwaway PostgreSQL; `make demo` shows two jobs taking turns.
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
CFLAGS ?= -O2 -g
PKG_CONFIG ?= pkg-config
# Asked for when a recipe runs, not when make starts: on a fresh machine
# tests/deps.sh installs libpq-dev first.
PQ_CFLAGS = `$(PKG_CONFIG) --cflags libpq libcrypto zlib 2>/dev/null || echo -I$$(pg_config --includedir)`
PQ_LIBS = `$(PKG_CONFIG) --libs libpq libcrypto zlib 2>/dev/null || echo -L$$(pg_config --libdir) -lpq -lcrypto -lz`
WARN = -std=c99 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra \
	-Wpedantic -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wcast-qual -Wwrite-strings
SRC = pglock.c inspect.c opts.c out.c run.c lib/arg.c lib/child.c lib/conn.c lib/counter.c lib/delay.c lib/hash.c lib/key.c \
	lib/lease.c lib/lock.c lib/mask.c lib/proof.c lib/query.c lib/runs.c lib/said.c lib/sig.c lib/slots.c lib/table.c lib/tail.c lib/tree.c
HDR = pglock.h inspect.h out.h run.h lib/arg.h lib/child.h lib/clock.h lib/conn.h lib/counter.h lib/delay.h lib/err.h lib/exits.h lib/hash.h lib/key.h lib/lease.h lib/lock.h lib/mask.h lib/proof.h lib/query.h lib/runs.h lib/said.h lib/sig.h lib/slots.h lib/table.h lib/tail.h lib/tree.h
UNIT = tests/unit_arg tests/unit_key tests/unit_clock tests/unit_tail
# BATS_FLAGS=--timing (as CI passes) times each test in the log.
BATS = timeout 1500 bats $(BATS_FLAGS)
FUZZ_CHECK_SECONDS = 15

all: pglock

# Each binary is built twice: here, from one object a source (each depends
# on every header: a change rebuilds only what it touches, as each of
# tests/mutants.sh's mutants does), and under build/san/ for `make
# sanitize`, in one step. Objects do not follow CFLAGS: `make clean` first.
OBJ = $(SRC:.c=.o)
pglock: $(OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJ) $(PQ_LIBS)

$(OBJ): $(HDR)
.c.o:
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) $(PQ_CFLAGS) -c -o $@ $<

build/san/pglock: $(SRC) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) $(PQ_CFLAGS) $(LDFLAGS) -o $@ $(SRC) $(PQ_LIBS)

tests/unit_arg build/san/unit_arg: tests/unit_arg.c lib/arg.c lib/arg.h lib/err.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ tests/unit_arg.c lib/arg.c

tests/unit_tail build/san/unit_tail: tests/unit_tail.c lib/tail.c lib/tail.h lib/err.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ tests/unit_tail.c lib/tail.c

tests/unit_clock build/san/unit_clock: tests/unit_clock.c lib/clock.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ tests/unit_clock.c

# Against the test suite's server (tests/said.bats runs it).
tests/two_sessions build/san/two_sessions: tests/two_sessions.c lib/said.c lib/said.h lib/err.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) $(PQ_CFLAGS) -o $@ tests/two_sessions.c lib/said.c $(PQ_LIBS)

# LD_PRELOAD'd by tests/signals.bats: fork() failing where FAILFORK says.
tests/failfork.so: tests/failfork.c
	$(CC) $(WARN) -shared -fPIC -o $@ tests/failfork.c -ldl

tests/unit_key build/san/unit_key: tests/unit_key.c tests/key_vectors.h lib/key.c lib/hash.c lib/key.h lib/hash.h \
	lib/err.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) $(PQ_CFLAGS) -o $@ tests/unit_key.c lib/key.c lib/hash.c $(PQ_LIBS)

# What each target needs (tests/deps.sh: as root on Debian it installs
# what is missing, elsewhere it names the packages). The README's set-up
# commands run it before make, which a bare Debian lacks.
deps-check deps-demo deps-valgrind deps-mutants deps-lint deps-ha:
	tests/deps.sh $(@:deps-%=%)

check: deps-check pglock $(UNIT) tests/two_sessions tests/failfork.so
	./tests/unit_arg
	./tests/unit_key
	./tests/unit_clock
	./tests/unit_tail
	FUZZ_JOBS=2 fuzz/run.sh $(FUZZ_CHECK_SECONDS)
	mandoc -Tlint -Wwarning man/pglock.1
	tests/lint.sh
	$(BATS) tests

# ASan + UBSan over the unit tests and the whole bats suite, with binaries
# of their own (build/san), so that `make valgrind` can run at the same
# time; any report (logged to tests/.san, as stderr is under test) fails.
SAN = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
SAN_BIN = build/san/pglock build/san/unit_arg build/san/unit_key \
	build/san/unit_clock build/san/unit_tail build/san/two_sessions
$(SAN_BIN): CFLAGS = $(SAN)
sanitize: deps-check $(SAN_BIN) tests/failfork.so
	rm -rf tests/.san && mkdir -p tests/.san
	ASAN_OPTIONS=log_path=$(CURDIR)/tests/.san/asan build/san/unit_arg
	ASAN_OPTIONS=log_path=$(CURDIR)/tests/.san/asan build/san/unit_key
	ASAN_OPTIONS=log_path=$(CURDIR)/tests/.san/asan build/san/unit_clock
	ASAN_OPTIONS=log_path=$(CURDIR)/tests/.san/asan build/san/unit_tail
	PGLOCK=$(CURDIR)/build/san/pglock \
	TWO_SESSIONS=$(CURDIR)/build/san/two_sessions \
	ASAN_OPTIONS=detect_leaks=0:log_path=$(CURDIR)/tests/.san/asan \
	UBSAN_OPTIONS=print_stacktrace=1:log_path=$(CURDIR)/tests/.san/ubsan \
	$(BATS) tests
	@if ls tests/.san/* >/dev/null 2>&1; then cat tests/.san/*; \
	echo "sanitize: reports above"; exit 1; fi

# memcheck over every suite but tests/native.bats (what valgrind cannot
# show: a CPU budget, ps output, a failed execve, a closed fd 1). Under
# valgrind (PGLOCK_VG_DIR set) the concurrency tests run fewer rounds; the
# suite's bound is longer than the others' (about 1,400 s in CI; on a
# slower 2-core machine beside the chroot, near 1,900 s, and past 2,400 s
# with a second suite and a lint beside it).
valgrind: deps-valgrind pglock tests/two_sessions tests/failfork.so
	rm -rf tests/.vg && mkdir -p tests/.vg
	PGLOCK=$(CURDIR)/tests/valgrind.sh PGLOCK_VG_DIR=$(CURDIR)/tests/.vg \
	timeout 3000 bats $(BATS_FLAGS) `ls tests/*.bats | grep -v '/native.bats$$'`
	@if find tests/.vg -type f -size +0 | grep -q .; then \
	cat tests/.vg/*; echo "valgrind: reports above"; exit 1; fi

# Side-by-side benchmarks: bench/run.sh installs its peers, measures into
# bench/results/*.tsv, and bench/report.py writes bench/results.md and the
# chart; then the version counter's (bench/counter.sh) and the fleet's
# (bench/fleet.sh). The floor links libpq.so, as pglock and any libpq
# client do.
bench/floor: bench/floor.c
	$(CC) $(WARN) $(CFLAGS) $(PQ_CFLAGS) $(LDFLAGS) -o $@ bench/floor.c $(PQ_LIBS)

bench/rmw: bench/rmw.c
	$(CC) $(WARN) $(CFLAGS) $(LDFLAGS) -o $@ bench/rmw.c

bench: pglock bench/floor bench/rmw
	bench/run.sh
	bench/counter.sh
	bench/fleet.sh
	bench/once.sh

# pglock across a Patroni cluster (tests/ha.py: etcd, three nodes, HAProxy),
# as the README's HA section reports it; not part of check: about an hour.
ha: deps-ha pglock
	timeout 5400 /usr/bin/python3 tests/ha.py

# Every mutant of tests/mutants.txt must fail the tests that claim its
# promise (tests/mutants.sh); bounded, as CI runs it.
mutants: deps-mutants pglock
	timeout 2400 tests/mutants.sh

# libFuzzer (clang): every parser of user text, 300 s each, two at a time.
fuzz:
	FUZZ_JOBS=2 fuzz/run.sh 300

# Zero findings, and a build that clang's warnings pass too. Disabled: swappable-parameters (noise for C APIs) and
# cert-err33-c (snprintf into buffers sized for their content, writes to
# stderr with nowhere to report; stdout is checked by flush_stdout_or_err).
# variableScope: the house style declares locals at the top.
TIDY_CHECKS = -*,bugprone-*,cert-*,clang-analyzer-*,\
-bugprone-easily-swappable-parameters,-cert-err33-c
lint: deps-lint
	mandoc -Tlint -Wwarning man/pglock.1
	tests/man-render.sh
	clang $(WARN) -Werror -fsyntax-only $(PQ_CFLAGS) $(SRC)
	cppcheck --quiet --error-exitcode=1 --inline-suppr --std=c99 \
	    --enable=warning,style,performance,portability \
	    --suppress=variableScope -I lib $(SRC) fuzz/*.c
	clang-tidy --quiet --warnings-as-errors='*' --checks='$(TIDY_CHECKS)' \
	    $(SRC) fuzz/*.c -- -std=c99 -D_POSIX_C_SOURCE=200809L \
	    -D_DEFAULT_SOURCE $(PQ_CFLAGS)

demo: deps-demo pglock
	tests/demo.sh

# Completions go where each shell looks: bash-completion loads
# share/bash-completion/completions/NAME on demand, fish reads
# share/fish/vendor_completions.d, zsh share/zsh/site-functions (under
# /usr/local on Debian too; the package uses Debian's vendor-completions).
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d

install: pglock
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 755 pglock $(DESTDIR)$(PREFIX)/bin/pglock
	install -m 644 man/pglock.1 $(DESTDIR)$(MANDIR)/man1/pglock.1
	install -m 644 completions/pglock.bash $(DESTDIR)$(BASHCOMPDIR)/pglock
	install -m 644 completions/_pglock $(DESTDIR)$(ZSHCOMPDIR)/_pglock
	install -m 644 completions/pglock.fish $(DESTDIR)$(FISHCOMPDIR)/pglock.fish

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/pglock $(DESTDIR)$(MANDIR)/man1/pglock.1 \
	    $(DESTDIR)$(BASHCOMPDIR)/pglock $(DESTDIR)$(ZSHCOMPDIR)/_pglock \
	    $(DESTDIR)$(FISHCOMPDIR)/pglock.fish

# Build the Debian package in a copy of the tree, lintian it, install it,
# take a lock with /usr/bin/pglock, remove it (as root, on Debian).
deb:
	tests/deb.sh

clean:
	rm -f pglock $(OBJ) $(UNIT) tests/two_sessions tests/failfork.so
	rm -rf build fuzz/bin tests/.san tests/.vg bench/floor bench/rmw

.PHONY: all deps-check deps-demo deps-valgrind deps-mutants deps-lint deps-ha check sanitize valgrind mutants fuzz lint bench ha demo install uninstall deb clean
