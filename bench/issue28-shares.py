#!/usr/bin/env python3
"""Bins a Go CPU profile's flat time into the shares docs/benchmarks.md's
issue 28 table names (bench/issue28-profiles.sh writes the profiles):

  bench/issue28-shares.py PHASE PROFILE...   (PHASE '' = all samples)

Categories, by the flat function: kernel entry (system calls: futex,
yield, reads and writes; the time the thread spends in the kernel shows in
perf, this is the Go side's call), wait (spinning on a peer's flag or ring:
waitFor, pollInline, PollUntil, Req.Done, atomics loaded in them), the Go
scheduler (findRunnable, schedule, park, stealWork, ...), copies (memmove,
process_vm_readv's wrapper), reduction (the typed reduce loops), garbage
collection and allocation, and the rest (the protocol's and the API's
own code)."""
import re, subprocess, sys

CATS = [
    ("syscall", r"Syscall6|RawSyscall|runtime\.futex|runtime\.usleep|runtime\.osyield|epollwait|runtime\.nanosleep|syscall\.Syscall|runtime\.write1|runtime\.read$"),
    ("wait/poll", r"waitFor|waitReady|pollInline|PollUntil|\(\*Req\)\.Done|sync/atomic|internal/runtime/atomic|runtime\.procyield|tryPoll|spinWait|\.spin|runtime\.nanotime|time\.runtimeNow|time\.now|time\.Now|runtime\.Gosched|goschedImpl"),
    ("scheduler", r"runtime\.(findRunnable|schedule|park_m|mcall|stealWork|runqgrab|execute|casgstatus|gopark|goready|ready|wakep|startm|stopm|notesleep|notewakeup|lock2|unlock2|checkTimers|netpoll|exitsyscall|entersyscall|reentersyscall|handoffp|acquirep|releasep|runqput|globrunq|resetspinning|gcstopm|mPark|semasleep|semawakeup|futexsleep|futexwakeup|injectglist|chanrecv|chansend|selectgo|send|recv|sellock|selunlock|goexit|newproc|malg|gfget|asyncPreempt)"),
    ("copy", r"memmove|memclr|ProcessVMReadv|process_vm|copy"),
    ("reduction", r"byteRed|redOf|reduce|Sum|sumInto|applyOp"),
    ("gc/alloc", r"runtime\.(mallocgc|newobject|gcBgMarkWorker|scanobject|gcDrain|markroot|greyobject|findObject|makeslice|growslice|nextFreeFast|memclrNoHeap|sweepone|bgsweep|mspan|mcache|mheap|wbBuf|gcWriteBarrier|heapBits|typePointers)"),
]

def main():
    phase, profs = sys.argv[1], sys.argv[2:]
    args = ["go", "tool", "pprof", "-top", "-nodecount=2000"]
    if phase:
        args.append("-tagfocus=phase=" + phase)
    out = subprocess.run(args + profs, capture_output=True, text=True).stdout
    tot = {c: 0.0 for c, _ in CATS}
    tot["protocol/API"] = 0.0
    top = {}
    total = 0.0
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)(ms|s|us|µs)\s+[\d.]+%\s+[\d.]+%\s+[\d.]+(?:ms|s|us|µs)\s+[\d.]+%\s+(.*)$", line)
        if not m:
            continue
        v = float(m.group(1)) * {"s": 1000, "ms": 1, "us": 0.001, "µs": 0.001}[m.group(2)]
        fn = m.group(3)
        total += v
        for c, rx in CATS:
            if re.search(rx, fn):
                tot[c] += v
                top.setdefault(c, []).append((v, fn))
                break
        else:
            tot["protocol/API"] += v
            top.setdefault("protocol/API", []).append((v, fn))
    if total == 0:
        print("no samples")
        return
    print(f"flat samples {total:.0f} ms" + (f" (phase={phase})" if phase else ""))
    for c, v in sorted(tot.items(), key=lambda kv: -kv[1]):
        if v == 0:
            continue
        names = ", ".join(f"{fn.split('/')[-1][:60]} {100*x/total:.1f}%" for x, fn in sorted(top[c], reverse=True)[:3])
        print(f"  {c:13s} {100*v/total:5.1f}%   {names}")

main()
