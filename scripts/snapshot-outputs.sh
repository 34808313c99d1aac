#!/usr/bin/env bash
# snapshot-outputs.sh: every output of the doctor over every input the repository and the corpus
# give, one set of files per invocation, so that a refactor can be shown to change no byte of
# them: snapshot before, snapshot after, `diff -r` the two folders.
#
# Inputs: every folder under testdata that holds YAML and every YAML file there (the demos, the
# rule, Kubernetes, load, discover, report, probe and lab fixtures, the secrets files), and, when
# SHMDOCTOR_CORPUS names the corpus, every file its INDEX.tsv lists. A fixture's
# "# shmdoctor: --target podman" header is passed as flags, as the rule tests read it.
# Modes, all with --probe never: --format text, text -v --show-suppressed, json, sarif, junit,
# github, codeclimate, baseline, --fix, and --policy isolation as json and --fix; json without
# the header for fixtures that have one; -r as text, json, sarif and --fix over testdata and its
# fixture trees (text and json over the corpus); standard
# input; flag variants and usage errors on the demo; shmdoctor baseline, --baseline, -o FILE and
# --fix --write (the files they write are kept too); rules, explain of every rule by ID and by
# name, version, the docker CLI plugin metadata, and every command's help. host, watch and probe
# run only as --help: the Docker daemon is never contacted.
#
# Every invocation runs in a scratch folder holding copies of testdata and the corpus (paths in
# outputs read testdata/... and corpus/...), under env -i with a private HOME, XDG folders,
# DOCKER_CONFIG and TMPDIR, DOCKER_HOST on a socket nothing listens on, NO_COLOR=1, COLUMNS=80,
# LC_ALL=C, TZ=UTC and a fixed SHMDOCTOR_CANARY (the secrets fixtures interpolate it).
#
# Output, in OUTDIR: NAME/MODE.out (stdout), NAME/MODE.err (stderr), NAME/MODE.rc (the exit
# status), NAME/MODE.file (a file the run wrote, where it writes one), and INVOCATIONS, one line
# per invocation: NAME/MODE, a tab, the command. NAME is the input's path (testdata/rules/SHM001,
# corpus/compose/...), or cmd/... for runs without one.
#
# Normalised, by one sed -z -E on .out, .err and .file, and nothing else:
#   - the scratch folder's absolute path (SARIF's source root is file:///that/folder/)
#     becomes <TMP>;
#   - the binary's own version, as "version", "semanticVersion" and "Version" JSON values and
#     the "shmdoctor VERSION" line, becomes <VERSION>; its commit and commit time (set by
#     make build, or the go command's VCS stamps) become <COMMIT> and <COMMIT_TIME>;
#   - in the note "docker compose would refuse this project as it stands: service "X" has
#     neither an image nor a build context specified: invalid compose project", the service
#     becomes <SERVICE> and the sentence one line: compose-go validates the services in map
#     order, so which of several such services it names changes from run to run, and the text
#     format wraps the sentence by the name's length.
# No output holds a timestamp or a duration with --probe never (JUnit's time is always "0").
# Not run: --strict-env on files with several unset variables, whose error and notes follow
# compose-go's map order from run to run.
#
# Usage: scripts/snapshot-outputs.sh [-b BINARY] [-j JOBS] OUTDIR
#   -b BINARY  the doctor to run (default: make build into a temporary folder); compare
#              binaries built the same way: how a binary is built decides whether version
#              prints a commit
#   -j JOBS    invocations run at once (default 2)
#   OUTDIR     where the outputs go: absent or empty
#   -h         print this help
set -euo pipefail
export LC_ALL=C

usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "snapshot-outputs: $*" >&2; exit 2; }

bin=
jobs=2
while [ $# -gt 0 ]; do
	case $1 in
	-b) [ $# -ge 2 ] || die "-b needs a binary"; bin=$2; shift 2 ;;
	-j) [ $# -ge 2 ] || die "-j needs a number"; jobs=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) usage >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { usage >&2; exit 2; }
out=$1
case $jobs in '' | *[!0-9]* | 0) die "-j must be a positive number, not '$jobs'" ;; esac
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then die "$out is not empty"; fi

