#!/usr/bin/env bash
# bench.sh: the figures of `make bench`.
#
#  1. Go benchmarks of load + resolve + rules (analyze/bench_test.go).
#  2. Whole-process timing of `shmdoctor --probe never --format json` against the reference
#     `docker-compose config -q` (built by scripts/reference-compose.sh) on the same
#     files: the demo stack and generated stacks of 50, 100, 250 and 500 services.
#
# It reports and does not assert: missing the 1.2x target still exits 0. It exits non-zero
# only on real errors: 2 for a missing tool or a build or benchmark that fails, 1 when the
# doctor exits above 1 (1 only means findings) or docker compose fails on a stack, after the
# other stacks are measured.
#
# Usage: scripts/bench.sh [-n RUNS] [--demo DIR] [--no-gotest] [--no-hyperfine]
#   -n RUNS         timed runs per command (default 20, or $BENCH_RUNS)
#   --demo DIR      the demo stack (default testdata/demo)
#   --no-gotest     skip the Go benchmarks
#   --no-hyperfine  time with the shell loop even where hyperfine is installed
set -euo pipefail

runs=${BENCH_RUNS:-20}
demo=testdata/demo
gotest=1
use_hyperfine=1
sizes=(50 100 250 500)
target=1.2

usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "bench: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	-n | --runs) [ $# -ge 2 ] || die "$1 needs a number"; runs=$2; shift 2 ;;
	--demo) [ $# -ge 2 ] || die "$1 needs a folder"; demo=$2; shift 2 ;;
	--no-gotest) gotest=0; shift ;;
	--no-hyperfine) use_hyperfine=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case $runs in '' | *[!0-9]* | 0) die "runs must be a positive number, not '$runs'" ;; esac

command -v go >/dev/null || die "go is not on PATH"
command -v git >/dev/null || die "git is not on PATH"
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || die "not inside the shmdoctor repository"
cd "$root"
refscript=$root/scripts/reference-compose.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- 1. Go benchmarks --------------------------------------------------------------------
if [ "$gotest" = 1 ]; then
	echo "== go benchmarks: load + resolve + rules, in process"
	go test -run '^$' -bench . -benchmem ./analyze/ || die "go benchmarks failed"
	echo
fi

# --- 2. Whole process --------------------------------------------------------------------
echo "== whole process: shmdoctor --probe never --format json vs docker-compose config -q"
go build -o "$tmp/shmdoctor" ./cmd/shmdoctor || die "building shmdoctor failed"
go build -o "$tmp/genstack" ./scripts/genstack || die "building scripts/genstack failed"
compose=$(bash "$refscript" | tail -n 1) || die "building the reference docker compose failed"
[ -x "$compose" ] || die "reference docker compose not found at '$compose'"

# Both tools see the same environment: no user docker config, no COMPOSE_* choices.
export DOCKER_CONFIG=$tmp/docker-config
mkdir -p "$DOCKER_CONFIG"
unset COMPOSE_FILE COMPOSE_PROFILES COMPOSE_PROJECT_NAME COMPOSE_ENV_FILES

if [ "$use_hyperfine" = 1 ] && ! command -v hyperfine >/dev/null; then
	if [ "$(id -u)" = 0 ] && [ -z "${CI:-}" ] && command -v apt-get >/dev/null; then
		echo "installing hyperfine" >&2
		{ apt-get install -y -qq hyperfine || { apt-get update -qq && apt-get install -y -qq hyperfine; }; } >/dev/null 2>&1 ||
			echo "bench: could not install hyperfine, timing with a shell loop" >&2
	fi
fi
if [ "$use_hyperfine" = 1 ] && command -v hyperfine >/dev/null; then
	timer="hyperfine $(hyperfine --version | awk '{print $2}')"
else
	use_hyperfine=0
	timer="shell loop"
fi

