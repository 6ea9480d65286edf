/* SPDX-License-Identifier: MIT */
/* tool_cli.h: what every rt tool's command line shares: --version's one
 * line (release, ABI, the commit the build came from) and the checked
 * conversion of option values, each failure one message on stderr naming
 * the tool, the option and the value. The tools parse with getopt_long;
 * these helpers only turn optarg into numbers. */
#ifndef RT_TOOLS_TOOL_CLI_H
#define RT_TOOLS_TOOL_CLI_H

#include "../abi/rt.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* "rt-run 0.2.0 (ABI 1.2, library 0.2.0 ABI 1.2, commit 1a2b3c4)" on f:
 * the headers' version, the loaded librtcore's, and the commit of the
 * build ("unknown" when it was built outside git). */
void rt_cli_print_version(FILE *f, const char *tool);

/* The commit the build came from (git describe), or "unknown". */
const char *rt_cli_commit(void);

/* optarg as an integer in [lo, hi], a float, a non-negative 64-bit
 * integer; false after "TOOL: OPTION wants ..., not 'VALUE'". */
bool rt_cli_int(const char *tool, const char *option, const char *value, long lo, long hi,
                int32_t *out);
bool rt_cli_float(const char *tool, const char *option, const char *value, float *out);
bool rt_cli_u64(const char *tool, const char *option, const char *value, uint64_t *out);

/* The spellings of the device list and of the layers on the first GPU
 * that every tool takes (llama.cpp's and rt's), for a getopt_long table:
 * one place, so that the tools agree. */
#define RT_CLI_DEVICE_OPTIONS(code)                                                      \
    {"dev", required_argument, NULL, (code)}, {"device", required_argument, NULL, (code)}, \
    {"devices", required_argument, NULL, (code)}
#define RT_CLI_NGL_OPTIONS(code)                                                          \
    {"ngl", required_argument, NULL, (code)}, {"n-gpu-layers", required_argument, NULL, (code)}, \
    {"gpu-layers", required_argument, NULL, (code)}

/* The devices named in list (comma-separated, as -dev takes them) into
 * devs[0..max); *n_devs their count. False after "TOOL: no device named
 * 'X'; devices: ..." or too many. */
bool rt_cli_find_devices(const char *tool, rt_registry_t *reg, const char *list, rt_device_t **devs,
                         int32_t max, int32_t *n_devs);

/* --split's value: "auto" or "fastest" into *out (an rtm_split_t of
 * model/rt_model.h); false after "TOOL: --split knows ...". */
bool rt_cli_split(const char *tool, const char *value, int32_t *out);

/* Attention and the KV cache's types, llama.cpp's spellings: -fa,
 * --flash-attn on|off|auto; -ctk, --cache-type-k and -ctv, --cache-type-v
 * f32|f16. One table entry set and one help text, so that the tools agree. */
#define RT_CLI_ATTN_OPTIONS(fa, ctk, ctv)                                                      \
    {"fa", required_argument, NULL, (fa)}, {"flash-attn", required_argument, NULL, (fa)},     \
    {"ctk", required_argument, NULL, (ctk)}, {"cache-type-k", required_argument, NULL, (ctk)}, \
    {"ctv", required_argument, NULL, (ctv)}, {"cache-type-v", required_argument, NULL, (ctv)}
#define RT_CLI_ATTN_HELP                                                                       \
    "  -fa, --flash-attn on|off|auto  attention fused into one op per layer; auto: where\n"   \
    "                            every device holding a layer runs it, and several\n"         \
    "                            sequences share the cache (rt-server's slots) or the\n"      \
    "                            unfused scores would pass 64 MiB (default: auto)\n"          \
    "  -ctk, --cache-type-k f32|f16  the KV cache's K type (default: f32)\n"                  \
    "  -ctv, --cache-type-v f32|f16  its V type (default: f32)\n"

/* --no-mmap (llama.cpp's spelling): every weight copied into the devices'
 * own buffers (rtm_model_params_t.no_mmap), none mapped from the file; the
 * CPU copies 64 MiB of weights or more by default already (weights.c). */
#define RT_CLI_MMAP_OPTION(code) {"no-mmap", no_argument, NULL, (code)}
#define RT_CLI_MMAP_HELP                                                                       \
    "      --no-mmap             copy every weight into the devices' buffers, map none\n"     \
    "                            from the file (the CPU copies 64 MiB or more anyway,\n"      \
    "                            where they fit in half its free memory)\n"

/* -fa's value into *out (an rtm_flash_attn_t of model/rt_model.h): on,
 * off, auto (also 1, 0 as llama.cpp took them); false after a message. */
bool rt_cli_flash_attn(const char *tool, const char *value, int32_t *out);
/* -ctk/-ctv's value, f32 or f16, into *out (an rt_type_t); false after a message. */
bool rt_cli_cache_type(const char *tool, const char *option, const char *value, int32_t *out);

/* The option as typed ("-c", "--ctx-size", "--ctx=x"), for messages,
 * right after getopt_long returned one with a value: the word before
 * optarg when optarg is a word of its own. optind_after is optind. */
const char *rt_cli_option_name(char **argv, int optind_after);

/* The message getopt_long gives no tool name for a bad option, then the
 * hint to --help; returns the usage exit status 2. */
int rt_cli_bad_usage(const char *tool);

#endif /* RT_TOOLS_TOOL_CLI_H */
