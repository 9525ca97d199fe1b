import re,subprocess,sys,collections
# H89: cgpath2.py (H85) with internal/coll/shmcoll (the start-up barriers waiting) left out and the call table (now internal/rte) as "calls"
# usage: cgpath2.py SHORT LONG EXTRA_ROUNDTRIPS: self Ir per round trip of the path's own code
# (ftmpi packages, sync, main), from the difference of two runs (start-up cancels), without
# the waiting: the caller's poll loop and per-check work, the receiver goroutine.
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
groups=collections.Counter()
for k,v in d.items():
    g=("mpi" if "/mpi." in k else "calls" if "CallTable" in k or "callStr" in k else "p2p" if "/p2p." in k else "shm/transport" if "/transport" in k else "sync" if k.startswith("sync.") else "bench" if k.startswith("main.") else "other")
    groups[g]+=v
print("path %.0f Ir per round trip (one send, one receive)"%sum(d.values()), " ".join("%s %.0f"%(g,v) for g,v in groups.most_common()))
if "-v" in sys.argv:
    for k,v in sorted(d.items(),key=lambda x:-x[1])[:30]: print("%8.1f %s"%(v,k[:100]))
