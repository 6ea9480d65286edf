/* SPDX-License-Identifier: MIT */
/* test-json-schema.c: the JSON Schema to GBNF converter
 * (model/json_schema*.c, rtm_json_schema_to_grammar).
 *
 *   json-schema-1  golden grammars of small schemas, byte for byte: the
 *                  shared rules, a string, an object with required,
 *                  optional and no additional properties, one whose
 *                  additional names must differ from "id", optional
 *                  members only, an array with counts, an enum, an
 *                  integer range, and rtm_json_object_grammar
 *   json-schema-2  refusals: the status and a message that names the
 *                  schema path and the reason, for every keyword refused
 *                  by name, remote and dangling $refs, unsatisfiable
 *                  schemas, malformed keyword values and text not JSON
 *   json-schema-3  $ref recursion: a tree node through $defs and a list
 *                  through "#" convert (the tree's grammar is golden), a
 *                  $ref that loops back before any character (left
 *                  recursion) is refused, directly and through two $defs
 *   json-schema-4  limits: nesting past 64 subschemas, counts past 1000,
 *                  more than 100 prefixItems, a grammar past 1 MiB are
 *                  refused by name; just under them converts
 *   json-schema-5  the acceptance table: (schema, JSON text, accepted?)
 *                  for every feature, valid and invalid documents. Every
 *                  schema converts; the texts are run through the grammar
 *                  engine (rtm_grammar_accept_text, then
 *                  rtm_grammar_can_end)
 *   json-schema-6  NULL arguments; a build without jansson refuses by
 *                  name (the only check that runs there)
 *   json-schema-7  every allocation fails in turn (the converter's and
 *                  jansson's, through malloc interposed here): each
 *                  conversion fails with RT_ERR_OUT_OF_MEMORY and a
 *                  message, or gives what it gives with memory, and frees
 *                  all it took (not under a sanitizer, which owns malloc).
 *                  jansson's reader reports some of its failed
 *                  allocations as a syntax error: RT_ERR_FORMAT "not
 *                  JSON" is taken from it too
 *
 * In the tables ' stands for " so that the JSON reads as JSON; a real
 * quote inside a JSON string is written \' (the converter sees \"). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/rt_model.h"


/* s with every ' turned into ", malloc'd. */
static char *dq(const char *s) {
    char *out = strdup(s);
    assert_non_null(out);
    for (char *p = out; *p != 0; p++)
        if (*p == '\'') *p = '"';
    return out;
}

/* The grammar of schema (written with '), or NULL with *st and the
 * message in rtm_last_error(). */
static char *convert(const char *schema, rt_status_t *st) {
    char *text = dq(schema), *g = (char *)1;
    *st = rtm_json_schema_to_grammar(text, strlen(text), &g);
    free(text);
    if (*st != RT_OK) assert_null(g);
    return g;
}

#ifdef RT_HAVE_JANSSON

//===--- json-schema-1: golden grammars ---===//

#define S_PERSON_FULL                                                                                  \
    "{'type':'object','properties':{'name':{'type':'string','maxLength':20},"                      \
    "'age':{'type':'integer','minimum':0,'maximum':150}},'required':['name']}"

#define G_VALUE "value ::= object | array | string | number | boolean | null\n"
#define G_OBJECT                                                                                       \
    "object ::= \"{\" ws ( string ws \":\" ws value ws ( \",\" ws string ws \":\" ws value ws )* )? " \
    "\"}\"\n"
#define G_ARRAY "array ::= \"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"\n"
#define G_STRING "string ::= \"\\\"\" char* \"\\\"\"\n"
#define G_CHAR "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"
#define G_NUMBER "number ::= integer ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?\n"
#define G_INTEGER "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]* )\n"
#define G_BOOLEAN "boolean ::= \"true\" | \"false\"\n"
#define G_NULL "null ::= \"null\"\n"
#define G_WS "ws ::= [ \\t\\n\\r]{0,20}\n"
#define G_ALL G_VALUE G_OBJECT G_ARRAY G_STRING G_CHAR G_NUMBER G_INTEGER G_BOOLEAN G_NULL G_WS
/* An additional name's trie step: any character but these, or an escape. */
#define G_LEAVE(cls)                                                                                   \
    "[^" cls "\"\\\\\\x00-\\x1F] char* \"\\\"\" | \"\\\\\" [\\x22\\x5C\\x2Fbfnrt] char* \"\\\"\""

