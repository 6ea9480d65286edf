#!/bin/sh
# tests/test-cpu-isa.sh: the op conformance suite (test-ops, the GPT-2
# attention block, test-attention, and the repacked weights' products,
# test-cpu-weights, and the ABI 1.2 block types, test-cpu-blocks) once per kernel
# path of the CPU plugin, forced with RT_CPU_ISA, so that CI checks every
# path its machine can run, not only the one the plugin would pick.
#
# The paths come from `test-cpu-kernels --list-paths` (what this CPU, its OS
# and the build allow). RT_CPU_ISAS="scalar avx2 ..." asks for given paths
# instead: one this machine cannot run fails the test rather than being
# skipped. Prints the paths it ran. Build directory: RT_TEST_BUILD_DIR
# (set by tests/run.sh), else build.
b=${RT_TEST_BUILD_DIR:-build}
avail=$("$b/tests/test-cpu-kernels" --list-paths) || { echo "test-cpu-isa: cannot list the paths"; exit 1; }
want=${RT_CPU_ISAS:-$avail}
ran=
failed=
for isa in $want; do
    case " $avail " in
    *" $isa "*) ;;
    *) echo "test-cpu-isa: path $isa was asked for but this machine runs only: $avail"
       failed="$failed $isa"
       continue ;;
    esac
    echo "== RT_CPU_ISA=$isa test-ops test-attention test-cpu-weights test-cpu-blocks"
    if RT_CPU_ISA=$isa "$b/tests/test-ops" && RT_CPU_ISA=$isa "$b/tests/test-attention" &&
        RT_CPU_ISA=$isa "$b/tests/test-cpu-weights" && RT_CPU_ISA=$isa "$b/tests/test-cpu-blocks"; then
        ran="$ran $isa"
    else
        failed="$failed $isa"
    fi
done
echo "test-cpu-isa: test-ops passed under:${ran:- none}${failed:+; failed or unavailable:$failed}"
[ -z "$failed" ] && [ -n "$ran" ]
