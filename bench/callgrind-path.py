# callgrind-path.py: the instructions of a 1-byte round trip's own code, by layer (issue 28).
# usage: python3 bench/callgrind-path.py SHORT.out LONG.out EXTRA_ROUNDTRIPS [-v]
# SHORT and LONG are callgrind outputs of one rank of `bench/np2batch -op latency` run with two batch
# counts; EXTRA_ROUNDTRIPS is the difference in round trips, so start-up cancels. Counted: self
# instructions of ftmpi's packages, sync and main, without the waiting (the caller's poll loop and
# per-check work, the receiver goroutine) and without internal/coll/shmcoll (start-up barriers).
# The call table is grouped as "calls" whether it lives in internal/calls (before df9f1bf) or rte.
import re,subprocess,sys,collections
def load(f):
    out=subprocess.run(["callgrind_annotate","--threshold=100",f],capture_output=True,text=True).stdout
    s=collections.Counter()
    for line in out.splitlines():
        m=re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S+?):(.*?)(?:'\d+)?(?: \[.*\])?$",line)
        if m: s[m.group(3)]+=int(m.group(1).replace(",",""))
    return s
a,b,n=load(sys.argv[1]),load(sys.argv[2]),float(sys.argv[3])
own=re.compile(r"^(github\.com/ftmpi/ftmpi/(?!internal/coll/shmcoll)|sync\.|main\.)")
wait=re.compile(r"\.\(\*Transport\)\.(PollUntil|pollInline|peerStalled|noteGap|sysYield|releaseCaller|recvLoop|pollAll|tryPoll|pollHeld|pollOrMiss|sleep|park|unpark|readEventfd|crowded)$|\(\*pair\)\.(poll|drainUrgent)$|\(\*Req\)\.Done$")
d={k:(b[k]-a[k])/n for k in set(a)|set(b) if own.search(k) and not wait.search(k)}
def group(k):
    if "/mpi." in k: return "mpi"
    if "/calls." in k or "CallTable" in k or "callStr" in k: return "calls"
    if "/p2p." in k: return "p2p"
    if "/transport" in k: return "shm/transport"
    if k.startswith("sync."): return "sync"
    if k.startswith("main."): return "bench"
    return "other"
groups=collections.Counter()
for k,v in d.items(): groups[group(k)]+=v
print("path %.0f Ir per round trip (one send, one receive)"%sum(d.values()), " ".join("%s %.0f"%(g,v) for g,v in groups.most_common()))
if "-v" in sys.argv:
    for k,v in sorted(d.items(),key=lambda x:-x[1])[:30]: print("%8.1f %s"%(v,k[:100]))