static const struct {
    const char *name, *schema, *grammar;
} goldens[] = {
    {"any value", "{}", "root ::= value\n" G_ALL},
    {"string", "{'type':'string'}", "root ::= string\n" G_STRING G_CHAR},
    {"object, required and optional, nothing else",
     "{'type':'object','properties':{'name':{'type':'string','maxLength':20},"
     "'age':{'type':'integer','minimum':0,'maximum':150}},'required':['name'],"
     "'additionalProperties':false}",
     "root ::= \"{\" ws \"\\\"name\\\"\" ws \":\" ws root-name ws "
     "( \",\" ws \"\\\"age\\\"\" ws \":\" ws root-age ws )? \"}\"\n"
     "root-name ::= \"\\\"\" char{0,20} \"\\\"\"\n"
     "root-age ::= ( [0-9] | [1-9] [0-9] | \"1\" ( [0-4] [0-9] | \"5\" \"0\" ) )\n" G_CHAR G_WS},
    {"object, additional names other than id",
     "{'type':'object','properties':{'id':{'type':'integer'}},'required':['id']}",
     "root ::= \"{\" ws \"\\\"id\\\"\" ws \":\" ws integer ws ( \",\" ws root-kv )* \"}\"\n"
     "root-kv ::= root-key ws \":\" ws value ws\n"
     "root-key ::= \"\\\"\" ( " G_LEAVE("i") " | \"i\" root-key-2 | \"\\\"\" )\n"
     "root-key-2 ::= " G_LEAVE("d") " | \"d\" char+ \"\\\"\" | \"\\\"\"\n" G_ALL},
    {"object, optional members only",
     "{'type':'object','properties':{'a':{'type':'integer'},'b':{'type':'boolean'}},"
     "'additionalProperties':false}",
     "root ::= \"{\" ws ( root-rest )? \"}\"\n"
     "root-rest ::= \"\\\"a\\\"\" ws \":\" ws integer ws ( \",\" ws root-rest-2 )? | root-rest-2\n"
     "root-rest-2 ::= \"\\\"b\\\"\" ws \":\" ws boolean ws\n" G_INTEGER G_BOOLEAN G_WS},
    {"array, 1..3 integers", "{'type':'array','items':{'type':'integer'},'minItems':1,'maxItems':3}",
     "root ::= \"[\" ws integer ws ( \",\" ws integer ws ){0,2} \"]\"\n" G_INTEGER G_WS},
    {"enum", "{'enum':['red','green',3,null,{'a':[1,2.5]}]}",
     "root ::= \"\\\"red\\\"\" | \"\\\"green\\\"\" | \"3\" | \"null\" | \"{\\\"a\\\":[1,2.5]}\"\n"},
    {"integer -5..120", "{'type':'integer','minimum':-5,'maximum':120}",
     "root ::= \"-\" [1-5] | ( [0-9] | [1-9] [0-9] | \"1\" ( [0-1] [0-9] | \"2\" \"0\" ) )\n"},
    {"tree node ($defs, recursive)",
     "{'$defs':{'node':{'type':'object','properties':{'value':{'type':'integer'},"
     "'children':{'type':'array','items':{'$ref':'#/$defs/node'}}},"
     "'required':['value','children'],'additionalProperties':false}},'$ref':'#/$defs/node'}",
     "root ::= node\n"
     "node ::= \"{\" ws \"\\\"value\\\"\" ws \":\" ws integer ws \",\" ws \"\\\"children\\\"\" ws \":\" ws "
     "node-children ws \"}\"\n"
     "node-children ::= \"[\" ws ( node ws ( \",\" ws node ws )* )? \"]\"\n" G_INTEGER G_WS},
};

static void test_golden(void **state) {
    (void)state;
    tu_n_failed = 0;
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        rt_status_t st;
        char *g = convert(goldens[i].schema, &st);
        if (g == NULL)
            tu_report("json-schema-1 %s: %s", goldens[i].name, rtm_last_error());
        else if (strcmp(g, goldens[i].grammar) != 0)
            tu_report("json-schema-1 %s:\n--- want\n%s--- got\n%s", goldens[i].name, goldens[i].grammar, g);
        rtm_string_free(g);
    }
    if (strcmp(rtm_json_object_grammar(), "root ::= object\n" G_ALL) != 0)
        tu_report("json-schema-1 rtm_json_object_grammar:\n%s", rtm_json_object_grammar());
    assert_int_equal(tu_n_failed, 0);
}

//===--- json-schema-2: refusals ---===//