# files DIR: the files docker compose picks in DIR (cli.WithDefaultConfigPath): the first
# compose file found and the first override file found.
files() {
	local dir=$1 name found=1
	for name in compose.yaml compose.yml docker-compose.yml docker-compose.yaml; do
		if [ -f "$dir/$name" ]; then echo "$dir/$name"; found=0; break; fi
	done
	[ "$found" = 0 ] || return 1
	for name in compose.override.yml compose.override.yaml docker-compose.override.yml docker-compose.override.yaml; do
		if [ -f "$dir/$name" ]; then echo "$dir/$name"; break; fi
	done
}

# now: sets $now to a timestamp in microseconds; without a fork where bash has EPOCHREALTIME,
# so the shell's own overhead stays out of the measured interval.
now() {
	if [ -n "${EPOCHREALTIME:-}" ]; then
		now=${EPOCHREALTIME/[.,]/}
	else
		now=$(($(date +%s%N) / 1000))
	fi
}

# cpu_ms FILE: the children's CPU time (user + system) in the output of `times` in FILE, in
# milliseconds. `times` must run in the shell that waited for the commands, not in a command
# substitution, whose fork has no children of its own.
cpu_ms() {
	awk 'NR == 2 {
		t = 0
		for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] }
		printf "%.0f\n", t * 1000
	}' "$1"
}

# measure CMD...: "WALL CPU" for $runs runs after warming up: the median wall time and the mean
# CPU time (user + system) per run, in milliseconds. Wall time is the target's measure; CPU
# time is steadier where other work shares the machine.
measure() {
	if [ "$use_hyperfine" = 1 ]; then
		local csv=$tmp/hf.csv cmd
		cmd=$(printf '%q ' "$@")
		if ! hyperfine -N -i --style none --warmup 2 --runs "$runs" --export-csv "$csv" "$cmd" >/dev/null 2>"$tmp/hf.err"; then
			head -n 5 "$tmp/hf.err" >&2
			die "hyperfine failed on: $cmd"
		fi
		# command,mean,stddev,median,user,system,min,max, in seconds
		awk -F, 'NR == 2 { printf "%.1f %.1f\n", $4 * 1000, ($5 + $6) * 1000 }' "$csv"
		return
	fi
	local i t0 c0 c1 now walls=()
	"$@" >/dev/null 2>&1 || true
	times >"$tmp/times0"
	for ((i = 0; i < runs; i++)); do
		now
		t0=$now
		"$@" >/dev/null 2>&1 || true
		now
		walls+=($((now - t0)))
	done
	times >"$tmp/times1"
	c0=$(cpu_ms "$tmp/times0") c1=$(cpu_ms "$tmp/times1")
	printf '%s\n' "${walls[@]}" | sort -n | awk -v cpu=$((c1 - c0)) -v runs="$runs" '{ a[NR] = $1 }
		END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f %.1f\n", m / 1000, cpu / runs }'
}

# check NAME: run each tool once and fail loudly on a real error, which timing would hide.
check() {
	local name=$1 rc=0
	"$tmp/shmdoctor" --probe never --format json "${fargs[@]}" >/dev/null 2>"$tmp/err" || rc=$?
	if [ "$rc" -gt 1 ]; then
		echo "bench: shmdoctor exited $rc on $name:" >&2
		# The JSON format puts load errors on stdout; the text format says them plainly.
		NO_COLOR=1 "$tmp/shmdoctor" --probe never "${fargs[@]}" 2>&1 | head -n 5 >&2 || true
		return 1
	fi
	rc=0
	"$compose" "${fargs[@]}" config -q >/dev/null 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "bench: docker-compose config -q exited $rc on $name:" >&2
		head -n 5 "$tmp/err" >&2
		return 1
	fi
}

projects=()
declare -A dirs
if [ -d "$demo" ] && files "$demo" >/dev/null; then
	projects+=(demo)
	dirs[demo]=$demo
else
	echo "bench: no compose file in $demo, the demo row is skipped" >&2
