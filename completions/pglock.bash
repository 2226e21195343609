# SPDX-License-Identifier: ISC
# bash completion for pglock(1): options and their values before KEY, then
# the command and its arguments (bash-completion's own, when it is loaded).
# Installed as share/bash-completion/completions/pglock.

# The option words pglock(1) knows, and those of them that take a value.
_pglock_opts='-x -e --exclusive -s --shared -n --nonblock --nb
-w --wait --timeout -E --conflict-exit-code -c --command -F --no-fork
-v --verbose -q --quiet --id --hash --namespace --fence --check-interval
--lost-signal --kill-after --scope --version-counter --peek --counter-table
--require-sync
--status --explain --hold --break --max-time --slots --json
--once --once-per --record --forget --runs-table --node --ok-within
--pause --new --resume --for --reason --metrics --tz --after --spread
--jitter --keep-history --history --keep-output --keep-output-always
-d --dbname -h --host -p --port -U --username
--connect-timeout -? --help -V --version'
_pglock_valued='-w --wait --timeout -E --conflict-exit-code -c --command
--hash --namespace --check-interval --lost-signal --kill-after --scope
--counter-table --max-time --slots -d --dbname -h --host -p --port
-U --username --connect-timeout --once-per --runs-table --node --ok-within
--for --reason --tz --after --spread --jitter --keep-history --keep-output'
# pglock --hash NAME (lib/key.c), --lost-signal SIG (lib/arg.c, less STOP,
# which pglock refuses), --scope.
_pglock_schemes='sha256 hashtext hashtextextended md5 md5-60 siphash24
guava-sha256-abs crc32 crc32u with_advisory_lock pg_lock rails-migrations
golang-migrate flyway'
_pglock_signals='HUP INT QUIT KILL USR1 USR2 ALRM TERM ABRT PIPE'
_pglock_scopes='auto session transaction'

# _pglock_reply COMPGEN-ARGS...: COMPREPLY is compgen's lines, unglobbed,
# each once (compgen -c names echo as a builtin and as two files).
_pglock_reply()
{
	mapfile -t COMPREPLY < <(compgen "$@" | awk '!seen[$0]++')
}

# _pglock_value OPTION CUR: complete the value of OPTION.
_pglock_value()
{
	COMPREPLY=()
	case $1 in
	--hash) _pglock_reply -W "$_pglock_schemes" -- "$2" ;;
	--lost-signal) _pglock_reply -W "$_pglock_signals" -- "$2" ;;
	--scope) _pglock_reply -W "$_pglock_scopes" -- "$2" ;;
	-c | --command) _pglock_reply -c -- "$2" ;;
	-h | --host) _pglock_reply -A hostname -d -- "$2" ;;
	-U | --username) _pglock_reply -u -- "$2" ;;
	esac	# else a number, a conninfo, a table name: nothing to offer
}

_pglock()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev="" w i=1 key=0 mode="" shell=""
	local IFS=$' \t\n'

	# With '=' in COMP_WORDBREAKS, --scope=s arrives as "--scope" "=" "s".
	if [[ $cur == = ]]; then
		_pglock_value "${COMP_WORDS[COMP_CWORD - 1]}" ''
		return
	fi
	if [[ ${COMP_WORDS[COMP_CWORD - 1]} == = && $COMP_CWORD -ge 3 ]]; then
		_pglock_value "${COMP_WORDS[COMP_CWORD - 2]}" "$cur"
		return
	fi
	# Options stop at KEY (getopt '+'): find KEY, skipping option values.
	while [[ $i -lt $COMP_CWORD ]]; do
		w=${COMP_WORDS[i]}
		case $w in
		--) key=$((i + 1)); break ;;
		--status | --explain | --break | --hold | --version-counter | \
		--forget | --pause | --resume)
			mode=$w ;;
		-c | --command | --command=*) shell=1 ;;
		esac
		case $w in
		--*=*) ;;
		--*)
			[[ ${COMP_WORDS[i + 1]} == = ]] && i=$((i + 3)) && continue
			[[ " ${_pglock_valued//$'\n'/ } " == *" $w "* ]] && i=$((i + 1))
			;;
		-?*)
			# A cluster: the first value letter takes the rest or the next word.
			w=${w#-}
			w=${w%%[wEcdhpU]*}
			[[ ${COMP_WORDS[i]} == -"$w"c* ]] && shell=1
			[[ ${COMP_WORDS[i]} == -"$w"[wEcdhpU] ]] && i=$((i + 1))
			;;
		*) key=$i; break ;;
		esac
		i=$((i + 1))
	done
	[[ $key -eq 0 && $i -gt $COMP_CWORD ]] && prev=${COMP_WORDS[COMP_CWORD - 1]}

	if [[ $key -eq 0 ]]; then
		if [[ -n $prev ]]; then
			# The word before is an option that takes this one.
			case $prev in
			--*) _pglock_value "$prev" "$cur" ;;
			*) _pglock_value "-${prev: -1}" "$cur" ;;
			esac
		elif [[ $cur == --*=* ]]; then
			_pglock_value "${cur%%=*}" "${cur#*=}"
			COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
		elif [[ $cur == -* ]]; then
			_pglock_reply -W "$_pglock_opts" -- "$cur"
		fi
		return	# KEY itself is any string: nothing to offer
	fi
	# After KEY: --status takes more KEYs, --explain, --break, --hold,
	# --forget, --pause and --resume none, -c a shell string.
	[[ -n $mode && $mode != --version-counter || -n $shell ]] && return
	if [[ $COMP_CWORD -eq $((key + 1)) && $cur == -* ]]; then
		_pglock_reply -W '-c --command' -- "$cur"
		return
	fi
	case ${COMP_WORDS[key + 1]} in
	-c | --command)
		[[ $COMP_CWORD -eq $((key + 2)) ]] && _pglock_value -c "$cur"
		return
		;;
	esac
	if declare -F _command_offset >/dev/null; then
		_command_offset $((key + 1))
	elif [[ $COMP_CWORD -eq $((key + 1)) ]]; then
		_pglock_reply -c -- "$cur"
	else
		_pglock_reply -f -- "$cur"
	fi
}
complete -F _pglock pglock
