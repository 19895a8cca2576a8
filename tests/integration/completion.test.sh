#!/usr/bin/env bash
# hpcbridge's bash completion (config/completion/hpcbridge) as bash runs
# it: loaded through bash-completion, it completes commands, each command's
# options (read from its --help), option values, file names, ckpt's verbs,
# and the ids of the caller's jobs from a real hpcbridged; with no daemon,
# or one that does not answer, it offers no ids and prints nothing.
#
# usage: completion.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
hb=$build/bin/hpcbridge
hbd=$build/bin/hpcbridged
hbcall=$build/tests/hbcall
comp_file=$src/config/completion/hpcbridge
bc=/usr/share/bash-completion/bash_completion
tmp=$(mktemp -d)
sock=$tmp/run/api.sock
pid=
fails=0
passes=0

cleanup() {
	if [ -n "$pid" ]; then
		kill -CONT "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { passes=$((passes + 1)); }
bad() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

if [ ! -r "$bc" ]; then
	echo "FAIL: $bc is missing (apt-get install bash-completion)" >&2
	exit 1
fi

# The driver: a clean bash that loads bash-completion and the file, prints
# 'complete -p hpcbridge', then completes each line it reads as if TAB
# were pressed at its end, printing the candidates one a line and '--'.
cat >"$tmp/drive.sh" <<'DRIVER'
source "$1"
source "$2"
complete -p hpcbridge
echo --
while IFS= read -r line; do
	COMP_LINE=$line
	COMP_POINT=${#line}
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *' ' ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_hpcbridge hpcbridge "${COMP_WORDS[COMP_CWORD]}" \
		"${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
	echo --
done
DRIVER

# complete_lines LINE...: line N's candidates in $tmp/c.N (N from 1; c.0
# holds 'complete -p'), the driver's stderr in $tmp/c.err
complete_lines() {
	rm -f "$tmp"/c.*
	printf '%s\n' "$@" |
		(cd "$tmp/files" && PATH=$build/bin:$PATH bash --norc \
			--noprofile "$tmp/drive.sh" "$bc" "$comp_file") \
			>"$tmp/c.out" 2>"$tmp/c.err"
	awk -v d="$tmp" 'BEGIN { n = 0; f = d "/c.0"; printf "" > f }
		$0 == "--" { n++; f = d "/c." n; printf "" > f; next }
		$0 != "" { print > f }' "$tmp/c.out"
}
# got N: line N's candidates on one line, sorted
got() { sort "$tmp/c.$1" | tr '\n' ' ' | sed 's/ $//'; }
has() { grep -qxF -- "$2" "$tmp/c.$1"; }

mkdir -p "$tmp/files/sub" "$tmp/remote"
: >"$tmp/files/job.sh"
: >"$tmp/files/site.yaml"

# 1. without a daemon: HPCBRIDGE_SOCKET names nothing
export HPCBRIDGE_SOCKET=$tmp/none.sock
export SLURM_CONF=$tmp/no-slurm.conf
complete_lines \
	'hpcbridge tr' \
	'hpcbridge ' \
	'hpcbridge translate --' \
	'hpcbridge translate --to ' \
	'hpcbridge report --format c' \
	'hpcbridge translate --config ' \
	'hpcbridge ckpt ' \
	'hpcbridge status ' \
	'hpcbridge qsub -' \
	'hpcbridge ckpt push --prog' \
	'hpcbridge sandbox --dir ' \
	'hpcbridge --v'
grep -q -- '-F _hpcbridge hpcbridge$' "$tmp/c.0" && ok ||
	bad "complete -p hpcbridge: $(cat "$tmp/c.0")"
[ "$(got 1)" = translate ] && ok || bad "tr<TAB>: '$(got 1)'"
want=$("$hb" --help |
	awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' |
	sort | tr '\n' ' ' | sed 's/ $//')
[ "$(got 2)" = "$want" ] && [ "$(wc -l <"$tmp/c.2")" -ge 15 ] && ok ||
	bad "commands: '$(got 2)', want '$want'"
has 3 --to && has 3 --with-runtime && has 3 --explain && ok ||
	bad "translate --<TAB>: $(got 3)"
! has 3 --partition && ! has 3 -O && ok ||
	bad "translate --<TAB> offers an example value or a short option: $(got 3)"
[ "$(got 4)" = "jobspec mpijob sbatch trainjob" ] && ok ||
	bad "translate --to <TAB>: '$(got 4)'"
[ "$(got 5)" = csv ] && ok || bad "report --format c<TAB>: '$(got 5)'"
has 6 job.sh && has 6 site.yaml && has 6 sub && ok ||
	bad "translate --config <TAB> gives files: '$(got 6)'"
[ "$(got 7)" = "ls pull push retain verify" ] && ok ||
	bad "ckpt <TAB>: '$(got 7)'"
[ ! -s "$tmp/c.8" ] && ok || bad "status <TAB> without a daemon: '$(got 8)'"
has 9 -l && has 9 -W && has 9 --dry-run && ! has 9 --help && ok ||
	bad "qsub -<TAB>: $(got 9)"
[ "$(got 10)" = --progress ] && ok ||
	bad "ckpt push --prog<TAB>: '$(got 10)'"
[ "$(got 11)" = sub ] && ok ||
	bad "sandbox --dir <TAB> gives directories: '$(got 11)'"
[ "$(got 12)" = --version ] && ok || bad "--v<TAB>: '$(got 12)'"
[ ! -s "$tmp/c.err" ] && ok ||
	bad "the completion wrote to the terminal: $(head -5 "$tmp/c.err")"

# every long option a command's completion offers is one its --help
# prints, and the reverse (an example value like --partition=gpu is not
# an option)
for cmd in translate submit jobs status cancel shadow explain report ckpt \
	doctor sandbox; do
	complete_lines "hpcbridge $cmd --"
	"$hb" "$cmd" --help | grep -oE -- '--[a-z][a-z0-9-]*=?' | sort -u |
		grep -v '=$' >"$tmp/help.opts" || true
	{ "$hb" "$cmd" --help | grep -oE -- '--[a-z][a-z0-9-]*=' || true; } |
		tr -d = | sort -u >"$tmp/examples"
	grep -vxF -f "$tmp/examples" "$tmp/help.opts" >"$tmp/want" || true
	grep -E -- '^--' "$tmp/c.1" | sort -u >"$tmp/offered" || true
	if [ -s "$tmp/want" ] && diff "$tmp/want" "$tmp/offered" >"$tmp/diff"; then
		ok
	else
		bad "hpcbridge $cmd --<TAB> differs from its --help: $(cat "$tmp/diff")"
	fi
done

# 2. a real daemon with two jobs of root's and one of alice's
cat >"$tmp/a.yaml" <<YAML
slurm:
  burst_partition: cloud
remote:
  local_dir: $tmp/remote
placement:
  default_target: slurm
  partitions:
    gpu: kubernetes
YAML
"$hbd" --config "$tmp/a.yaml" --foreground --socket "$sock" \
	--state "$tmp/state.db" 2>>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do
	[ -S "$sock" ] && "$hbcall" "$sock" '{"op":"ping"}' >/dev/null 2>&1 &&
		break
	sleep 0.05
done
ids=
for u in root:0 root:0 alice:1000; do
	"$hbcall" "$sock" "{\"op\":\"decide\",\"user\":\"${u%:*}\",\"uid\":${u#*:},\"partition\":\"gpu\"}" \
		>"$tmp/reply" || true
	id=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4 || true)
	[ -n "$id" ] && ok || bad "decide: $(cat "$tmp/reply") $(tail -3 "$tmp/daemon.log")"
	[ "${u%:*}" = root ] && ids="$ids $id"
done
ids=$(printf '%s\n' $ids | sort | tr '\n' ' ' | sed 's/ $//')
# what 'hpcbridge jobs' prints, which the completion reads
HPCBRIDGE_SOCKET=$sock "$hb" jobs >"$tmp/jobs.out" || true
head -1 "$tmp/jobs.out" | grep -qE '^ID +USER' && ok ||
	bad "hpcbridge jobs' header: $(head -1 "$tmp/jobs.out")"

export HPCBRIDGE_SOCKET=$sock
complete_lines \
	'hpcbridge status ' \
	'hpcbridge cancel hb-' \
	'hpcbridge status --json ' \
	'hpcbridge qdel '
for n in 1 2 3 4; do
	[ -n "$ids" ] && [ "$(got $n)" = "$ids" ] && ok ||
		bad "line $n: ids '$(got $n)', want '$ids' (root's, not alice's)"
done
# the socket the command line names, not the environment's
export HPCBRIDGE_SOCKET=$tmp/none.sock
complete_lines "hpcbridge cancel --socket $sock " 'hpcbridge cancel '
[ "$(got 1)" = "$ids" ] && ok || bad "cancel --socket S <TAB>: '$(got 1)'"
[ ! -s "$tmp/c.2" ] && ok || bad "cancel <TAB>, no daemon: '$(got 2)'"
[ ! -s "$tmp/c.err" ] && ok || bad "stderr: $(head -5 "$tmp/c.err")"
# a daemon that stops answering: no ids, nothing on the terminal, soon
kill -STOP "$pid"
export HPCBRIDGE_SOCKET=$sock
start=$(date +%s)
complete_lines 'hpcbridge status '
kill -CONT "$pid"
[ ! -s "$tmp/c.1" ] && [ ! -s "$tmp/c.err" ] && ok ||
	bad "a stopped daemon: '$(got 1)' $(cat "$tmp/c.err")"
[ $(($(date +%s) - start)) -le 5 ] && ok || bad "a stopped daemon holds TAB"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] && ok || bad "hpcbridged exits $rc on SIGTERM"

echo "completion: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
