#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The documentation is a contract: the manual is lint-clean and every
# example in the man page's EXAMPLES and in the README runs for real.

load helper

MAN=$BATS_TEST_DIRNAME/../man/pglock.1
README=$BATS_TEST_DIRNAME/../README.md

# Run one example line in a scratch directory with stub scripts.
run_example() {
	local dir=$BATS_TEST_TMPDIR/ex
	mkdir -p "$dir"
	for s in report sync deploy reindex read-catalog migrate nightly; do
		printf '#!/bin/sh\necho "%s ran under $PGLOCK_KEY"\n' "$s" >"$dir/$s.sh"
		chmod +x "$dir/$s.sh"
	done
	# "pglock" on PATH runs $PGLOCK, which may be a wrapper (valgrind.sh).
	mkdir -p "$dir/bin"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$PGLOCK" >"$dir/bin/pglock"
	chmod +x "$dir/bin/pglock"
	(cd "$dir" && DATABASE=postgres ENV=staging PATH="$dir/bin:$PATH" \
	    timeout 60 bash -c "$1")
}

# An example that names a stub script must have run it (exit 0 alone
# cannot tell: pglock -n -E 0 exits 0 without running anything).
ran_stub() {
	# Not due yet (--after, and -v says so): the recipe ran nothing, rightly.
	[[ $1 == *--after* && $output == *": not due until "* ]] && return 0
	if [[ "$1" =~ \./([a-z-]+)\.sh ]]; then
		[[ "$output" == *"${BASH_REMATCH[1]} ran under "* ]] || { echo "$1: the command did not run"; false; }
	fi
}

@test "the man page renders as man shows it: no option with three dashes, no nested or unclosed quotes" {
	run -0 "$BATS_TEST_DIRNAME/man-render.sh"
	assert_output ''
}

@test "mandoc -Tlint -Wwarning reports nothing" {
	run -0 mandoc -Tlint -Wwarning "$MAN"
	assert_output ''
}

@test "every man page example runs and exits 0" {
	n=0
	while IFS= read -r ex; do
		run -0 run_example "$ex"
		ran_stub "$ex"
		n=$((n + 1))
	done < <(sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$MAN" | sed -n 's/^\.Dl \$ //p' |
	    sed 's/\\(dq/"/g; s/\\e/\\/g')
	[ "$n" -ge 6 ]
}

@test "every man page example script is shellcheck-clean, runs and exits 0" {
	dir=$BATS_TEST_TMPDIR/ex
	mkdir -p "$dir"
	n=0
	# Each .Bd -literal block of EXAMPLES, as the reader copies it.
	while IFS= read -r -d '' block; do
		n=$((n + 1))
		printf '#!/bin/bash\n%s\n' "$block" >"$dir/example-$n.sh"
		chmod +x "$dir/example-$n.sh"
		run -0 shellcheck -s bash "$dir/example-$n.sh"
		run -0 run_example "./example-$n.sh"
		ran_stub "$block"
		echo "$output" >"$dir/example-$n.out"
	done < <(sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$MAN" |
	    awk '/^\.Bd -literal/ { on = 1; next } /^\.Ed/ { on = 0; printf "%c", 0; next } on' |
	    sed 's/\\(dq/"/g; s/\\e/\\/g; s/^\\&//')
	[ "$n" -ge 3 ]
	# The self-locking script ran once, under its own lock.
	grep -qx 'running alone as ./example-2.sh' "$dir/example-2.out"
	grep -q '^holding: deploy	' "$dir/example-1.out"
}

