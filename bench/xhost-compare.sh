#!/usr/bin/env bash
# Across hosts: ftmpi against Debian's Open MPI 4.1 and MPICH 4.0 on
# namespace hosts (issue 13 item 7), one interleaved run. See bench/README.md.
#
# Usage: bench/xhost-compare.sh            (about 5 minutes on 2 idle cores; root)
#        QUICK=1 bench/xhost-compare.sh    (smoke run: one launch of everything, about 1.5 minutes)
#
# Four namespace hosts h1..h4 with sshd (internal/nshosts: a private bridge,
# nothing routed off the machine; one filesystem and one clock) are brought
# up; every launcher runs on h1 and reaches the others over the same ssh:
#   ftmpi     ftmpirun --host h1:N,... --interface <hosts' /24>   (FTMPI_SSH="ssh -F <run's config>")
#   openmpi   mpirun.openmpi --host h1:N,... --bind-to none --mca pml ob1 --mca btl tcp,self
#             --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --mca plm_rsh_agent "ssh -F <config>"
#   mpich     mpiexec.hydra -iface eth0 -launcher ssh -launcher-exec <ssh -F wrapper> -hosts h1:N,...
#             with UCX_TLS=tcp,self UCX_NET_DEVICES=eth0
# and measures (bench/xhostcmp runs them, interleaved, the order turned
# every round):
#   p2p       1 B latency, 1..16 MiB bandwidth, one rank on h1 and one on h2 (ROUNDS launches each)
#   start     job start at np 16 over 4 hosts (hello), the launcher's wall time (1 + START_RUNS launches)
#   crash     h4 (4 ranks) SIGKILLed while every survivor waits in a receive from it (CRASH_RUNS)
#   silent    the same with h4's link cut both ways first (SILENT_RUNS)
#   replace   ftmpi only: kill -> restored communicator at np 16, the 4 lost ranks respawned (REPLACE_RUNS)
# Open MPI 4.1 and MPICH have no ULFM: for crash and silent the script
# reports when their launcher ended the job (or that it still ran CAP after
# the loss, then killed) and whether any survivor's receive returned.
#
# Environment (all optional):
#   QUICK=1             one launch of everything, 2 repetitions inside p2p launches, CAP=5s
#   ROUNDS=5 RUNS=5 START_RUNS=7 CRASH_RUNS=5 SILENT_RUNS=3 REPLACE_RUNS=5
#   PARTS=p2p,start,crash,silent,replace   IMPLS=ftmpi,openmpi,mpich
#   CAP=10s             crash/silent: how long a launcher without ULFM may take to end the job
#   HB_TIMEOUT=3s       ftmpirun's agent heartbeat timeout (FTMPI_AGENT_HB_TIMEOUT; its default)
#   BUILD=bench/build   build directory (gitignored)
#   RESULTS=bench/results/xhost-<date>.jsonl   results (the table goes to the same name .md)
#   SKIP_INSTALL=1      never call apt-get
#   TIMEOUT=120s        limit of any launch
#
# stdout: every result line as it comes, then the table. stderr: progress
# (lines starting with "#"), skips and failures.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

if [[ ${QUICK:-0} == 1 ]]; then
	ROUNDS=${ROUNDS:-1} RUNS=${RUNS:-2} START_RUNS=${START_RUNS:-1} CRASH_RUNS=${CRASH_RUNS:-1}
	SILENT_RUNS=${SILENT_RUNS:-1} REPLACE_RUNS=${REPLACE_RUNS:-1} CAP=${CAP:-5s}
fi
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
START_RUNS=${START_RUNS:-7}
CRASH_RUNS=${CRASH_RUNS:-5}
SILENT_RUNS=${SILENT_RUNS:-3}
REPLACE_RUNS=${REPLACE_RUNS:-5}
PARTS=${PARTS:-p2p,start,crash,silent,replace}
IMPLS=${IMPLS:-ftmpi,openmpi,mpich}
CAP=${CAP:-10s}
HB_TIMEOUT=${HB_TIMEOUT:-3s}
TIMEOUT=${TIMEOUT:-120s}
BUILD=${BUILD:-$HERE/build}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/xhost-$STAMP.jsonl}
SKIP_INSTALL=${SKIP_INSTALL:-0}

# shellcheck source=lib.sh
source "$HERE/lib.sh"

need_posint ROUNDS RUNS START_RUNS CRASH_RUNS SILENT_RUNS REPLACE_RUNS
if ((EUID != 0)); then
	echo "bench/xhost-compare.sh needs root (it makes network namespaces)" >&2
	exit 1
fi

start_run xhost
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average at the start: $LOAD_BEGIN"
load_check "at the start"

# ---------------------------------------------------------------- builds
build_ftmpi
go_build "$BUILD/ftmpi/hello" ./examples/hello || HAVE_FT=0
build_table_tool xhostcmp
impls=()
for i in ${IMPLS//,/ }; do
	case $i in
	ftmpi)
		if ((HAVE_FT)); then impls+=(ftmpi); else skip "ftmpi (a Go build failed)"; fi
		;;
	openmpi | mpich)
		if [[ -z ${HAVE_MPI:-} ]]; then
			HAVE_MPI=1
			if ! ensure_packages; then
				HAVE_MPI=0
				skip "Open MPI and MPICH (packages missing and not installable)"
			else
				log "building bench/c/{latency,bw,hello,hostloss}.c for Open MPI and MPICH"
				targets=()
				for impl in openmpi mpich; do
					for p in latency bw hello hostloss; do targets+=("$BUILD/$impl/$p"); done
				done
				if ! make -s -C "$HERE/c" BUILD="$BUILD" "${targets[@]}" >"$LOGDIR/make.log" 2>&1; then
					cat "$LOGDIR/make.log" >&2
					fail "building the C benchmarks"
					HAVE_MPI=0
				fi
			fi
		fi
		if ((HAVE_MPI)); then impls+=("$i"); fi
		;;
	*)
		echo "IMPLS: unknown launcher '$i' (want ftmpi, openmpi, mpich)" >&2
		exit 2
		;;
	esac
done
if ((${#impls[@]} == 0)); then
	echo "nothing to run (see the skips above)" >&2
	exit 1
fi
IMPLS=$(
	IFS=,
	echo "${impls[*]}"
)

# ---------------------------------------------------------------- run
log "running $BUILD/xhostcmp: launchers $IMPLS, parts $PARTS"
rc=0
"$BUILD/xhostcmp" -build "$BUILD" -impls "$IMPLS" -parts "$PARTS" -rounds "$ROUNDS" -runs "$RUNS" \
	-start-runs "$START_RUNS" -crash-runs "$CRASH_RUNS" -silent-runs "$SILENT_RUNS" -replace-runs "$REPLACE_RUNS" \
	-cap "$CAP" -hb-timeout "$HB_TIMEOUT" -timeout "$TIMEOUT" \
	-results "$RESULTS" -table "${RESULTS%.jsonl}.md" -logs "$LOGDIR" || rc=$?
if ((rc != 0)); then
	fail "xhostcmp exited with $rc (see the FAILED lines above)"
fi
TABLE=${RESULTS%.jsonl}.md
report_end
