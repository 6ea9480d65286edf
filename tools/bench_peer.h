/* SPDX-License-Identifier: MIT */
/* bench_peer.h: `rt-bench model|ops --peer DIR`, llama.cpp's own benchmark
 * of the same thing run in the same rt-bench run, so that every figure can
 * be printed beside llama.cpp's with the ratio: llama-bench for a model
 * (its JSON output, or its markdown table), test-backend-ops perf for
 * MUL_MAT (its console lines). llama.cpp is never a dependency: DIR is a
 * llama.cpp build directory (the program in DIR/bin or DIR itself), and
 * without the program the comparison is skipped with a message.
 *
 *     double pp, tg;
 *     char why[256];
 *     if (bench_peer_model(dir, model, 128, 64, 2, &pp, &tg, why, sizeof why))
 *         printf("%.2fx\n", rt_tg / tg);
 */
#ifndef RT_TOOLS_BENCH_PEER_H
#define RT_TOOLS_BENCH_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DIR/bin/name or DIR/name, the first that is executable, into buf. */
bool bench_peer_find(const char *dir, const char *name, char *buf, size_t size);

/* llama.cpp's name of the device rt calls rt_name, into buf: its backend
 * for test-backend-ops' -b and its device for llama-bench's -dev ("cpu0"
 * -> "CPU", "vulkan1" -> "Vulkan1", "cuda0" -> "CUDA0", "metal0" ->
 * "MTL0"); a name of another plugin is passed through. */
void bench_peer_device(const char *rt_name, char *buf, size_t size);

/* llama-bench's tokens per second for its pp<n_prompt> and tg<n_gen> tests,
 * from its JSON (-o json) or markdown (-o md) output; 0 where absent. */
void bench_peer_parse_llama_bench(const char *text, int n_prompt, int n_gen, double *pp,
                                  double *tg);
/* What one figure of llama-bench is: its pp<n_prompt> or tg<n_gen> test
 * at n_depth tokens already in the cache (its -d), with flash attention
 * 0 or 1 (its -fa; -1: either). */
typedef struct bench_peer_want {
    int n_prompt, n_gen, n_depth, flash_attn;
} bench_peer_want_t;
/* The pp and tg figures that w names (0 where absent). JSON carries
 * n_depth and flash_attn; a markdown row its depth (" @ d512"), and is
 * taken whatever its flash attention. */
void bench_peer_parse_llama_bench_at(const char *text, const bench_peer_want_t *w, double *pp, double *tg);
/* DIR's llama-bench run on model with args (its options, trusted text:
 * "-p 512 -n 128 -d 0,1024 -fa 0,1 -t 2") and -o json: its output, which
 * the caller frees, or NULL with the reason in why. */
char *bench_peer_llama_bench(const char *dir, const char *model, const char *args, char *why,
                             size_t why_size);
/* Runs DIR's llama-bench on model with threads CPU threads; false, with
 * the reason in why, when there is no llama-bench or it gave no figure. */
bool bench_peer_model(const char *dir, const char *model, int n_prompt, int n_gen, int threads,
                      double *pp, double *tg, char *why, size_t why_size);

/* One MUL_MAT row of test-backend-ops perf (weights type_a, F32
 * activations, no broadcast). */
typedef struct bench_peer_op {
    char type[16];          /* "f16", "q4_0", ... (ggml's names, which are rt's) */
    int64_t m, n, k;
    double gflops;
} bench_peer_op_t;

/* The MUL_MAT rows of test-backend-ops' console output; how many. */
int bench_peer_parse_backend_ops(const char *text, bench_peer_op_t *rows, int max);
/* Runs DIR's test-backend-ops perf -o MUL_MAT on its backend (-b; "CPU",
 * "Vulkan0": bench_peer_device), only its cases whose parameters
 * params_regex matches (its -p; NULL: all); the rows found, or -1 with the
 * reason in why. */
int bench_peer_ops(const char *dir, const char *backend, const char *params_regex,
                   bench_peer_op_t *rows, int max, char *why, size_t why_size);
/* The GFLOPS of the row with this type and shape; 0 when there is none. */
double bench_peer_op_gflops(const bench_peer_op_t *rows, int n_rows, const char *type, int64_t m,
                            int64_t n, int64_t k);

#endif /* RT_TOOLS_BENCH_PEER_H */
