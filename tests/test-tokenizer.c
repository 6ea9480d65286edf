/* SPDX-License-Identifier: MIT */
/* test-tokenizer.c: the tokenizers of the model library (model/rt_model.h)
 * against llama.cpp's fixtures in models/: for the SentencePiece
 * llama vocabulary and GPT-2's byte-level BPE, every case of the .inp file
 * must give exactly the ids of the .out file (tokenized as llama.cpp's
 * test-tokenizer-0 does: no BOS, special text not parsed), and decoding
 * must give the text back; the same for every other fixture of
 * shared/models/vocab, each BPE one through the pre-tokenizer its
 * tokenizer.ggml.pre names (skipped with a reason where that folder is
 * absent), and BERT's WordPiece on its fixture (ids only). Then the stories260K vocabulary (BOS, special
 * tokens, byte pieces), output arrays that are too small, and vocabularies
 * that cannot be read. Tests run from the repository root;
 * RT_TEST_MODELS_DIR overrides models/ (the bundled ones) and
 * ../shared/models (the other fixtures). */
#include "testutil.h"

#include "../model/rt_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//===--- helpers ---===//

/* Where a fixture is: the bundled models/ (tu_model_path), except the
 * other pre-tokenizers' fixtures ("vocab/..."), which are not bundled and
 * are read from ../shared/models unless RT_TEST_MODELS_DIR names a folder. */
static char *fixture_path(const char *file, char *buf, size_t size) {
    const char *d = getenv("RT_TEST_MODELS_DIR");
    if (strncmp(file, "vocab/", 6) != 0 || (d != NULL && *d)) return tu_model_path(file, buf, size);
    snprintf(buf, size, "../shared/models/%s", file);
    return buf;
}

/* The whole file, NUL-terminated; *out_len its bytes. */
static char *read_file(const char *path, size_t *out_len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) fail_msg("%s: cannot open (set RT_TEST_MODELS_DIR)", path);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    s[n] = 0;
    *out_len = (size_t)n;
    return s;
}

