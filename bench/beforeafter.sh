#!/usr/bin/env bash
# Old build against new build of ftmpi, interleaved in one run (the runtime
# must not regress when it is restructured). Builds ftmpirun and ftmpi-bench
# from two git revisions or source directories (a revision is exported with
# `git archive`, so the work tree and its git state are never touched), then
# runs ROUNDS rounds; in each round every
# measurement is launched once per build, the order of the two builds
# alternating between rounds, with the 1-minute load average noted before
# each launch. Prints every result line prefixed by its build, then a table
# of medians over rounds and the ratio new/old (bench/beforeafter/main.go).
#
# Usage: bench/beforeafter.sh OLD [NEW]   (each a git revision or a source
#        directory; NEW defaults to the work tree)
#        ROUNDS=5 PARTS="p2p coll ft detect replace" COLL_NPS="2 4 8 16" FT_NPS="4 8 16"
#        COLL_ARGS="-budget 100ms -ops bcast,allgatherv": more flags for every coll
#        launch (ftmpi-bench -bench coll): longer launches (-budget, the time a
#        repetition measures; default 30ms, a few milliseconds at np 8-16 land in
#        whichever scheduling mode the kernel starts them in), fewer operations
#        BENCH=new (default): both builds run NEW's benchmark (cmd/ftmpi-bench
#        of NEW built against OLD's library), so a change to how the benchmark
#        times is not read as a change of the library (session 17: the loop
#        sizing alone moved Gather 8 B at np 8 from 9.5 to 21 us); BENCH=own:
#        each build runs its own benchmark (when NEW's does not build
#        against OLD). OLD given as a directory always runs its own.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/beforeafter.sh OLD [NEW] (a git revision or a source directory each)}
NEW=${2:-}
ROUNDS=${ROUNDS:-5}
PARTS=${PARTS:-"p2p coll ft detect replace"}
COLL_NPS=${COLL_NPS:-"2 4 8 16"}
FT_NPS=${FT_NPS:-"4 8 16"}
read -r -a COLL_EXTRA <<<"${COLL_ARGS:-}"
BENCH=${BENCH:-new}
case $BENCH in new | own) ;; *)
  echo "beforeafter: BENCH=$BENCH: want new or own" >&2
  exit 2 ;;
esac
OUT=${OUT:-bench/results/beforeafter-$(date +%Y%m%d-%H%M%S).txt}
B=$(mktemp -d /tmp/ftmpi-beforeafter.XXXXXX)
trap 'rm -rf "$B"' EXIT

build() { # build name rev
  local dir=$PWD
  if [ -d "$2" ]; then
    dir=$(cd "$2" && pwd)
  elif [ -n "$2" ]; then
    mkdir -p "$B/src-$1"
    git archive "$2" | tar -x -C "$B/src-$1"
    dir="$B/src-$1"
    if [ "$1" = old ] && [ "$BENCH" = new ]; then
      rm -rf "$dir/cmd/ftmpi-bench"
      if [ -z "$NEW" ]; then
        cp -r cmd/ftmpi-bench "$dir/cmd/"
      elif [ -d "$NEW" ]; then
        cp -r "$NEW/cmd/ftmpi-bench" "$dir/cmd/"
      else
        git archive "$NEW" cmd/ftmpi-bench | tar -x -C "$dir"
      fi
      BENCH_NOTE="both builds run new's cmd/ftmpi-bench"
    fi
  fi
  mkdir -p "$B/$1"
  (cd "$dir" && go build -o "$B/$1/ftmpirun" ./cmd/ftmpirun) || exit 1
  (cd "$dir" && go build -o "$B/$1/ftmpi-bench" ./cmd/ftmpi-bench) || {
    echo "beforeafter: $1's ftmpi-bench does not build (BENCH=$BENCH); with BENCH=own each build runs its own benchmark" >&2
    exit 2
  }
}
BENCH_NOTE="each build runs its own cmd/ftmpi-bench"
build old "$OLD"
build new "$NEW"

load() { cut -d' ' -f1 /proc/loadavg; }
run() { # build timeout args...
  local b=$1 t=$2; shift 2
  timeout "$t" "$B/$b/ftmpirun" "$@" 2>/dev/null | sed -n "s/^{/$b {/p" || echo "# $b FAILED: $*"
}
measure() { # build
  local b=$1
  for part in $PARTS; do
    echo "# round $r $part $b load $(load)"
    case $part in
      p2p)
        run "$b" 120 -n 2 "$B/$b/ftmpi-bench" -bench latency -runs 5 -max 1048576
        run "$b" 120 -n 2 "$B/$b/ftmpi-bench" -bench bw -runs 3 -min 1024 -max 16777216 ;;
      coll)
        for np in $COLL_NPS; do run "$b" 300 -n "$np" "$B/$b/ftmpi-bench" -bench coll -runs 3 "${COLL_EXTRA[@]}"; done ;;
      ft)
        for np in $FT_NPS; do run "$b" 300 -n "$np" "$B/$b/ftmpi-bench" -bench ft -runs 5 -iters 300; done ;;
      detect)
        for np in $FT_NPS; do run "$b" 60 -n "$np" --on-failure continue "$B/$b/ftmpi-bench" -bench detect; done ;;
      replace)
        for np in $FT_NPS; do run "$b" 60 -n "$np" --on-failure continue "$B/$b/ftmpi-bench" -bench replace; done ;;
    esac
  done
}
{
  desc() { if [ -d "$1" ]; then echo "directory $1"; else echo "$1 ($(git rev-parse --short "$1"))"; fi; }
  echo "# old = $(desc "$OLD"), new = $( [ -n "$NEW" ] && desc "$NEW" || echo "work tree at $(git rev-parse --short HEAD)"); $ROUNDS rounds; parts: $PARTS; $(nproc) cores; $BENCH_NOTE"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then measure old; measure new; else measure new; measure old; fi
  done
} | tee "$OUT"
go run ./bench/beforeafter <"$OUT" | tee "${OUT%.txt}.md"