static const struct {
    const char *schema;
    rt_status_t st;
    const char *message; /* a part of rtm_last_error() */
} refusals[] = {
    {"{'type':'object','properties':{'age':{'not':{'type':'string'}}}}", RT_ERR_UNSUPPORTED,
     "json schema, #/properties/age/not: 'not' is not supported"},
    {"{'if':{},'then':{}}", RT_ERR_UNSUPPORTED, "#/if: 'if' is not supported"},
    {"{'type':'string','pattern':'^a+$'}", RT_ERR_UNSUPPORTED,
     "#/pattern: 'pattern' is not supported (regular expressions are not converted)"},
    {"{'type':'object','patternProperties':{'^x':{}}}", RT_ERR_UNSUPPORTED,
     "#/patternProperties: 'patternProperties'"},
    {"{'dependentSchemas':{'a':{}}}", RT_ERR_UNSUPPORTED,
     "#/dependentSchemas: 'dependentSchemas' is not supported"},
    {"{'type':'number','multipleOf':2}", RT_ERR_UNSUPPORTED, "#/multipleOf: 'multipleOf' is not supported"},
    {"{'type':'array','uniqueItems':true}", RT_ERR_UNSUPPORTED, "#/uniqueItems: 'uniqueItems': true"},
    {"{'type':'object','unevaluatedProperties':false}", RT_ERR_UNSUPPORTED, "#/unevaluatedProperties"},
    {"{'type':'string','nullable':true}", RT_ERR_UNSUPPORTED, "#/nullable: 'nullable' is not supported"},
    {"{'type':'string','frobnicate':1}", RT_ERR_UNSUPPORTED, "#/frobnicate: unknown keyword 'frobnicate'"},
    {"{'$ref':'https://example.com/s.json'}", RT_ERR_UNSUPPORTED,
     "#/$ref: remote $ref 'https://example.com/s.json' is not supported"},
    {"{'$ref':'#node'}", RT_ERR_UNSUPPORTED, "#/$ref: $ref '#node' names an anchor"},
    {"{'items':{'$ref':'#/$defs/missing'}}", RT_ERR_FORMAT,
     "#/items/$ref: $ref '#/$defs/missing' points at nothing"},
    {"{'$ref':'#/$defs/a','type':'object','$defs':{'a':{}}}", RT_ERR_UNSUPPORTED,
     "#/type: keywords beside '$ref' ('type') are not supported"},
    {"{'anyOf':[{'type':'string'}],'maxLength':3}", RT_ERR_UNSUPPORTED,
     "#/maxLength: 'maxLength' beside 'anyOf' is not supported"},
    {"{'type':'number','minimum':0}", RT_ERR_UNSUPPORTED,
     "#/minimum: 'minimum' on a number that need not be an integer is not supported"},
    {"{'type':'integer','minimum':10,'maximum':5}", RT_ERR_UNSUPPORTED,
     "#/minimum: the least integer allowed, 10, is more than the greatest, 5"},
    {"{'type':'integer','exclusiveMinimum':4,'exclusiveMaximum':5}", RT_ERR_UNSUPPORTED,
     "the least integer allowed, 5, is more than the greatest, 4"},
    {"{'type':'integer','minimum':1e30}", RT_ERR_UNSUPPORTED, "#/minimum: 1e+30 is beyond"},
    {"{'type':'string','minLength':5,'maxLength':2}", RT_ERR_UNSUPPORTED,
     "#/minLength: minLength 5 is more than maxLength 2"},
    {"{'type':'string','format':'date','maxLength':10}", RT_ERR_UNSUPPORTED,
     "#/format: minLength or maxLength beside format 'date'"},
    {"{'type':'array','minItems':3,'maxItems':2}", RT_ERR_UNSUPPORTED, "#/minItems: minItems 3 is more than"},
    {"{'type':'array','prefixItems':[{}],'items':false,'minItems':2}", RT_ERR_UNSUPPORTED,
     "minItems 2 is more than the 1 items allowed"},
    {"{'enum':[]}", RT_ERR_UNSUPPORTED, "#/enum: no value of 'enum' has the schema's type"},
    {"{'type':'string','enum':[1,2]}", RT_ERR_UNSUPPORTED, "no value of 'enum' has the schema's type"},
    {"{'type':'string','enum':['a'],'maxLength':3}", RT_ERR_UNSUPPORTED,
     "#/maxLength: 'maxLength' beside 'enum' is not supported"},
    {"{'type':[]}", RT_ERR_UNSUPPORTED, "#/type: an empty 'type' list allows no value"},
    {"{'type':'text'}", RT_ERR_FORMAT, "#/type: 'text' is not a JSON Schema type"},
    {"{'type':'object','properties':{'a':false},'required':['a']}", RT_ERR_UNSUPPORTED,
     "#/required: 'a' is required and its schema is false"},
    {"{'type':'object','required':['id'],'additionalProperties':false}", RT_ERR_UNSUPPORTED,
     "#/required: 'id' is required, 'properties' does not list it and 'additionalProperties' is false"},
    {"{'allOf':[{'type':'object'},{'type':'string'}]}", RT_ERR_UNSUPPORTED,
     "#/allOf/type: the members of allOf allow no type in common: no value is"},
    {"{'allOf':[{'properties':{'a':{}}},{'additionalProperties':false}]}", RT_ERR_UNSUPPORTED,
     "#/allOf/additionalProperties: 'additionalProperties' inside allOf is not merged"},
    {"{'allOf':[{'properties':{'a':{}}},{'items':{}}]}", RT_ERR_UNSUPPORTED,
     "allOf merges object schemas only ('items' is not merged)"},
    {"{'anyOf':[{},{}],'oneOf':[{}]}", RT_ERR_UNSUPPORTED, "'oneOf' beside 'anyOf'"},
    {"{'properties':{'x':false}}", RT_OK, NULL},
    {"{'properties':{'a':{'type':'string'}}", RT_ERR_FORMAT, "json schema: not JSON"},
    {"{'type':'string','type':'integer'}", RT_ERR_FORMAT, "json schema: not JSON: duplicate object key"},
    {"{'minItems':-1,'type':'array'}", RT_ERR_FORMAT, "#/minItems: 'minItems' wants a non-negative integer"},
    {"{'properties':[]}", RT_ERR_FORMAT, "#/properties: 'properties' wants an object"},
    {"{'items':5}", RT_ERR_FORMAT, "#/items: 'items' wants a schema"},
    {"{'properties':{'a':5}}", RT_ERR_FORMAT, "#/properties/a: a schema must be an object or a boolean"},
    {"false", RT_ERR_UNSUPPORTED, "json schema, #: the schema false allows no value here"},
    {"{'properties':{'a/b~c':{'not':{}}}}", RT_ERR_UNSUPPORTED, "#/properties/a~1b~0c/not"},
};

static void test_refusals(void **state) {
    (void)state;
    tu_n_failed = 0;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        rt_status_t st;
        char *g = convert(refusals[i].schema, &st);
        if (refusals[i].message == NULL) { /* a case that must convert */
            if (st != RT_OK) tu_report("json-schema-2 %s: %s", refusals[i].schema, rtm_last_error());
        } else if (st != refusals[i].st || strstr(rtm_last_error(), refusals[i].message) == NULL) {
            tu_report("json-schema-2 %s: status %d '%s', want %d with '%s'", refusals[i].schema, st,
                      rtm_last_error(), refusals[i].st, refusals[i].message);
        }
        rtm_string_free(g);
    }
    assert_int_equal(tu_n_failed, 0);
}

//===--- json-schema-3: $ref recursion ---===//

