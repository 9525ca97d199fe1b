#!/usr/bin/env bash
# Chaos at scale (issue 4, extended in issue 11): consecutive runs of the
# fault-tolerant examples under random SIGKILLs and SIGSTOPs
# (`ftmpirun --inject`), each bounded by TIMEOUT. Every run must end with
# the failure-free answer or a clean reported error (classified by cause); a
# hang, a wrong answer or a process left behind (found by its
# FTMPI_TESTMARK) is a failure.
#
# Faults are scaled to each example's length (issue 27): a failure-free
# calibration (the shortest of CALIBRATE=2 runs, then of every run that
# injected nothing) per example and np measures its length T, and a run's
# MAX faults (SIGKILL, or SIGSTOP with probability STOP, of distinct ranks
# other than 0, replayable by the seed) fall uniformly in [LO*T, HI*T] of
# WINDOW=LO:HI. WINDOW= (empty) is the issue-11 form: --chaos with the
# absolute MTTF and FROM. Runs in which nothing was injected are counted
# (runs_without_fault) and listed at the end.
#
# A hang keeps its evidence in $OUT.keep/EXAMPLE-npN-seedS/: procs.txt
# (every process's state, wchan and kernel stacks), rank-R.txt (rank R's
# stderr with its goroutine stacks: each rank gets SIGQUIT, a stopped one
# SIGCONT too), launcher.txt (ftmpirun's lines, its stacks if it outlived
# its ranks).
#
# The bookkeeping is bench/chaosrun (see its package comment): runs go
# round-robin over the examples and process counts, one JSON line per run
# goes to $OUT.runs.jsonl as it ends, the stderr of every run that is not
# correct is kept in $OUT.keep/, and the summary (one JSON line per example
# and np, with the clean errors per class) goes to stdout. A seed replays
# its schedule of faults: the kept file starts with the ftmpirun command.
#
# Usage: bench/chaos.sh [EXAMPLES=all] [NPS=8:1,4:4,16:4] [RUNS=1000] [DEADLINE=]
#                       [WINDOW=0.1:0.9] [CALIBRATE=2] [MTTF=1s] [MAX=4:2,8:3,16:3] [STOP=0.5] [FROM=1s] [SEED0=1]
#                       [TIMEOUT=60s] [OUT=bench/results/chaos-$(date +%Y%m%d-%H%M)]
# NPS lists NP:EVERY (that np every EVERY rounds); MAX lists NP:K (faults per
# run); DEADLINE (RFC 3339 or a duration) stops starting rounds after it.
# The issue-4 form still works: EXAMPLE=jacobi ARGS=-ft is replaced by the
# per-example arguments of bench/chaosrun (EXAMPLES=jacobi), NP=4 by NPS=4.
# Summary of a partial run: go run ./bench/chaosrun -summarize $OUT.runs.jsonl
set -uo pipefail
cd "$(dirname "$0")/.."
EXAMPLES=${EXAMPLES:-${EXAMPLE:-}}
NPS=${NPS:-${NP:-8:1,4:4,16:4}}
RUNS=${RUNS:-1000}
DEADLINE=${DEADLINE:-}
MTTF=${MTTF:-1s}
MAX=${MAX:-4:2,8:3,16:3}
STOP=${STOP:-0.5}
FROM=${FROM:-1s}
WINDOW=${WINDOW-0.1:0.9}
CALIBRATE=${CALIBRATE:-2}
SEED0=${SEED0:-1}
TIMEOUT=${TIMEOUT:-60s}
OUT=${OUT:-bench/results/chaos-$(date -u +%Y%m%d-%H%M)}
B=${BUILD:-bench/build}/chaos
mkdir -p "$B" "$OUT.keep"
go build -o "$B/ftmpirun" ./cmd/ftmpirun || exit 1
go build -o "$B/chaosrun" ./bench/chaosrun || exit 1
for e in refinement masterworker jacobi runthrough libcompose reinit-async reinit-sync cof; do
  go build -o "$B/$e" "./examples/$e" || exit 1
done
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$B/chaosrun" -bin "$B" ${EXAMPLES:+-examples "$EXAMPLES"} -nps "$NPS" -runs "$RUNS" ${DEADLINE:+-deadline "$DEADLINE"} \
  -window "$WINDOW" -calibrate "$CALIBRATE" -mttf "$MTTF" -max "$MAX" -stop "$STOP" -from "$FROM" -seed0 "$SEED0" -timeout "$TIMEOUT" \
  -out "$OUT.runs.jsonl" -keep "$OUT.keep" | tee "$OUT.summary.jsonl"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# Runs that injected no fault (a schedule that missed the run) and hangs'
# evidence.
nofault=$(grep -c '"stops":0,"kills":0' "$OUT.runs.jsonl")
echo "# runs without a fault: $nofault of $(wc -l <"$OUT.runs.jsonl")" >&2
grep '"stops":0,"kills":0' "$OUT.runs.jsonl" | sed 's/^/#   /' >&2
grep -o '"evidence":"[^"]*"' "$OUT.runs.jsonl" | sed 's/"evidence":/# hang evidence: /' >&2
# Failure: any hang, wrong answer or orphan.
! grep -q -E '"wrong":[1-9]|"hangs":[1-9]|"orphans":[1-9]' "$OUT.summary.jsonl"
