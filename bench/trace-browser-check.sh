#!/usr/bin/env bash
# The recovery timeline in a real browser (issue 23 item 4): runs the
# README's demo (examples/jacobi -ft, rank 2 SIGKILLed, replaced) under
# ftmpirun --trace, prints `ftmpi-trace phases`, renders the page with
# `ftmpi-trace html`, and opens it in headless Chromium (Debian's
# `chromium`, installed with apt-get when absent; root):
#
#   - the DOM (--dump-dom) must show every rank's lane (ftmpirun, rank 0..3,
#     the spawned replacement) and every phase (kill .. resumed);
#   - the screenshot (--screenshot) must not be blank and must hold every
#     phase's colour (bench/pngcheck).
#
# Not part of CI (.ci/run): Chromium is too heavy for it. Run by hand:
#   bench/trace-browser-check.sh                 # results in bench/results/trace-browser-<date>/
#   SHOT=docs/img/recovery-timeline.png bench/trace-browser-check.sh   # also copy the screenshot there
set -euo pipefail
cd "$(dirname "$0")/.."
STAMP=$(date -u +%Y%m%d-%H%M%S)
OUT=${OUT:-bench/results/trace-browser-$STAMP}
mkdir -p "$OUT"
B=$(mktemp -d)
trap 'rm -rf "$B"' EXIT
log() { echo "trace-browser-check: $*" >&2; }

if ! command -v chromium >/dev/null; then
  log "installing chromium"
  apt-get install -y chromium >"$OUT/apt.log" 2>&1 || { apt-get update >>"$OUT/apt.log" 2>&1 && apt-get install -y chromium >>"$OUT/apt.log" 2>&1; }
fi
chromium --version | tee "$OUT/chromium-version.txt" >&2

go build -o "$B/ftmpirun" ./cmd/ftmpirun
go build -o "$B/ftmpi-trace" ./cmd/ftmpi-trace
go build -o "$B/jacobi" ./examples/jacobi

# The demo, with its kill tied to rank 0's fifth checkpoint line (the
# README's at=500ms lands about there) rather than to a time.
"$B/ftmpirun" -n 4 --on-failure continue --timeout 60s --trace "$OUT/demo.json" \
  --inject 'kill:rank=2,on=iteration 5000 committed' "$B/jacobi" -ft -progress >"$OUT/demo.out" 2>&1 \
  || { cat "$OUT/demo.out" >&2; log "FAIL: the demo failed"; exit 1; }
grep '^result:' "$OUT/demo.out" >&2
"$B/ftmpi-trace" phases "$OUT/demo.json" | tee "$OUT/phases.txt"
"$B/ftmpi-trace" html "$OUT/demo.json" -o "$OUT/demo.html"

URL="file://$(realpath "$OUT/demo.html")"
CH=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$B/profile")
timeout 120 "${CH[@]}" --dump-dom "$URL" >"$OUT/dom.html" 2>"$OUT/chromium-dom.log"
timeout 120 "${CH[@]}" --window-size=1220,655 --screenshot="$OUT/screenshot.png" "$URL" >"$OUT/chromium-shot.log" 2>&1

fail=0
for lane in ftmpirun "rank 0" "rank 1" "rank 2" "rank 3" "proc 4 (spawned"; do
  if grep -q ">$lane" "$OUT/dom.html"; then log "DOM: lane '$lane' shown"; else log "FAIL: DOM: no lane '$lane'"; fail=1; fi
done
for ph in kill detected told revoked agreed repaired resumed; do
  if grep -q "class=\"phase\" data-phase=\"$ph\"" "$OUT/dom.html" && grep -q "class=\"phasename\" data-phase=\"$ph\"" "$OUT/dom.html"; then
    log "DOM: phase '$ph' drawn and named"
  else
    log "FAIL: DOM: phase '$ph' missing"; fail=1
  fi
done
# Every phase's colour (internal/trace.PhaseColors) in the screenshot.
go run ./bench/pngcheck "$OUT/screenshot.png" '#d62728' '#ff7f0e' '#e5ae38' '#1f77b4' '#9467bd' '#2ca02c' '#17becf' \
  | tee "$OUT/pngcheck.txt" || fail=1
ls -l "$OUT/screenshot.png" >&2
if [ -n "${SHOT:-}" ] && [ $fail = 0 ]; then
  cp "$OUT/screenshot.png" "$SHOT"
  log "screenshot copied to $SHOT"
fi
if [ $fail != 0 ]; then log "FAIL (see $OUT)"; exit 1; fi
log "OK: every lane and phase in the DOM and the screenshot ($OUT)"
