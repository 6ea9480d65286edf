#!/bin/sh
# dist/bench.sh BUILD MODEL [N_PREDICT]: the distribution benchmark on
# loopback. Runs rt-run on MODEL alone, over 2 and 3 pipeline ranks and 2
# tensor-parallel ranks (mpirun, CPU plugin), a prompt of about 100 tokens
# in ubatches of 32, then N_PREDICT greedy tokens (default 32), and prints
# one line per configuration: prompt throughput, per-token decode latency,
# and each rank's compute and communication time (waiting included), as
# rt-run reports them; then what one message costs between two ranks (the
# latency and bandwidth of the network model in the report). One run each:
# a short benchmark, not a study.
set -eu
b=$1
model=$2
n=${3:-32}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 RT_PLUGINS=cpu
prompt=
for i in 1 2 3 4 5 6 7 8 9 10 11; do prompt="${prompt}Once upon a time there was a dog. "; done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
mpirun="mpirun --oversubscribe --allow-run-as-root --bind-to none"

one() { # NAME COMMAND...: one configuration's line
    name=$1
    shift
    if ! "$@" -m "$model" -p "$prompt" -n "$n" --n-batch 32 >/dev/null 2>"$log"; then
        printf '%-6s failed: %s\n' "$name" "$(grep -v 'rt-run: rank [0-9]* of' "$log" | grep -m1 'rt-run: ')"
        return 0
    fi
    awk -v name="$name" '
        /^prompt:/ { pt = $2; ps = $5 }
        /^generation:/ { gt = $2; gs = $5 }
        /^dist: rank [0-9]+: compute/ { r = r sprintf(" r%s %s/%s", $3, $5, $8) }
        END { printf "%-6s prompt %4d tok %8.1f tok/s | decode %4d tok %7.2f ms/tok |%s\n",
              name, pt, pt / ps, gt, 1000 * gs / gt, r ? " compute/comm s:" r : "" }' "$log"
}

echo "model $model, $n tokens; rank rN compute/communication seconds"
one "1"    "$b/bin/rt-run"
one "pp2"  $mpirun -np 2 "$b/bin/rt-run"
one "pp3"  $mpirun -np 3 "$b/bin/rt-run"
one "tp2"  $mpirun -np 2 "$b/bin/rt-run" --tp 2
echo "what one message costs between two ranks (rt_comm, MPI on loopback):"
for bytes in 4 2304 65536 1048576; do
    $mpirun -np 2 "$b/tests/dist-wire" --pingpong $bytes | sed 's/^dist-wire: /  /'
done
