#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device/cuda.sh: the CUDA plugin's checks on a machine with an NVIDIA
# GPU (the lent device machine, or any), from the repository root. Builds
# what it needs (./configure, ninja -j16 on the few targets), then:
#
#   rt-devices      the CUDA device is listed (name, memory, PCI, UUID)
#   nodevice test   tests/test-cuda-nodevice.sh (exports, ldd, plugin loaded)
#   rt-test-ops     every conformance case (tests/conform) on cuda0, the
#                   multi-node graphs against the CPU plugin, every
#                   quantised weight type among the cases that passed, and
#                   every FLASH_ATTN case passed (not "not supported"),
#                   and again under compute-sanitizer memcheck and racecheck
#   cuda_bench      MUL_MAT paths at shapes rt-test-ops does not reach
#   stories260K     greedy, 64 tokens: CPU alone, CUDA (all layers, CUDA
#                   graphs on and off), CPU + CUDA split; texts must match
#   nccl            the NCCL transport (dist/comm_nccl.c, never run before
#                   a GPU machine ran this): dist-wire --nccl on 1 rank
#                   (device-memory allreduce and broadcast, host staging),
#                   then on 2 ranks and stories260K under mpirun -np 2 --tp 2
#                   --dist nccl (text = the CPU's); with one GPU NCCL may
#                   refuse two ranks on one device ("Duplicate GPU"), which
#                   is then noted as such, not as a failure of rt
#   performance     F16 GEMM 8192^3 against cuBLAS's own GEMM, each
#                   quantised type's matrix-vector against the read
#                   bandwidth, both measured in this run
#                   (tests/device/cuda_ref.cu, cuda_bench.c); FLASH_ATTN's
#                   perf cases (rt-test-ops perf: decode over 4096 keys, a
#                   prompt of 512) on cuda0 beside the CPU plugin, and
#                   beside llama.cpp's test-backend-ops FLASH_ATTN_EXT when
#                   RT_PEER_TEST_BACKEND_OPS names a CUDA build of it (this
#                   script builds none: the device machine has no network)
#
# Every step's failure is recorded and the script goes on; the whole run
# stays under 8 minutes (each step has a timeout, and all of them share a
# budget of RT_DEVICE_BUDGET_S, 460 s by default). Results go to $OUT
# (default build/device-out): summary.md (the tables) and log.txt (every
# step's output). Exit status 1 when any step failed.
#
# The model is not part of the tree: put stories260K.gguf in build/models/
# (or name it in RT_MODEL). With the device tool, from this machine:
#   mkdir -p build/models && cp ../shared/models/stories260K.gguf build/models/
#   run: sh tests/device/cuda.sh   (carry: build/models; timeout_s 540)
set -u
command -v nvcc >/dev/null 2>&1 || PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-build/device-out}
mkdir -p "$OUT" build/device
summary=$OUT/summary.md
log=$OUT/log.txt
: >"$log"
t_start=$(date +%s)
deadline=$((t_start + ${RT_DEVICE_BUDGET_S:-460})) # the whole run stays under 8 minutes
failed=0
rows=

# step NAME TIMEOUT_S COMMAND...: runs it, its output to the log, a row to
# the summary. The command's last output line becomes the row's note. The
# timeout shrinks to what is left of the run's budget.
step() {
    name=$1
    limit=$2
    shift 2
    t0=$(date +%s)
    left=$((deadline - t0))
    if [ "$left" -lt 5 ]; then
        note "$name" FAIL "not run: the run's time budget is spent"
        return 1
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    printf '\n===== %s: %s\n' "$name" "$*" >>"$log"
    out=$(timeout "$limit" sh -c "$*" 2>&1)
    rc=$?
    printf '%s\n' "$out" >>"$log"
    dt=$(($(date +%s) - t0))
    note=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-150 | tr '|' '/')
    if [ "$rc" = 0 ]; then res=PASS; else res=FAIL; failed=$((failed + 1)); fi
    [ "$rc" = 124 ] && note="timed out after ${limit}s; $note"
    rows="$rows| $name | $res | $dt | $note |
"
    return "$rc"
}

# note NAME RESULT TEXT: a row for something not run as a command.
note() {
    rows="$rows| $1 | $2 | 0 | $3 |
"
    [ "$2" = FAIL ] && failed=$((failed + 1))
    return 0
}

#===--- build ---===#

