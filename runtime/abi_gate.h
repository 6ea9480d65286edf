/* SPDX-License-Identifier: MIT */
/* abi_gate.h: what the core lets through between components of different
 * ABI versions (abi/rt_base.h, rule 8). Every check of "does this version
 * define that" goes through here, so the rule has one home in the core;
 * plugins read the same two tables (rt_op_abi_version and
 * rt_type_abi_version in abi/rt_tensor.h). */
#ifndef RT_ABI_GATE_H
#define RT_ABI_GATE_H

#include "internal.h"

/* Whether ABI version abi defines type. */
RT_INTERNAL bool rt_abi_gate_type(uint32_t abi, rt_type_t type);
/* NULL when a plugin speaking abi may be handed node (its op, its type and
 * its sources' types are all defined by abi); otherwise why, written into
 * buf. */
RT_INTERNAL const char *rt_abi_gate_node(uint32_t abi, const rt_tensor_t *node, char *buf,
                                         size_t size);
/* Whether a buffer type with these flags, of a plugin speaking plugin_abi,
 * is shown to an application that declared app_abi. The flags are the
 * plugin's; *flags drops those the plugin's version does not define. */
RT_INTERNAL bool rt_abi_gate_buft(uint32_t plugin_abi, uint32_t app_abi, uint32_t *flags);
/* "1.2" for messages; UINT32_MAX reads "no version". */
RT_INTERNAL const char *rt_abi_text(uint32_t v, char *buf, size_t size);

#endif /* RT_ABI_GATE_H */
