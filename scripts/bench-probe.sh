#!/usr/bin/env bash
# bench-probe.sh: the probe figures of `make bench`, on the real daemon.
#
#  a. Probe latency per service: the doctor's probe of a one-service stack (whole process,
#     `shmdoctor --probe always --write-probe off` minus the same with `--probe never`, which
#     is the loading and analysis) against a bare `docker run --rm <probe image> --target 0`
#     doing the same measurement. Target: at most 1.2x.
#  b. Eight services probed at once against one (the probe time of an eight-service stack
#     against that of the one-service stack). Target: at most 2x.
#  c. Write-probe throughput: the agent's own figure (GB/s, mode write) against busybox
#     `dd if=/dev/zero of=/dev/shm/x bs=1M` timed inside the same kind of container (scratch
#     image, same least-privilege flags, --shm-size big enough). Target: at least 1.5x dd.
#  Plus the in-process Go benchmark BenchmarkProbeCompare (probe/bench_test.go): Run against a
#  bare create/start/wait/logs/remove through the same client, all variants interleaved, both
#  of the doctor's own container (the ratio is then the cost of Run's own calls) and of a plain
#  --network none container (the doctor also sets NetworkDisabled, which spares the daemon the
#  network sandbox: a few hundred ms per container on a slow engine, which is why the doctor
#  can beat `docker run`). One more row times eight bare `docker run` at once against one:
#  the engine's own parallelism bounds what b can reach.
#
# The commands of a and b run interleaved (rounds of hyperfine over all of them, or a shell
# loop), so that load from other work on the machine weighs on every command alike; figures
# are medians. It reports and does not assert: a missed target still exits 0. It exits 2 on
# a missing tool, a failed build, or a command that fails. Every container it started and
# the busybox image it built are removed at exit; the probe image stays (it is reused).
#
# Usage: scripts/bench-probe.sh [-n RUNS] [--mib N] [--no-gotest] [--no-hyperfine]
#   -n RUNS         timed runs per command (default 10, or $BENCH_RUNS)
#   --mib N         MiB written by the write probe and by dd (default 2048)
#   --no-gotest     skip the Go benchmark
#   --no-hyperfine  time with the shell loop even where hyperfine is installed
set -euo pipefail

runs=${BENCH_RUNS:-10}
mib=2048
gotest=1
use_hyperfine=1

usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "bench-probe: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	-n | --runs) [ $# -ge 2 ] || die "$1 needs a number"; runs=$2; shift 2 ;;
	--mib) [ $# -ge 2 ] || die "$1 needs a number"; mib=$2; shift 2 ;;
	--no-gotest) gotest=0; shift ;;
	--no-hyperfine) use_hyperfine=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case $runs in '' | *[!0-9]* | 0) die "runs must be a positive number, not '$runs'" ;; esac
case $mib in '' | *[!0-9]* | 0) die "--mib must be a positive number, not '$mib'" ;; esac

for tool in go git docker jq awk sha256sum tar; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH"
done
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || die "not inside the shmdoctor repository"
cd "$root"
docker info >/dev/null 2>&1 || die "no Docker daemon answers: $(docker info 2>&1 | tail -n 1)"

id=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
label=io.shmdoctor.bench=$id
busybox_image=shmdoctor-bench-busybox:$id
tmp=$(mktemp -d)

