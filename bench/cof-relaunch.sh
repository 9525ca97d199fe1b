#!/usr/bin/env bash
# Checkpoint-on-Failure relaunch time (issue 5): examples/cof under
# `ftmpirun --restart-on-failure=1` with one injected SIGKILL, RUNS runs per
# process count. For each run it prints one JSON line with
#   exited_ms   launcher: first failure reported -> every rank of the job gone
#               (survivors detected the failure, checkpointed and exited)
#   started_ms  launcher: first failure reported -> every rank of the new job started
#   resumed_ms  application: earliest detection at a survivor -> the relaunched job
#               resumes the computation (Init, checkpoints loaded, iteration agreed,
#               lost block rebuilt from the checksum), measured at rank 0
# and checks the result line against a failure-free run; then one summary
# line per NP with the medians.
#
# Usage: bench/cof-relaunch.sh [NPS="4 8 16"] [RUNS=7] [AT=600ms] [VICTIM=1]
set -uo pipefail
cd "$(dirname "$0")/.."
NPS=${NPS:-4 8 16}
RUNS=${RUNS:-7}
AT=${AT:-600ms}
VICTIM=${VICTIM:-1}
B=${BUILD:-bench/build}/cof
mkdir -p "$B"
go build -o "$B/ftmpirun" ./cmd/ftmpirun || exit 1
go build -o "$B/cof" ./examples/cof || exit 1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# ms converts a Go duration (850µs, 15.394ms, 1.2s) to milliseconds.
ms() { awk -v d="$1" 'BEGIN {
  if (d ~ /µs$/) { sub(/µs$/, "", d); printf "%.3f", d / 1000 }
  else if (d ~ /ms$/) { sub(/ms$/, "", d); printf "%.3f", d }
  else if (d ~ /s$/) { sub(/s$/, "", d); printf "%.3f", d * 1000 }
  else print "null" }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "null"; else if (NR % 2) print v[(NR+1)/2]; else printf "%.3f", (v[NR/2] + v[NR/2+1]) / 2 }'; }

status=0
for np in $NPS; do
  want=$("$B/ftmpirun" -n "$np" --timeout 120s "$B/cof" -dir "$D/ref" 2>/dev/null | grep '^result:')
  : > "$D/exited" ; : > "$D/started" ; : > "$D/resumed"
  for i in $(seq "$RUNS"); do
    out=$("$B/ftmpirun" -n "$np" --timeout 120s --restart-on-failure=1 --inject "kill:rank=$VICTIM,at=$AT" \
          "$B/cof" -dir "$D/ck" 2>"$D/err")
    code=$?
    got=$(printf '%s\n' "$out" | grep '^result:')
    line=$(grep 'relaunched the job' "$D/err")
    exited=$(ms "$(printf '%s' "$line" | sed -n 's/.*every rank had exited \([^ ]*\) after the failure.*/\1/p')")
    started=$(ms "$(printf '%s' "$line" | sed -n 's/.*new ranks started \([^ ]*\) after it.*/\1/p')")
    resumed=$(ms "$(printf '%s\n' "$out" | sed -n 's/^cof: relaunch 1: resumed at iteration [0-9]*, .*, \([^ ]*\) after the failure was detected$/\1/p')")
    ok=false
    if [ "$code" -eq 0 ] && [ "$got" = "$want" ]; then ok=true; else status=1; fi
    printf '{"name":"cof_relaunch","np":%d,"run":%d,"exited_ms":%s,"started_ms":%s,"resumed_ms":%s,"same_result":%s}\n' \
      "$np" "$i" "$exited" "$started" "$resumed" "$ok"
    echo "$exited" >> "$D/exited"; echo "$started" >> "$D/started"; echo "$resumed" >> "$D/resumed"
  done
  printf '{"name":"cof_relaunch_median","np":%d,"runs":%d,"exited_ms":%s,"started_ms":%s,"resumed_ms":%s}\n' \
    "$np" "$RUNS" "$(grep -v null "$D/exited" | median)" "$(grep -v null "$D/started" | median)" "$(grep -v null "$D/resumed" | median)"
done
exit $status