@test "the man page's self-locking script keys on its real path: run as ./self.sh and by its full path at once, one runs and the other is told the lock is held" {
	dir=$BATS_TEST_TMPDIR/self
	mkdir -p "$dir/bin"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$PGLOCK" >"$dir/bin/pglock"
	chmod +x "$dir/bin/pglock"
	# The second literal block of EXAMPLES, then a wait while it holds.
	sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$MAN" |
	    awk '/^\.Bd -literal/ { n++; on = n == 2; next } /^\.Ed/ { on = 0 } on' |
	    sed 's/\\(dq/"/g; s/\\e/\\/g; s/^\\&//' >"$dir/body"
	grep -q realpath "$dir/body"
	{ echo '#!/bin/bash'; cat "$dir/body"; echo 'sleep 3'; } >"$dir/self.sh"
	chmod +x "$dir/self.sh"
	(cd "$dir" && PATH="$dir/bin:$PATH" exec ./self.sh) >"$dir/first.out" 2>&1 &
	first=$!
	wait_until 10 grep -q "running alone" "$dir/first.out"
	run -1 --separate-stderr env PATH="$dir/bin:$PATH" "$dir/self.sh"
	[[ $stderr == "pglock: $dir/self.sh: the lock is held by "* ]]
	wait "$first"
}

@test "the man page example output names the key" {
	run -0 run_example 'pglock -d "$DATABASE" nightly-report ./report.sh'
	assert_output 'report ran under nightly-report'
}

@test "every README example runs and exits 0" {
	n=0
	while IFS= read -r ex; do
		run -0 run_example "$ex"
		ran_stub "$ex"
		n=$((n + 1))
	done < <(sed -n '/^```sh example/,/^```/p' "$README" | grep -v '^```' | grep -v '^#' | grep .)
	[ "$n" -ge 3 ]
}

@test "PG_PORT (README) is the port of make check's own cluster only: a test's cluster of its own takes a free port, PG_PORT naming one in use" {
	suite=$PGPORT
	PG_PORT=$suite own_server
	[ "$PGPORT" != "$suite" ]
	[ "$(sql 'SHOW port')" = "$PGPORT" ]
}

@test "the man page documents every exit status lib/exits.h defines" {
	codes=$(sed -n 's/^\tEXIT_[A-Z]* = \([0-9]*\).*/\1/p' "$BATS_TEST_DIRNAME/../lib/exits.h")
	[ "$(echo "$codes" | wc -w)" -ge 8 ]
	for code in $codes; do
		grep -Eq "^\.It $code(,|\$)" "$MAN" || { echo "exit $code undocumented"; false; }
	done
}