step "gpu" 20 "nvidia-smi -L && nvcc --version | tail -n 2"
step "configure" 60 "./configure"
step "build plugin (-j16)" 240 "ninja -j16 build/lib/rt-plugins/rt-plugin-cuda.so"
step "build tools (-j16)" 240 "ninja -j16 build/bin/rt-devices build/bin/rt-test-ops build/bin/rt-run \
    build/bin/rt-bench build/lib/rt-plugins/rt-plugin-cpu.so"
cuda_home=$(sed -n 's/^cuda_home = //p' build/config.ninja 2>/dev/null)
cuda_lib=${cuda_home:-/usr/local/cuda}/lib64
# The plugin looks for libcublas.so.13 by soname, then in /usr/local/cuda.
[ -f /usr/local/cuda/lib64/libcublas.so.13 ] || [ ! -f "$cuda_lib/libcublas.so.13" ] ||
    export RT_CUDA_CUBLAS="$cuda_lib/libcublas.so.13"
step "build helpers" 120 "nvcc -std=c++17 -O2 -arch=sm_90 -o build/device/cuda_ref tests/device/cuda_ref.cu \
    -L$cuda_lib -Xlinker -rpath=$cuda_lib -lcublas && cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra \
    -o build/device/cuda_bench tests/device/cuda_bench.c build/lib/librtcore.so.1 \
    -Wl,-rpath,'\$ORIGIN/../lib' -lm && echo built"

#===--- devices and ops ---===#

step "rt-devices" 60 "RT_LOG=info build/bin/rt-devices && build/bin/rt-devices | grep -E '^  \[[0-9]+\] cuda0 '"
blas=$(grep -o 'cuBLAS [0-9][0-9.]*' "$log" | head -n 1)
if [ -n "$blas" ]; then note "cuBLAS" PASS "$blas, opened at run time"
elif grep -q 'no cuBLAS' "$log"; then note "cuBLAS" FAIL "not found: MUL_MAT on the plugin's kernels only"
else note "cuBLAS" FAIL "no CUDA device described"
fi
step "test-cuda-nodevice" 60 "RT_TEST_BUILD_DIR=build sh tests/test-cuda-nodevice.sh"
# rt-test-ops passes when no device matches: the output must show cuda0 tested.
step "rt-test-ops cuda0" 180 "build/bin/rt-test-ops --device cuda0 > build/device/test-ops.txt; \
    rc=\$?; cat build/device/test-ops.txt; grep -q '^cuda0 (cuda):' build/device/test-ops.txt \
    || { echo 'cuda0 was not tested'; exit 1; }; exit \$rc"
# The weight types of GGUF files (kernels/dequant.cuh): each must appear in
# a MUL_MAT and a GET_ROWS case that passed on cuda0.
qtypes="q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl q2_k q3_k q4_k q5_k q6_k iq4_xs"
missing=
for t in $qtypes; do
    for op in MUL_MAT GET_ROWS; do
        grep -E "^  cuda0 +$op .*$t.* OK " build/device/test-ops.txt >/dev/null 2>&1 || missing="$missing $op:$t"
    done
done
if [ -z "$missing" ]; then note "rt-test-ops weight types" PASS "MUL_MAT and GET_ROWS pass for $qtypes"
else note "rt-test-ops weight types" FAIL "no passing case for$missing"
fi
# FLASH_ATTN (plugins/cuda/kernels/flash_attn.cu): every case of the table
# must have run on cuda0 and passed.
fa_all=$(grep -cE '^  cuda0 +FLASH_ATTN ' build/device/test-ops.txt 2>/dev/null)
fa_ok=$(grep -cE '^  cuda0 +FLASH_ATTN .* OK ' build/device/test-ops.txt 2>/dev/null)
if [ "${fa_all:-0}" -gt 0 ] && [ "$fa_all" = "$fa_ok" ]; then
    note "rt-test-ops FLASH_ATTN" PASS "$fa_ok of $fa_all cases pass on cuda0"
else
    note "rt-test-ops FLASH_ATTN" FAIL "${fa_ok:-0} of ${fa_all:-0} cases pass on cuda0: $(grep -E \
        '^  cuda0 +FLASH_ATTN ' build/device/test-ops.txt 2>/dev/null | grep -v ' OK ' | head -n 1 | cut -c1-100)"
