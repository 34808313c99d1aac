#!/usr/bin/env bash
# bench-large.sh: the large-file figures. Writes compose files of 1, 2, 4 and 8 MiB of each
# shape scripts/genlarge knows, then runs `shmdoctor --probe never --format json FILE` and
# the reference `docker-compose -f FILE config -q` (scripts/reference-compose.sh) once on
# each under /usr/bin/time, and prints CPU seconds, peak RSS and the doctor/compose CPU
# ratio. A file the doctor refuses (exit 2, "refusing the file") is marked so. It reports
# and does not assert.
#
# Usage: scripts/bench-large.sh [-t TIMEOUT_SECONDS] [-m "1 2 4 8"] [-k "services merge mapping lists"]
set -euo pipefail
timeout_s=300
sizes="1 2 4 8"
kinds="services merge mapping lists"
while [ $# -gt 0 ]; do
	case $1 in
	-t) timeout_s=$2; shift 2 ;;
	-m) sizes=$2; shift 2 ;;
	-k) kinds=$2; shift 2 ;;
	*) sed -n '/^# Usage:/p' "$0" >&2; exit 2 ;;
	esac
done
[ -x /usr/bin/time ] || { echo "bench-large: /usr/bin/time is needed (Debian package time)" >&2; exit 2; }
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/shmdoctor" ./cmd/shmdoctor
compose=$(bash scripts/reference-compose.sh | tail -n 1)
export DOCKER_CONFIG=$tmp/docker-config
mkdir -p "$DOCKER_CONFIG"
unset COMPOSE_FILE COMPOSE_PROFILES COMPOSE_PROJECT_NAME COMPOSE_ENV_FILES
go run ./scripts/genlarge -o "$tmp/files" -mib "${sizes// /,}" -kinds "${kinds// /,}" >/dev/null

# run NAME CMD...: "CPU_SECONDS RSS_MIB EXIT" of one run.
run() {
	local name=$1
	shift
	/usr/bin/time -f '%U %S %M %x' -o "$tmp/time" timeout "$timeout_s" "$@" >"$tmp/$name.out" 2>&1 || true
	awk 'END { printf "%.2f %.0f %d\n", $1 + $2, $3 / 1024, $4 }' "$tmp/time"
}

printf '%-9s %5s %11s %9s %12s %10s %7s  %s\n' kind MiB 'doctor cpu' 'doctor MiB' 'compose cpu' 'compose MiB' ratio note
for k in $kinds; do
	for m in $sizes; do
		f=$tmp/files/$k-${m}MiB.yaml
		read -r dcpu drss drc < <(run doctor "$tmp/shmdoctor" --probe never --format json "$f")
		read -r ccpu crss crc < <(run compose "$compose" -f "$f" config -q)
		note=""
		if [ "$drc" = 2 ] && grep -q "refusing the file" "$tmp/doctor.out"; then note="doctor refuses"; fi
		[ "$drc" = 124 ] && note="$note doctor timed out"
		[ "$crc" = 124 ] && note="$note compose timed out"
		ratio=$(awk -v d="$dcpu" -v c="$ccpu" 'BEGIN { if (c > 0) printf "%.2f", d / c; else print "-" }')
		printf '%-9s %5s %11s %9s %12s %10s %7s  %s\n' "$k" "$m" "$dcpu" "$drss" "$ccpu" "$crss" "$ratio" "$note"
	done
done
