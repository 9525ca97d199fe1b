import re,sys
P=sys.argv[1]
lines=open(P+'.trace').read().split('\n')
tsre=re.compile(r'\s(\d+\.\d+):')
for i,l in enumerate(lines):
    if 'group_dead=true' in l and 'ftmpi-bench' in l:
        pid=re.search(r'pid=(\d+)',l.split('sched_process_exit:')[1]).group(1)
        ts=float(tsre.search(l).group(1))
        for j in range(i,0,-1):
            if 'signal_generate: sig=9' in lines[j] and 'grp=1 res=0' in lines[j]:
                tk=float(tsre.search(lines[j]).group(1)); break
        run=0; on=ts; firstwake=None
        for k in range(i+1,len(lines)):
            L=lines[k]
            m=tsre.search(L)
            if not m: continue
            t=float(m.group(1))
            if firstwake is None and L.lstrip().startswith('ftmpi-bench-%s '%pid) and 'sched_wakeup' in L: firstwake=t
            if 'sched_switch' in L and ('prev_pid=%s '%pid) in L:
                run+=t-on; on=None
                st=L.split('prev_state=')[1][:2]
                if st[0] in 'XZ' or st.startswith('D'):
                    pass
                if st[0] in 'XZ':
                    print('%s: kill->exit start %.3f ms; exit body cpu %.3f ms, wall %.3f ms; first wakeup by it at +%.3f ms'%(P,(ts-tk)*1e3,run*1e3,(t-ts)*1e3,(firstwake-ts)*1e3 if firstwake else -1)); break
            elif 'sched_switch' in L and ('next_pid=%s '%pid) in L:
                on=t
        break
