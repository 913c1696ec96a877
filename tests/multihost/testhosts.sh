#!/usr/bin/env bash
# Test hosts on this machine: network namespaces joined through a switch.
#
#   testhosts.sh up N        creates hosts adg-h1 … adg-hN (N in 2..4) at
#                            10.231.77.11 … 10.231.77.(10+N)/24, each with a
#                            veth pair into the namespace adg-switch, which
#                            bridges them; prints the addresses
#   testhosts.sh down        removes every adg-* namespace (and so every
#                            veth and the bridge)
#   testhosts.sh HOST CMD…   Open MPI's rsh launch agent (it is called as
#                            ssh would be): runs CMD on HOST (an address
#                            above) inside that host's namespace
#   testhosts.sh run N CMD…  up N, then CMD inside host 1 with
#                            ADGRAPH_HOSTS set to the addresses and
#                            ADGRAPH_MPIRUN_HOSTS to the mpirun flags that
#                            spread ranks over the hosts (TCP only); down on
#                            any exit, failure or signal included
#   testhosts.sh link HOST down|up
#                            takes host HOST's link (1..N) down or up
#   testhosts.sh slow HOST   delays host HOST's link: netem 3 ms ± 1 ms
#                            where the kernel has netem, else (as on
#                            firecracker VMs, whose kernel lacks sch_netem)
#                            a 20 Mbit/s token bucket, which queues and so
#                            delays every message; says which it used
#
# Root is needed (ip netns). Nothing outside the adg-* namespaces is touched.
set -euo pipefail

readonly subnet=10.231.77
readonly switch=adg-switch
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

host_ns() { echo "adg-h$1"; }
host_ip() { echo "$subnet.$((10 + $1))"; }

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^adg-' || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}

up() {
  local n=$1 i
  [[ $n =~ ^[2-4]$ ]] || { echo "testhosts: expected 2 to 4 hosts, got $n" >&2; exit 2; }
  down
  if ! ip netns add "$switch" 2>/tmp/adg-netns-error; then
    echo "testhosts: cannot create a network namespace: $(cat /tmp/adg-netns-error)" >&2
    echo "testhosts: multi-host tests need root and network namespaces (ip netns)" >&2
    exit 1
  fi
  ip -n "$switch" link add br0 type bridge
  ip -n "$switch" link set br0 up
  for ((i = 1; i <= n; i++)); do
    local ns
    ns=$(host_ns "$i")
    ip netns add "$ns"
    ip link add "h$i" netns "$ns" type veth peer name "port$i" netns "$switch"
    ip -n "$switch" link set "port$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev "h$i"
    ip -n "$ns" link set "h$i" up
    # Keepalive probes only run on an idle connection: once mpirun or a
    # daemon has sent to a lost host (the abort after a rank's deadline),
    # the kernel retransmits for ~15 min (tcp_retries2 = 15) and mpirun
    # waits with it. 2 retries give up after ~1.4 s (RTO 0.2 s doubling).
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=2
  done
  # Every host must reach every other before anything is launched.
  for ((i = 2; i <= n; i++)); do
    ip netns exec "$(host_ns 1)" ping -c 1 -W 5 "$(host_ip "$i")" >/dev/null ||
      { echo "testhosts: host 1 cannot reach host $i" >&2; exit 1; }
  done
  for ((i = 1; i <= n; i++)); do host_ip "$i"; done
}

# Open MPI keeps its session folders (the daemon's and its ranks' PMIx
# sockets and job folders) under orte_tmpdir_base, named by host name and
# job: the test hosts share the file system and the host name, so the
# daemons of one job would build and clean the same folders. A daemon here
# once failed to start ("unable to create .../ompi.vm.0/jf.N/0/1: No such
# file or directory") while another made or removed jf.N/0. Each host's
# commands therefore see a folder of their own at that path: a bind mount
# inside the mount namespace `ip netns exec` makes for them, as separate
# machines would have.
agent() {
  local host=$1 i
  shift
  for i in 1 2 3 4; do
    if [[ $host == "$(host_ip "$i")" ]]; then
      local tmp=${OMPI_MCA_orte_tmpdir_base:-}
      if [[ -n $tmp && -d $tmp ]]; then
        mkdir -p "$tmp/host$i"
        exec ip netns exec "$(host_ns "$i")" sh -c \
          'mount --bind "$1/host$2" "$1" && shift 2 && exec sh -c "$*"' sh "$tmp" "$i" "$*"
      fi
      exec ip netns exec "$(host_ns "$i")" sh -c "$*"
    fi
  done
  echo "testhosts: unknown host $host" >&2
  exit 1
}

run() {
  local n=$1 i addresses=""
  shift
  trap down EXIT
  trap 'exit 130' INT TERM
  up "$n" >/dev/null
  for ((i = 1; i <= n; i++)); do addresses+="${addresses:+,}$(host_ip "$i")"; done
  export ADGRAPH_HOSTS=$addresses
  # Ranks by host in turn; TCP between hosts (no shared memory), the
  # launch agent above, and out-of-band traffic on the test subnet only.
  # A lost daemon is noticed by TCP keepalive within about 3 s.
  # doc:begin mpirun_flags
  export ADGRAPH_MPIRUN_HOSTS="--host ${addresses//,/:8,}:8 --map-by node
    --mca plm_rsh_agent $self --mca btl tcp,self
    --mca btl_tcp_if_include $subnet.0/24 --mca oob_tcp_if_include $subnet.0/24
    --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1
    --mca oob_tcp_keepalive_probes ${ADGRAPH_KEEPALIVE_PROBES:-2}"
  # doc:end mpirun_flags
  ip netns exec "$(host_ns 1)" "$@"
}

case "${1:-}" in
  up) up "$2" ;;
  down) down ;;
  "$subnet".*) agent "$@" ;;
  run) shift; run "$@" ;;
  link) ip -n "$switch" link set "port$2" "$3" ;;
  slow)
    if tc -n "$switch" qdisc replace dev "port$2" root netem delay 3ms 1ms 2>/dev/null; then
      echo "host $2: netem delay 3ms 1ms"
    else
      tc -n "$switch" qdisc replace dev "port$2" root tbf rate 20mbit burst 16kb latency 100ms
      echo "host $2: no netem in this kernel; tbf rate 20mbit (queueing delay)"
    fi ;;
  *) sed -n '2,30p' "$self" >&2; exit 2 ;;
esac
