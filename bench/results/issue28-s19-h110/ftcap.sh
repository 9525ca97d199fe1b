#!/bin/bash
# usage: ftcap.sh OUTPREFIX BINDIR NP
set -e
I=/sys/kernel/tracing/instances/h110
P=$1; B=$2; NP=${3:-16}
echo 0 > $I/tracing_on
echo tai > $I/trace_clock
echo 30000 > $I/buffer_size_kb
echo > $I/trace
echo > $I/set_event
for e in sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new sched:sched_process_exit sched:sched_process_fork signal:signal_generate syscalls:sys_enter_waitid syscalls:sys_exit_waitid syscalls:sys_enter_sendmmsg syscalls:sys_exit_sendmmsg syscalls:sys_enter_recvmsg syscalls:sys_exit_recvmsg syscalls:sys_enter_read syscalls:sys_exit_read syscalls:sys_enter_epoll_pwait syscalls:sys_exit_epoll_pwait syscalls:sys_enter_futex syscalls:sys_exit_futex; do echo $e >> $I/set_event; done
echo 1 > $I/options/record-tgid
echo 1 > $I/tracing_on
$B/ftmpirun -n $NP --transport shm --on-failure continue --trace $P.json $B/ftmpi-bench -bench detect > $P.out 2>$P.err || true
echo 0 > $I/tracing_on
cat $I/trace > $P.trace
echo > $I/trace
cat /proc/loadavg
grep -o '"name":"[a-z_]*"\|"median":[0-9.]*' $P.out | paste -sd' '
