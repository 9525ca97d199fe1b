#!/usr/bin/env bash
# ftmpi's fault-tolerance benchmarks side by side with Open MPI 5.0.7's ULFM
# (Debian 13's openmpi-bin, in a chroot made by bench/ompi5/setup.sh), in
# one run on one machine, launches interleaved (ftmpi, Open MPI 5, ftmpi,
# ...) so that load drift hits both alike.
#
#   ftmpi-bench -bench ft     vs  ulfm_ft -bench ft      (failure-free; REPS launches each)
#   ftmpi-bench -bench detect vs  ulfm_ft -bench detect  (one SIGKILL; LAUNCHES launches each)
#   ftmpi-bench -bench replace vs ulfm_ft -bench replace (one SIGKILL, then revoke, shrink,
#                                 spawn 1, merge, split back; SPAWN_LAUNCHES launches each; Open MPI
#                                 with --mca btl self,sm,tcp --mca btl_tcp_if_include lo)
#
# Usage (root; creates the chroot on first use, about 1.4 GB and a few minutes):
#   bench/ft-compare.sh
#   NPS="4 8 16" REPS=5 LAUNCHES=9 SPAWN_LAUNCHES=5 bench/ft-compare.sh
#   FTMPI_REV=HEAD bench/ft-compare.sh   # build ftmpi from a commit (git archive), not the work tree
#   WAIT_QUIET=600 QUIET_LOAD=1.0 bench/ft-compare.sh   # first wait (at most 600 s) for load < 1.0
#   FT_TRANSPORT=unix bench/ft-compare.sh   # ftmpi's transport (default shm: shared memory, as auto on one host)
#   FTMPI_AGREE_SHM=0 bench/ft-compare.sh   # ftmpi's agreements by messages only (the shared segment, internal/ft/shmagree, is on by default)
#
# Output: every raw JSON line on stdout as produced, then the table; progress on
# stderr. Saved: bench/results/ftcompare-<date>.raw.jsonl (one line per launch and
# metric), .jsonl (medians over launches, by bench/ftmedian, per impl) and .md (the
# table, load before and after, versions). Mounts inside the chroot are removed by a
# trap on exit (bench/ompi5/teardown.sh), and any process left inside it is killed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
NPS=${NPS:-"4 8 16"}
REPS=${REPS:-5}                  # failure-free launches per impl and np
LAUNCHES=${LAUNCHES:-9}          # one-failure launches per impl and np
SPAWN_LAUNCHES=${SPAWN_LAUNCHES:-5}
FT_RUNS=${FT_RUNS:-5}            # repetitions inside a failure-free launch
FT_ITERS=${FT_ITERS:-300}
FT_TRANSPORT=${FT_TRANSPORT:-shm} # ftmpirun --transport (auto picks shm on one host)
TIMEOUT=${TIMEOUT:-120}          # per failure-free launch, seconds
FAIL_TIMEOUT=${FAIL_TIMEOUT:-10} # per one-failure launch (Open MPI 5's Finalize after a failure
                                 # sometimes never returns; the results are printed before it)
export OMPI5_ROOT=${OMPI5_ROOT:-/var/cache/ftmpi/trixie}
ROOT=$OMPI5_ROOT
B=${BUILD:-$REPO/bench/build}/ftcompare
OMPI_IMPL=openmpi5-ulfm
OMPI_FLAGS=(--allow-run-as-root --oversubscribe --with-ft ulfm --mca btl self,sm)
OMPI_SPAWN_FLAGS=(--allow-run-as-root --oversubscribe --with-ft ulfm --mca btl self,sm,tcp --mca btl_tcp_if_include lo)

log() { echo "ft-compare: $*" >&2; }