root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${SHMDOCTOR_CORPUS:-}
if [ -n "$corpus" ]; then
	[ -f "$corpus/INDEX.tsv" ] || die "SHMDOCTOR_CORPUS=$corpus holds no INDEX.tsv"
	corpus=$(cd "$corpus" && pwd)
fi
if [ -n "$bin" ]; then
	[ -x "$bin" ] || die "$bin is not an executable"
	bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
work=$tmp/work
mkdir -p "$tmp/bin" "$tmp/home/.config" "$tmp/home/.cache" "$tmp/home/.local/share" \
	"$tmp/home/.local/state" "$tmp/run" "$tmp/docker" "$tmp/tmp" "$work/outputs"
chmod 700 "$tmp/run"

if [ -n "$bin" ]; then
	cp "$bin" "$tmp/bin/shmdoctor"
else
	command -v go >/dev/null || die "go is not on PATH (or give -b BINARY)"
	make -s -C "$root" build BIN="$tmp/bin/shmdoctor" >&2 || die "make build failed"
fi
# The docker CLI runs a plugin as docker-shmdoctor: the same binary under that name.
ln -s shmdoctor "$tmp/bin/docker-shmdoctor"

cp -R "$root/testdata" "$work/testdata"
if [ -n "$corpus" ]; then cp -R "$corpus" "$work/corpus"; fi
# --fix --write edits these copies, never the inputs the other runs read.
mkdir -p "$work/write"
cp -R "$work/testdata/demo" "$work/write/demo"
cp -R "$work/testdata/demo-k8s" "$work/write/demo-k8s"
# --config: the settings example of the README.
cat >"$work/outputs/example.shmdoctor.yaml" <<'EOF'
policy: isolation          # --policy
target: compose            # --target
fail-on: error             # --fail-on
need: 2g                   # --need
severity:                  # per rule: error, warning or info
  SHM020: warning
ignore:                    # rules suppressed everywhere, each with an optional reason
  - SHM030 our GPU images set the ulimits in their entrypoint
