/* SPDX-License-Identifier: MIT */
/* test-chat.c: the chat template interpreter (model/chat_*.c).
 *
 *   chat-1  the templates of tests/chat (SmolLM2's from its GGUF, ChatML,
 *           Llama 3.2, Gemma 2, Qwen 2.5, Qwen 3) render three
 *           conversations byte for byte as llama.cpp's server does
 *           (tests/chat/record.py recorded them; Llama's "Today Date" is
 *           the day of the run on both sides)
 *   chat-2  whitespace: "-" on tags, trim_blocks, lstrip_blocks, comments
 *   chat-3  loop variables, elif, set scoping, namespace(), filters, tests,
 *           methods, slices, "in", the conditional expression
 *   chat-4  raise_exception's message, a syntax error's line, an unknown
 *           filter, a template that runs a million statements or fills
 *           64 MiB: RT_ERR_FORMAT naming them
 *   chat-5  a small buffer: RT_ERR_DOES_NOT_FIT with the length needed
 *   chat-6  the built-in formats (rtm_chat_template_builtin): chatml and
 *           qwen render the three conversations as tests/chat's ChatML and
 *           Qwen 2.5 recordings, gemma as Gemma 2's (and a system message
 *           opens the first user turn); llama3, phi3 and mistral as their
 *           formats are written out here; an unknown name is NULL */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../model/rt_model.h"

#define BOS "<|im_start|>" /* SmolLM2's, the model record.py loaded */
#define EOS "<|im_end|>"

static const rtm_chat_message_t sys_case[] = {
    {"system", "Be brief."}, {"user", "Hi there"}, {"assistant", "Hello!"}, {"user", "  What is 2+2?  "}};
static const rtm_chat_message_t nosys_case[] = {
    {"user", "Hi there"}, {"assistant", "Hello! How can I help?"}, {"user", "Name a colour."}};
static const rtm_chat_message_t one_case[] = {{"user", "Tell me a story\nabout a cat."}};

static const struct {
    const char *name;
    const rtm_chat_message_t *m;
    int32_t n;
} cases[] = {{"sys", sys_case, 4}, {"nosys", nosys_case, 3}, {"one", one_case, 1}};

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n == 0 ? (void)0 : (free(s), s = NULL, (void)0);
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* source rendered with the messages (generation prompt on), malloc'd;
 * NULL with *st set when it fails. */
static char *render(const char *source, const rtm_chat_message_t *m, int32_t n, rt_status_t *st) {
    rtm_chat_template_t *t = NULL;
    *st = rtm_chat_template_create(source, &t);
    if (*st != RT_OK) return NULL;
    const rtm_chat_render_params_t p = {.struct_size = sizeof p, .add_generation_prompt = true,
                                        .bos_token = BOS, .eos_token = EOS};
    size_t len = 0;
    char *out = NULL;
    *st = rtm_chat_template_apply(t, m, n, &p, NULL, 0, &len);
    if (*st == RT_ERR_DOES_NOT_FIT && (out = malloc(len + 1)) != NULL)
        *st = rtm_chat_template_apply(t, m, n, &p, out, len + 1, &len);
    rtm_chat_template_destroy(t);
    if (*st != RT_OK) free(out), out = NULL;
    return out;
}

/* The recorded day in want becomes today's, as strftime_now gives it. */
static void today(char *want) {
    char *d = strstr(want, "Today Date: ");
    if (d == NULL) return;
    char day[32];
    const time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    const size_t n = strftime(day, sizeof day, "%d %b %Y", &tm);
    if (n == 11) memcpy(d + 12, day, n);
}

static void test_families(void **state) {
    (void)state;
    static const char *const templates[] = {"smollm2", "chatml", "llama3", "gemma2", "qwen25", "qwen3"};
    tu_n_failed = 0;
    int checked = 0;
    for (size_t i = 0; i < sizeof templates / sizeof templates[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/chat/%s.jinja", templates[i]);
        char *source = read_all(path);
        if (source == NULL) {
            tu_report("chat-1 %s: cannot read %s", templates[i], path);
            continue;
        }
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            snprintf(path, sizeof path, "tests/chat/%s.%s.txt", templates[i], cases[c].name);
            char *want = read_all(path);
            if (want == NULL) continue; /* not recorded: the template refuses it (record.py SKIP) */
            today(want);
            rt_status_t st;
            char *got = render(source, cases[c].m, cases[c].n, &st);
            if (got == NULL) tu_report("chat-1 %s.%s: %s", templates[i], cases[c].name, rtm_last_error());
            else if (strcmp(got, want) != 0)
                tu_report("chat-1 %s.%s:\n--- want\n%s\n--- got\n%s", templates[i], cases[c].name, want, got);
            checked++;
            free(got);
            free(want);
        }
        free(source);
    }
    assert_int_equal(tu_n_failed, 0);
    assert_int_equal(checked, 17);
}

