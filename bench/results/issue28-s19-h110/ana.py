import json, re, sys, collections
P = sys.argv[1]
d = json.load(open(P + '.json'))
ev = d['traceEvents'] if isinstance(d, dict) else d
rank_of = {}  # os tgid -> rank label
launcher = None
for e in ev:
    if e.get('ph') == 'M' and e['name'] == 'process_name' and 'os_pid' in e['args']:
        if e['args']['name'] == 'ftmpirun':
            launcher = e['args']['os_pid']; rank_of[launcher] = 'L'
        else:
            rank_of[e['args']['os_pid']] = int(e['args']['name'].split()[1])
victim_pid = None
for e in ev:
    if e.get('name') == 'exit' and e.get('cat') == 'failure' and e['args'].get('signal') and victim_pid is None:
        victim_pid = e['args']['pid']; rank_of[victim_pid] = 'V'
kill_us = [e['ts'] for e in ev if e.get('name') == 'kill'][0]
# per rank: first failure known / revoke received
first = {}
for e in ev:
    if e.get('cat') in ('failure', 'revoke') and e.get('name') in ('failure known', 'revoke received') and isinstance(e.get('pid'), int) and e['pid'] < 1048576:
        r = e['pid']; first[r] = min(first.get(r, 1e30), e['ts'])
line = re.compile(r'^\s*(.+?)-(\d+)\s+\(\s*(\S+)\)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s*(.*)$')
t0 = kill_us / 1e6
evs = []
tgid = {}
for l in open(P + '.trace'):
    m = line.match(l)
    if not m: continue
    comm, pid, tg, cpu, ts, name, rest = m.groups()
    pid = int(pid); ts = float(ts)
    if tg != '-------': tgid[pid] = int(tg)
    evs.append((ts, comm, pid, int(cpu), name, rest))
def who(pid):
    tg = tgid.get(pid, pid)
    return rank_of.get(tg, None)
ms = lambda t: (t - t0) * 1e3
end = t0 + 0.030
print('victim', victim_pid, 'launcher', launcher, 'kill', kill_us)
# timeline of key events
running = {}  # cpu -> (start, label)
cpu_time = collections.defaultdict(float)
bins = collections.defaultdict(lambda: collections.defaultdict(float))
last_switch = {}
for ts, comm, pid, cpu, name, rest in evs:
    if ts < t0 - 0.0005 or ts > end: continue
    w = who(pid)
    if name == 'sched_switch':
        mm = re.search(r'prev_pid=(\d+).*prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)', rest)
        prev, nxt = int(mm.group(1)), int(mm.group(4))
        if cpu in last_switch:
            st, p = last_switch[cpu]
            lab = who(p)
            lab = 'rank' if isinstance(lab, int) else (lab or ('idle' if p == 0 else 'other'))
            if st >= t0:
                cpu_time[lab] += ts - st
                b = int((st - t0) * 2000)
                bins[b][lab] += ts - st
        last_switch[cpu] = (ts, nxt)
    if ts < t0: continue
    if name in ('sched_process_exit',) and w == 'V':
        print('%8.3f V exit %s' % (ms(ts), rest[:60]))
    if name == 'signal_generate' and 'sig=9' in rest:
        print('%8.3f %s kill %s' % (ms(ts), w, rest[:80]))
    if w == 'L' and name in ('sys_exit_waitid', 'sys_enter_sendmmsg', 'sys_exit_sendmmsg'):
        print('%8.3f L %s %s' % (ms(ts), name, rest[:40]))
print('cpu ms in first 30ms by class:', {k: round(v * 1e3, 2) for k, v in cpu_time.items()})
for b in sorted(bins)[:20]:
    print('%5.1f-%5.1f ms' % (b / 2, b / 2 + .5), ' '.join('%s=%.0f' % (k, v * 1e6) for k, v in sorted(bins[b].items())))
# per survivor: first wakeup after kill, first run, told time, cpu before told
print('rank  firstwake  firstrun  told   cpu_before_told_us  runs_before_told')
for r in sorted(k for k in first):
    told = first[r] / 1e6
    fw = fr = None; cpu_b = 0; runs = 0; cur = {}
    for ts, comm, pid, cpu, name, rest in evs:
        if ts < t0 or ts > told: continue
        if name == 'sched_wakeup':
            mm = re.search(r'pid=(\d+)', rest)
            if who(int(mm.group(1))) == r and fw is None: fw = ts
        if name == 'sched_switch':
            mm = re.search(r'prev_pid=(\d+).*next_pid=(\d+)', rest)
            prev, nxt = int(mm.group(1)), int(mm.group(2))
            if who(prev) == r and cpu in cur:
                cpu_b += ts - cur.pop(cpu)
            if who(nxt) == r:
                cur[cpu] = ts; runs += 1
                if fr is None: fr = ts
    f = lambda x: '%8.3f' % ms(x) if x else '    -   '
    print('%4s %s %s %8.3f %8.0f %5d' % (r, f(fw), f(fr), ms(told), cpu_b * 1e6, runs))
