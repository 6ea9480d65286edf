/* SPDX-License-Identifier: MIT */
/* bench_peer.c: see bench_peer.h. Finds llama.cpp's programs in the
 * directory given, runs them through the shell (arguments quoted, their
 * log on stderr dropped), reads their whole output and picks the figures
 * out of it: llama-bench's JSON objects or markdown rows, and
 * test-backend-ops' MUL_MAT lines (whose figure sits between colour
 * escapes). The parsers take text, so that the tests feed them a fake
 * peer's output. */
#include "bench_peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEER_CMD_MAX 8192

bool bench_peer_find(const char *dir, const char *name, char *buf, size_t size) {
    static const char *const subdirs[] = {"/bin/", "/"};
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        const int n = snprintf(buf, size, "%s%s%s", dir, subdirs[i], name);
        if (n > 0 && (size_t)n < size && access(buf, X_OK) == 0) return true;
    }
    return false;
}

void bench_peer_device(const char *rt_name, char *buf, size_t size) {
    static const struct { const char *rt, *peer; } names[] = {
        {"cpu", "CPU"}, {"vulkan", "Vulkan"}, {"cuda", "CUDA"}, {"metal", "MTL"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const size_t n = strlen(names[i].rt);
        if (strncmp(rt_name, names[i].rt, n) != 0) continue;
        /* one CPU backend in llama.cpp, unnumbered */
        snprintf(buf, size, "%s%s", names[i].peer, i == 0 ? "" : rt_name + n);
        return;
    }
    snprintf(buf, size, "%s", rt_name);
}

//===--- running ---===//

/* s in single quotes for the shell, appended to cmd. */
static void append_quoted(char *cmd, size_t size, const char *s) {
    size_t n = strlen(cmd);
    if (n + 1 < size) cmd[n++] = '\'';
    for (; *s != '\0' && n + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(cmd + n, "'\\''", 4);
            n += 4;
        } else {
            cmd[n++] = *s;
        }
    }
    if (n + 1 < size) cmd[n++] = '\'';
    cmd[n] = '\0';
}

/* Everything cmd prints on stdout (NUL-terminated, the caller frees), or
 * NULL when it cannot be run or fails. */
static char *run_capture(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (p == NULL) return NULL;
    size_t len = 0, cap = 4096;
    char *text = malloc(cap);
    for (size_t got = 1; text != NULL && got > 0;) {
        if (cap - len < 1024) {
            char *more = realloc(text, cap *= 2);
            if (more == NULL) free(text);
            text = more;
            if (text == NULL) break;
        }
        got = fread(text + len, 1, cap - len - 1, p);
        len += got;
    }
    const int status = pclose(p);
    if (text != NULL) text[len] = '\0';
    if (status != 0) {
        free(text);
        return NULL;
    }
    return text;
}

//===--- llama-bench ---===//

/* The number after "key": inside [p, end); false when the key is absent. */
static bool json_number(const char *p, const char *end, const char *key, double *out) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *k = memmem(p, (size_t)(end - p), quoted, strlen(quoted));
    if (k == NULL) return false;
    const char *v = k + strlen(quoted);
    while (v < end && (*v == ' ' || *v == ':')) v++;
    char *after = NULL;
    *out = strtod(v, &after);
    return after != v && after <= end;
}

/* One result of llama-bench: a pp or a tg test at a depth with flash
 * attention 0 or 1 (fa -1: the output does not say, which matches any). */
static void take_test(double n_prompt, double n_gen, double depth, double fa, double ts,
                      const bench_peer_want_t *w, double *pp, double *tg) {
    if (depth != w->n_depth || (w->flash_attn >= 0 && fa >= 0 && fa != w->flash_attn)) return;
    if (n_gen == 0 && n_prompt == w->n_prompt) *pp = ts;
    if (n_prompt == 0 && n_gen == w->n_gen) *tg = ts;
}

static bool parse_json(const char *text, const bench_peer_want_t *w, double *pp, double *tg) {
    bool any = false;
    for (const char *o = strchr(text, '{'); o != NULL; o = strchr(o + 1, '{')) {
        const char *end = strchr(o, '}');
        if (end == NULL) break;
        double np, ng, ts, depth = 0, fa = -1; /* older llama-bench: no n_depth */
        if (json_number(o, end, "n_prompt", &np) && json_number(o, end, "n_gen", &ng) &&
            json_number(o, end, "avg_ts", &ts)) {
            json_number(o, end, "n_depth", &depth);
            json_number(o, end, "flash_attn", &fa);
            take_test(np, ng, depth, fa, ts, w, pp, tg);
            any = true;
        }
    }
    return any;
}

