#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_misuse.py HEADER... > misuse_calls.inc

Writes one call per public function of the abi/ headers (every RT_API
declaration), each with NULL for every pointer and handle, -1 for every
signed integer (an index out of range, a count below zero) and 0 for the
rest, and a table of them for tests/test-misuse.c. Generated at build time,
so a function added to abi/ is called the day it is declared."""
import re
import sys

SIGNED = {"int", "int32_t", "int64_t", "rt_type_t", "rt_op_t", "rt_status_t",
          "rt_log_level_t", "rt_cpu_placement_t", "rt_placement_mode_t", "long", "ptrdiff_t"}
FN_TYPEDEFS = {"rt_write_fn", "rt_log_fn", "rt_abort_fn", "rt_plugin_admit_fn"}


def declarations(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    for m in re.finditer(r"\bRT_API\s+([^;{}]*?)\s*\(([^;{}]*?)\)\s*(RT_PRINTF\([^)]*\))?\s*;", text,
                         flags=re.S):
        head = " ".join(m.group(1).split())
        name = re.search(r"(\w+)$", head).group(1)
        ret = head[: -len(name)].strip()
        yield ret, name, " ".join(m.group(2).split())


def argument(param):
    param = param.strip()
    if param in ("void", ""):
        return None
    if param == "...":
        return None
    if "*" in param or "[" in param:
        return "NULL"
    words = param.replace("const ", "").split()
    base = words[0] if len(words) > 0 else param
    if base in FN_TYPEDEFS:
        return "NULL"
    if base in ("float", "double"):
        return "0"
    if base == "bool":
        return "false"
    if base in SIGNED:
        return "-1"
    return "0"


def kind(ret, name, params, args):
    """How the test judges the call: a graph builder (it takes a context,
    or builds a graph) must reach the abort hook; a call given no NULL at
    all is only asked not to crash."""
    first = params.split(",")[0]
    if (("rt_context_t *" in first and ret.endswith("*") and not name.startswith("rt_context_"))
            or name.startswith("rt_graph_build")):
        return "BUILDS"
    if "NULL" not in args:
        return "RETURNS_OTHER"
    if ret.endswith("*"):
        return "RETURNS_POINTER"
    if ret == "rt_status_t":
        return "RETURNS_STATUS"
    return "RETURNS_OTHER"


def main():
    seen = set()
    rows = []
    for path in sys.argv[1:]:
        with open(path) as f:
            for ret, name, params in declarations(f.read()):
                if name in seen:
                    continue
                seen.add(name)
                args = [a for a in (argument(p) for p in params.split(",")) if a is not None]
                call = "(%s)(%s)" % (name, ", ".join(args))  # the symbol, never a macro
                k = kind(ret, name, params, args)
                print("static void misuse_%s(misuse_result_t *r) {" % name)
                if ret.endswith("*"):
                    print("    r->pointer = (const void *)%s;" % call)
                elif ret == "rt_status_t":
                    print("    r->status = %s;" % call)
                elif ret == "void":
                    print("    %s;" % call)
                else:
                    print("    (void)%s;" % call)
                print("}")
                rows.append('    {"%s", %s, misuse_%s},' % (name, k, name))
    print("static const misuse_call_t misuse_calls[] = {")
    print("\n".join(rows))
    print("};")


if __name__ == "__main__":
    main()
