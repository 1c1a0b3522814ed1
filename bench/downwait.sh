#!/bin/bash
# How long after `ethfab down` the lab's Open vSwitch daemons are really
# gone (not merely past their last syscall: a dying vswitchd closes one
# packet socket per port). Brings up SCENARIO (default the conditional
# Dragonfly), takes it down, then polls ps until no live (non-zombie) OVS
# daemon is left. Run as root from the repository, with no other lab up.
#
# Usage: bench/downwait.sh [BIN] [SCENARIO]
set -eu
bin=${1:-bin/ethfab}
sc=${2:-scenarios/conditional-adv.yaml}
lab=$(awk '/^name:/ {print $2; exit}' "$sc")
live() { ps -eo stat,comm | awk '$2 ~ /ovs-vswitchd|ovsdb-server/ && $1 !~ /Z/' | grep -q .; }
if live; then echo "an Open vSwitch daemon is already running: stop it first" >&2; exit 1; fi
"$bin" up "$sc" >/dev/null 2>&1
sleep 1
t0=$(date +%s.%N)
"$bin" down "$lab" >/dev/null 2>&1
t1=$(date +%s.%N)
while live; do sleep 0.05; done
t2=$(date +%s.%N)
printf 'down returned after %.3f s; daemons gone after %.3f s\n' "$(echo "$t1-$t0" | bc)" "$(echo "$t2-$t0" | bc)"
