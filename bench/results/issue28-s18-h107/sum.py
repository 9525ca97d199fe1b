import re,sys,statistics as st
txt=open(sys.argv[1]).read()
rows=re.findall(r'^\S+ (\d+) (\S+)\s+med=\s*([0-9.]+) cs=(\d*) taskms=(\d*) load=([0-9.]*)',txt,re.M)
loads=[float(r[5]) for r in rows if r[5]]
for b in sorted(set(r[1] for r in rows)):
    v=[float(r[2]) for r in rows if r[1]==b]
    cs=[int(r[3]) for r in rows if r[1]==b and r[3]]
    m=st.median(v)
    print(f"{b}: {len(v)} launches, median {m:.2f}, fastest {min(v):.2f}, slowest {max(v):.2f} (slowest/median {max(v)/m:.1f}), under 2 us: {sum(x<2 for x in v)}, median switches {st.median(cs) if cs else '-'}")
print('load', min(loads), '-', max(loads))
