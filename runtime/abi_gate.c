/* SPDX-License-Identifier: MIT */
/* abi_gate.c: rule 8 of abi/rt_base.h as the core applies it. A plugin is
 * never handed an op or a type that the version it negotiated does not
 * define: not through supports_op, not through graph_compute, not as a
 * tensor placed in its buffers. A buffer type that an older application or
 * an older plugin version would misuse as ordinary is not shown: weights
 * buffer types (1.1) to applications of 1.0, and any buffer type that sets
 * a must-understand flag this core does not know. */
#include "abi_gate.h"

#include <stdio.h>

#define ABI_1_1 RT_ABI_MAKE_VERSION(1, 1)
#define ABI_1_2 RT_ABI_MAKE_VERSION(1, 2)

/* Flags each version defines for rt_buffer_type_desc_t.flags. */
static uint32_t buft_flags_defined(uint32_t abi) {
    uint32_t f = RT_BUFT_FLAG_HOST;
    if (abi >= ABI_1_1) f |= RT_BUFT_FLAG_WEIGHTS;
    return f;
}

const char *rt_abi_text(uint32_t v, char *buf, size_t size) {
    if (v == UINT32_MAX) snprintf(buf, size, "no version");
    else snprintf(buf, size, "%u.%u", RT_ABI_VERSION_GET_MAJOR(v), RT_ABI_VERSION_GET_MINOR(v));
    return buf;
}

bool rt_abi_gate_type(uint32_t abi, rt_type_t type) { return rt_type_abi_version(type) <= abi; }

const char *rt_abi_gate_node(uint32_t abi, const rt_tensor_t *node, char *buf, size_t size) {
    char have[16], need[16];
    if (rt_abi_defines_node(abi, node)) return NULL;
    const uint32_t op_v = rt_op_abi_version(node->op);
    if (op_v > abi) {
        snprintf(buf, size, "op %s is defined by ABI %s, the plugin speaks %s",
                 rt_op_name(node->op), rt_abi_text(op_v, need, sizeof need),
                 rt_abi_text(abi, have, sizeof have));
        return buf;
    }
    for (int j = -1; j < RT_MAX_SRC; j++) {
        const rt_tensor_t *t = j < 0 ? node : node->src[j];
        if (t == NULL || rt_abi_gate_type(abi, t->type)) continue;
        snprintf(buf, size, "type %s (%d) of %s is defined by ABI %s, the plugin speaks %s",
                 rt_type_name(t->type), (int)t->type, j < 0 ? "the node" : "a source",
                 rt_abi_text(rt_type_abi_version(t->type), need, sizeof need),
                 rt_abi_text(abi, have, sizeof have));
        return buf;
    }
    snprintf(buf, size, "not defined by ABI %s", rt_abi_text(abi, have, sizeof have));
    return buf;
}

bool rt_abi_gate_buft(uint32_t plugin_abi, uint32_t app_abi, uint32_t *flags) {
    /* Must-understand flags exist from 1.2 on; this core knows none yet. */
    if (plugin_abi >= ABI_1_2 && (*flags & RT_BUFT_FLAGS_REQUIRED) != 0) return false;
    *flags &= buft_flags_defined(plugin_abi);
    return (*flags & ~buft_flags_defined(app_abi)) == 0;
}
