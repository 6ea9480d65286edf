/* SPDX-License-Identifier: MIT */
/* rt-bench: measurements of the runtime, one subcommand per subject (each
 * in its own bench_<name>.c, listed in the table below), and the timing
 * helpers they share.
 *
 *   rt-bench SUBCOMMAND [options]     (rt-bench SUBCOMMAND --help) */
#include "bench.h"

#include "tool_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench_cmd {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
} bench_cmd_t;

static const bench_cmd_t commands[] = {
    {"alloc", "graph allocator: peak, lower bound, reserve and alloc_graph time", bench_alloc_main},
    {"ops", "op speed at transformer shapes, against the machine's ceilings and OpenBLAS", bench_ops_main},
    {"model", "a model's prompt and generation tokens per second", bench_model_main},
    {"threads", "the CPU pool's 1, 2, ... threads, idle and with a busy-loop competitor",
     bench_threads_main},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f) {
    fprintf(f, "usage: rt-bench SUBCOMMAND [options]   (rt-bench SUBCOMMAND --help: its options\n"
               "                                        and their defaults)\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  -h, --help   this text\n      --version  release, ABI and commit\n");
}

int main(int argc, char **argv) {
    enum { OPT_VERSION = 0x2000 };
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, OPT_VERSION}, {NULL, 0, NULL, 0}};
    /* "+": the options before the subcommand only; it parses its own */
    for (int c; (c = getopt_long(argc, argv, "+h", opts, NULL)) != -1;) {
        if (c == 'h') return usage(stdout), 0;
        if (c == OPT_VERSION) return rt_cli_print_version(stdout, "rt-bench"), 0;
        return rt_cli_bad_usage("rt-bench");
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[optind], commands[i].name) == 0)
            return commands[i].main(argc - optind, argv + optind);
    fprintf(stderr, "rt-bench: unknown subcommand '%s'\n", argv[optind]);
    return rt_cli_bad_usage("rt-bench");
}
