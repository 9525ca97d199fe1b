# Helpers shared by bench/compare.sh, bench/dtype-compare.sh,
# bench/io-compare.sh and bench/rma-compare.sh (sourced, not run). The caller
# sets HERE, ROOT, BUILD, LOGDIR and SKIP_INSTALL and declares the arrays
# SKIPPED and FAILED before calling them; the launch and report helpers below
# also use RESULTS, TIMEOUT, LAUNCHERS, T_BEGIN and LOAD_BEGIN.
# shellcheck shell=bash

log() { echo "# $*" >&2; }
skip() { SKIPPED+=("$*"); log "SKIP: $*"; }
fail() { FAILED+=("$*"); log "FAILED: $*"; }

# load_check WHEN: warn if the 1-minute load is above 0.5 (the machine is
# shared and small: anything else running skews results).
load_check() {
	local l1
	l1=$(cut -d' ' -f1 /proc/loadavg)
	if awk -v l="$l1" 'BEGIN {exit !(l > 0.5)}'; then
		log "WARNING: load average $l1 $1: other work on this host will skew the numbers"
	fi
}

# ensure_packages: install Debian's Open MPI and MPICH if missing (never with
# SKIP_INSTALL=1). Returns 1 if they are missing and cannot be installed.
PKGS=(mpich libmpich-dev openmpi-bin libopenmpi-dev)
ensure_packages() {
	local missing=() p
	for p in "${PKGS[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	((${#missing[@]} == 0)) && return 0
	if [[ $SKIP_INSTALL == 1 ]]; then
		log "missing packages ${missing[*]} and SKIP_INSTALL=1"
		return 1
	fi
	local sudo=()
	((EUID != 0)) && sudo=(sudo)
	log "installing ${missing[*]}"
	"${sudo[@]}" apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}" >&2
}