# apt_shims MESSAGE: shims alone on PATH ($shims), so that every command
# deps.sh looks for is missing and it installs, through the apt-get shim,
# which logs its arguments to $log and fails its first update with MESSAGE
# (apt's exit 100); sleep logs too.
apt_shims() {
	shims=$BATS_TEST_TMPDIR/shims log=$BATS_TEST_TMPDIR/apt.log
	mkdir -p "$shims"
	printf '#!/bin/sh\necho 0\n' >"$shims/id"
	printf '#!/bin/sh\nexit 0\n' >"$shims/flock"
	printf '#!/bin/sh\necho "sleep $*" >>"%s"\n' "$log" >"$shims/sleep"
	cat >"$shims/apt-get" <<-SH
	#!/bin/sh
	echo "\$*" >>"$log"
	case "\$*" in *update*) [ ! -e "$log.failed" ] || exit 0 ;; *) exit 0 ;; esac
	: >"$log.failed"
	echo "$1" >&2
	exit 100
	SH
	chmod +x "$shims"/*
}

@test "tests/deps.sh, as root with apt-get, waits for another apt's or dpkg's lock: install by DPkg::Lock::Timeout, update tried again while the lists' lock is held" {
	apt_shims "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)
E: Unable to lock directory /var/lib/apt/lists/"
	run -0 --separate-stderr env PATH="$shims" /bin/sh "$BATS_TEST_DIRNAME/deps.sh" demo
	assert_equal "${stderr_lines[1]}" "deps.sh: another apt holds the package lists' lock: waiting for it, up to 5 minutes"
	[ "${#stderr_lines[@]}" -eq 2 ]
	run cat "$log"
	assert_line --index 0 "-o DPkg::Lock::Timeout=300 update -qq"
	assert_line --index 1 "sleep 1"
	assert_line --index 2 "-o DPkg::Lock::Timeout=300 update -qq"
	assert_line --index 3 --regexp "^-o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends .*make"
	[ "${#lines[@]}" -eq 4 ]
}

@test "tests/deps.sh: an update that fails otherwise than on the lock is not tried again: 69 at once, with apt's message" {
	apt_shims "E: The repository 'http://deb.example bookworm Release' does not have a Release file."
	run -69 --separate-stderr env PATH="$shims" /bin/sh "$BATS_TEST_DIRNAME/deps.sh" demo
	assert_equal "${stderr_lines[1]}" "E: The repository 'http://deb.example bookworm Release' does not have a Release file."
	[ "${#stderr_lines[@]}" -eq 2 ]
	run cat "$log"
	assert_output "-o DPkg::Lock::Timeout=300 update -qq"
}

@test "make demo's script: two jobs take turns, each line naming its job, the first waiting out a started server's lock-delay of its 4 s lease; a third with -n is told the lock is held" {
	run -0 --separate-stderr timeout 60 "$BATS_TEST_DIRNAME/demo.sh"
	# Every line of a job's is marked with it; the steps do not interleave.
	steps=$(printf '%s\n' "$output" | grep -E '^  job-[AB]: [0-9:.]+ step [123]$' | cut -d: -f1 | uniq -c | awk '{ print $1 }' | tr '\n' ' ')
	assert_equal "$steps" "3 3 "
	assert_line --regexp '^  job-[AB]: pglock: nightly-report: lock-delay: the server started [0-9.]+ s ago; waiting [0-9.]+s more, to the end of the lease of --check-interval 1s \(4s\)$'
	assert_line --regexp '^  job-C: pglock: nightly-report: the lock is held by server pid [0-9]+ '
	assert_line '  job-C: pglock -n exited 1 (the conflict status)'
	! printf '%s\n' "$output" | grep -E '^  [^j ]' || fail "a line not marked with its job"
}

@test "contrib's alert rules pass promtool's check and its unit tests (a job that never succeeded fires, a paused one does not), and every metric they and the Grafana dashboard name is one --metrics prints" {
	contrib=$BATS_TEST_DIRNAME/../contrib
	run -0 promtool check rules "$contrib/prometheus/pglock-rules.yml"
	run -0 sh -c 'cd "$0" && promtool test rules pglock-rules.test.yml' "$contrib/prometheus"
	run -0 "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["panels"] and all(p["targets"] for p in d["panels"])' "$contrib/grafana/pglock-dashboard.json"
	run -0 pglock --record contrib-k true
	run -0 --separate-stderr pglock --status --metrics contrib-k
	printed=$(printf '%s\n' "$output" | sed -n 's/^# TYPE \(pglock_[a-z_]*\) .*/\1/p' | sort -u)
	named=$(grep -ohE 'pglock_[a-z_]+' "$contrib/prometheus/pglock-rules.yml" "$contrib/prometheus/pglock-rules.test.yml" "$contrib/grafana/pglock-dashboard.json" | sort -u)
	[ -n "$named" ]
	for m in $named; do
		printf '%s\n' "$printed" | grep -qx "$m" || fail "$m: named in contrib/, not printed by --metrics"
	done
}

@test "the man page at 80 columns: no line of it wider, so no example wraps when pasted; the option sections in the order a user looks, the keys' schemes last" {
	run -0 bash -c "MANWIDTH=80 mandoc -Tascii '$MAN' | col -b | awk 'length > 80'"
	assert_output ''
	run -0 grep '^\.Ss ' "$MAN"
	assert_equal "$(printf '%s\n' "${lines[@]:0:6}" | tr '\n' '|')" ".Ss Lock options|.Ss Once: the job, not only the lock|.Ss Inspection|.Ss Version counter|.Ss Connection options|.Ss Keys|"
}