/* A markdown row "| ... | pp128 @ d512 | 1234.56 ± 7.89 |": the test's
 * name (with its depth when not 0) is a cell of its own, its tokens per
 * second the next cell. The table has a flash-attention column only when
 * asked for several, so a row is taken whatever its flash attention. */
static void parse_markdown_row(const char *line, const char *eol, const bench_peer_want_t *w, double *pp,
                               double *tg) {
    for (const char *c = line; c != NULL && c < eol; c = memchr(c + 1, '|', (size_t)(eol - c - 1))) {
        const char *next = memchr(c + 1, '|', (size_t)(eol - c - 1));
        if (next == NULL) return;
        char cell[48] = "";
        const char *b = c + 1;
        while (b < next && *b == ' ') b++;
        size_t n = (size_t)(next - b);
        while (n > 0 && b[n - 1] == ' ') n--;
        if (n >= sizeof cell) continue;
        memcpy(cell, b, n);
        cell[n] = '\0';
        int count = 0, used = 0, depth = 0, used_d = 0;
        const bool is_pp = sscanf(cell, "pp%d%n", &count, &used) == 1;
        const bool is_tg = !is_pp && sscanf(cell, "tg%d%n", &count, &used) == 1;
        if (!is_pp && !is_tg) continue;
        if (cell[used] != '\0' && (sscanf(cell + used, " @ d%d%n", &depth, &used_d) != 1 ||
                                   cell[used + used_d] != '\0'))
            continue;
        const double ts = strtod(next + 1, NULL);
        take_test(is_pp ? count : 0, is_tg ? count : 0, depth, -1, ts, w, pp, tg);
        return;
    }
}

void bench_peer_parse_llama_bench_at(const char *text, const bench_peer_want_t *w, double *pp, double *tg) {
    *pp = *tg = 0;
    if (parse_json(text, w, pp, tg)) return;
    for (const char *l = text; *l != '\0';) {
        const char *eol = strchr(l, '\n');
        if (eol == NULL) eol = l + strlen(l);
        if (*l == '|') parse_markdown_row(l, eol, w, pp, tg);
        l = *eol != '\0' ? eol + 1 : eol;
    }
}

void bench_peer_parse_llama_bench(const char *text, int n_prompt, int n_gen, double *pp,
                                  double *tg) {
    const bench_peer_want_t w = {n_prompt, n_gen, 0, -1};
    bench_peer_parse_llama_bench_at(text, &w, pp, tg);
}

char *bench_peer_llama_bench(const char *dir, const char *model, const char *args, char *why,
                             size_t why_size) {
    char exe[4096], cmd[PEER_CMD_MAX] = "";
    if (!bench_peer_find(dir, "llama-bench", exe, sizeof exe)) {
        snprintf(why, why_size, "no llama-bench in %s or %s/bin", dir, dir);
        return NULL;
    }
    append_quoted(cmd, sizeof cmd, exe);
    strncat(cmd, " -m ", sizeof cmd - strlen(cmd) - 1);
    append_quoted(cmd, sizeof cmd, model);
    const size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " %s -o json 2>/dev/null", args);
    char *out = run_capture(cmd);
    if (out == NULL) snprintf(why, why_size, "%s failed", exe);
    return out;
}

bool bench_peer_model(const char *dir, const char *model, int n_prompt, int n_gen, int threads,
                      double *pp, double *tg, char *why, size_t why_size) {
    char args[128];
    *pp = *tg = 0;
    snprintf(args, sizeof args, "-p %d -n %d -t %d", n_prompt, n_gen, threads);
    char *out = bench_peer_llama_bench(dir, model, args, why, why_size);
    if (out == NULL) return false;
    bench_peer_parse_llama_bench(out, n_prompt, n_gen, pp, tg);
    free(out);
    if (*pp > 0 || *tg > 0) return true;
    snprintf(why, why_size, "no pp%d or tg%d figure in llama-bench's output", n_prompt, n_gen);
    return false;
}

//===--- test-backend-ops ---===//

/* The text after "name=" in params (up to the next ',' or ')'), or "". */
static void param(const char *params, const char *end, const char *name, char *buf, size_t size) {
    char key[32];
    snprintf(key, sizeof key, "%s=", name);
    buf[0] = '\0';
    for (const char *p = params; p < end; p++) {
        if ((p != params && p[-1] != ',' && p[-1] != '(') || strncmp(p, key, strlen(key)) != 0)
            continue;
        const char *v = p + strlen(key);
        size_t n = 0;
        int depth = 0; /* bs=[1,1]: the commas inside brackets belong to the value */
        while (v + n < end && (depth > 0 || (v[n] != ',' && v[n] != ')'))) {
            depth += v[n] == '[' ? 1 : v[n] == ']' ? -1 : 0;
            n++;
        }
        if (n < size) {
            memcpy(buf, v, n);
            buf[n] = '\0';
        }
        return;
    }
}