# go_build OUT PKG: build one Go binary from the module at $ROOT; a missing
# package or a failed build is a skip.
go_build() {
	local out=$1 pkg=$2
	if [[ ! -d $ROOT/${pkg#./} ]]; then
		skip "$pkg does not exist yet (no $(basename "$out"))"
		return 1
	fi
	if ! (cd "$ROOT" && go build -o "$out" "$pkg") >"$LOGDIR/go-build-$(basename "$out").log" 2>&1; then
		skip "go build $pkg failed: $(head -n 3 "$LOGDIR/go-build-$(basename "$out").log" | tr '\n' ' ')"
		return 1
	fi
	log "built $out"
}

# Launchers: they set CMD.
OMPI_ROOT=()
((EUID == 0)) && OMPI_ROOT=(--allow-run-as-root)
CMD=()

# ompi_cmd NP [mpirun options...] -- PROGRAM ARGS...: set CMD to the Open MPI launch.
ompi_cmd() {
	local np=$1
	shift
	local opts=()
	while [[ $1 != -- ]]; do opts+=("$1"); shift; done
	shift
	local over=()
	((np > 2)) && over=(--oversubscribe)
	CMD=(mpirun.openmpi "${OMPI_ROOT[@]}" "${over[@]}" "${opts[@]}" -n "$np" "$@")
}
# mpich_cmd NP PROGRAM ARGS...: set CMD to the MPICH launch.
mpich_cmd() {
	local np=$1
	shift
	CMD=(mpirun.mpich -n "$np" "$@")
}

now_ns() { date +%s%N; }

median_of() { # median_of NUMBERS...
	printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}

# start_run NAME [DIR...]: set LOGDIR to $BUILD/logs/NAME-$STAMP, make it,
# $BUILD/ftmpi, the DIRs and RESULTS' folder, empty RESULTS, and start the
# run: SKIPPED, FAILED and T_BEGIN.
start_run() {
	local name=$1
	shift
	LOGDIR=$BUILD/logs/$name-$STAMP
	mkdir -p "$BUILD/ftmpi" "$LOGDIR" "$@" "$(dirname "$RESULTS")"
	: >"$RESULTS"
	SKIPPED=()
	FAILED=()
	T_BEGIN=$(date +%s)
}

# need_posint VAR...: exit 2 unless every named variable holds a positive integer.
need_posint() {
	local v
	for v in "$@"; do
		if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
			echo "$v=${!v}: want a positive integer" >&2
			exit 2
		fi
	done
}

# build_mpi_bench PROG: install Open MPI and MPICH if missing and build
# bench/c/PROG.c against both into $BUILD/{openmpi,mpich}/PROG. Sets HAVE_MPI
# (0: packages missing, a skip; or the build failed, a failure).
build_mpi_bench() {
	local prog=$1
	HAVE_MPI=1
	if ! ensure_packages; then
		HAVE_MPI=0
		skip "Open MPI and MPICH (packages missing and not installable)"
		return 0
	fi
	log "building bench/c/$prog.c into $BUILD/{mpich,openmpi}/$prog"
	if ! make -s -C "$HERE/c" BUILD="$BUILD" "$BUILD/openmpi/$prog" "$BUILD/mpich/$prog" >"$LOGDIR/make.log" 2>&1; then
		cat "$LOGDIR/make.log" >&2
		fail "building bench/c/$prog.c"
		HAVE_MPI=0
	fi
}

# build_ftmpi: build ftmpirun and ftmpi-bench into $BUILD/ftmpi. Sets HAVE_FT
# (0: either is missing).
build_ftmpi() {
	HAVE_FT=1
	go_build "$BUILD/ftmpi/ftmpirun" ./cmd/ftmpirun || HAVE_FT=0
	go_build "$BUILD/ftmpi/ftmpi-bench" ./cmd/ftmpi-bench || HAVE_FT=0
}

# build_table_tool NAME: build bench/NAME into $BUILD/NAME, or exit 1 (no
# table is possible without it).
build_table_tool() {
	go_build "$BUILD/$1" "./bench/$1" || {
		echo "cannot build bench/$1: no table possible" >&2
		exit 1
	}
}

# need_launchers: exit 1 if LAUNCHERS is empty (everything was skipped).
need_launchers() {
	if ((${#LAUNCHERS[@]} == 0)); then
		echo "nothing to run (see the skips above)" >&2
		exit 1
	fi
}

# launch_order ROUND: set ORDER to LAUNCHERS, reversed in even rounds (so no
# launcher always goes first).
ORDER=()
launch_order() {
	local i
	ORDER=("${LAUNCHERS[@]}")
	if (($1 % 2 == 0)); then
		ORDER=()
		for ((i = ${#LAUNCHERS[@]} - 1; i >= 0; i--)); do ORDER+=("${LAUNCHERS[i]}"); done
	fi
}

# run_tagged ROUND WHAT STEM KEY PREFIX: one launch of CMD (set by the caller)
# under TIMEOUT, stdout and stderr to $LOGDIR/STEM.out and .err. Its lines
# starting {"name":"PREFIX- go to RESULTS, tagged with ROUND and the 1-minute
# load read before the launch. A launch that fails, times out or prints no
# such line is a failure (named WHAT) and sets BAD[KEY] (the caller declares
# the associative array BAD) so that it is not launched again.
run_tagged() {
	local round=$1 what=$2 stem=$3 key=$4 prefix=$5 rc=0 load1 out err
	out="$LOGDIR/$stem.out" err="$LOGDIR/$stem.err"
	load1=$(cut -d' ' -f1 /proc/loadavg)
	log "round $round $what (load $load1): ${CMD[*]}"
	timeout -k 10 "$TIMEOUT" "${CMD[@]}" >"$out" 2>"$err" || rc=$?
	if ((rc != 0)); then
		BAD[$key]=1
		if ((rc == 124 || rc == 137)); then
			fail "$what round $round: timed out after ${TIMEOUT}s (log $err)"
		else
			fail "$what round $round: exit $rc: $(tail -n 3 "$err" | tr '\n' ' ')"
		fi
		return 0
	fi
	if ! grep -q "^{\"name\":\"$prefix-" "$out"; then
		BAD[$key]=1
		fail "$what round $round: no $prefix result lines ($(tail -n 3 "$err" | tr '\n' ' '))"
		return 0
	fi
	grep "^{\"name\":\"$prefix-" "$out" | sed "s/}\$/,\"round\":$round,\"load1\":$load1}/" >>"$RESULTS"
}

# load_line: the load averages before the benchmarks (LOAD_BEGIN) and now, a
# line of the table's header.
load_line() {
	echo "Load average before: $LOAD_BEGIN, after: $(cut -d' ' -f1-3 /proc/loadavg)."
}

# write_table TOOL TITLE LINE...: write TABLE (RESULTS with .md for .jsonl):
# the heading "# TITLE (date, cores, host)", the LINEs (one of them usually
# "$(load_line)") and bench/TOOL's table of RESULTS (built by
# build_table_tool); then print it. No results at all is a failure.
write_table() {
	local tool=$1 title=$2
	shift 2
	TABLE=${RESULTS%.jsonl}.md
	if [[ ! -s $RESULTS ]]; then
		fail "no results at all"
		return 0
	fi
	{
		echo "# $title ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(hostname))"
		echo
		printf '%s\n' "$@"
		echo
		"$BUILD/$tool" "$RESULTS"
	} >"$TABLE" 2>>"$LOGDIR/$tool.err" || fail "table: $(tail -n 2 "$LOGDIR/$tool.err" | tr '\n' ' ')"
	if [[ -s $TABLE ]]; then cat "$TABLE"; fi
}

# report_end: log where RESULTS, TABLE, ROWS (if set) and the logs are, every
# skip and failure and the time since T_BEGIN; its status is the script's
# (non-zero if anything failed).
report_end() {
	local s
	log "results: $RESULTS"
	if [[ -s ${TABLE:-} ]]; then log "table:   $TABLE"; fi
	if [[ -s ${ROWS:-} ]]; then log "rows:    $ROWS"; fi
	log "logs:    $LOGDIR"
	for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do log "skipped: $s"; done
	for s in "${FAILED[@]+"${FAILED[@]}"}"; do log "failed:  $s"; done
	log "elapsed: $(($(date +%s) - T_BEGIN)) s"
	((${#FAILED[@]} == 0))
}
