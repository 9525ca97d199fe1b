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
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/beforeafter.sh OLD [NEW] (a git revision or a source directory each)}
NEW=${2:-}
ROUNDS=${ROUNDS:-5}
PARTS=${PARTS:-"p2p coll ft detect replace"}
COLL_NPS=${COLL_NPS:-"2 4 8 16"}
FT_NPS=${FT_NPS:-"4 8 16"}
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
  fi
  mkdir -p "$B/$1"
  (cd "$dir" && go build -o "$B/$1/ftmpirun" ./cmd/ftmpirun && go build -o "$B/$1/ftmpi-bench" ./cmd/ftmpi-bench)
}
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
        for np in $COLL_NPS; do run "$b" 300 -n "$np" "$B/$b/ftmpi-bench" -bench coll -runs 3; done ;;
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
  echo "# old = $(desc "$OLD"), new = $( [ -n "$NEW" ] && desc "$NEW" || echo "work tree at $(git rev-parse --short HEAD)"); $ROUNDS rounds; parts: $PARTS; $(nproc) cores"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then measure old; measure new; else measure new; measure old; fi
  done
} | tee "$OUT"
go run ./bench/beforeafter <"$OUT" | tee "${OUT%.txt}.md"