static void test_recursion(void **state) {
    (void)state;
    rt_status_t st;
    /* a list through "#" and a tree through $defs */
    char *g = convert("{'type':'object','properties':{'next':{'anyOf':[{'$ref':'#'},{'type':'null'}]}},"
                      "'required':['next'],'additionalProperties':false}",
                      &st);
    assert_int_equal(st, RT_OK);
    assert_non_null(strstr(g, "root-next ::= root | null\n"));
    rtm_string_free(g);
    g = convert("{'definitions':{'a':{'type':'array','items':{'$ref':'#/definitions/b'}},"
                "'b':{'anyOf':[{'$ref':'#/definitions/a'},{'type':'integer'}]}},'$ref':'#/definitions/a'}",
                &st);
    assert_int_equal(st, RT_OK);
    assert_non_null(strstr(g, "a ::= \"[\" ws ( b ws ( \",\" ws b ws )* )? \"]\"\nb ::= a | integer\n"));
    rtm_string_free(g);
    /* left recursion: back to itself before any character */
    g = convert("{'anyOf':[{'$ref':'#'},{'type':'null'}]}", &st);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "#/anyOf/0/$ref: $ref '#' comes back to itself before any "
                                             "character (left recursion)"));
    g = convert("{'$defs':{'a':{'$ref':'#/$defs/b'},'b':{'anyOf':[{'type':'null'},{'$ref':'#/$defs/a'}]}},"
                "'$ref':'#/$defs/a'}",
                &st);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "#/$defs/b/anyOf/1/$ref: $ref '#/$defs/a' comes back"));
    g = convert("{'allOf':[{'$ref':'#'}]}", &st);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "left recursion"));
}

//===--- json-schema-4: limits ---===//

/* depth arrays one inside the other: {'items':{'items':...{}}} */
static char *nested(int depth) {
    char *s = malloc((size_t)depth * 12 + 8);
    assert_non_null(s);
    size_t n = 0;
    for (int i = 0; i < depth; i++) n += (size_t)sprintf(s + n, "{'items':");
    n += (size_t)sprintf(s + n, "{}");
    for (int i = 0; i < depth; i++) s[n++] = '}';
    s[n] = 0;
    return s;
}

static void test_limits(void **state) {
    (void)state;
    rt_status_t st;
    char *schema = nested(62), *g = convert(schema, &st);
    assert_int_equal(st, RT_OK);
    rtm_string_free(g);
    free(schema);
    schema = nested(70);
    g = convert(schema, &st);
    free(schema);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "subschemas nested deeper than 64"));
    g = convert("{'type':'string','maxLength':1000}", &st);
    assert_int_equal(st, RT_OK);
    assert_non_null(strstr(g, "char{0,1000}"));
    rtm_string_free(g);
    g = convert("{'type':'string','maxLength':1001}", &st);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "#/maxLength: 1001 is more than the 1000"));
    g = convert("{'type':'array','minItems':5000}", &st);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "#/minItems: 5000 is more than the 1000"));
    /* maxItems past the limit is fine where items: false caps it */
    g = convert("{'type':'array','prefixItems':[{}],'items':false,'maxItems':100000}", &st);
    assert_int_equal(st, RT_OK);
    rtm_string_free(g);
    char big[101 * 3 + 40] = "{'prefixItems':[";
    for (int i = 0; i < 101; i++) strcat(big, i > 0 ? ",{}" : "{}");
    strcat(big, "]}");
    g = convert(big, &st);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "#/prefixItems: 101 schemas are more than the 100"));
    /* an enum of 1200 strings of 1000 characters: past 1 MiB of grammar */
    const size_t n_values = 1200, len = 1000;
    char *huge = malloc(n_values * (len + 3) + 32), *p = huge;
    assert_non_null(huge);
    p += sprintf(p, "{'enum':[");
    for (size_t i = 0; i < n_values; i++) {
        p += sprintf(p, "%s'%04zu", i > 0 ? "," : "", i);
        memset(p, 'x', len - 4);
        p += len - 4;
        *p++ = '\'';
    }
    sprintf(p, "]}");
    g = convert(huge, &st);
    free(huge);
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rtm_last_error(), "the grammar would be larger than 1024 KiB"));
}

//===--- json-schema-7: allocation failures ---===//

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                          \
    __has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(SANITIZED)
#define HAVE_FAULTS 0
#else
#define HAVE_FAULTS 1
/* glibc's allocator under the interposed one (glibc supports replacing
 * malloc, calloc, realloc and free together). While armed, the
 * allocation numbered fail_at fails, and net counts blocks taken minus
 * blocks given back. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
/* exported (the build hides symbols by default) so that the libraries' calls reach them */
#define INTERPOSED __attribute__((visibility("default")))
INTERPOSED void *malloc(size_t n);
INTERPOSED void *calloc(size_t n, size_t size);
INTERPOSED void *realloc(void *p, size_t n);
INTERPOSED void free(void *p);

static bool armed;
static long n_allocs, fail_at, net;

static bool fails(void) { return armed && n_allocs++ == fail_at; }

void *malloc(size_t n) {
    void *p = fails() ? NULL : __libc_malloc(n);
    net += armed && p != NULL;
    return p;
}

void *calloc(size_t n, size_t size) {
    void *p = fails() ? NULL : __libc_calloc(n, size);
    net += armed && p != NULL;
    return p;
}

void *realloc(void *p, size_t n) {
    if (fails()) return NULL;
    void *q = __libc_realloc(p, n);
    net += armed && p == NULL && q != NULL;
    return q;
}

void free(void *p) {
    net -= armed && p != NULL;
    __libc_free(p);
}

static const char *const fault_schemas[] = {
    S_PERSON_FULL,
    "{'$defs':{'node':{'type':'object','properties':{'value':{'type':'integer','minimum':-5,"
    "'maximum':120},'children':{'type':'array','items':{'$ref':'#/$defs/node'},'maxItems':3}},"
    "'required':['value']}},'$ref':'#/$defs/node'}",
    "{'allOf':[{'type':['object','null'],'properties':{'a':{'enum':['x',1.5,{'k':[null]}]}}},"
    "{'properties':{'b':{'type':'string','format':'date-time'}},'required':['b']}]}",
    "{'type':'array','prefixItems':[{'const':'\\n'},{'anyOf':[{'type':'string','maxLength':4},"
    "{'type':'boolean'}]}],'items':{'type':'number'},'minItems':1}",
    "{'type':'object','properties':{'a':{'not':{}}}}",
};
#endif


