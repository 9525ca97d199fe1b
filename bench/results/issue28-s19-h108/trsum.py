import json,glob,statistics as st,collections
res=collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/h108/tr/*.json')):
    v,np,i=f.split('/')[-1][:-5].split('-')
    d=json.load(open(f)); ev=d['traceEvents'] if isinstance(d,dict) else d
    for comm,seq,kind,lab in (('MPI_COMM_WORLD',1,'MPI_Comm_agree','failedcomm'),('shrink(MPI_COMM_WORLD)',0,'MPI_Comm_agree','newcomm'),('MPI_COMM_WORLD',0,None,'shrinkagree')):
        ag=[e for e in ev if e.get('cat')=='agree' and e.get('args',{}).get('comm')==comm and e['args'].get('seq')==seq and (kind is None or e['args'].get('kind')==kind)]
        if not ag: continue
        arr=[e['ts'] for e in ag]; end=[e['ts']+e['dur'] for e in ag]
        res[(lab,int(np),v,'max dur')].append(max(e['dur'] for e in ag)/1000)
        res[(lab,int(np),v,'arrival skew')].append((max(arr)-min(arr))/1000)
        res[(lab,int(np),v,'last arrival->last end')].append((max(end)-max(arr))/1000)
        res[(lab,int(np),v,'last arrival->first end')].append((min(end)-max(arr))/1000)
for k in sorted(res):
    print("%-12s np%-3d %-4s %-26s median %.3f ms  (%s)"%(k[0],k[1],k[2],k[3],st.median(res[k]),' '.join('%.2f'%x for x in res[k])))