/* source rendered with nosys_case, compared with want. */
static void expect(const char *source, const char *want) {
    rt_status_t st;
    char *got = render(source, nosys_case, 3, &st);
    if (got == NULL) fail_msg("'%s': %s", source, rtm_last_error());
    if (strcmp(got, want) != 0) fail_msg("'%s':\nwant '%s'\ngot  '%s'", source, want, got);
    free(got);
}

static void test_whitespace(void **state) {
    (void)state;
    expect("a  {{- 'b' -}}  \n c", "abc");
    expect("x\n  {% if true %}\ny\n  {% endif %}\nz", "x\ny\nz");         /* lstrip + trim */
    expect("x {% if true %}y{% endif %} z", "x y z");                     /* not at a line start */
    expect("a{# note #}\nb {#- c -#} d", "abd");
    expect("{%- for m in messages -%}\n  [{{ m.role }}]\n{%- endfor %}", "[user][assistant][user]");
}

static void test_features(void **state) {
    (void)state;
    expect("{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{% if loop.first %}F{% endif %}"
           "{% if loop.last %}L{% endif %}/{{ loop.length }} {% endfor %}", "01F/3 12/3 23L/3 ");
    expect("{% for m in messages %}{% if m.role == 'user' %}u{% elif m['role'] == 'assistant' %}a"
           "{% else %}?{% endif %}{% endfor %}", "uau");
    expect("{% set x = 1 %}{% for m in messages %}{% set x = 2 %}{% endfor %}{{ x }}", "1");
    expect("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
           "{{ ns.n }}", "3");
    expect("{{ '  a b  ' | trim }}|{{ messages | length }}|{{ 'AbC' | lower }}{{ 'x' | upper }}|"
           "{{ [1, 'a', none, true] | tojson }}|{{ {'k': [1, 2]} | tojson }}", "a b|3|abcX|[1, \"a\", null, true]|{\"k\": [1, 2]}");
    expect("{{ undefined_thing is defined }}{{ none is none }}{{ 'a' is string }}{{ 3 is not mapping }}"
           "{{ messages is iterable }}{{ 4 is even }}", "FalseTrueTrueTrueTrueTrue");
    expect("{{ ' x '.strip() }}{{ 'abc'.startswith('ab') }}{{ 'a-b-c'.split('-') | join('+') }}"
           "{{ 'aXbX'.replace('X', '.') }}{{ 'hello world'.title() }}", "xTruea+b+ca.b.Hello World");
    expect("{{ messages[1:] | length }}{{ messages[-1].content }}{{ 'abcdef'[1:3] }}{{ 'b' in 'abc' }}"
           "{{ 'role' in messages[0] }}{{ 2 not in [1, 3] }}", "2Name a colour.bcTrueTrueTrue");
    expect("{{ 'y' if messages | length > 2 else 'n' }}{{ 7 // 2 }}{{ 7 % 3 }}{{ 2 * 3 + 1 }}{{ -(1) }}"
           "{{ 'a' ~ 1 }}{{ 1.5 + 1 }}{{ [1, 2, 3][::-1] | join }}{{ 'abc'[::-1] }}", "y317-1a12.5321cba");
    /* Python's floored // and %, and ** with a negative exponent */
    expect("{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7 // -2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 3 ** 39 }}",
           "-4 2 -2 -4 1024 0.5 4052555153018976267");
    expect("{{ bos_token }}{{ eos_token }}{{ add_generation_prompt }}", BOS EOS "True");
    expect("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}", "a=1;b=2;");
    expect("{% for x in [] %}x{% else %}empty{% endfor %}", "empty");
}

static void expect_error(const char *source, rt_status_t want_st, const char *want_msg) {
    rt_status_t st;
    char *got = render(source, nosys_case, 3, &st);
    assert_null(got);
    assert_int_equal(st, want_st);
    tu_expect_contains(rtm_last_error(), want_msg, "chat-4");
}

