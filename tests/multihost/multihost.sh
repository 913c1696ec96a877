#!/usr/bin/env bash
# multihost.sh MODE WORKDIR HEAT_INVERSION ADGRAPH_RUN GRAPHS_DIR
# One multi-host scenario on test hosts made by testhosts.sh (network
# namespaces, TCP only). Each mode compares with the same computation on one
# host, bit for bit:
#   gradient2, gradient4  the 64² heat gradient, 2×2 patches on 4 ranks,
#                         spread over 2 or 4 hosts
#   driver                adgraph-run with collectives across 2 hosts
#   inversion             the 4-rank heat inversion across 2 hosts
#   delay                 the same with every link delayed (netem 3 ms ± 1 ms,
#                         or a token bucket where the kernel lacks netem)
#   link_down             a host's link goes down mid-inversion: every rank
#                         ends within the deadline + 5 s, each rank left
#                         names the node (with the missing peer) or the
#                         optimizer's call it waits in; resuming
#                         from the last checkpoint ends as the whole run
#   rank_killed           one rank on host 2 is killed (SIGKILL): the same
set -euo pipefail
mode=$1 work=$2 heat=$3 run=$4 graphs=$5
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
testhosts="$here/testhosts.sh"
mpirun=${MPIEXEC:-mpiexec}
deadline=10
# A lost link: mpirun notices the lost daemon after about 3 s (when ARP gives
# up) and then sometimes kills the ranks on the first host without a SIGTERM
# first, so their stop report would be lost. A 2 s deadline makes the ranks
# waiting for the lost host end first, with their own message.
[[ $mode == link_down ]] && deadline=2
export ADGRAPH_COMM_DEADLINE=$deadline
# The daemons do not share their hardware topology through a mapping at a
# guessed hole of the address space: one orted crashed there once
# (hwloc_shmem_topology_write, SIGSEGV, in the ASan phase of scripts/test);
# each process then reads the topology itself.
export OMPI_MCA_rtc_hwloc_vmhole=none
rm -rf "$work" && mkdir -p "$work"
# Open MPI's session folders in one of the scenario's own: the test hosts
# share /tmp, and a daemon here once failed to start ("unable to create
# /tmp/ompi.vm.0/jf.N/0: No such file or directory") while another test's
# mpirun, ending, removed the empty /tmp/ompi.vm.0 it was creating it in.
# Short (the PMIx sockets' paths have a length limit), removed at the end.
session=$(mktemp -d /tmp/adg-mh.XXXXXX)
trap 'rm -rf "$session"' EXIT
export OMPI_MCA_orte_tmpdir_base=$session
problem=(--nx 32 --ny 32 --nt 20 --px 2 --py 2)
small=("${problem[@]}" --max-iter 12)

fail() { echo "multihost $mode: $*" >&2; exit 1; }

# Field by field: the JSON results of two inversions are the same.
same_result() {
  cmake -DA="$1" -DB="$2" \
    "-DFIELDS=loss_history|gradient_norm_history|iterations|evaluations|relative_kappa_error" \
    -P "$here/../../cmake/CompareJsonFields.cmake" 2>&1 | tail -n 5 ||
    fail "the results differ"
  echo "same loss history, gradient norms, counts and kappa error as on one host"
}

# Each rank left running says what it was waiting in: a node (a halo
# exchange also names the neighbour it misses) or, between graph runs, the
# optimizer's own reduction.
waiting_reports() {
  local reports report
  reports=$(grep -E 'adgraph: rank [0-9]: (stopped by signal 15 after [0-9.]+ s|communication deadline of [0-9]+ s exceeded) in ' "$work/broken.log") ||
    fail "no rank said what it was waiting for"
  echo "$reports"
  while read -r report; do
    [[ $report =~ in\ node\ \"[a-z_0-9]+\"\ \([a-z_]+,\ communication\ \#[0-9]+ ||
       $report =~ in\ MPI_[A-Za-z_]+\ \(n\ =\ [0-9]+\)\ outside\ any\ graph\ node ]] ||
      fail "the report does not name the node or call: $report"
    if [[ $report == *'(data_exchange,'* ]]; then
      [[ $report =~ no\ message\ yet\ from\ or\ to\ rank\ [0-9] ]] ||
        fail "a halo exchange's report does not name the missing peer: $report"
    fi
  done <<<"$reports"
}