/* GFLOPS from "... 117.44 MFLOP/run - \033[1;34m760.53 GFLOPS\033[0m". */
static double line_gflops(const char *line, const char *eol) {
    const char *f = NULL;
    for (const char *p = line; (p = memmem(p, (size_t)(eol - p), "FLOPS", 5)) != NULL; p += 5) f = p;
    if (f == NULL || f - line < 3) return 0;
    const double scale = f[-1] == 'T' ? 1e3 : f[-1] == 'G' ? 1 : f[-1] == 'M' ? 1e-3 :
                         f[-1] == 'k' ? 1e-6 : 0;
    const char *num = f - 2;
    while (num > line && (num[-1] == '.' || (num[-1] >= '0' && num[-1] <= '9'))) num--;
    return scale * strtod(num, NULL);
}

/* Only the plain rows: F32 activations, no broadcast, no permutation. */
static bool plain_row(const char *params, const char *end) {
    char v[64];
    param(params, end, "type_b", v, sizeof v);
    if (strcmp(v, "f32") != 0) return false;
    param(params, end, "bs", v, sizeof v);
    if (strcmp(v, "[1,1]") != 0) return false;
    param(params, end, "nr", v, sizeof v);
    if (strcmp(v, "[1,1]") != 0) return false;
    param(params, end, "per", v, sizeof v);
    if (v[0] != '\0' && strcmp(v, "[0,1,2,3]") != 0) return false;
    param(params, end, "k_v", v, sizeof v);
    return v[0] == '\0' || strcmp(v, "0") == 0;
}

static bool parse_op_line(const char *line, const char *eol, bench_peer_op_t *row) {
    const char *params = memmem(line, (size_t)(eol - line), "MUL_MAT(", 8);
    if (params == NULL) return false;
    params += 8;
    const char *end = memmem(params, (size_t)(eol - params), "):", 2);
    if (end == NULL || !plain_row(params, end)) return false;
    char m[32], n[32], k[32];
    param(params, end, "type_a", row->type, sizeof row->type);
    param(params, end, "m", m, sizeof m);
    param(params, end, "n", n, sizeof n);
    param(params, end, "k", k, sizeof k);
    row->m = strtoll(m, NULL, 10), row->n = strtoll(n, NULL, 10), row->k = strtoll(k, NULL, 10);
    row->gflops = line_gflops(end, eol);
    return row->type[0] != '\0' && row->m > 0 && row->n > 0 && row->k > 0 && row->gflops > 0;
}

int bench_peer_parse_backend_ops(const char *text, bench_peer_op_t *rows, int max) {
    int n = 0;
    for (const char *l = text; *l != '\0' && n < max;) {
        const char *eol = strchr(l, '\n');
        if (eol == NULL) eol = l + strlen(l);
        if (parse_op_line(l, eol, &rows[n])) n++;
        l = *eol != '\0' ? eol + 1 : eol;
    }
    return n;
}

int bench_peer_ops(const char *dir, const char *backend, const char *params_regex,
                   bench_peer_op_t *rows, int max, char *why, size_t why_size) {
    char exe[4096], cmd[PEER_CMD_MAX] = "";
    if (!bench_peer_find(dir, "test-backend-ops", exe, sizeof exe)) {
        snprintf(why, why_size, "no test-backend-ops in %s or %s/bin", dir, dir);
        return -1;
    }
    append_quoted(cmd, sizeof cmd, exe);
    strncat(cmd, " perf -o MUL_MAT -b ", sizeof cmd - strlen(cmd) - 1);
    append_quoted(cmd, sizeof cmd, backend);
    if (params_regex != NULL) {
        strncat(cmd, " -p ", sizeof cmd - strlen(cmd) - 1);
        append_quoted(cmd, sizeof cmd, params_regex);
    }
    strncat(cmd, " 2>/dev/null", sizeof cmd - strlen(cmd) - 1);
    char *out = run_capture(cmd);
    if (out == NULL) {
        snprintf(why, why_size, "%s failed", exe);
        return -1;
    }
    const int n = bench_peer_parse_backend_ops(out, rows, max);
    free(out);
    if (n == 0) snprintf(why, why_size, "no MUL_MAT row in %s's output", exe);
    return n > 0 ? n : -1;
}

double bench_peer_op_gflops(const bench_peer_op_t *rows, int n_rows, const char *type, int64_t m,
                            int64_t n, int64_t k) {
    for (int i = 0; i < n_rows; i++)
        if (strcmp(rows[i].type, type) == 0 && rows[i].m == m && rows[i].n == n && rows[i].k == k)
            return rows[i].gflops;
    return 0;
}