cleanup() {
	local ids f
	# The doctor removes its own containers; those of the projects are what a kill in the
	# middle of a probe leaves.
	for f in "label=$label" "label=io.shmdoctor.project=shmdoctor-bench-$id-one" "label=io.shmdoctor.project=shmdoctor-bench-$id-eight"; do
		mapfile -t ids < <(docker ps -aq --filter "$f" 2>/dev/null || true)
		[ "${#ids[@]}" = 0 ] || docker rm -f "${ids[@]}" >/dev/null 2>&1 || true
	done
	docker image rm -f "$busybox_image" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$use_hyperfine" = 1 ] && command -v hyperfine >/dev/null; then
	timer="hyperfine $(hyperfine --version | awk '{print $2}'), interleaved rounds"
else
	use_hyperfine=0
	timer="shell loop, interleaved"
fi

# --- set-up ------------------------------------------------------------------------------
echo "== building the doctor"
CGO_ENABLED=0 go build -o "$tmp/shmdoctor" ./cmd/shmdoctor || die "building shmdoctor failed"
doctor=$tmp/shmdoctor

# stack NAME N: a compose project of N private services with distinct shm_size. The image is
# never pulled: the doctor probes with its own.
stack() {
	local name=$1 n=$2 i
	mkdir -p "$tmp/$name"
	{
		echo "name: shmdoctor-bench-$id-$name"
		echo "services:"
		for ((i = 0; i < n; i++)); do
			printf '  svc%d:\n    image: busybox\n    shm_size: %dm\n' "$i" $((64 + 16 * i))
		done
	} >"$tmp/$name/compose.yaml"
}
stack one 1
stack eight 8

# One probe run builds the probe image (tagged by the binary's digest) and checks the probe
# works before anything is timed.
out=$("$doctor" --probe always --write-probe off --format json --fail-on never "$tmp/one") ||
	die "shmdoctor --probe always failed: $(printf '%s' "$out" | tail -n 3)"
measured=$(printf '%s' "$out" | jq -r '.projects[0].services[0].probe.measured_bytes')
[ "$measured" = $((64 << 20)) ] || die "the doctor's probe measured '$measured', want $((64 << 20))"
image=shmdoctor-probe:$(sha256sum "$doctor" | cut -c1-12)
# ensure_image: the probe image again if something removed it meanwhile (`shmdoctor probe
# --clean`, or the tests of another checkout sharing the daemon); a probe run imports it.
ensure_image() {
	docker image inspect "$image" >/dev/null 2>&1 && return
	"$doctor" --probe always --write-probe off --format json --fail-on never "$tmp/one" >/dev/null 2>&1 || true
	docker image inspect "$image" >/dev/null 2>&1 || die "probe image $image is missing and a probe run did not import it"
}
ensure_image

# The same kind of container for the bare run, the agent and dd: what the doctor creates.
lp=(--network none --cap-drop ALL --read-only --user 65534:65534 --security-opt no-new-privileges --pids-limit 64 --label "$label")

# --- a, b: latency -----------------------------------------------------------------------
echo "== a, b: probe latency ($timer, $runs runs per command)"
# The engine's own parallelism, for b: eight bare runs at once.
{
	echo 'for i in 1 2 3 4 5 6 7 8; do'
	printf '\tdocker run --rm --pull never'
	printf ' %q' "${lp[@]}" "$image" --target 0
	printf ' >/dev/null &\n'
	echo 'done'
	echo 'for i in 1 2 3 4 5 6 7 8; do wait -n || exit 1; done'
} >"$tmp/docker-run-8.sh"
names=(never-1 always-1 never-8 always-8 docker-run docker-run-8)
cmds=(
	"$doctor --probe never --format json --fail-on never $tmp/one"
	"$doctor --probe always --write-probe off --format json --fail-on never $tmp/one"
	"$doctor --probe never --format json --fail-on never $tmp/eight"
	"$doctor --probe always --write-probe off --format json --fail-on never $tmp/eight"
	"docker run --rm --pull never ${lp[*]} $image --target 0"
	"bash $tmp/docker-run-8.sh"
)
# Each command once, failing loudly: timing would hide an error.
ensure_image
for i in "${!cmds[@]}"; do
	${cmds[$i]} >/dev/null 2>"$tmp/err" || die "${names[$i]} failed: $(tail -n 3 "$tmp/err")"
done
declare -A samples # name → newline-separated wall times in ms
if [ "$use_hyperfine" = 1 ]; then
	per=2
	rounds=$(((runs + per - 1) / per))
	for ((r = 0; r < rounds; r++)); do
		ensure_image
		hyperfine -N --style none --runs "$per" --export-json "$tmp/hf.json" "${cmds[@]}" >/dev/null 2>"$tmp/hf.err" ||
			die "hyperfine failed: $(head -n 5 "$tmp/hf.err")"
		for i in "${!names[@]}"; do
			samples[${names[$i]}]+=$(jq -r ".results[$i].times[] | . * 1000" "$tmp/hf.json")$'\n'
		done
	done
else
	for ((r = 0; r < runs; r++)); do
		ensure_image
		for i in "${!cmds[@]}"; do
			t0=${EPOCHREALTIME/[.,]/}
			${cmds[$i]} >/dev/null 2>&1 || die "${names[$i]} failed"
			t1=${EPOCHREALTIME/[.,]/}
			samples[${names[$i]}]+=$(((t1 - t0) / 1000))$'\n'
		done
	done
fi
median() { sort -g | awk 'NF { a[++n] = $1 } END { if (!n) { print "nan"; exit } printf "%.3f\n", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'; }
declare -A ms
for n in "${names[@]}"; do
	ms[$n]=$(printf '%s' "${samples[$n]}" | median)
done

# --- Go benchmark ------------------------------------------------------------------------
declare -A gb
if [ "$gotest" = 1 ]; then
	echo "== in-process: go test -bench ProbeCompare ./probe/ ($runs iterations)"
	go test -count=1 -run '^$' -bench '^BenchmarkProbeCompare$' -benchtime "${runs}x" ./probe/ >"$tmp/gobench" 2>&1 ||
		die "go benchmark failed: $(tail -n 5 "$tmp/gobench")"
	# Metrics come as "VALUE UNIT" pairs after the iteration count.
	while read -r value unit; do
		gb[$unit]=$value
	done < <(awk '/^BenchmarkProbeCompare/ { for (i = 3; i < NF; i += 2) print $i, $(i + 1) }' "$tmp/gobench")
	[ -n "${gb[one-ms]:-}" ] || die "no figures in the go benchmark's output: $(tail -n 5 "$tmp/gobench")"
fi

# --- c: throughput -----------------------------------------------------------------------
echo "== c: write throughput, $mib MiB into /dev/shm ($runs runs each, interleaved)"
bb=$(command -v busybox || true)
if [ -z "$bb" ] && [ "$(id -u)" = 0 ] && [ -z "${CI:-}" ] && command -v apt-get >/dev/null; then
	echo "installing busybox-static" >&2
	apt-get install -y -qq busybox-static >/dev/null 2>&1 || true
	bb=$(command -v busybox || true)
fi
[ -n "$bb" ] || die "busybox is not installed (apt-get install busybox-static)"
if ! LC_ALL=C file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
	[ -x /bin/busybox.static ] && bb=/bin/busybox.static
fi
mkdir -p "$tmp/bbroot"
cp "$bb" "$tmp/bbroot/busybox"
tar -C "$tmp/bbroot" -cf "$tmp/busybox.tar" busybox
docker import --change 'ENTRYPOINT ["/busybox"]' "$tmp/busybox.tar" "$busybox_image" >/dev/null ||
	die "importing the busybox image failed"
shm=$((mib + 64))m
bytes=$((mib << 20))
# agent WORKERS: the agent's own GB/s (write(2) mode) for $mib MiB.
agent() {
	local w=()
	[ "$1" = default ] || w=(--workers "$1")
	docker run --rm --pull never "${lp[@]}" --shm-size "$shm" "$image" --target "$bytes" --mode write "${w[@]}" |
		jq -r 'select(.event == "report") | .report.write | select(.outcome == "ok") | .gbps'
}
# dd_gbps [rm]: busybox dd timed by busybox time inside the container (10 ms resolution:
# hence the large default size; the status line with dd's own rate is compiled out of
# Debian's busybox). With rm, the file is removed inside the timing: the same work as the
# agent, whose figure includes closing its unlinked files, which frees their pages.
dd_gbps() {
	local t script="/busybox dd if=/dev/zero of=/dev/shm/x bs=1M count=$mib"
	[ "${1:-}" != rm ] || script="$script && /busybox rm /dev/shm/x"
	t=$(docker run --rm --pull never "${lp[@]}" --shm-size "$shm" "$busybox_image" \
		time -f '%e' /busybox sh -c "$script" 2>&1 | tail -n 1)
	awk -v b="$bytes" -v t="$t" 'BEGIN { if (t + 0 > 0) printf "%.3f\n", b / t / 1e9 }'
}
declare -A gbps
for ((r = 0; r < runs; r++)); do
	ensure_image
	v=$(agent default) || v=''
	[ -n "$v" ] || die "the agent's write probe failed"
	gbps[agent]+=$v$'\n'
	v=$(agent 1) || v=''
	[ -n "$v" ] || die "the agent's write probe (1 worker) failed"
	gbps[agent1]+=$v$'\n'
	v=$(dd_gbps) || v=''
	[ -n "$v" ] || die "dd in the busybox container failed"
	gbps[dd]+=$v$'\n'
	v=$(dd_gbps rm) || v=''
	[ -n "$v" ] || die "dd and rm in the busybox container failed"
	gbps[ddrm]+=$v$'\n'
done
for k in agent agent1 dd ddrm; do
	gbps[$k]=$(printf '%s' "${gbps[$k]}" | median)
done

# --- table -------------------------------------------------------------------------------
echo
echo "daemon: Docker $(docker version --format '{{.Server.Version}}') (API $(docker version --format '{{.Server.APIVersion}}')), $(docker info --format '{{.NCPU}} CPUs, cgroup v{{.CgroupVersion}}, {{.Driver}}'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "medians of $runs runs; process figures: probe = (--probe always) - (--probe never)"
echo
row='%-46s %12s %12s %8s %8s %5s\n'
# shellcheck disable=SC2059 # the format is the table's layout
printf "$row" figure doctor baseline ratio target met
# line NAME DOCTOR BASELINE UNIT OP TARGET: one row; OP is <= or >=.
line() {
	awk -v row="$row" -v n="$1" -v d="$2" -v b="$3" -v u="$4" -v op="$5" -v t="$6" 'BEGIN {
		if (b + 0 == 0) { printf row, n, d u, b u, "-", op t "x", "-"; exit }
		r = d / b
		met = (op == "<=" ? r <= t : r >= t) ? "yes" : "no"
		printf row, n, sprintf("%.1f%s", d, u), sprintf("%.1f%s", b, u), sprintf("%.2fx", r), op t "x", met
	}'
}
p1=$(awk -v a="${ms[always-1]}" -v n="${ms[never-1]}" 'BEGIN { printf "%.3f", a - n }')
p8=$(awk -v a="${ms[always-8]}" -v n="${ms[never-8]}" 'BEGIN { printf "%.3f", a - n }')
line "a. probe 1 service vs docker run --rm" "$p1" "${ms[docker-run]}" ms "<=" 1.2
line "b. probe 8 services vs 1 (parallel 4)" "$p8" "$p1" ms "<=" 2
line "   engine: 8 x docker run --rm at once vs 1" "${ms[docker-run-8]}" "${ms[docker-run]}" ms "<=" 2
if [ "$gotest" = 1 ]; then
	# spec: the doctor's own container run bare, so the ratio is the cost of Run's own calls;
	# bare: a plain --network none container (no NetworkDisabled, which the doctor sets).
	line "a. in-process: Run(1) vs same container bare" "${gb[one-ms]}" "${gb[spec-ms]}" ms "<=" 1.2
	line "a. in-process: Run(1) vs plain container bare" "${gb[one-ms]}" "${gb[bare-ms]}" ms "<=" 1.2
	line "b. in-process: Run(8, parallel 8) vs Run(1)" "${gb[eight-ms]}" "${gb[one-ms]}" ms "<=" 2
	line "b. in-process: Run(8, parallel 4) vs Run(1)" "${gb[eight-p4-ms]}" "${gb[one-ms]}" ms "<=" 2
fi
awk -v row="$row" -v g="${gbps[agent]}" -v g1="${gbps[agent1]}" -v d="${gbps[dd]}" -v dr="${gbps[ddrm]}" 'BEGIN {
	r = g / d; r1 = g1 / d; r2 = g / dr
	printf row, "c. write probe GB/s vs dd bs=1M", sprintf("%.2f", g), sprintf("%.2f", d), sprintf("%.2fx", r), ">=1.5x", (r >= 1.5 ? "yes" : "no")
	printf row, "   write probe, 1 worker, vs dd", sprintf("%.2f", g1), sprintf("%.2f", d), sprintf("%.2fx", r1), "-", "-"
	printf row, "   write probe vs dd + rm in the timing", sprintf("%.2f", g), sprintf("%.2f", dr), sprintf("%.2fx", r2), ">=1.5x", (r2 >= 1.5 ? "yes" : "no")
}'
echo
echo "raw medians (ms): never-1 ${ms[never-1]}, always-1 ${ms[always-1]}, never-8 ${ms[never-8]}, always-8 ${ms[always-8]}, docker run ${ms[docker-run]}, 8 x docker run ${ms[docker-run-8]}"
