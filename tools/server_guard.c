/* SPDX-License-Identifier: MIT */
/* server_guard.c: see server_guard.h. */
#include "server_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//===--- framing ---===//

typedef struct framing {
    int n_length;             /* Content-Length headers */
    const char *length;       /* the first's value */
    bool lengths_differ;
    const char *coding;       /* Transfer-Encoding's value, or NULL */
    int n_coding;
} framing_t;

static enum MHD_Result look(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    framing_t *f = cls;
    if (strcasecmp(key, "Content-Length") == 0) {
        if (f->n_length++ && strcmp(f->length, value ? value : "") != 0) f->lengths_differ = true;
        if (f->n_length == 1) f->length = value ? value : "";
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        f->coding = value ? value : "";
        f->n_coding++;
    }
    return MHD_YES;
}

const char *srv_guard_framing(struct MHD_Connection *c, unsigned *status) {
    framing_t f = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, look, &f);
    *status = 400;
    if (f.lengths_differ) return "the request has Content-Length headers that disagree";
    if (f.n_coding && f.n_length) return "the request has both Transfer-Encoding and Content-Length";
    if (f.n_coding > 1 || (f.n_coding && strcasecmp(f.coding, "chunked") != 0)) {
        *status = 501;
        return "the only transfer coding rt-server reads is chunked";
    }
    return NULL;
}

//===--- the API key ---===//

static char *first_line(const char *file, const char **err) {
    FILE *f = fopen(file, "r");
    if (f == NULL) return *err = "--api-key-file cannot be read", NULL;
    char buf[1024];
    char *key = fgets(buf, sizeof buf, f) ? strdup(buf) : NULL;
    fclose(f);
    if (key) key[strcspn(key, "\r\n")] = 0;
    if (key == NULL || key[0] == 0) {
        free(key);
        return *err = "--api-key-file holds no key on its first line", NULL;
    }
    return key;
}

char *srv_guard_load_key(const char *file, const char *arg, const char **err) {
    *err = NULL;
    if (file) return first_line(file, err);
    const char *env = getenv("RT_API_KEY");
    const char *key = env && env[0] ? env : arg;
    if (key == NULL) return NULL;
    if (key[0] == 0) return *err = "the API key is empty", NULL;
    char *copy = strdup(key);
    if (copy == NULL) *err = "no memory";
    return copy;
}

void srv_guard_wipe_arg(char *arg) {
    if (arg) memset(arg, 'x', strlen(arg));
}

/* Every byte of key is looked at whatever guess holds; only the guess's
 * own length shows in the time. */
static bool same_secret(const char *guess, const char *key) {
    const size_t ng = strlen(guess), nk = strlen(key);
    volatile unsigned char diff = ng != nk;
    for (size_t i = 0; i < nk; i++) diff |= (unsigned char)((i < ng ? guess[i] : 0) ^ key[i]);
    return diff == 0;
}

bool srv_guard_authorised(struct MHD_Connection *c, const char *key) {
    if (key == NULL) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, key);
}