fi
for n in "${sizes[@]}"; do
	"$tmp/genstack" -n "$n" -o "$tmp/stack-$n" || die "generating the $n-service stack failed"
	projects+=("stack-$n")
	dirs[stack-$n]=$tmp/stack-$n
done

echo "timer: $timer, $runs runs per command; ms = median wall time, cpu = mean user+system ms per run"
echo "doctor:  shmdoctor --probe never --format json -f FILE... >/dev/null"
echo "compose: $(basename "$compose") -f FILE... config -q"
echo
row='%-10s %8s %5s %10s %11s %6s %7s %11s %12s %6s\n'
# shellcheck disable=SC2059 # the format is the table's layout
printf "$row" project services files 'doctor ms' 'compose ms' ratio "<=${target}x" 'doctor cpu' 'compose cpu' ratio
failed=0
declare -A doc_ms cmp_ms doc_cpu cmp_cpu
for name in "${projects[@]}"; do
	fargs=()
	mapfile -t fl < <(files "${dirs[$name]}")
	for f in "${fl[@]}"; do fargs+=(-f "$f"); done
	if ! check "$name"; then
		failed=1
		# shellcheck disable=SC2059
		printf "$row" "$name" - "${#fl[@]}" failed failed - - - - -
		continue
	fi
	services=$("$compose" "${fargs[@]}" --profile '*' config --services | wc -l)
	m=$(measure "$tmp/shmdoctor" --probe never --format json "${fargs[@]}") || exit 2
	read -r d dc <<<"$m"
	m=$(measure "$compose" "${fargs[@]}" config -q) || exit 2
	read -r c cc <<<"$m"
	doc_ms[$name]=$d cmp_ms[$name]=$c doc_cpu[$name]=$dc cmp_cpu[$name]=$cc
	awk -v row="$row" -v n="$name" -v s="$services" -v f="${#fl[@]}" -v d="$d" -v c="$c" -v dc="$dc" -v cc="$cc" -v t="$target" 'BEGIN {
		r = d / c
		printf row, n, s, f, sprintf("%.1f", d), sprintf("%.1f", c), sprintf("%.2f", r), (r <= t ? "yes" : "no"),
			sprintf("%.1f", dc), sprintf("%.1f", cc), sprintf("%.2f", dc / cc)
	}'
done

echo
echo "growth with the number of services: ms per service, and marginal ms per added service"
echo "(wall, and cpu: steadier on a busy machine)"
growth='%8s %10s %9s %10s %10s %11s %9s %10s %10s\n'
# shellcheck disable=SC2059
printf "$growth" services 'doctor ms' 'ms/svc' 'marg wall' 'marg cpu' 'compose ms' 'ms/svc' 'marg wall' 'marg cpu'
prev=''
for n in "${sizes[@]}"; do
	k=stack-$n
	[ -n "${doc_ms[$k]:-}" ] || continue
	p=stack-${prev:-none}
	awk -v f="$growth" -v n="$n" -v p="$prev" \
		-v d="${doc_ms[$k]}" -v dc="${doc_cpu[$k]}" -v pd="${doc_ms[$p]:-}" -v pdc="${doc_cpu[$p]:-}" \
		-v c="${cmp_ms[$k]}" -v cc="${cmp_cpu[$k]}" -v pc="${cmp_ms[$p]:-}" -v pcc="${cmp_cpu[$p]:-}" '
		function marg(a, b) { return p == "" ? "-" : sprintf("%.3f", (a - b) / (n - p)) }
		BEGIN {
			printf f, n, sprintf("%.1f", d), sprintf("%.3f", d / n), marg(d, pd), marg(dc, pdc),
				sprintf("%.1f", c), sprintf("%.3f", c / n), marg(c, pc), marg(cc, pcc)
		}'
	prev=$n
done

if [ "$failed" = 1 ]; then
	echo "bench: a tool failed on at least one stack, see above" >&2
	exit 1
fi
