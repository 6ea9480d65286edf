/* SPDX-License-Identifier: MIT */
/* bench.h: the subcommands of rt-bench, one file each (bench_<name>.c),
 * and the small helpers they share (bench_util in rt-bench.c). A
 * subcommand gets argv from its own name on and returns the exit status. */
#ifndef RT_TOOLS_BENCH_H
#define RT_TOOLS_BENCH_H

#include <stddef.h>

/* rt-bench alloc: graph allocator figures for a llama-shaped graph. */
int bench_alloc_main(int argc, char **argv);
/* rt-bench ops: op speed against the machine's measured ceilings (bench_ops.c). */
int bench_ops_main(int argc, char **argv);
/* rt-bench model: prompt and generation tokens per second (bench_model.c). */
int bench_model_main(int argc, char **argv);

/* rt-bench split: the planned split of two mock GPUs against every split (bench_split.c). */
int bench_split_main(int argc, char **argv);

/* rt-bench threads: the CPU pool with a busy-loop competitor (bench_threads.c). */
int bench_threads_main(int argc, char **argv);

/* Monotonic time in seconds. */
double bench_now(void);
/* Median of n values (sorts them in place); 0 when n is 0. */
double bench_median(double *v, size_t n);

#endif /* RT_TOOLS_BENCH_H */
