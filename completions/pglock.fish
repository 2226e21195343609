# SPDX-License-Identifier: ISC
# fish completion for pglock(1): options and their values before KEY, then
# the command and its arguments. Installed as
# share/fish/vendor_completions.d/pglock.fish.

# The words after the options (KEY first), with the options skipped as
# pglock's getopt '+' does: the first non-option ends them.
function __fish_pglock_rest
    set -l words (commandline -opc)
    set -e words[1]
    set -l i 1
    while test $i -le (count $words)
        switch $words[$i]
            case --
                set i (math $i + 1)
                break
            case '--*=*'
            case --wait --timeout --conflict-exit-code --command --hash \
                --namespace --check-interval --lost-signal --kill-after \
                --scope --counter-table --dbname --host --port --username \
                --connect-timeout --max-time --slots --once-per \
                --runs-table --node --ok-within --for --reason --tz --after \
                --spread --jitter --keep-history --keep-output
                set i (math $i + 1)
            case '--*'
            case '-?*'
                # A cluster ending with a letter that takes a value.
                string match -qr -- '^-[^wEcdhpU]*[wEcdhpU]$' $words[$i]
                and set i (math $i + 1)
            case '*'
                break
        end
        set i (math $i + 1)
    end
    test $i -le (count $words)
    and printf '%s\n' $words[$i..-1]
end

function __fish_pglock_no_key
    test -z "$(__fish_pglock_rest)"
end

# What follows KEY: "keys" (--status), "none" (--explain, --break, --hold, --peek,
# --forget, --pause, --resume, -c given), "shell" (KEY -c SHELL-COMMAND) or
# "command" (COMMAND [ARG ...]).
function __fish_pglock_after
    set -l rest (__fish_pglock_rest)
    set -l words (commandline -opc)
    for w in $words[2..-1]
        test "$w" = "$rest[1]"; and break
        switch $w
            case --status
                echo keys
                return
            case --explain --break --hold --peek --forget --pause --resume \
                -c --command '--command=*'
                echo none
                return
        end
        # -c in a cluster of flags (-nc), not -d's value (-dc).
        if string match -qr -- '^-[^-wEdhpU]*c' $w
            echo none
            return
        end
    end
    if test (count $rest) -ge 2; and contains -- $rest[2] -c --command
        test (count $rest) -eq 2; and echo shell; or echo none
    else
        echo command
    end
end

function __fish_pglock_wants
    test -n "$(__fish_pglock_rest)"; and test (__fish_pglock_after) = $argv[1]
end

# Complete the command line after KEY as its own command line.
function __fish_pglock_command
    set -l rest (__fish_pglock_rest)
    set -e rest[1]
    if test (count $rest) -eq 0; and string match -q -- '-*' (commandline -ct)
        printf '%s\trun SHELL-COMMAND with $SHELL -c\n' -c --command
        return
    end
    complete -C (string join ' ' -- (string escape -- $rest) (commandline -ct))
end

complete -c pglock -f
set -l nokey '__fish_pglock_no_key'
complete -c pglock -n $nokey -s x -s e -l exclusive -d 'exclusive lock (default)'
complete -c pglock -n $nokey -s s -l shared -d 'shared lock'
complete -c pglock -n $nokey -s n -l nonblock -l nb -d 'fail at once if the lock is held'
complete -c pglock -n $nokey -s w -l wait -l timeout -x -d 'wait at most SECS (0 = -n)'
complete -c pglock -n $nokey -s E -l conflict-exit-code -x -d 'exit status when not acquired'
complete -c pglock -n $nokey -s c -l command -x -a '(__fish_complete_command)' -d 'run SHELL-COMMAND with $SHELL -c'
complete -c pglock -n $nokey -s F -l no-fork -d 'exec COMMAND in place of pglock'
complete -c pglock -n $nokey -s v -l verbose -d 'report waiting, acquiring, releasing'
complete -c pglock -n $nokey -s q -l quiet -d 'no diagnostics except errors'
complete -c pglock -n $nokey -l id -d 'KEY is a lock id: N or A,B'
# --hash NAME (lib/key.c); --lost-signal SIG (lib/arg.c, less STOP, which
# pglock refuses).
complete -c pglock -n $nokey -l hash -x -d 'how KEY becomes an id' \
    -a 'sha256 hashtext hashtextextended md5 md5-60 siphash24 guava-sha256-abs crc32 crc32u with_advisory_lock pg_lock rails-migrations golang-migrate flyway'