static void test_errors(void **state) {
    (void)state;
    expect_error("{% if messages[0].role == 'user' %}{{ raise_exception('No users here') }}{% endif %}",
                 RT_ERR_FORMAT, "line 1: raise_exception: No users here");
    expect_error("a\nb\n{% if %}", RT_ERR_FORMAT, "line 3");
    expect_error("{% for m in messages %}", RT_ERR_FORMAT, "ends inside a block");
    expect_error("{{ 'a' | nosuchfilter }}", RT_ERR_FORMAT, "nosuchfilter");
    expect_error("{{ 'a }}", RT_ERR_FORMAT, "not closed");
    expect_error("{% macro m() %}{% endmacro %}", RT_ERR_FORMAT, "does not know");
    /* a file's template that would run without end or take all memory (fuzz-chat) */
    char loops[1024] = "{% for i in range(100000) %}";
    for (int i = 0; i < 20; i++) strcat(loops, "{% if i < 0 %}{% endif %}");
    expect_error(strcat(loops, "{% endfor %}"), RT_ERR_FORMAT, "more than 1048576 statements");
    /* integers that leave 64 bits (fuzz-chat: UBSan's signed overflow) */
    expect_error("{{ 9223372036854775807 * 2 }}", RT_ERR_FORMAT, "'*' overflows a 64-bit integer");
    expect_error("{{ 9223372036854775807 + 1 }}", RT_ERR_FORMAT, "'+' overflows");
    expect_error("{{ -9223372036854775807 - 2 }}", RT_ERR_FORMAT, "'-' overflows");
    expect_error("{{ 3 ** 40 }}", RT_ERR_FORMAT, "'**' overflows");
    expect_error("{{ (-9223372036854775807 - 1) // -1 }}", RT_ERR_FORMAT, "'//' overflows");
    expect("{{ (-9223372036854775807 - 1) % -1 }}|{{ -(-9223372036854775807 - 1) }}|{{ (10.0 ** 300) | int }}|{{ 2.7 | int }}",
           "0|9.22337203685478e+18|0|2");
    expect_error("{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                 "{% endfor %}{{ ns.s }}", RT_ERR_FORMAT, "no memory");
}

static void test_small_buffer(void **state) {
    (void)state;
    rtm_chat_template_t *t = NULL;
    assert_int_equal(rtm_chat_template_create("{% for m in messages %}{{ m.content }}{% endfor %}", &t), RT_OK);
    char buf[8];
    size_t len = 0;
    assert_int_equal(rtm_chat_template_apply(t, nosys_case, 3, NULL, buf, sizeof buf, &len), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(len, strlen("Hi thereHello! How can I help?Name a colour."));
    assert_string_equal(buf, "Hi ther");
    rtm_chat_template_destroy(t);
}

/* Built-in `name` rendered for case c, against want (NULL: the recording
 * of template `file`). */
static void expect_builtin(const char *name, size_t c, const char *file, const char *want) {
    char path[256], *recorded = NULL;
    if (want == NULL) {
        snprintf(path, sizeof path, "tests/chat/%s.%s.txt", file, cases[c].name);
        if ((want = recorded = read_all(path)) == NULL) fail_msg("chat-6: cannot read %s", path);
    }
    const char *source = rtm_chat_template_builtin(name);
    if (source == NULL) fail_msg("chat-6: no built-in %s", name);
    rt_status_t st;
    char *got = render(source, cases[c].m, cases[c].n, &st);
    if (got == NULL) fail_msg("chat-6 %s.%s: %s", name, cases[c].name, rtm_last_error());
    if (strcmp(got, want) != 0) fail_msg("chat-6 %s.%s:\n--- want\n%s\n--- got\n%s", name, cases[c].name, want, got);
    free(got);
    free(recorded);
}

static void test_builtin(void **state) {
    (void)state;
    for (size_t c = 0; c < 3; c++) {
        expect_builtin("chatml", c, "chatml", NULL);
        expect_builtin("qwen", c, "qwen25", NULL);
        if (c != 0) expect_builtin("gemma", c, "gemma2", NULL);
    }
    expect_builtin("gemma", 0, NULL,
                   BOS "<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello!"
                   "<end_of_turn>\n<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n");
    expect_builtin("llama3", 0, NULL,
                   BOS "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                   "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                   "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_builtin("phi3", 2, NULL, "<|user|>\nTell me a story\nabout a cat.<|end|>\n<|assistant|>\n");
    expect_builtin("mistral", 0, NULL, BOS "[INST] Be brief.\n\nHi there[/INST]Hello!" EOS "[INST]   What is 2+2?  [/INST]");
    assert_null(rtm_chat_template_builtin("no-such-format"));
    int32_t n = 0;
    while (rtm_chat_template_builtin_name(n)) n++;
    assert_int_equal(n, 6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_whitespace),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_small_buffer),
        cmocka_unit_test(test_builtin),
    };
    return cmocka_run_group_tests_name("chat", tests, NULL, NULL);
}