fi
# The FLASH_ATTN cases again under compute-sanitizer (out-of-bounds and
# misaligned accesses; races on the kernel's shared tiles), eagerly.
san=$(command -v compute-sanitizer 2>/dev/null || echo "${cuda_home:-/usr/local/cuda}/bin/compute-sanitizer")
if [ -x "$san" ]; then
    step "FLASH_ATTN memcheck, racecheck" 90 "for tool in memcheck racecheck; do RT_CUDA_GRAPHS=0 $san \
        --tool \$tool --error-exitcode 3 build/bin/rt-test-ops --device cuda0 --op FLASH_ATTN \
        > build/device/san-\$tool.txt 2>&1; rc=\$?; tail -n 3 build/device/san-\$tool.txt; \
        [ \$rc = 0 ] || exit 1; done"
else
    note "FLASH_ATTN memcheck, racecheck" SKIP "no compute-sanitizer in PATH or beside nvcc"
fi
step "mul_mat paths" 180 "build/device/cuda_bench --check-only"

#===--- stories260K ---===#

model=
for m in "${RT_MODEL:-}" models/stories260K.gguf build/models/stories260K.gguf shared/models/stories260K.gguf \
         ../shared/models/stories260K.gguf; do
    if [ -n "$m" ] && [ -f "$m" ]; then model=$m; break; fi
done
gen() { # gen NAME ENV DEVICE-OPTIONS: greedy text into build/device/NAME.txt
    step "stories260K $1" 60 "env $2 build/bin/rt-run -m $model --temp 0 -n 64 $3 \
        > build/device/$1.txt && tr '\n' ' ' < build/device/$1.txt"
}
same() { # same NAME: the text equals the CPU's
    if cmp -s build/device/cpu.txt "build/device/$1.txt" && [ -s build/device/cpu.txt ]; then
        note "text $1 = cpu" PASS "identical"
    else
        note "text $1 = cpu" FAIL "differs: $(tr '\n' ' ' <"build/device/$1.txt" | cut -c1-100)"
    fi
}
if [ -z "$model" ]; then
    note "stories260K" FAIL "no model: copy it to build/models/ (see the header) or set RT_MODEL"
elif ! build/bin/rt-run --help >/dev/null 2>&1; then
    note "stories260K" FAIL "tools/rt-run is missing or has no --help"
else
    gen cpu "" "--devices cpu0"
    gen cuda "" "--devices cuda0 --n-gpu-layers -1"
    same cuda
    gen cuda-nographs RT_CUDA_GRAPHS=0 "--devices cuda0 --n-gpu-layers -1"
    same cuda-nographs
    gen split "" "--devices cuda0,cpu0 --n-gpu-layers 2"
    same split
fi

#===--- NCCL (dist/comm_nccl.c) ---===#

mpirun_nccl="mpirun --oversubscribe --allow-run-as-root --bind-to none"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! grep -q '^have_nccl = 1' build/config.ninja 2>/dev/null || ! command -v mpirun >/dev/null 2>&1; then
    note "nccl" FAIL "not built: configure found no nccl.h with CUDA and MPI, or no mpirun"
else
    step "nccl build" 120 "ninja -j16 build/tests/dist-wire build/bin/rt-run && echo built"
    step "nccl dist-wire 1 rank" 60 "$mpirun_nccl -np 1 build/tests/dist-wire --nccl"
    # nccl2 NAME COMMAND: a 2-rank step; on one GPU NCCL's refusal of a
    # shared device is a note, not a failure.
    nccl2() {
        if step "$1" 90 "$2"; then return 0; fi
        if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ] && grep -q 'Duplicate GPU' "$log"; then
            failed=$((failed - 1))
            note "$1 (one GPU)" SKIP "NCCL refuses 2 ranks on one device: needs 2 GPUs"
        fi
    }
    nccl2 "nccl dist-wire 2 ranks" "$mpirun_nccl -np 2 build/tests/dist-wire --nccl"
    if [ -n "$model" ] && [ -s build/device/cpu.txt ]; then
        nccl2 "nccl tp2 stories260K" "$mpirun_nccl -np 2 build/bin/rt-run -m $model --temp 0 -n 64 \
            --tp 2 --dist nccl --devices cuda0 --n-gpu-layers -1 > build/device/nccl.txt \
            && cmp build/device/cpu.txt build/device/nccl.txt && echo 'text = cpu'"
    fi
fi

#===--- performance ---===#

