# Helpers shared by bench/compare.sh and bench/dtype-compare.sh (sourced, not
# run). The caller sets LOGDIR and SKIP_INSTALL and declares the arrays
# SKIPPED and FAILED before calling them.
# shellcheck shell=bash

log() { echo "# $*" >&2; }
skip() { SKIPPED+=("$*"); log "SKIP: $*"; }
fail() { FAILED+=("$*"); log "FAILED: $*"; }

# load_check WHEN: warn if the 1-minute load is above 0.5 (the machine is
# shared and small: anything else running skews results).
load_check() {
	local l1
	l1=$(cut -d' ' -f1 /proc/loadavg)
	if awk -v l="$l1" 'BEGIN {exit !(l > 0.5)}'; then
		log "WARNING: load average $l1 $1: other work on this host will skew the numbers"
	fi
}

# ensure_packages: install Debian's Open MPI and MPICH if missing (never with
# SKIP_INSTALL=1). Returns 1 if they are missing and cannot be installed.
PKGS=(mpich libmpich-dev openmpi-bin libopenmpi-dev)
ensure_packages() {
	local missing=() p
	for p in "${PKGS[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	((${#missing[@]} == 0)) && return 0
	if [[ $SKIP_INSTALL == 1 ]]; then
		log "missing packages ${missing[*]} and SKIP_INSTALL=1"
		return 1
	fi
	local sudo=()
	((EUID != 0)) && sudo=(sudo)
	log "installing ${missing[*]}"
	"${sudo[@]}" apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}" >&2
}

# go_build OUT PKG: build one Go binary from the module at $ROOT; a missing
# package or a failed build is a skip.
go_build() {
	local out=$1 pkg=$2
	if [[ ! -d $ROOT/${pkg#./} ]]; then
		skip "$pkg does not exist yet (no $(basename "$out"))"
		return 1
	fi
	if ! (cd "$ROOT" && go build -o "$out" "$pkg") >"$LOGDIR/go-build-$(basename "$out").log" 2>&1; then
		skip "go build $pkg failed: $(head -n 3 "$LOGDIR/go-build-$(basename "$out").log" | tr '\n' ' ')"
		return 1
	fi
	log "built $out"
}

# Launchers: they set CMD.
OMPI_ROOT=()
((EUID == 0)) && OMPI_ROOT=(--allow-run-as-root)
CMD=()

# ompi_cmd NP [mpirun options...] -- PROGRAM ARGS...: set CMD to the Open MPI launch.
ompi_cmd() {
	local np=$1
	shift
	local opts=()
	while [[ $1 != -- ]]; do opts+=("$1"); shift; done
	shift
	local over=()
	((np > 2)) && over=(--oversubscribe)
	CMD=(mpirun.openmpi "${OMPI_ROOT[@]}" "${over[@]}" "${opts[@]}" -n "$np" "$@")
}
# mpich_cmd NP PROGRAM ARGS...: set CMD to the MPICH launch.
mpich_cmd() {
	local np=$1
	shift
	CMD=(mpirun.mpich -n "$np" "$@")
}

now_ns() { date +%s%N; }

median_of() { # median_of NUMBERS...
	printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}
