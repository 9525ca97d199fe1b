#!/usr/bin/env bash
# bench/inproc-growth.sh: the in-process half of issue 24's growth table.
# n goroutine ranks (mpi.Run) go through barrier, allreduce, agree, shrink,
# revoke, the detection of a kill, the repair after it and after 1% killed
# (mpi/growth_internal_test.go, TestGrowthInProcess); for each operation and
# size it prints the time, the frames sent in all and by the busiest rank,
# and the memory a rank, then the fit of each curve against log n and n.
#
#   bench/inproc-growth.sh                       # 16 ... 10,000 ranks
#   SIZES=64,1024 bench/inproc-growth.sh         # fewer
#
# Output: bench/results/inproc-growth-DATE.jsonl (GROWTH and FIT lines, JSON
# after the tag) and a table on standard output. The load before and after is
# recorded: on 2 cores the times are only comparable on a quiet machine
# (the frames are exact whatever the load). A full run takes 2-5 minutes
# quiet and 30 GB-s of memory at its peak (10,000 ranks: about 2 GB).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
SIZES=${SIZES:-16,64,256,1024,4096,10000}
OUT=${OUT:-$HERE/results/inproc-growth-$(date -u +%Y%m%d-%H%M).jsonl}
mkdir -p "$(dirname "$OUT")"
cd "$ROOT"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "# load before: $load0" >&2
FTMPI_GROWTH_SIZES=$SIZES go test -count=1 -timeout 60m -run '^TestGrowthInProcess$' -v ./mpi |
	grep -E '^(GROWTH|FIT) ' >"$OUT"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo "# load after: $load1" >&2
printf 'LOAD {"before":"%s","after":"%s","cores":%d}\n' "$load0" "$load1" "$(nproc)" >>"$OUT"
echo "# wrote $OUT" >&2
sed -n 's/^GROWTH //p' "$OUT" | python3 -c '
import json, sys
print("%7s  %-52s %11s %9s %8s %7s" % ("n", "operation", "ms", "frames", "busiest", "KB/rank"))
for l in sys.stdin:
    r = json.loads(l)
    print("%7d  %-52s %11.2f %9d %8d %7s" % (r["n"], r["op"], r["ms"], r["frames"], r["frames_max_per_rank"], r.get("kb_per_rank", "")))
'