step "cuBLAS and bandwidth" 120 "build/device/cuda_ref"
step "rt MUL_MAT perf" 180 "build/device/cuda_bench --perf-only"
# FLASH_ATTN's perf rows: "  cuda0  T ms  G GFLOPS" under each case's name.
step "rt FLASH_ATTN perf" 90 "build/bin/rt-test-ops perf --device cuda0 --op FLASH_ATTN \
    > build/device/fa-perf.txt; rc=\$?; cat build/device/fa-perf.txt; exit \$rc"
peer=${RT_PEER_TEST_BACKEND_OPS:-}
if [ -n "$peer" ] && [ -x "$peer" ]; then
    step "llama.cpp FLASH_ATTN_EXT perf" 90 "$peer perf -o FLASH_ATTN_EXT -b CUDA0 | grep -E 'FLASH_ATTN_EXT' \
        | grep -E 'hsk=128,hsv=128' | head -n 12; true"
else
    note "llama.cpp FLASH_ATTN_EXT perf" SKIP "no CUDA test-backend-ops (set RT_PEER_TEST_BACKEND_OPS to one)"
fi
# rt-bench ops times each run with a wait (launch overhead included) and
# measures the CPU's ceilings, not the GPU's: the ratios above come from
# cuda_bench and cuda_ref; these rows cross-check the times.
if build/bin/rt-bench ops --help >/dev/null 2>&1; then
    bops="build/bin/rt-bench ops --device cuda0 --no-openblas --op mul_mat"
    step "rt-bench ops f16 gemm" 90 "$bops --type f16 --m 8192 --k 8192 --n 8192 --time 0.5"
    step "rt-bench ops q4_0 mat-vec" 90 "$bops --type q4_0 --m 65536 --k 8192 --n 1 --time 0.5"
    step "rt-bench ops (all)" 150 "build/bin/rt-bench ops --device cuda0 --no-openblas --time 0.1"
else
    note "rt-bench ops" SKIP "rt-bench has no ops subcommand: tests/device/cuda_bench.c measures instead"
fi

# key NAME FIELD: FIELD=value of the log's line "... name=NAME ...".
key() { grep -E "name=$1( |$)" "$log" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }'; }

gemm=$(key gemm_f16 tflops)
blas=$(key cublas_gemm_f16 tflops)
bw=$(key read_bw gbps)

#===--- summary ---===#

{
    echo "# CUDA plugin device check"
    echo
    echo "$(nvidia-smi -L 2>/dev/null | head -n 1); $(date -u '+%Y-%m-%d %H:%M UTC'); $(($(date +%s) - t_start)) s in all"
    echo
    echo "| step | result | seconds | note |"
    echo "| --- | --- | --- | --- |"
    printf '%s' "$rows"
    echo
    echo "| measure | rt (CUDA plugin) | reference (same run) | ratio |"
    echo "| --- | --- | --- | --- |"
    echo "| F16 GEMM m=n=k=8192, TFLOP/s | ${gemm:-?} | cuBLAS GemmEx F16->F32: ${blas:-?} | $(ratio "${gemm:-0}" "${blas:-0}") |"
    for t in $qtypes; do
        g=$(key "mmv_$t" gbps)
        echo "| $t mat-vec 65536x8192, GB/s of weights | ${g:-?} | read bandwidth: ${bw:-?} | $(ratio "${g:-0}" "${bw:-0}") |"
    done
    echo
    echo "| FLASH_ATTN case | cuda0 | cpu0 (same run) |"
    echo "| --- | --- | --- |"
    # Each case's name line, then a row per device: "  DEV  T ms  G GFLOPS"
    # (rt-test-ops pads device names to 8 columns: match them with " +").
    awk '/^FLASH_ATTN \[/ { if (c != "") print "| " c " | " d " | " h " |"; c = substr($0, 13); sub(/\]$/, "", c); d = "?"; h = "?"; next }
         $1 ~ /^cuda/ && c != "" { d = ($3 == "ms") ? $2 " ms, " $4 " GFLOP/s" : $0 }
         $1 ~ /^cpu/ && c != "" { h = ($3 == "ms") ? $2 " ms, " $4 " GFLOP/s" : $0 }
         END { if (c != "") print "| " c " | " d " | " h " |" }' build/device/fa-perf.txt 2>/dev/null | tr -s ' '
    echo
    echo "$failed step(s) failed; every step's output is in log.txt."
} >"$summary"
cat "$summary"
[ "$failed" = 0 ]