# Runs the inversion across 2 hosts with a checkpoint, breaks it with
# `$1` once the first checkpoint is on disk, checks how it ended, resumes
# on one host and compares with the whole run.
fault() {
  local breaker=$1
  "$mpirun" -n 4 "$heat" "${small[@]}" --output "$work/whole.json" >/dev/null
  export work heat breaker deadline testhosts
  local problem_text="${problem[*]}"
  export problem_text
  "$testhosts" run 2 bash -c '
    set -u
    "$MPIEXEC_BIN" -n 4 $ADGRAPH_MPIRUN_HOSTS "$heat" $problem_text --max-iter 100000 \
      --tol 0 --checkpoint "$work/ckpt" --output "$work/broken.json" \
      >"$work/broken.log" 2>&1 &
    job=$!
    for _ in $(seq 600); do
      [[ -e $work/ckpt.rank3of4 ]] && break
      kill -0 $job 2>/dev/null || break
      sleep 0.1
    done
    [[ -e $work/ckpt.rank3of4 ]] || { echo "no checkpoint appeared"; cat "$work/broken.log"; exit 1; }
    sleep 0.5
    start=$(date +%s%N)
    case $breaker in
      link_down) "$testhosts" link 2 down && echo "host 2 link down" ;;
      rank_killed)
        victim=$(ip netns pids adg-h2 | xargs -r ps -o pid=,comm= -p | awk "/heat_inversion/ {print \$1; exit}")
        [[ -n $victim ]] || { echo "no rank found on host 2"; exit 1; }
        kill -9 "$victim" ;;
    esac
    status=0
    wait $job || status=$?
    elapsed_ms=$((($(date +%s%N) - start) / 1000000))
    echo "$breaker: mpirun ended with status $status after $elapsed_ms ms"
    cat "$work/broken.log" | grep -v "^ *[0-9]" || true
    [[ $status -ne 0 ]] || { echo "expected a failure status"; exit 1; }
    (( elapsed_ms <= (deadline + 5) * 1000 )) ||
      { echo "took longer than the deadline + 5 s"; exit 1; }
  ' || fail "the broken run did not end as it should"
  case $breaker in
    link_down)
      # The link may go down while the ranks run a graph (a node waits) or
      # between runs (the optimizer's reduction waits): either is a deadline.
      grep -q "communication deadline of $deadline s exceeded in " "$work/broken.log" ||
        fail "no rank reached the deadline"
      waiting_reports ;;
    rank_killed)
      grep -Eq "process rank [0-9] with PID [0-9]+ on node 10.231.77.12 exited on signal 9" "$work/broken.log" ||
        fail "no message names the killed rank"
      waiting_reports ;;
  esac
  "$mpirun" -n 4 "$heat" "${small[@]}" --checkpoint "$work/ckpt" --resume \
    --output "$work/resumed.json" >/dev/null
  grep -q '"resumed_at": [1-9]' "$work/resumed.json" || fail "did not resume"
  same_result "$work/whole.json" "$work/resumed.json"
}

export MPIEXEC_BIN=$mpirun
case $mode in
  gradient2 | gradient4)
    n=${mode#gradient}
    "$mpirun" -n 4 "$heat" --nx 64 --ny 64 --nt 30 --px 2 --py 2 \
      --dump-gradient "$work/one_host.bin" >/dev/null
    export work heat
    "$testhosts" run "$n" bash -c '"$MPIEXEC_BIN" -n 4 $ADGRAPH_MPIRUN_HOSTS "$heat" --nx 64 --ny 64 \
      --nt 30 --px 2 --py 2 --dump-gradient "$work/hosts.bin"'
    cmp "$work/one_host.bin" "$work/hosts.bin" || fail "the gradients differ"
    echo "the gradient over $n hosts equals the one-host gradient bit for bit"
    ;;
  driver)
    "$mpirun" -n 4 "$run" "$graphs/patch_grid_sums.json" --all-ranks >"$work/one_host.json"
    export work run graphs
    "$testhosts" run 2 bash -c '"$MPIEXEC_BIN" -n 4 $ADGRAPH_MPIRUN_HOSTS "$run" \
      "$graphs/patch_grid_sums.json" --all-ranks >"$work/hosts.json"'
    cmp "$work/one_host.json" "$work/hosts.json" || fail "the results differ"
    echo "adgraph-run across 2 hosts: $(cat "$work/hosts.json")"
    ;;
  inversion | delay)
    "$mpirun" -n 4 "$heat" "${small[@]}" --output "$work/one_host.json" >/dev/null
    export work heat mode testhosts
    export small_text="${small[*]}"
    "$testhosts" run 2 bash -c '
      set -eu
      if [[ $mode == delay ]]; then
        "$testhosts" slow 1
        "$testhosts" slow 2
      fi
      "$MPIEXEC_BIN" -n 4 $ADGRAPH_MPIRUN_HOSTS "$heat" $small_text \
        --output "$work/hosts.json" | tail -n 3'
    same_result "$work/one_host.json" "$work/hosts.json"
    ;;
  link_down | rank_killed) fault "$mode" ;;
  *) fail "unknown mode" ;;
esac