static void test_faults(void **state) {
    (void)state;
#if HAVE_FAULTS
    tu_n_failed = 0;
    for (size_t i = 0; i < sizeof fault_schemas / sizeof fault_schemas[0]; i++) {
        char *schema = dq(fault_schemas[i]), *want = NULL;
        const rt_status_t want_st = rtm_json_schema_to_grammar(schema, strlen(schema), &want);
        long k = 0;
        for (;; k++) {
            char *g = NULL;
            n_allocs = net = 0;
            fail_at = k;
            armed = true;
            const rt_status_t st = rtm_json_schema_to_grammar(schema, strlen(schema), &g);
            const bool same = st == want_st && (g == NULL) == (want == NULL) &&
                              (g == NULL || strcmp(g, want) == 0);
            rtm_string_free(g);
            armed = false;
            if (n_allocs <= k) { /* nothing failed: done */
                if (!same) tu_report("json-schema-7 %s: status %d without a failure", schema, st);
                break;
            }
            const bool reader = st == RT_ERR_FORMAT && strstr(rtm_last_error(), "not JSON") != NULL;
            if (st != RT_ERR_OUT_OF_MEMORY && !same && !reader)
                tu_report("json-schema-7 %s, allocation %ld failing: status %d '%s'", schema, k, st,
                          rtm_last_error());
            if (st == RT_ERR_OUT_OF_MEMORY && strstr(rtm_last_error(), "no memory") == NULL)
                tu_report("json-schema-7 %s, allocation %ld failing: message '%s'", schema, k,
                          rtm_last_error());
            if (net != 0)
                tu_report("json-schema-7 %s, allocation %ld failing: %ld blocks kept", schema, k, net);
        }
        if (k == 0) { /* malloc is not ours (valgrind replaces it) */
            free(schema);
            free(want);
            print_message("json-schema-7: malloc is not interposed in this run\n");
            skip();
        }
        free(schema);
        free(want);
    }
    assert_int_equal(tu_n_failed, 0);
#else
    print_message("json-schema-7: a sanitizer owns malloc in this build\n");
    skip();
#endif
}

#endif /* RT_HAVE_JANSSON */

//===--- json-schema-5: the acceptance table ---===//

#define S_STRING "{'type':'string'}"
#define S_INTEGER "{'type':'integer'}"
#define S_NUMBER "{'type':'number'}"
#define S_PERSON                                                                                       \
    "{'type':'object','properties':{'name':{'type':'string'},'age':{'type':'integer'}},"           \
    "'required':['name'],'additionalProperties':false}"
#define S_OPEN "{'type':'object','properties':{'a':{'type':'integer'}}}"
#define S_MAP "{'type':'object','additionalProperties':{'type':'integer'}}"
#define S_NEEDS_ID "{'type':'object','required':['id']}"
#define S_INTS "{'type':'array','items':{'type':'integer'},'minItems':1,'maxItems':3}"
#define S_TUPLE "{'type':'array','prefixItems':[{'type':'string'},{'type':'integer'}],'items':false}"
#define S_TUPLE_MORE                                                                               \
    "{'type':'array','prefixItems':[{'type':'string'}],"                                           \
    "'items':{'type':'boolean'},'minItems':2}"
#define S_OLD_TUPLE "{'type':'array','items':[{'type':'integer'}],'additionalItems':{'type':'string'}}"
#define S_ANY_OF "{'anyOf':[{'type':'integer'},{'type':'string','maxLength':2}]}"
#define S_TAGGED                                                                                       \
    "{'oneOf':[{'type':'object','properties':{'kind':{'const':'a'},'x':{'type':'integer'}},"        \
    "'required':['kind','x'],'additionalProperties':false},{'type':'object','properties':"          \
    "{'kind':{'const':'b'}},'required':['kind'],'additionalProperties':false}]}"
#define S_ALL_OF                                                                                       \
    "{'allOf':[{'type':'object','properties':{'a':{'type':'integer'}},'required':['a']},"           \
    "{'properties':{'b':{'type':'string'}},'required':['b']}]}"
#define S_ALL_OF_TYPES                                                                                 \
    "{'allOf':[{'type':['object','null'],'properties':{'a':{'type':'integer'}}},"                  \
    "{'type':['null','object','string']}]}"
#define S_DEFS                                                                                     \
    "{'$defs':{'pos':{'type':'integer','minimum':1}},"                                             \
    "'type':'array','items':{'$ref':'#/$defs/pos'}}"
#define S_TREE                                                                                         \
    "{'$defs':{'node':{'type':'object','properties':{'value':{'type':'integer'},'children':"        \
    "{'type':'array','items':{'$ref':'#/$defs/node'}}},'required':['value','children'],"            \
    "'additionalProperties':false}},'$ref':'#/$defs/node'}"
#define S_LIST                                                                                         \
    "{'type':'object','properties':{'next':{'anyOf':[{'$ref':'#'},{'type':'null'}]}},"              \
    "'required':['next'],'additionalProperties':false}"
#define S_DRAFT7                                                                                   \
    "{'definitions':{'s':{'type':'string'}},"                                                      \
    "'type':'object','properties':{'s':{'$ref':'#/definitions/s'}}}"
