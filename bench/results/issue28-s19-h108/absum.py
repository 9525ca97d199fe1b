import json,sys,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys=sorted({(r['name'],r['np']) for r in rows})
loads=[r['load'] for r in rows]
print("load %.1f-%.1f"%(min(loads),max(loads)))
for k in keys:
    o=[r['median'] for r in rows if (r['name'],r['np'])==k and r['v']=='old']
    n=[r['median'] for r in rows if (r['name'],r['np'])==k and r['v']=='new']
    if o and n:
        print("%-30s np%-3d old %7.3f new %7.3f ms  new/old %.2f  (n=%d,%d)"%(k[0],k[1],st.median(o),st.median(n),st.median(n)/st.median(o),len(o),len(n)))
