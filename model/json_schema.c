/* SPDX-License-Identifier: MIT */
/* json_schema.c: the public calls of the JSON Schema to GBNF converter
 * (rt_model.h) and the rules every converted grammar shares: any JSON
 * value, object, array, string, number, with whitespace between tokens
 * bounded to RTM_JS_MAX_WS characters so that a model cannot spend its
 * tokens on blanks. rtm_json_object_grammar is these rules under
 * `root ::= object`. Without jansson (configure did not find it) the
 * shared rules remain and rtm_json_schema_to_grammar says what is missing. */
#include "json_schema_impl.h"

#include <stdlib.h>

/* The shared rules' bodies. A string's characters are JSON's: anything
 * but the quote, the backslash and U+0000..U+001F, or an escape. */
#define JS_VALUE "object | array | string | number | boolean | null"
#define JS_OBJECT                                                                                  \
    "\"{\" ws ( string ws \":\" ws value ws ( \",\" ws string ws \":\" ws value ws )* )? \"}\""
#define JS_ARRAY "\"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\""
#define JS_STRING "\"\\\"\" char* \"\\\"\""
#define JS_CHAR "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )"
#define JS_NUMBER "integer ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?"
#define JS_INTEGER "\"-\"? ( \"0\" | [1-9] [0-9]* )"
#define JS_BOOLEAN "\"true\" | \"false\""
#define JS_NULL "\"null\""
#define JS_WS "[ \\t\\n\\r]{0,20}" /* RTM_JS_MAX_WS */

#define BIT(p) (1u << (p))

static const struct {
    const char *name, *body;
    uint32_t deps;
} prims[RTM_JS_PRIM_COUNT] = {
    [RTM_JS_VALUE] = {"value", JS_VALUE,
                      BIT(RTM_JS_OBJECT) | BIT(RTM_JS_ARRAY) | BIT(RTM_JS_STRING) |
                          BIT(RTM_JS_NUMBER) | BIT(RTM_JS_BOOLEAN) | BIT(RTM_JS_NULL)},
    [RTM_JS_OBJECT] = {"object", JS_OBJECT,
                       BIT(RTM_JS_WS) | BIT(RTM_JS_STRING) | BIT(RTM_JS_VALUE)},
    [RTM_JS_ARRAY] = {"array", JS_ARRAY, BIT(RTM_JS_WS) | BIT(RTM_JS_VALUE)},
    [RTM_JS_STRING] = {"string", JS_STRING, BIT(RTM_JS_CHAR)},
    [RTM_JS_CHAR] = {"char", JS_CHAR, 0},
    [RTM_JS_NUMBER] = {"number", JS_NUMBER, BIT(RTM_JS_INTEGER)},
    [RTM_JS_INTEGER] = {"integer", JS_INTEGER, 0},
    [RTM_JS_BOOLEAN] = {"boolean", JS_BOOLEAN, 0},
    [RTM_JS_NULL] = {"null", JS_NULL, 0},
    [RTM_JS_WS] = {"ws", JS_WS, 0},
};

const char *rtm_js_prim_name(int prim) { return prims[prim].name; }
const char *rtm_js_prim_body(int prim) { return prims[prim].body; }
uint32_t rtm_js_prim_deps(int prim) { return prims[prim].deps; }

/* Every shared rule, in the printing order, under root ::= object. */
static const char object_grammar[] = "root ::= object\n"
                                     "value ::= " JS_VALUE "\n"
                                     "object ::= " JS_OBJECT "\n"
                                     "array ::= " JS_ARRAY "\n"
                                     "string ::= " JS_STRING "\n"
                                     "char ::= " JS_CHAR "\n"
                                     "number ::= " JS_NUMBER "\n"
                                     "integer ::= " JS_INTEGER "\n"
                                     "boolean ::= " JS_BOOLEAN "\n"
                                     "null ::= " JS_NULL "\n"
                                     "ws ::= " JS_WS "\n";

const char *rtm_json_object_grammar(void) { return object_grammar; }

void rtm_string_free(char *s) { free(s); }

rt_status_t rtm_json_schema_to_grammar(const char *schema_json, size_t len, char **out_gbnf) {
    if (out_gbnf != NULL) *out_gbnf = NULL;
    if (schema_json == NULL || out_gbnf == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_json_schema_to_grammar: NULL schema or out");
#ifdef RT_HAVE_JANSSON
    return rtm_js_convert(schema_json, len, out_gbnf);
#else
    (void)len;
    return rtm_error(RT_ERR_UNSUPPORTED, "rtm_json_schema_to_grammar: this build has no JSON "
                                         "reader (configure did not find jansson: install "
                                         "libjansson-dev and rebuild)");
#endif
}