#define S_LENGTH "{'type':'string','minLength':2,'maxLength':3}"
#define S_RANGE "{'type':'integer','minimum':-5,'maximum':120}"
#define S_EXCLUSIVE "{'type':'integer','exclusiveMinimum':0,'exclusiveMaximum':10}"
#define S_FROM_1000 "{'type':'integer','minimum':1000}"
#define S_TO_MINUS_100 "{'type':'integer','maximum':-100}"
#define S_ENUM "{'enum':['red','green',3,null]}"
#define S_CONST "{'const':{'a':[1,true]}}"
#define S_UNICODE                                                                                  \
    "{'type':'object','properties':{'\xc3\xa9':{'type':'integer'}},"                               \
    "'additionalProperties':{'type':'string'}}"
#define S_QUOTE_KEY                                                                                \
    "{'type':'object','properties':{'a\\'b':{'type':'integer'}},"                                  \
    "'required':['a\\'b'],'additionalProperties':false}"
#define S_ARRAY "{'type':'array'}"
#define S_UNTYPED "{'properties':{'a':{'type':'integer'}}}"
#define S_BOOL_SCHEMAS "{'type':'object','properties':{'a':true,'b':false}}"
#define S_NULLABLE                                                                                     \
    "{'anyOf':[{'$ref':'#/$defs/P'},{'type':'null'}],'$defs':{'P':{'type':'object','title':'P',"   \
    "'properties':{'x':{'type':'number'}},'required':['x']}}}"
#define S_TYPES "{'type':['string','null']}"
#define S_OBJECTS                                                                                  \
    "{'type':'array','items':{'type':'object','properties':{'id':{'type':'integer'}},"             \
    "'required':['id']}}"
#define S_TYPED_ENUM "{'type':'string','enum':['a',1]}"
#define WS20 "                    "

/* accepted: the grammar matches the text. Texts that JSON Schema allows
 * but the grammar does not, by design (rt_model.h), say why. */
