#!/usr/bin/env bash
# nshosts.sh - namespace hosts for trying multi-host ftmpirun by hand (root).
#
#   bench/nshosts.sh up [N] [DIR]   make hosts h1..hN (default 3) with sshd; DIR default /tmp/nshosts
#   bench/nshosts.sh down [DIR]     kill everything on them, remove namespaces and DIR
#
# The hosts are network namespaces on a private bridge (its own namespace;
# nothing routed off the machine), each with sshd and the names h1..hN in
# its /etc/hosts (ip netns exec binds /etc/netns/NS/hosts). Run a job from
# h1 with the printed command. Package internal/nshosts does the work (the
# tests use it directly).
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  up) go run ./internal/nshosts/nshostsctl up "${2:-3}" "${3:-/tmp/nshosts}" ;;
  down) go run ./internal/nshosts/nshostsctl down "${2:-/tmp/nshosts}" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