complete -c pglock -n $nokey -l namespace -x -d 'lock the pair (N, hashtext(KEY))'
complete -c pglock -n $nokey -l fence -d 'give the command PGLOCK_FENCE'
complete -c pglock -n $nokey -l check-interval -x -d 'check the lock is held every SECS'
complete -c pglock -n $nokey -l lost-signal -x -d 'signal for the command if the lock is lost' \
    -a 'HUP INT QUIT KILL USR1 USR2 ALRM TERM ABRT PIPE'
complete -c pglock -n $nokey -l kill-after -x -d 'then KILL after SECS'
complete -c pglock -n $nokey -l scope -x -d 'how the lock is held' -a 'auto session transaction'
complete -c pglock -n $nokey -l version-counter -d "allocate TENANT's next version"
complete -c pglock -n $nokey -l peek -d "print TENANT's current version"
complete -c pglock -n $nokey -l require-sync -d 'refuse a number a failover could repeat'
complete -c pglock -n $nokey -l counter-table -x -d 'where versions live'
complete -c pglock -n $nokey -l status -d 'list advisory locks held or awaited'
complete -c pglock -n $nokey -l explain -d "show KEY's id and the SQL that takes the same lock"
complete -c pglock -n $nokey -l hold -d 'hold KEY until standard input ends'
complete -c pglock -n $nokey -l break -d 'end the sessions that hold KEY'
complete -c pglock -n $nokey -l max-time -x -d 'stop the command after SECS (exit 124)'
complete -c pglock -n $nokey -l slots -x -d 'at most N holders of KEY at once'
complete -c pglock -n $nokey -l json -d 'JSON output for --status, --explain and --peek'
complete -c pglock -n $nokey -l once -d 'one successful run of KEY, ever'
complete -c pglock -n $nokey -l once-per -x -d 'one successful run of KEY per DURATION of the server clock'
complete -c pglock -n $nokey -l record -d "record the command's outcome"
complete -c pglock -n $nokey -l keep-output-always -d "with --keep-output: a success's too"
complete -c pglock -n $nokey -l keep-output -x -d "keep the last SIZE bytes of a failed run's output"
complete -c pglock -n $nokey -l forget -d "delete KEY's record: --once runs again"
complete -c pglock -n $nokey -l runs-table -x -d 'where runs are recorded'
complete -c pglock -n $nokey -l keep-history -x -d "keep KEY's last N runs (default 50)"
complete -c pglock -n $nokey -l history -d "with --status: each KEY's runs, newest first"
complete -c pglock -n $nokey -l node -x -d "this machine's name in records"
complete -c pglock -n $nokey -l ok-within -x -d 'with --status: exit 0 if KEY succeeded within DURATION'
complete -c pglock -n $nokey -l pause -d "pause KEY's recorded runs"
complete -c pglock -n $nokey -l new -d 'with --pause: KEY has no record yet'
complete -c pglock -n $nokey -l for -x -d 'with --pause: the pause ends after DURATION'
complete -c pglock -n $nokey -l reason -x -d 'with --pause: why'
complete -c pglock -n $nokey -l resume -d "end KEY's pause"
complete -c pglock -n $nokey -l metrics -d "with --status: the records in Prometheus' text format"
complete -c pglock -n $nokey -l tz -x -d "--once-per slots by ZONE's wall clock"
complete -c pglock -n $nokey -l after -x -d '--once-per: due only once OFFSET of the slot has passed'
complete -c pglock -n $nokey -l spread -x -d "add KEY's own offset below SPREAD to --after"
complete -c pglock -n $nokey -l jitter -x -d 'start at a random time below DURATION'
complete -c pglock -n $nokey -s d -l dbname -x -d 'database name, conninfo or URI'
complete -c pglock -n $nokey -s h -l host -x -a '(__fish_print_hostnames; __fish_complete_directories)' -d 'server host or socket directory'
complete -c pglock -n $nokey -s p -l port -x -d 'server port'
complete -c pglock -n $nokey -s U -l username -x -a '(__fish_complete_users)' -d 'user name'
complete -c pglock -n $nokey -l connect-timeout -x -d 'retry refused connections this long'
complete -c pglock -n $nokey -s '?' -l help -d 'show help, then exit'
complete -c pglock -n $nokey -s V -l version -d 'show the version, then exit'
complete -c pglock -n '__fish_pglock_wants command' -a '(__fish_pglock_command)'
complete -c pglock -n '__fish_pglock_wants shell' -a '(__fish_complete_command)'
