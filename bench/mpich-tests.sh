#!/usr/bin/env bash
# MPICH's own test suite (test/mpi of Debian's MPICH source package, upstream
# and unmodified) on ftmpi's libmpi: configured with ftmpicc as mpicc and
# run by MPICH's runtests with ftmpirun as mpiexec, one directory at a time.
#
# Usage: bench/mpich-tests.sh [DIR...]      (or DIRS="ft pt2pt" bench/mpich-tests.sh)
#        bench/mpich-tests.sh --fetch       (only fetch; print the unpacked test/mpi)
#
#   WORK     work directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/ftmpi/ftmpi-mpich-tests: a cache of the sources and builds, kept between runs); the
#            sources to $WORK/pristine (as unpacked) and $WORK/src (a copy,
#            configured and built), the pinned library to $WORK/ftmpi,
#            results to $WORK/results, logs to $WORK/logs
#   DIRS     directories of test/mpi to build and run (default: all below)
#   OUT      the machine-readable result (default $WORK/results/summary.tsv):
#            one line per directory: dir passed failed skipped seconds
#            (a header line first); $WORK/results/DIR.tests has one line per
#            test: ok|fail|skip NAME NP, and DIR.tap runtests' TAP output
#   JOBS     make -j for building (default 2)
#   REBUILD  1: make clean each directory first (default: only when the
#            library's headers changed since the directory was built)
#   FTMPI_MPICH_TESTS  an unpacked test/mpi to copy instead of fetching one
#   MPITEST_TIMEOUT  runtests' limit of a test without its own timeLimit
#            (default here 60 s, runtests' own 180 s): a hang costs that long
#   ALLOW_UNDEFINED  1: link with undefined MPI functions allowed (a program
#            calling one crashes (SIGSEGV at address 0)): a diagnostic for
#            while other areas are missing (MPICH's test library calls
#            communicator, group and collective functions in every test);
#            such numbers are not comparable with normal runs
#
# The sources: `apt-get source --download-only mpich` (a deb-src entry for
# bookworm main is added under /etc/apt/sources.list.d if apt has none; the
# URI is the one of the machine's own deb entry), then only test/mpi is
# unpacked from the upstream tarball. The library is built once per run
# (go run ./cmd/ftmpicc -bin) and copied to $WORK/ftmpi, so that edits to
# the tree while the suite runs do not change what it tests; $WORK/bin holds
# mpicc/mpicxx (ftmpicc's flags for that copy, with CC forced to the real
# compiler: MPICH's configure exports CC=mpicc) and mpiexec (that ftmpirun).
#
# runtests sets MPIEXEC_TIMEOUT for each test (ftmpirun's --timeout) and
# passes -disable-auto-cleanup to the ft tests (ftmpirun: --on-failure
# continue). xfail tests are run (configure --enable-xfail): their tickets
# are MPICH's. Exit code 0 when every directory ran (failures are counted,
# not fatal), 1 if a step could not be done.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/ftmpi}
case $WORK in */ftmpi-mpich-tests) ;; *) WORK=$WORK/ftmpi-mpich-tests ;; esac
ALL="ft pt2pt coll comm group datatype init errhan attr info topo rma io spawn"
if (($# > 0)) && [[ $1 != --fetch ]]; then DIRS="$*"; fi
DIRS=${DIRS:-$ALL}
JOBS=${JOBS:-2}
RES=$WORK/results
LOGS=$WORK/logs
OUT=${OUT:-$RES/summary.tsv}
mkdir -p "$WORK" "$RES" "$LOGS"
log() { echo "# $*" >&2; }
die() { echo "mpich-tests: $*" >&2; exit 1; }

# --- 1. the sources ---------------------------------------------------------
# $WORK/pristine/test/mpi as unpacked; $T, a copy, is configured and built.
PRISTINE=$WORK/pristine/test/mpi
T=$WORK/src/test/mpi
fetch() {
	local sudo=()
	((EUID != 0)) && sudo=(sudo)
	if ! command -v dpkg-source >/dev/null; then
		log "installing dpkg-dev (apt-get source needs it)"
		"${sudo[@]}" apt-get update -q >&2
		"${sudo[@]}" apt-get install -y -q dpkg-dev >&2
	fi
	local dl=$WORK/download
	mkdir -p "$dl"
	if ! (cd "$dl" && apt-get source --download-only mpich >"$LOGS/apt-source.log" 2>&1); then
		if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
			local uri
			uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
			[[ -n $uri ]] || uri=$(awk '$1=="deb"{for(i=2;i<=NF;i++) if($i ~ /:\/\//){print $i; exit}}' /etc/apt/sources.list 2>/dev/null || true)
			[[ -n $uri ]] || die "no deb-src entry and no deb URI to derive one from"
			log "adding a deb-src entry for bookworm main ($uri)"
			printf 'Types: deb-src\nURIs: %s\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" |
				"${sudo[@]}" tee /etc/apt/sources.list.d/ftmpi-deb-src.sources >/dev/null
		fi
		"${sudo[@]}" apt-get update -q >&2
		(cd "$dl" && apt-get source --download-only mpich >"$LOGS/apt-source.log" 2>&1) ||
			die "apt-get source mpich failed: $(tail -3 "$LOGS/apt-source.log")"
	fi
	local tarball
	tarball=$(ls "$dl"/mpich_*.orig.tar.* | head -1)
	[[ -f $tarball ]] || die "no upstream tarball in $dl"
	log "unpacking test/mpi of $(basename "$tarball")"
	local tmp=$WORK/unpack
	rm -rf "$tmp" && mkdir -p "$tmp"
	tar -xf "$tarball" -C "$tmp" --wildcards '*/test/mpi/*'
	rm -rf "$PRISTINE" && mkdir -p "$(dirname "$PRISTINE")"
	mv "$tmp"/*/test/mpi "$PRISTINE"
	rm -rf "$tmp"
}
if [[ ${1:-} == --fetch ]]; then
	# .ci/run: export FTMPI_MPICH_TESTS=$(bench/mpich-tests.sh --fetch)
	[[ -f $PRISTINE/runtests.in ]] || fetch
	echo "$PRISTINE"
	exit 0
fi
if [[ ! -f $T/runtests.in ]]; then
	src=${FTMPI_MPICH_TESTS:-$PRISTINE}
	if [[ -z ${FTMPI_MPICH_TESTS:-} && ! -f $PRISTINE/runtests.in ]]; then
		fetch
	fi
	[[ -f $src/runtests.in ]] || die "$src is not an unpacked test/mpi of MPICH"
	mkdir -p "$(dirname "$T")"
	cp -a "$src" "$T"
	# A tree configured elsewhere is configured and built again here.
	rm -f "$T/config.status"
	find "$T" -name .ftmpi-headers -delete
fi

# --- 2. the library, pinned, and the wrappers ---------------------------------
t0=$(date +%s)
B=$(cd "$ROOT" && go run ./cmd/ftmpicc -bin) || die "go run ./cmd/ftmpicc -bin failed"
P=$WORK/ftmpi
rm -rf "$P.new" && mkdir -p "$P.new/bin"
cp -a "$B/../include" "$B/../lib" "$P.new/"
cp "$B/ftmpirun" "$P.new/bin/"
rm -rf "$P" && mv "$P.new" "$P"
log "library $(basename "$(cd "$B/.." && pwd)") pinned in $P"
mkdir -p "$WORK/bin"
undef=
[[ ${ALLOW_UNDEFINED:-0} == 1 ]] && undef="-no-pie -Wl,--unresolved-symbols=ignore-all"
for w in mpicc mpicxx; do
	if [[ $w == mpicc ]]; then real='${FTMPI_REAL_CC:-cc}'; else real='${FTMPI_REAL_CXX:-c++}'; fi
	cat >"$WORK/bin/$w" <<EOF
#!/bin/sh
# $w of bench/mpich-tests.sh: ftmpicc's flags for the library pinned in $P
link=1
for a in "\$@"; do case \$a in -c|-E|-S|-M|-MM) link=0 ;; esac; done
if [ \$link = 1 ]; then
	exec $real -I$P/include "\$@" -L$P/lib -Wl,-rpath,$P/lib -lmpi $undef
fi
exec $real -I$P/include "\$@"
EOF
	chmod +x "$WORK/bin/$w"
done
ln -sf "$P/bin/ftmpirun" "$WORK/bin/mpiexec"
ln -sf "$P/bin/ftmpirun" "$WORK/bin/mpirun"
export PATH=$WORK/bin:$B:$PATH
unset CC CXX MPICC MPICXX
hdr=$( (cd "$P/include" && find . -type f -print0 | sort -z | xargs -0 cat; echo "$undef") | cksum | cut -d' ' -f1)

# --- 3. configure ---------------------------------------------------------
if [[ ! -f $T/runtests || ! -f $T/config.status ]]; then
	log "configuring test/mpi (log $LOGS/configure.log)"
	(cd "$T" && ./configure --disable-fortran --disable-cxx --enable-threads=single \
		--enable-ft-tests --enable-xfail --enable-rma --enable-spawn --enable-romio \
		MPICC="$WORK/bin/mpicc" MPICXX="$WORK/bin/mpicxx" MPIEXEC="$WORK/bin/mpiexec") \
		>"$LOGS/configure.log" 2>&1 || die "configure failed: see $LOGS/configure.log"
fi
t1=$(date +%s)

# --- 4. build and run each directory ---------------------------------------
printf 'dir\tpassed\tfailed\tskipped\tseconds\n' >"$OUT.new"
for d in $DIRS; do
	[[ -d $T/$d ]] || { log "no directory $d in test/mpi"; continue; }
	[[ -f $T/$d/testlist ]] || { log "$d has no testlist (not configured?)"; continue; }
	stamp=$T/$d/.ftmpi-headers
	if [[ ${REBUILD:-0} == 1 || ! -f $stamp || $(cat "$stamp") != "$hdr" ]]; then
		make -C "$T/$d" clean >/dev/null 2>&1 || true
	fi
	b0=$(date +%s)
	# -k: a test that does not compile fails in runtests ("Failed to build").
	make -C "$T/$d" -k -j"$JOBS" >"$LOGS/build-$d.log" 2>&1 || true
	echo "$hdr" >"$stamp"
	r0=$(date +%s)
	log "$d: built in $((r0 - b0)) s; running"
	rm -f "$RES/$d.tap"
	(cd "$T/$d" && MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-60} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		perl ../runtests -srcdir=. -tests=testlist -mpiexec="$WORK/bin/mpiexec" \
		-tapfile="$RES/$d.tap") >"$LOGS/run-$d.log" 2>&1 || true
	r1=$(date +%s)
	# TAP lines (runtests 4.0.2 leaves the number out): "ok [N] - DIR/PROG NP
	# # time=T", "ok [N] - DIR/PROG NP  # SKIP reason", "not ok [N] - DIR/PROG
	# [NP] [# TODO ticket] # time=T" (no NP when it failed to build).
	awk '
		/^(not )?ok / {
			st = "ok"; line = $0
			if (line ~ /^not ok/) { st = "fail"; sub(/^not ok */, "", line) } else sub(/^ok */, "", line)
			if (st == "ok" && line ~ /# SKIP/) st = "skip"
			sub(/^[0-9]* *- */, "", line)
			n = split(line, w, " "); np = (n >= 2 && w[2] ~ /^[0-9]+$/) ? w[2] : "-"
			name = w[1]; sub(/^\.\//, "", name)
			print st, name, np
		}
	' "$RES/$d.tap" 2>/dev/null >"$RES/$d.tests" || true
	read -r p f s < <(awk '{c[$1]++} END {printf "%d %d %d\n", c["ok"], c["fail"], c["skip"]}' "$RES/$d.tests")
	printf '%s\t%d\t%d\t%d\t%d\n' "$d" "$p" "$f" "$s" "$((r1 - r0))" >>"$OUT.new"
	log "$d: $p passed, $f failed, $s skipped in $((r1 - r0)) s (build $((r0 - b0)) s)"
done
mv "$OUT.new" "$OUT"

# --- 5. the table ----------------------------------------------------------
echo
echo "MPICH $(basename "$(ls -d "$WORK"/download/mpich_*.dsc 2>/dev/null | head -1)" .dsc 2>/dev/null) test/mpi on ftmpi (setup $((t1 - t0)) s)"
awk -F'\t' '
	NR == 1 { printf "%-10s %7s %7s %8s %8s\n", $1, $2, $3, $4, $5; next }
	{ printf "%-10s %7d %7d %8d %8d\n", $1, $2, $3, $4, $5; p += $2; f += $3; s += $4; t += $5 }
	END { printf "%-10s %7d %7d %8d %8d\n", "total", p, f, s, t }
' "$OUT"
echo "per test: $RES/DIR.tests; runtests output: $LOGS/run-DIR.log"