static const struct {
    const char *schema, *text;
    bool accepted;
    const char *by_design;
} accept_cases[] = {
    {"{}", "{'a':[1,2.5e3,true,null,'x']}", true, NULL},
    {"{}", "'str'", true, NULL},
    {"{}", "-0.5", true, NULL},
    {"{}", "[]", true, NULL},
    {"{}", "{'a':1,}", false, NULL},
    {"{}", "[1,]", false, NULL},
    {"{}", "01", false, NULL},
    {"{}", "tru", false, NULL},
    {S_STRING, "'hello'", true, NULL},
    {S_STRING, "'esc \\' \\\\ \\n \\u00e9 \\/'", true, NULL},
    {S_STRING, "'\xc3\xa9\xe2\x88\x91\xf0\x9f\x98\x80'", true, NULL},
    {S_STRING, "hello", false, NULL},
    {S_STRING, "'a\x01'", false, NULL},
    {S_STRING, "'bad \\q'", false, NULL},
    {S_STRING, "'unterminated", false, NULL},
    {S_STRING, " 'x'", false, "no whitespace before the value"},
    {S_INTEGER, "0", true, NULL},
    {S_INTEGER, "-12", true, NULL},
    {S_INTEGER, "123456789012", true, NULL},
    {S_INTEGER, "1.5", false, NULL},
    {S_INTEGER, "+1", false, NULL},
    {S_INTEGER, "1.0", false, "an integer is written without a fraction"},
    {S_NUMBER, "0.5", true, NULL},
    {S_NUMBER, "-1.25e-3", true, NULL},
    {S_NUMBER, "10E+2", true, NULL},
    {S_NUMBER, ".5", false, NULL},
    {S_NUMBER, "1.", false, NULL},
    {S_NUMBER, "'1'", false, NULL},
    {"{'type':'boolean'}", "true", true, NULL},
    {"{'type':'boolean'}", "True", false, NULL},
    {"{'type':'null'}", "null", true, NULL},
    {"{'type':'null'}", "0", false, NULL},
    {S_TYPES, "'a'", true, NULL},
    {S_TYPES, "null", true, NULL},
    {S_TYPES, "1", false, NULL},
    {S_ENUM, "'red'", true, NULL},
    {S_ENUM, "3", true, NULL},
    {S_ENUM, "null", true, NULL},
    {S_ENUM, "'blue'", false, NULL},
    {S_ENUM, "'Red'", false, NULL},
    {S_ENUM, "3.0", false, "enum values in their compact spelling only"},
    {S_CONST, "{'a':[1,true]}", true, NULL},
    {S_CONST, "{'a':[1,false]}", false, NULL},
    {S_TYPED_ENUM, "'a'", true, NULL},
    {S_TYPED_ENUM, "1", false, NULL},
    {S_PERSON, "{'name':'Ann'}", true, NULL},
    {S_PERSON, "{'name':'Ann','age':30}", true, NULL},
    {S_PERSON, "{ 'name' : 'Ann' , 'age' : 30 }", true, NULL},
    {S_PERSON, "{\n  'name': 'Ann',\n  'age': 30\n}", true, NULL},
    {S_PERSON, "{}", false, NULL},
    {S_PERSON, "{'age':30}", false, NULL},
    {S_PERSON, "{'name':'Ann','x':1}", false, NULL},
    {S_PERSON, "{'name':5}", false, NULL},
    {S_PERSON, "{'name':'Ann','age':'30'}", false, NULL},
    {S_PERSON, "{'age':30,'name':'Ann'}", false, "required members first"},
    {S_OPEN, "{}", true, NULL},
    {S_OPEN, "{'a':1}", true, NULL},
    {S_OPEN, "{'a':1,'b':'x'}", true, NULL},
    {S_OPEN, "{'b':[1],'c':{}}", true, NULL},
    {S_OPEN, "{'ab':1}", true, NULL},
    {S_OPEN, "{'':0}", true, NULL},
    {S_OPEN, "{'\\n':0}", true, NULL},
    {S_OPEN, "{'a':'x'}", false, NULL},
    {S_OPEN, "{'b':1,'a':'x'}", false, NULL},
    {S_OPEN, "{'b':1,'a':2}", false, "declared members before additional ones"},
    {S_OPEN, "{'\\u0061':'x'}", false, NULL},
    {S_MAP, "{'x':1,'y':-2}", true, NULL},
    {S_MAP, "{}", true, NULL},
    {S_MAP, "{'x':'1'}", false, NULL},
    {S_NEEDS_ID, "{'id':null}", true, NULL},
    {S_NEEDS_ID, "{'id':1,'x':2}", true, NULL},
    {S_NEEDS_ID, "{}", false, NULL},
    {S_NEEDS_ID, "{'x':2}", false, NULL},
    {S_NEEDS_ID, "{'id':1,'id':2}", false, NULL},
    {S_INTS, "[1]", true, NULL},
    {S_INTS, "[1,2,3]", true, NULL},
    {S_INTS, "[ 1 , 2 ]", true, NULL},
    {S_INTS, "[]", false, NULL},
    {S_INTS, "[1,2,3,4]", false, NULL},
    {S_INTS, "[1,'2']", false, NULL},
    {S_TUPLE, "[]", true, NULL},
    {S_TUPLE, "['a']", true, NULL},
    {S_TUPLE, "['a',1]", true, NULL},
    {S_TUPLE, "['a',1,2]", false, NULL},
    {S_TUPLE, "[1]", false, NULL},
    {S_TUPLE_MORE, "['a',true]", true, NULL},
    {S_TUPLE_MORE, "['a',true,false]", true, NULL},
    {S_TUPLE_MORE, "['a']", false, NULL},
    {S_TUPLE_MORE, "['a',1]", false, NULL},
    {S_OLD_TUPLE, "[1,'a','b']", true, NULL},
    {S_OLD_TUPLE, "[1,2]", false, NULL},
    {S_ANY_OF, "5", true, NULL},
    {S_ANY_OF, "'ab'", true, NULL},
    {S_ANY_OF, "'abc'", false, NULL},
    {S_ANY_OF, "true", false, NULL},
    {S_TAGGED, "{'kind':'a','x':1}", true, NULL},
    {S_TAGGED, "{'kind':'b'}", true, NULL},
    {S_TAGGED, "{'kind':'b','x':1}", false, NULL},
    {S_TAGGED, "{'kind':'c'}", false, NULL},
    {S_ALL_OF, "{'a':1,'b':'x'}", true, NULL},
    {S_ALL_OF, "{'a':1,'b':'x','c':null}", true, NULL},
    {S_ALL_OF, "{'a':1}", false, NULL},
    {S_ALL_OF, "{'a':1,'b':2}", false, NULL},
    {S_ALL_OF_TYPES, "null", true, NULL},
    {S_ALL_OF_TYPES, "{'a':1}", true, NULL},
    {S_ALL_OF_TYPES, "'x'", false, NULL},
    {S_ALL_OF_TYPES, "{'a':true}", false, NULL},
    {S_DEFS, "[1,2]", true, NULL},
    {S_DEFS, "[0]", false, NULL},
    {S_TREE, "{'value':1,'children':[]}", true, NULL},
    {S_TREE, "{'value':1,'children':[{'value':2,'children':[{'value':3,'children':[]}]}]}", true, NULL},
    {S_TREE, "{'value':1}", false, NULL},
    {S_TREE, "{'value':1,'children':[{'value':'x','children':[]}]}", false, NULL},
    {S_LIST, "{'next':null}", true, NULL},
    {S_LIST, "{'next':{'next':{'next':null}}}", true, NULL},
    {S_LIST, "{'next':{}}", false, NULL},
    {S_DRAFT7, "{'s':'x'}", true, NULL},
    {S_DRAFT7, "{'s':1}", false, NULL},
    {S_LENGTH, "'ab'", true, NULL},
    {S_LENGTH, "'abc'", true, NULL},
    {S_LENGTH, "'\xc3\xa9\xe2\x82\xac'", true, NULL},
    {S_LENGTH, "'\\n\\t'", true, NULL},
    {S_LENGTH, "'a'", false, NULL},
    {S_LENGTH, "'abcd'", false, NULL},
    {"{'type':'string','format':'date'}", "'2024-02-29'", true, NULL},
    {"{'type':'string','format':'date'}", "'2024-13-01'", false, NULL},
    {"{'type':'string','format':'date'}", "'24-01-01'", false, NULL},
    {"{'type':'string','format':'time'}", "'23:59:60Z'", true, NULL},
    {"{'type':'string','format':'time'}", "'08:30:00.123+02:00'", true, NULL},
    {"{'type':'string','format':'time'}", "'24:00:00Z'", false, NULL},
    {"{'type':'string','format':'time'}", "'08:30:00'", false, NULL},
    {"{'type':'string','format':'date-time'}", "'2024-05-06T07:08:09Z'", true, NULL},
    {"{'type':'string','format':'date-time'}", "'2024-05-06t07:08:09.5-05:30'", true, NULL},
    {"{'type':'string','format':'date-time'}", "'2024-05-06 07:08:09Z'", false, NULL},
    {"{'type':'string','format':'uuid'}", "'123e4567-e89b-12d3-a456-426614174000'", true, NULL},
    {"{'type':'string','format':'uuid'}", "'123e4567e89b12d3a456426614174000'", false, NULL},
    {"{'type':'string','format':'email'}", "'not an address'", true, NULL},
    {S_RANGE, "-5", true, NULL},
    {S_RANGE, "0", true, NULL},
    {S_RANGE, "99", true, NULL},
    {S_RANGE, "120", true, NULL},
    {S_RANGE, "-6", false, NULL},
    {S_RANGE, "121", false, NULL},
    {S_RANGE, "1000", false, NULL},
    {S_RANGE, "007", false, NULL},
    {S_RANGE, "-0", false, "-0 only where an integer is unbounded"},
    {S_EXCLUSIVE, "1", true, NULL},
    {S_EXCLUSIVE, "9", true, NULL},
    {S_EXCLUSIVE, "0", false, NULL},
    {S_EXCLUSIVE, "10", false, NULL},
    {S_FROM_1000, "1000", true, NULL},
    {S_FROM_1000, "99999999", true, NULL},
    {S_FROM_1000, "999", false, NULL},
    {S_FROM_1000, "-1000", false, NULL},
    {S_TO_MINUS_100, "-100", true, NULL},
    {S_TO_MINUS_100, "-123456", true, NULL},
    {S_TO_MINUS_100, "-99", false, NULL},
    {S_TO_MINUS_100, "0", false, NULL},
    {S_UNICODE, "{'\xc3\xa9':1}", true, NULL},
    {S_UNICODE, "{'e':'x'}", true, NULL},
    {S_UNICODE, "{'\xc3\xa9\x61':'x'}", true, NULL},
    {S_UNICODE, "{'\xc3\xa9':'x'}", false, NULL},
    {S_QUOTE_KEY, "{'a\\'b':1}", true, NULL},
    {S_QUOTE_KEY, "{'a\\u0022b':1}", false, "declared names in their compact spelling only"},
    {S_ARRAY, "[" WS20 "]", true, NULL},
    {S_ARRAY, "[ " WS20 "]", false, "at most 20 whitespace characters between tokens"},
    {S_ARRAY, "[\n\t1\r\n]", true, NULL},
    {S_OBJECTS, "[{'id':1},{'id':2,'x':true}]", true, NULL},
    {S_OBJECTS, "[{'x':true}]", false, NULL},
    {S_UNTYPED, "5", true, NULL},
    {S_UNTYPED, "'s'", true, NULL},
    {S_UNTYPED, "{'a':1}", true, NULL},
    {S_UNTYPED, "{'a':'x'}", false, NULL},
    {S_BOOL_SCHEMAS, "{'a':[1]}", true, NULL},
    {S_BOOL_SCHEMAS, "{}", true, NULL},
    {S_BOOL_SCHEMAS, "{'b':1}", false, NULL},
    {S_NULLABLE, "null", true, NULL},
    {S_NULLABLE, "{'x':1.5}", true, NULL},
    {S_NULLABLE, "{'x':null}", false, NULL},
};