static rtm_vocab_t *open_vocab(const char *file) {
    char path[1024];
    rt_gguf_t *g = NULL;
    rtm_vocab_t *v = NULL;
    if (rt_gguf_open(fixture_path(file, path, sizeof path), NULL, &g) != RT_OK)
        fail_msg("%s: %s (set RT_TEST_MODELS_DIR)", path, rt_last_error());
    const rt_status_t st = rtm_vocab_create(g, &v);
    rt_gguf_destroy(g);
    if (st != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    return v;
}

#define SEP "\n__ggml_vocab_test__\n"
#define MAX_CASES 64
#define MAX_IDS 1024

/* One fixture case: the text and the ids expected. */
typedef struct fixture_case {
    const char *text;
    size_t len;
    rtm_token_t ids[MAX_IDS];
    int32_t n_ids;
} fixture_case_t;

typedef struct fixture {
    char *inp, *out;
    fixture_case_t cases[MAX_CASES];
    int n;
} fixture_t;

/* llama.cpp's format: .inp is each text followed by SEP; line i of .out is
 * the ids of case i, space-separated. */
static void fixture_load(const char *vocab_file, fixture_t *f) {
    char path[1024], name[512];
    size_t len;
    snprintf(name, sizeof name, "%s.inp", vocab_file);
    f->inp = read_file(fixture_path(name, path, sizeof path), &len);
    snprintf(name, sizeof name, "%s.out", vocab_file);
    f->out = read_file(fixture_path(name, path, sizeof path), &len);
    f->n = 0;
    for (char *p = f->inp, *sep; (sep = strstr(p, SEP)) != NULL; p = sep + strlen(SEP)) {
        assert_true(f->n < MAX_CASES);
        f->cases[f->n].text = p;
        f->cases[f->n].len = (size_t)(sep - p);
        f->n++;
    }
    char *line = f->out;
    for (int i = 0; i < f->n; i++) {
        char *eol = strchr(line, '\n');
        if (eol == NULL) fail_msg("%s.out has fewer lines than %d cases", vocab_file, f->n);
        *eol = 0;
        fixture_case_t *c = &f->cases[i];
        c->n_ids = 0;
        for (char *q = line, *end; *q; q = end) {
            const long id = strtol(q, &end, 10);
            if (end == q) break;
            assert_true(c->n_ids < MAX_IDS);
            c->ids[c->n_ids++] = (rtm_token_t)id;
        }
        line = eol + 1;
    }
}

static void fixture_free(fixture_t *f) {
    free(f->inp);
    free(f->out);
}

static void print_ids(const char *what, const rtm_token_t *ids, int32_t n) {
    fprintf(stderr, "    %s:", what);
    for (int32_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
}

/* Tokenizes case c; true when the ids match. Prints the difference. */
static bool check_case(const rtm_vocab_t *v, const fixture_case_t *c, int index) {
    rtm_token_t got[MAX_IDS];
    int32_t n = 0;
    const rt_status_t st = rtm_vocab_tokenize(v, c->text, c->len, false, false, got, MAX_IDS, &n);
    if (st == RT_OK && n == c->n_ids && memcmp(got, c->ids, (size_t)n * sizeof got[0]) == 0)
        return true;
    fprintf(stderr, "  case %d \"%.*s\": %s\n", index, (int)c->len, c->text, rtm_last_error());
    print_ids("want", c->ids, c->n_ids);
    print_ids("got ", got, n);
    return false;
}

/* Decoding the expected ids gives the text back. */
static bool check_round_trip(const rtm_vocab_t *v, const fixture_case_t *c, int index) {
    char buf[8192];
    size_t len = 0;
    const rt_status_t st = rtm_vocab_detokenize(v, c->ids, c->n_ids, false, buf, sizeof buf, &len);
    if (st == RT_OK && len == c->len && memcmp(buf, c->text, len) == 0) return true;
    fprintf(stderr, "  case %d: decoded \"%s\", want \"%.*s\"\n", index, buf, (int)c->len, c->text);
    return false;
}

/* Tokenizes and decodes every case of vocab_file's fixture, listing the
 * failures; the counts come back. */
static void fixture_score(const char *vocab_file, bool round_trip, int *out_n, int *out_bad_ids,
                          int *out_bad_text) {
    rtm_vocab_t *v = open_vocab(vocab_file);
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    fixture_load(vocab_file, f);
    *out_bad_ids = *out_bad_text = 0;
    for (int i = 0; i < f->n; i++) {
        *out_bad_ids += !check_case(v, &f->cases[i], i);
        if (round_trip) *out_bad_text += !check_round_trip(v, &f->cases[i], i);
    }
    *out_n = f->n;
    fixture_free(f);
    free(f);
    rtm_vocab_destroy(v);
}

/* Every case must match; the failures are listed before the test fails. */
static void run_fixture(const char *vocab_file, const char *id) {
    int n, bad_ids, bad_text;
    fixture_score(vocab_file, true, &n, &bad_ids, &bad_text);
    if (n != 46) fail_msg("%s.1: %s has %d cases, expected 46", id, vocab_file, n);
    if (bad_ids) fail_msg("%s.2: %d of %d cases tokenize differently", id, bad_ids, n);
    if (bad_text) fail_msg("%s.3: %d of %d cases do not decode to their text", id, bad_text, n);
}

//===--- tokenizer-1: llama.cpp's fixtures ---===//

static void test_fixture_spm(void **state) {
    (void)state;
    run_fixture("ggml-vocab-llama-spm.gguf", "tokenizer-1");
}

static void test_fixture_gpt2(void **state) {
    (void)state;
    run_fixture("ggml-vocab-gpt-2.gguf", "tokenizer-2");
}

//===--- tokenizer-7: BERT's WordPiece ---===//

/* Ids only: WordPiece lowercases and drops accents, so the text does not
 * come back. */
static void test_fixture_bert(void **state) {
    (void)state;
    int n, bad_ids, bad_text;
    fixture_score("ggml-vocab-bert-bge.gguf", false, &n, &bad_ids, &bad_text);
    if (n != 46) fail_msg("tokenizer-7.1: %d cases, expected 46", n);
    if (bad_ids) fail_msg("tokenizer-7.2: %d of %d cases tokenize differently", bad_ids, n);
}

//===--- tokenizer-6: every pre-tokenizer of models/vocab ---===//

/* llama.cpp's other fixtures, one per tokenizer.ggml.pre (phi-3's is
 * SentencePiece). All are run and listed before the test fails. */
static const char *const vocab_fixtures[] = {
    "command-r", "deepseek-coder", "deepseek-llm", "falcon", "llama-bpe", "mpt",
    "phi-3", "qwen2", "qwen35", "refact", "starcoder",
};

static void test_fixture_pretokenizers(void **state) {
    (void)state;
    char file[128], path[1024];
    if (access(fixture_path("vocab/SHA256SUMS", path, sizeof path), F_OK) != 0) {
        print_message("tokenizer-6: no %s (the shared vocab fixtures): skipped\n", path);
        skip();
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof vocab_fixtures / sizeof vocab_fixtures[0]; i++) {
        int n, bad_ids, bad_text;
        snprintf(file, sizeof file, "vocab/ggml-vocab-%s.gguf", vocab_fixtures[i]);
        fixture_score(file, true, &n, &bad_ids, &bad_text);
        print_message("tokenizer-6 %s: %d/%d tokenized, %d/%d decoded\n", vocab_fixtures[i],
                      n - bad_ids, n, n - bad_text, n);
        failed += n < 46 || bad_ids != 0 || bad_text != 0; /* qwen35 has 50 */
    }
    if (failed) fail_msg("tokenizer-6: %d fixtures are not all right", failed);
}

//===--- tokenizer-3: the stories260K vocabulary ---===//

static void test_stories_vocab(void **state) {
    (void)state;
    rtm_vocab_t *v = open_vocab("stories260K.gguf");
    rtm_token_t t[64];
    int32_t n = 0;
    char buf[256];
    size_t len;
    /* tokenizer-3.1: SPM, 512 tokens, BOS 1 / EOS 2, BOS added by default. */
    assert_int_equal(rtm_vocab_type(v), RTM_VOCAB_SPM);
    assert_int_equal(rtm_vocab_n_tokens(v), 512);
    assert_int_equal(rtm_vocab_bos(v), 1);
    assert_int_equal(rtm_vocab_eos(v), 2);
    assert_true(rtm_vocab_add_bos(v));
    assert_true(rtm_vocab_is_eog(v, 2));
    /* tokenizer-3.2: "Once upon a time" starts with BOS and decodes back. */
    const char *s = "Once upon a time";
    assert_int_equal(rtm_vocab_tokenize(v, s, strlen(s), true, false, t, 64, &n), RT_OK);
    assert_true(n > 2);
    assert_int_equal(t[0], 1);
    assert_int_equal(rtm_vocab_detokenize(v, t, n, false, buf, sizeof buf, &len), RT_OK);
    assert_string_equal(buf, s);
    /* tokenizer-3.3: with special, BOS shows as its text. */
    assert_int_equal(rtm_vocab_detokenize(v, t, n, true, buf, sizeof buf, &len), RT_OK);
    assert_string_equal(buf, "<s>Once upon a time");
    /* tokenizer-3.4: "</s>" is EOS only when special text is parsed. */
    assert_int_equal(rtm_vocab_tokenize(v, "a</s>", 5, false, true, t, 64, &n), RT_OK);
    assert_true(n >= 2);
    assert_int_equal(t[n - 1], 2);
    assert_int_equal(rtm_vocab_tokenize(v, "a</s>", 5, false, false, t, 64, &n), RT_OK);
    for (int32_t i = 0; i < n; i++) assert_int_not_equal(t[i], 2);
    /* tokenizer-3.5: a character the vocabulary lacks falls back to bytes. */
    assert_int_equal(rtm_vocab_tokenize(v, "\xc3\xbc", 2, false, false, t, 64, &n), RT_OK);
    assert_int_equal(n, 3); /* "\xe2\x96\x81" then <0xC3> <0xBC>: no "\xc3\xbc" (u umlaut) */
    assert_int_equal(t[1], 3 + 0xC3);
    assert_int_equal(t[2], 3 + 0xBC);
    assert_int_equal(rtm_vocab_token_to_piece(v, t[1], false, buf, sizeof buf, &len), RT_OK);
    assert_int_equal(len, 1);
    assert_int_equal((unsigned char)buf[0], 0xC3);
    rtm_vocab_destroy(v);
}

//===--- tokenizer-4: outputs that do not fit ---===//

static void test_does_not_fit(void **state) {
    (void)state;
    rtm_vocab_t *v = open_vocab("stories260K.gguf");
    rtm_token_t t[64];
    int32_t n = 0, n_all = 0;
    const char *s = "Once upon a time there was a little girl";
    assert_int_equal(rtm_vocab_tokenize(v, s, strlen(s), true, false, t, 64, &n_all), RT_OK);
    /* tokenizer-4.1: too small an array says how many are needed. */
    assert_int_equal(rtm_vocab_tokenize(v, s, strlen(s), true, false, t, 2, &n), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(n, n_all);
    assert_int_equal(rtm_vocab_tokenize(v, s, strlen(s), true, false, NULL, 0, &n), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(n, n_all);
    /* tokenizer-4.2: the same for text. */
    char small[4];
    size_t len = 0;
    assert_int_equal(rtm_vocab_detokenize(v, t, n_all, false, small, sizeof small, &len),
                     RT_ERR_DOES_NOT_FIT);
    assert_int_equal(len, strlen(s));
    assert_int_equal(small[3], 0);
    /* tokenizer-4.3: empty text gives no tokens, or BOS alone. */
    assert_int_equal(rtm_vocab_tokenize(v, "", 0, false, false, t, 64, &n), RT_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rtm_vocab_tokenize(v, "", 0, true, false, t, 64, &n), RT_OK);
    assert_int_equal(n, 1);
    /* tokenizer-4.4: a token out of range is refused. */
    assert_int_equal(rtm_vocab_token_to_piece(v, 512, false, small, sizeof small, &len),
                     RT_ERR_INVALID_ARGUMENT);
    rtm_vocab_destroy(v);
}

//===--- tokenizer-5: vocabularies that cannot be read ---===//

/* A vocab from a GGUF written here with the given tokenizer keys; with
 * pre, also one merge and tokenizer.ggml.pre. */
static rt_status_t vocab_from_pre(const char *model, const char *const *tokens, uint64_t n_tokens,
                                  const char *pre) {
    rt_gguf_writer_t *w = NULL;
    rt_gguf_t *g = NULL;
    rtm_vocab_t *v = NULL;
    uint8_t mem[4096];
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    if (model) assert_int_equal(rt_gguf_writer_set_str(w, "tokenizer.ggml.model", model), RT_OK);
    if (tokens)
        assert_int_equal(rt_gguf_writer_set_array(w, "tokenizer.ggml.tokens", RT_GGUF_TYPE_STRING,
                                                  tokens, n_tokens), RT_OK);
    const char *merges[] = {"a b"};
    if (pre) {
        assert_int_equal(rt_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre), RT_OK);
        assert_int_equal(rt_gguf_writer_set_array(w, "tokenizer.ggml.merges", RT_GGUF_TYPE_STRING,
                                                  merges, 1), RT_OK);
    }
    const size_t size = (size_t)rt_gguf_writer_size(w);
    assert_true(size <= sizeof mem);
    assert_int_equal(rt_gguf_writer_write_mem(w, mem, sizeof mem), RT_OK);
    assert_int_equal(rt_gguf_parse(mem, size, "test", NULL, &g), RT_OK);
    const rt_status_t st = rtm_vocab_create(g, &v);
    assert_true(st != RT_OK || v != NULL);
    rtm_vocab_destroy(v);
    rt_gguf_destroy(g);
    rt_gguf_writer_destroy(w);
    return st;
}

static rt_status_t vocab_from(const char *model, const char *const *tokens, uint64_t n_tokens) {
    return vocab_from_pre(model, tokens, n_tokens, NULL);
}

static void test_bad_vocabs(void **state) {
    (void)state;
    const char *toks[] = {"a", "b"};
    /* tokenizer-5.1: a tokenizer model we do not implement. */
    assert_int_equal(vocab_from("rwkv", toks, 2), RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "rwkv"));
    /* tokenizer-5.2: no tokenizer at all, or no tokens. */
    assert_int_equal(vocab_from(NULL, toks, 2), RT_ERR_FORMAT);
    assert_int_equal(vocab_from("llama", NULL, 0), RT_ERR_FORMAT);
    assert_non_null(strstr(rtm_last_error(), "tokenizer.ggml.tokens"));
    /* tokenizer-5.3: a gpt2 tokenizer needs its merges. */
    assert_int_equal(vocab_from("gpt2", toks, 2), RT_ERR_FORMAT);
    assert_non_null(strstr(rtm_last_error(), "merges"));
    /* tokenizer-5.6: a pre-tokenizer we do not know is refused by its name,
     * one we know is taken. */
    assert_int_equal(vocab_from_pre("gpt2", toks, 2, "tekken-9"), RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "'tekken-9'"));
    assert_int_equal(vocab_from_pre("gpt2", toks, 2, "llama-bpe"), RT_OK);
    /* tokenizer-5.4: the tiny SPM vocabulary works, every byte falling back. */
    assert_int_equal(vocab_from("llama", toks, 2), RT_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_spm),   cmocka_unit_test(test_fixture_gpt2),
        cmocka_unit_test(test_stories_vocab), cmocka_unit_test(test_does_not_fit),
        cmocka_unit_test(test_bad_vocabs),    cmocka_unit_test(test_fixture_pretokenizers),
        cmocka_unit_test(test_fixture_bert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
