import sys,json,statistics,math,collections
for f in sys.argv[1:]:
    d=collections.defaultdict(list)
    for line in open(f):
        if '{' not in line: continue
        rev,js=line.split(' ',1)
        j=json.loads(js)
        d[(rev,j['name'],j['size'])].append(j['median'])
    revs=[]
    for k in d:
        if k[0] not in revs: revs.append(k[0])
    names=sorted(set((k[1],k[2]) for k in d))
    print(f)
    print("%-16s"%"metric"+"".join("%10s"%r for r in revs))
    gm={r:[] for r in revs}
    for n in names:
        base=statistics.median(d[(revs[0],)+n])
        row="%-16s"%("%s%d"%n)
        for r in revs:
            m=statistics.median(d[(r,)+n]); row+="%10.2f"%(m/base); gm[r].append(math.log(m/base))
        print(row, " base %.1fus"%base)
    print("%-16s"%"geomean"+"".join("%10.2f"%math.exp(sum(gm[r])/len(gm[r])) for r in revs))