# Processes whose root directory is the chroot are ours (ranks, prted,
# mpirun left by a timed-out launch): kill them by pid.
reap_chroot() {
  local p pids=()
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$(readlink -f "$ROOT")" ] && pids+=("${p#/proc/}")
  done
  if [ ${#pids[@]} -gt 0 ]; then
    log "killing ${#pids[@]} process(es) left in the chroot: ${pids[*]}"
    kill -9 "${pids[@]}" 2>/dev/null || true
    sleep 0.5
  fi
}
SRC_TMP=
cleanup() {
  [ -n "$SRC_TMP" ] && rm -rf "$SRC_TMP"
  reap_chroot
  bench/ompi5/teardown.sh || log "teardown failed; see 'grep $ROOT /proc/mounts'"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench/ompi5/setup.sh

# Open MPI 5 side: build ulfm_ft inside the chroot.
mkdir -p "$ROOT/opt/ftmpi/src" "$ROOT/opt/ftmpi/bin"
cp bench/c/ulfm_ft.c "$ROOT/opt/ftmpi/src/"
chroot "$ROOT" mpicc -O2 -Wall -Wextra -o /opt/ftmpi/bin/ulfm_ft /opt/ftmpi/src/ulfm_ft.c
OMPI_VERSION=$(chroot "$ROOT" mpirun --version 2>/dev/null | head -1)

# ftmpi side.
mkdir -p "$B"
SRC=$REPO
if [ -n "${FTMPI_REV:-}" ]; then
  SRC_TMP=$(mktemp -d)
  SRC=$SRC_TMP
  git archive "$FTMPI_REV" | tar -x -C "$SRC"
  FTMPI_DESC="commit $(git rev-parse --short "$FTMPI_REV")"
else
  FTMPI_DESC="work tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- mpi internal cmd || echo ' + uncommitted changes')"
fi
(cd "$SRC" && go build -o "$B/ftmpirun" ./cmd/ftmpirun && go build -o "$B/ftmpi-bench" ./cmd/ftmpi-bench) || {
  log "cannot build ftmpi from $SRC (someone's edit in progress? try FTMPI_REV=HEAD)"; exit 1; }
go build -o "$B/ftmedian" ./bench/ftmedian
go build -o "$B/fttable" ./bench/ompi5/fttable

# WAIT_QUIET=SECONDS: wait up to that long for the 1-minute load average to drop below QUIET_LOAD.
if [ "${WAIT_QUIET:-0}" -gt 0 ]; then
  end=$((SECONDS + WAIT_QUIET))
  while ! awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v q="${QUIET_LOAD:-1.0}" 'BEGIN { exit !(l < q) }'; do
    [ $SECONDS -ge $end ] && { log "machine not quiet after ${WAIT_QUIET}s; running anyway"; break; }
    sleep 10
  done
fi

STAMP=$(date -u +%Y%m%d-%H%M%S)
mkdir -p bench/results "$B/logs/$STAMP"
RAW=bench/results/ftcompare-$STAMP.raw.jsonl
: >"$RAW"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before: $LOAD_BEFORE"
awk -v l="${LOAD_BEFORE%% *}" 'BEGIN { exit !(l > 0.5) }' && log "WARNING: load above 0.5; figures will be noisy"
FAILED=0 HUNG=0 HUNG_OF=0 HUNG_LABELS=

# run SECONDS LABEL CMD...: one launch with a timeout; JSON lines go to stdout
# and $RAW. A launch that printed its results and then hit the timeout (stuck
# in Finalize) is counted as a hang, not a failure.
run() {
  local limit=$1 label=$2; shift 2
  local out=$B/logs/$STAMP/$label
  case $label in ompi-detect-*|ompi-spawn-*) HUNG_OF=$((HUNG_OF + 1)) ;; esac
  if timeout -k 5 "$limit" "$@" >"$out.out" 2>"$out.err"; then :; else
    local rc=$?
    if [ "$rc" = 124 ] && grep -q '^{' "$out.out"; then
      log "hung after its results (timeout ${limit}s, killed): $label"; HUNG=$((HUNG + 1)); HUNG_LABELS="$HUNG_LABELS $label"
    else
      log "FAILED ($rc): $label (see $out.err)"; FAILED=$((FAILED + 1))
    fi
    case $label in ompi*) reap_chroot ;; esac
  fi
  grep '^{' "$out.out" | tee -a "$RAW" || log "no result from $label"
}
for np in $NPS; do
  ftmpi=("$B/ftmpirun" -n "$np" --transport "$FT_TRANSPORT")
  ompi=(chroot "$ROOT" mpirun "${OMPI_FLAGS[@]}" -n "$np" /opt/ftmpi/bin/ulfm_ft)
  ompi_spawn=(chroot "$ROOT" mpirun "${OMPI_SPAWN_FLAGS[@]}" -n "$np" /opt/ftmpi/bin/ulfm_ft)
  log "np $np: failure-free, $REPS launches each, alternating"
  for i in $(seq "$REPS"); do
    # Alternate which implementation goes first.
    if [ $((i % 2)) = 1 ]; then
      run "$TIMEOUT" "ftmpi-ft-np$np-$i" "${ftmpi[@]}" "$B/ftmpi-bench" -bench ft -runs "$FT_RUNS" -iters "$FT_ITERS"
      run "$TIMEOUT" "ompi-ft-np$np-$i" "${ompi[@]}" -bench ft -runs "$FT_RUNS" -iters "$FT_ITERS" -impl "$OMPI_IMPL" -transport shm
    else
      run "$TIMEOUT" "ompi-ft-np$np-$i" "${ompi[@]}" -bench ft -runs "$FT_RUNS" -iters "$FT_ITERS" -impl "$OMPI_IMPL" -transport shm
      run "$TIMEOUT" "ftmpi-ft-np$np-$i" "${ftmpi[@]}" "$B/ftmpi-bench" -bench ft -runs "$FT_RUNS" -iters "$FT_ITERS"
    fi
  done
  log "np $np: one SIGKILL per launch, $LAUNCHES launches each, alternating"
  for i in $(seq "$LAUNCHES"); do
    if [ $((i % 2)) = 1 ]; then
      run "$FAIL_TIMEOUT" "ftmpi-detect-np$np-$i" "${ftmpi[@]}" --on-failure continue "$B/ftmpi-bench" -bench detect
      run "$FAIL_TIMEOUT" "ompi-detect-np$np-$i" "${ompi[@]}" -bench detect -impl "$OMPI_IMPL" -transport shm
    else
      run "$FAIL_TIMEOUT" "ompi-detect-np$np-$i" "${ompi[@]}" -bench detect -impl "$OMPI_IMPL" -transport shm
      run "$FAIL_TIMEOUT" "ftmpi-detect-np$np-$i" "${ftmpi[@]}" --on-failure continue "$B/ftmpi-bench" -bench detect
    fi
  done
  if [ "$SPAWN_LAUNCHES" -gt 0 ]; then
    log "np $np: replacement (revoke, shrink, spawn, merge, split), $SPAWN_LAUNCHES launches each, alternating"
    for i in $(seq "$SPAWN_LAUNCHES"); do
      if [ $((i % 2)) = 1 ]; then
        run "$FAIL_TIMEOUT" "ftmpi-spawn-np$np-$i" "${ftmpi[@]}" --on-failure continue "$B/ftmpi-bench" -bench replace
        run "$FAIL_TIMEOUT" "ompi-spawn-np$np-$i" "${ompi_spawn[@]}" -bench replace -impl "$OMPI_IMPL" -transport shm+tcp
      else
        run "$FAIL_TIMEOUT" "ompi-spawn-np$np-$i" "${ompi_spawn[@]}" -bench replace -impl "$OMPI_IMPL" -transport shm+tcp
        run "$FAIL_TIMEOUT" "ftmpi-spawn-np$np-$i" "${ftmpi[@]}" --on-failure continue "$B/ftmpi-bench" -bench replace
      fi
    done
  fi
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average after: $LOAD_AFTER"

MED=bench/results/ftcompare-$STAMP.jsonl
MD=bench/results/ftcompare-$STAMP.md
{ grep '"impl":"ftmpi"' "$RAW" | "$B/ftmedian"; grep "\"impl\":\"$OMPI_IMPL\"" "$RAW" | "$B/ftmedian"; } >"$MED" || true
{
  echo "# Fault tolerance: ftmpi vs $OMPI_VERSION ULFM, run $STAMP"
  echo
  echo "Host: $(nproc) cores, $(uname -r); ftmpi: $FTMPI_DESC, \`--transport $FT_TRANSPORT\`, FTMPI_AGREE_SHM=${FTMPI_AGREE_SHM:-unset (the build default: on since session 18)};"
  echo "Open MPI: \`mpirun ${OMPI_FLAGS[*]}\` in a Debian 13 chroot ($ROOT)."
  echo "NPS=\"$NPS\" REPS=$REPS LAUNCHES=$LAUNCHES SPAWN_LAUNCHES=$SPAWN_LAUNCHES FT_RUNS=$FT_RUNS FT_ITERS=$FT_ITERS;"
  echo "load average before: $LOAD_BEFORE; after: $LOAD_AFTER; failed launches: $FAILED;"
  echo "launches that printed their results and then hung until killed: $HUNG; Open MPI one-failure launches: $HUNG_OF${HUNG_LABELS:+ (hung: ${HUNG_LABELS# })}."
  echo
  "$B/fttable" -other "$OMPI_IMPL" <"$RAW"
} >"$MD"
echo
cat "$MD"
log "saved $RAW, $MED, $MD"
[ "$FAILED" = 0 ]
