#!/bin/sh
# tests/test-portable.sh: the code that must build on macOS as well as on
# Linux (runtime/, model/, tools/, the CPU and Metal plugins, the test
# plugins the demo loads) names no Linux-only interface outside the files
# that exist for it (*_linux.c), so that a Mac build fails here first rather
# than on a Mac. The Vulkan and CUDA plugins are not held to it.
#
#   portable-1  no Linux-only function, type, macro or header outside *_linux.c
#               (the two guarded uses below excepted)
#
# A failure names the file, the line and the interface. Runs from the
# repository root (tests/run.sh does).
set -u
dirs="runtime model tools plugins/cpu plugins/metal tests/plugins/mockgpu"
# glibc and Linux only; each is a word (or header) that would not compile
# on macOS.
words='sched_getaffinity|sched_setaffinity|pthread_setaffinity_np|pthread_getaffinity_np|cpu_set_t|CPU_SET|CPU_ZERO|CPU_COUNT|CPU_ISSET|CPU_SETSIZE|pthread_barrier_[a-z]*|secure_getenv|getauxval|_SC_AVPHYS_PAGES|MAP_POPULATE|MAP_HUGETLB|MADV_HUGEPAGE|memfd_create|gettid|prctl|epoll_[a-z]*|sys/auxv\.h|sys/sysinfo\.h|sys/prctl\.h|linux/[a-z_]*\.h|/proc/self/exe'
# Uses guarded by the C library or the OS they need:
#   runtime/dl_posix.c   secure_getenv under __GLIBC__ (issetugid-like fallback)
allowed='^runtime/dl_posix\.c:[0-9]*:.*secure_getenv'
hits=$(find $dirs -name '*.c' -o -name '*.h' | grep -v '_linux\.c$' | sort |
       xargs grep -n -E "(^|[^A-Za-z0-9_])($words)([^A-Za-z0-9_]|$)" 2>/dev/null |
       grep -v -E "$allowed" | grep -v -E '^[^:]*:[0-9]*: *(/?\*|//)')
if [ -n "$hits" ]; then
    echo "portable-1: Linux-only interfaces outside *_linux.c:"
    echo "$hits"
    exit 1
fi
echo "portable-1: $(echo $dirs | wc -w) directories name no Linux-only interface outside *_linux.c"
exit 0
