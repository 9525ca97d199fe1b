import json,glob,statistics as st,re,sys
rows={}
for f in sorted(glob.glob('runs/np*-*.json')):
    m=re.match(r'runs/np(\d+)-(\d+).json',f); np_=int(m.group(1))
    bench={}
    for l in open(f.replace('.json','.out')):
        if l.startswith('{'):
            d=json.loads(l); bench[d['name']]=d['median']
    t=json.load(open(f))
    evs=[e for e in t['traceEvents'] if e['ph']!='M']
    kill=[e for e in evs if e.get('cat')=='failure' and e['name']=='kill' and e['pid']!=1<<20]
    if not kill: continue
    K=kill[0]['ts']; victim=kill[0]['args']['proc']
    per={}
    for e in sorted(evs,key=lambda e:e['ts']):
        p=e['pid']
        if p in (victim,1<<20): continue
        r=per.setdefault(p,{})
        if e['cat']=='failure' and e['name']=='failure known' and e['args'].get('proc')==victim and 'told' not in r: r['told']=e['ts']
        if e['cat']=='revoke' and e['ts']>=K and 'rev' not in r: r['rev']=e['ts']
        if e['cat']=='revoke' and e['name']=='revoke sent' and 'revsent' not in r: r['revsent']=e['ts']
        if e['cat']=='repair' and e['name']=='shrink' and 'shrinkend' not in r: r['shrinkend']=e['ts']+e['dur']
    learn=max(min(r.get('told',1e30),r.get('rev',1e30)) for r in per.values())-K
    told=max(r['told'] for r in per.values() if 'told' in r)-K
    rs=max(r['shrinkend']-r['revsent'] for r in per.values() if 'shrinkend' in r and 'revsent' in r)
    rows.setdefault(np_,[]).append((bench['ft_detect_max'],learn/1000,told/1000,bench['ft_revoke_shrink_max'],rs/1000))
for np_,v in sorted(rows.items()):
    def med(i): return st.median(x[i] for x in v)
    def diffs(i,j): return st.median(x[j]-x[i] for x in v)
    print(f"np {np_}: {len(v)} launches")
    print(f"  kill -> every survivor's Recv returned: bench {med(0):.2f} ms, trace (min of told, revoked; slowest survivor) {med(1):.2f} ms, per-launch difference median {diffs(0,1):+.3f} ms (min {min(x[1]-x[0] for x in v):+.3f}, max {max(x[1]-x[0] for x in v):+.3f})")
    print(f"  trace: kill -> every survivor told (the lost hook or an operation's error) {med(2):.2f} ms")
    print(f"  revoke + shrink (slowest survivor): bench {med(3):.2f} ms, trace (revoke sent -> shrink span end) {med(4):.2f} ms, difference median {diffs(3,4):+.3f} ms (min {min(x[4]-x[3] for x in v):+.3f}, max {max(x[4]-x[3] for x in v):+.3f})")
    for x in v: print('   ', ' '.join('%.3f'%y for y in x))