ignore-paths:              # findings in these files are suppressed; globs relative to this file
  - legacy/** frozen until the migration
EOF

# doctor ARGS...: the doctor in the hermetic environment, from the scratch folder.
doctor() {
	(cd "$SNAP_TMP/work" && exec env -i \
		PATH="$SNAP_TMP/bin:/usr/bin:/bin" HOME="$SNAP_TMP/home" \
		XDG_CONFIG_HOME="$SNAP_TMP/home/.config" XDG_CACHE_HOME="$SNAP_TMP/home/.cache" \
		XDG_DATA_HOME="$SNAP_TMP/home/.local/share" XDG_STATE_HOME="$SNAP_TMP/home/.local/state" \
		XDG_RUNTIME_DIR="$SNAP_TMP/run" DOCKER_CONFIG="$SNAP_TMP/docker" \
		DOCKER_HOST="unix://$SNAP_TMP/no-docker.sock" TMPDIR="$SNAP_TMP/tmp" \
		NO_COLOR=1 COLUMNS=80 TERM=dumb LC_ALL=C TZ=UTC SHMDOCTOR_CANARY=c4n4ry-snapshot \
		timeout -k 5 120 "$@")
}

# run_job LINE: one invocation. LINE is NAME, MODE, STDIN (a file, or empty), FILE (a file the
# run writes, kept as MODE.file, or empty), then the command, separated by \x1f.
run_job() {
	local f name mode stdin=/dev/null keep base rc=0
	IFS=$'\x1f' read -r -a f <<<"$1"
	name=${f[0]} mode=${f[1]} keep=${f[3]}
	[ -z "${f[2]}" ] || stdin=$SNAP_TMP/work/${f[2]}
	base=$SNAP_OUT/$name/$mode
	mkdir -p "$SNAP_OUT/$name"
	doctor "${f[@]:4}" <"$stdin" >"$base.out" 2>"$base.err" || rc=$?
	echo "$rc" >"$base.rc"
	if [ -n "$keep" ]; then
		if [ -f "$SNAP_TMP/work/$keep" ]; then cp "$SNAP_TMP/work/$keep" "$base.file"; else echo "(not written)" >"$base.file"; fi
	fi
	sed -z -E -i -f "$SNAP_TMP/normalise.sed" "$base.out" "$base.err" ${keep:+"$base.file"}
}

# run_jobs LINE...: run_job for each, in a child of xargs.
run_jobs() {
	local l
	for l in "$@"; do run_job "$l"; done
}

export SNAP_TMP=$tmp SNAP_OUT=$out
export -f doctor run_job run_jobs

# sed_quote TEXT: TEXT as a literal in an extended sed pattern whose delimiter is #.
sed_quote() { printf '%s' "$1" | sed 's/[][#.*^$\\(){}+?|]/\\&/g'; }

# json_field NAME: the string value of NAME in the version's JSON.
json_field() { sed -n 's/^  "'"$1"'": "\(.*\)",\{0,1\}$/\1/p' "$tmp/version.json"; }

doctor shmdoctor version --format json >"$tmp/version.json" || die "shmdoctor version failed"
version=$(json_field version) commit=$(json_field commit) commit_time=$(json_field commit_time)
[ -n "$version" ] || die "shmdoctor version --format json named no version"
v=$(sed_quote "$version")
{
	echo "s#$(sed_quote "$tmp")#<TMP>#g"
	echo "s#\"version\": \"$v\"#\"version\": \"<VERSION>\"#g"
	echo "s#\"Version\": \"$v\"#\"Version\": \"<VERSION>\"#g"
	echo "s#\"semanticVersion\": \"$(sed_quote "${version#v}")\"#\"semanticVersion\": \"<VERSION>\"#g"
	printf 's#(^|\\n)shmdoctor %s\\n#\\1shmdoctor <VERSION>\\n#g\n' "$v"
	if [ -n "$commit_time" ]; then echo "s#$(sed_quote "$commit_time")#<COMMIT_TIME>#g"; fi
	if [ -n "$commit" ]; then echo "s#$(sed_quote "$commit")#<COMMIT>#g"; fi
	# (\\?) is the backslash of a JSON string's quotes; [[:space:]]+ may be a wrapped line.
	cat <<'EOF'
s#service[[:space:]]+(\\?)"[^"\\]*\1"[[:space:]]+has[[:space:]]+neither[[:space:]]+an[[:space:]]+image[[:space:]]+nor[[:space:]]+a[[:space:]]+build[[:space:]]+context[[:space:]]+specified:[[:space:]]+invalid[[:space:]]+compose[[:space:]]+project#service \1"<SERVICE>\1" has neither an image nor a build context specified: invalid compose project#g
EOF
} >"$tmp/normalise.sed"

# --- the invocations -------------------------------------------------------------------
# The baseline the --baseline runs read is written first, the rest in parallel.
first=$tmp/jobs.first joblist=$tmp/jobs
: >"$first"
: >"$joblist"
prog=shmdoctor
# job NAME MODE STDIN FILE ARGS...: one invocation of $prog ARGS..., appended to $joblist.
job() {
	local IFS=$'\x1f'
	printf '%s\n' "$1${IFS}$2${IFS}$3${IFS}$4${IFS}$prog${IFS}${*:5}" >>"$joblist"
}
never=(--probe never)

# header FILE: the flags of a fixture's "# shmdoctor: ..." first line, one per line.
header() { sed -n '1s/^# shmdoctor://p' "$1" | tr -s ' ' '\n' | sed '/^$/d'; }

# check_input PATH: the modes of one input.
check_input() {
	local in=$1 hf=() h
	if [ -d "$work/$in" ]; then
		h=$(cd "$work/$in" && { ls compose.yaml 2>/dev/null || true; ls -- *.yaml *.yml 2>/dev/null || true; } | head -n 1)
		[ -z "$h" ] || mapfile -t hf < <(header "$work/$in/$h")
	else
		mapfile -t hf < <(header "$work/$in")
	fi
	local base=("${never[@]}" "${hf[@]}")
	job "$in" text "" "" "${base[@]}" --format text "$in"
	job "$in" verbose "" "" "${base[@]}" --format text -v --show-suppressed "$in"
	local f
	for f in json sarif junit github codeclimate baseline; do
		job "$in" "$f" "" "" "${base[@]}" --format "$f" "$in"
	done
	job "$in" fix "" "" "${base[@]}" --fix "$in"
	job "$in" iso.json "" "" "${base[@]}" --policy isolation --format json "$in"
	job "$in" iso.fix "" "" "${base[@]}" --policy isolation --fix "$in"
	if [ "${#hf[@]}" -gt 0 ]; then
		job "$in" noheader.json "" "" "${never[@]}" --format json "$in"
	fi
}

# Every folder under testdata holding YAML, and every YAML file.
mapfile -t inputs < <(cd "$work" && {
	find testdata -type f \( -name '*.yaml' -o -name '*.yml' \) -printf '%h\n'
	find testdata -type f \( -name '*.yaml' -o -name '*.yml' \)
} | LC_ALL=C sort -u)
for in in "${inputs[@]}"; do check_input "$in"; done
ncorpus=0
if [ -n "$corpus" ]; then
	while IFS=$'\t' read -r path _; do
		case $path in '' | local_path) continue ;; esac
		[ -f "$work/corpus/$path" ] || die "corpus INDEX.tsv names $path, which is missing"
		check_input "corpus/$path"
		ncorpus=$((ncorpus + 1))
	done <"$work/corpus/INDEX.tsv"
fi

# -r over the trees.
for d in testdata testdata/discover testdata/discover/stack testdata/report/shared testdata/rules testdata/k8s testdata/lab; do
	job "$d" r.text "" "" "${never[@]}" -r --format text "$d"
	job "$d" r.json "" "" "${never[@]}" -r --format json "$d"
	job "$d" r.sarif "" "" "${never[@]}" -r --format sarif "$d"
	job "$d" r.fix "" "" "${never[@]}" -r --fix "$d"
done
if [ -n "$corpus" ]; then
	job corpus r.text "" "" "${never[@]}" -r --format text corpus
	job corpus r.json "" "" "${never[@]}" -r --format json corpus
fi
mkdir -p "$work/empty"
job cmd/recursive empty "" "" "${never[@]}" -r empty
job cmd/recursive empty-allowed "" "" "${never[@]}" -r --allow-empty empty

# Standard input.
for f in testdata/demo/compose.yaml testdata/demo-k8s/k8s.yaml; do
	job "cmd/stdin/$f" text "$f" "" "${never[@]}" --format text -
	job "cmd/stdin/$f" json "$f" "" "${never[@]}" --format json -
	job "cmd/stdin/$f" fix "$f" "" "${never[@]}" --fix -
done

# Flag variants and usage errors on the demo.
demo=testdata/demo
job "$demo" opt.quiet "" "" "${never[@]}" -q "$demo"
job "$demo" opt.fail-on-error "" "" "${never[@]}" --fail-on error "$demo"
job "$demo" opt.fail-on-info "" "" "${never[@]}" --fail-on info "$demo"
job "$demo" opt.fail-on-never "" "" "${never[@]}" --fail-on never "$demo"
job "$demo" opt.swarm "" "" "${never[@]}" --target swarm --format json "$demo"
job "$demo" opt.podman "" "" "${never[@]}" --target podman --format json "$demo"
job "$demo" opt.need "" "" "${never[@]}" --need 8g --format json "$demo"
job "$demo" opt.need.fix "" "" "${never[@]}" --need 8g --fix "$demo"
job "$demo" opt.project-name "" "" "${never[@]}" -p renamed --format json "$demo"
job "$demo" opt.color-always "" "" "${never[@]}" --color always "$demo"
job "$demo" opt.config "" "" "${never[@]}" --config outputs/example.shmdoctor.yaml -v "$demo"
job "$demo" opt.config.json "" "" "${never[@]}" --config outputs/example.shmdoctor.yaml --format json "$demo"
job "$demo" opt.no-config "" "" "${never[@]}" --no-config "$demo"
job "$demo" opt.source-root "" "" "${never[@]}" --source-root testdata --format sarif "$demo"
job "$demo" opt.two-outputs "" outputs/demo.sarif "${never[@]}" --format text --format sarif -o - -o outputs/demo.sarif "$demo"
job "$demo" opt.output-json "" outputs/demo.json "${never[@]}" --format json -o outputs/demo.json "$demo"
job "$demo" err.need "" "" "${never[@]}" --need lots "$demo"
job "$demo" err.format "" "" "${never[@]}" --format xml "$demo"
job "$demo" err.fail-on "" "" "${never[@]}" --fail-on loud "$demo"
job "$demo" err.flag "" "" "${never[@]}" --fial-on error "$demo"
job "$demo" err.colors "" "" "${never[@]}" --no-color --color always "$demo"
job "$demo" err.write "" "" "${never[@]}" --write "$demo"
job "$demo" err.fix-json "" "" "${never[@]}" --fix --format json "$demo"
job cmd/missing text "" "" "${never[@]}" testdata/nope
job cmd/missing fix "" "" "${never[@]}" --fix testdata/nope
job cmd/files positions-override "" "" "${never[@]}" --format json \
	-f testdata/rules/positions-override/compose.yaml -f testdata/rules/positions-override/compose.override.yaml
job cmd/files stack-gpu "" "" "${never[@]}" --format json \
	-f testdata/discover/stack/docker-compose.yml -f testdata/discover/stack/docker-compose.gpu.yml
job cmd/files project-directory "" "" "${never[@]}" --format json \
	--project-directory testdata/discover/stack -f testdata/discover/stack/docker-compose.yml
job cmd/files many "" "" "${never[@]}" --format json testdata/demo testdata/demo-k8s testdata/rules/SHM001
for f in write/demo write/demo-k8s; do
	job "cmd/$f" fix-write "" "$f/$(cd "$work/$f" && ls)" "${never[@]}" --fix --write "$f"
done

# Commands, help and version.
mapfile -t ids < <(doctor shmdoctor rules | awk '/^SHM[0-9]/ {print $1}')
mapfile -t names < <(doctor shmdoctor rules | awk '/^SHM[0-9]/ {print $3}')
[ "${#ids[@]}" -gt 0 ] || die "shmdoctor rules listed no rule"
job cmd rules "" "" rules
for r in "${ids[@]}"; do job cmd/explain "$r" "" "" explain "$r"; done
for r in "${names[@]}"; do job cmd/explain "$r" "" "" explain "$r"; done
job cmd/explain err.unknown "" "" explain SHM999
job cmd/explain err.none "" "" explain
job cmd version "" "" version
job cmd version.json "" "" version --format json
job cmd version.flag "" "" --version
job cmd err.command "" "" rulse
job cmd/help top "" "" --help
job cmd/help top-h "" "" -h
job cmd/help help "" "" help
job cmd/help err.unknown "" "" help nope
for c in check baseline rules explain host probe watch version; do
	job cmd/help "$c" "" "" help "$c"
	job cmd/help "$c.flag" "" "" "$c" --help
done
# docker shmdoctor ...: the docker CLI's calls of the plugin.
prog=docker-shmdoctor
job cmd/plugin metadata "" "" docker-cli-plugin-metadata
job cmd/plugin check "" "" --context default shmdoctor "${never[@]}" --format json "$demo"
prog=shmdoctor

joblist=$first
job "$demo" baseline-cmd "" outputs/demo.baseline.json baseline "${never[@]}" -o outputs/demo.baseline.json "$demo"
joblist=$tmp/jobs
job "$demo" opt.baseline "" "" "${never[@]}" --baseline outputs/demo.baseline.json "$demo"
job "$demo" opt.baseline.json "" "" "${never[@]}" --baseline outputs/demo.baseline.json --format json "$demo"
job testdata/rules/SHM001 opt.baseline-other "" "" "${never[@]}" --baseline outputs/demo.baseline.json --format json testdata/rules/SHM001

dups=$(cat "$first" "$joblist" | cut -d $'\x1f' -f 1,2 | sort | uniq -d)
[ -z "$dups" ] || die "two invocations share a name: $dups"

# --- run ---------------------------------------------------------------------------------
start=$SECONDS
xargs -d '\n' -n 20 -P 1 bash -c 'run_jobs "$@"' _ <"$first"
xargs -d '\n' -n 20 -P "$jobs" bash -c 'run_jobs "$@"' _ <"$joblist"
cat "$first" "$joblist" | awk -F $'\x1f' '{
	cmd = ""
	for (i = 5; i <= NF; i++) cmd = cmd (i > 5 ? " " : "") $i
	if ($3 != "") cmd = cmd " <" $3
	print $1 "/" $2 "\t" cmd
}' | LC_ALL=C sort >"$out/INVOCATIONS"

n=$(wc -l <"$out/INVOCATIONS")
files=$(find "$out" -type f | wc -l)
echo "snapshot-outputs: $n invocations ($ncorpus corpus files), $files files in $out, $((SECONDS - start))s" >&2