/* Whether the grammar matches all of text. */
static bool matches(rtm_grammar_t *g, const char *text) {
    rtm_grammar_reset(g);
    return rtm_grammar_accept_text(g, text, strlen(text)) == RT_OK && rtm_grammar_can_end(g);
}

static void test_acceptance(void **state) {
    (void)state;
#ifndef RT_HAVE_JANSSON
    print_message("json-schema-5: this build has no jansson (json-schema-6 checks the refusal)\n");
    skip();
#endif
    tu_n_failed = 0;
    int n_run = 0;
    for (size_t i = 0; i < sizeof accept_cases / sizeof accept_cases[0]; i++) {
        if (i > 0 && accept_cases[i].schema == accept_cases[i - 1].schema) continue;
        rt_status_t st;
        char *g = convert(accept_cases[i].schema, &st);
        if (g == NULL) {
            tu_report("json-schema-5 %s: %s", accept_cases[i].schema, rtm_last_error());
            continue;
        }
        rtm_grammar_t *gr = NULL;
        if (rtm_grammar_create(NULL, g, strlen(g), NULL, &gr) != RT_OK) {
            tu_report("json-schema-5 %s: the engine refuses the grammar: %s\n%s", accept_cases[i].schema,
                      rtm_last_error(), g);
        } else {
            for (size_t k = i; k < sizeof accept_cases / sizeof accept_cases[0] &&
                               accept_cases[k].schema == accept_cases[i].schema;
                 k++, n_run++) {
                char *text = dq(accept_cases[k].text);
                if (matches(gr, text) != accept_cases[k].accepted)
                    tu_report("json-schema-5 %s: %s %s", accept_cases[i].schema, text,
                              accept_cases[k].accepted ? "refused, want accepted" : "accepted, want refused");
                free(text);
            }
        }
        rtm_grammar_destroy(gr);
        rtm_string_free(g);
    }
    assert_int_equal(tu_n_failed, 0);
    assert_true(n_run > 100);
}

//===--- json-schema-6: arguments, and a build without jansson ---===//

static void test_arguments(void **state) {
    (void)state;
    char *g = (char *)1;
    assert_int_equal(rtm_json_schema_to_grammar(NULL, 0, &g), RT_ERR_INVALID_ARGUMENT);
    assert_null(g);
    assert_int_equal(rtm_json_schema_to_grammar("{}", 2, NULL), RT_ERR_INVALID_ARGUMENT);
    rtm_string_free(NULL);
    assert_non_null(strstr(rtm_json_object_grammar(), "root ::= object\n"));
    g = (char *)1;
    const rt_status_t st = rtm_json_schema_to_grammar("{}", 2, &g);
#ifdef RT_HAVE_JANSSON
    assert_int_equal(st, RT_OK);
    assert_non_null(g);
#else
    assert_int_equal(st, RT_ERR_UNSUPPORTED);
    assert_null(g);
    assert_non_null(strstr(rtm_last_error(), "jansson"));
#endif
    rtm_string_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#ifdef RT_HAVE_JANSSON
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_recursion),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_faults),
#endif
        cmocka_unit_test(test_acceptance),
        cmocka_unit_test(test_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
