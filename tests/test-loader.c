/* SPDX-License-Identifier: MIT */
/* test-loader.c: the plugin loader, devices, buffers, queues, topology and
 * rt-devices. Uses the fake plugins of tests/plugins (built by build.ninja,
 * and one built here from abi/ alone, as a third party would), the CPU
 * plugin next to the library, and the recorded topologies of
 * tests/topologies. Runs from the repository root. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_SIZE 4096

static const char *const env_knobs[] = {"RT_PLUGIN_PATH", "RT_PLUGINS", "RT_PLUGINS_DISABLE",
                                        "FAKE_PCI_ID", "FAKE_MAX_SIZE", "FAKE_ALLOC_FAILS",
                                        "FAKE_CREATE_LOG", "HWLOC_XMLFILE"};

//===--- helpers ---===//

static int reset_env(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof env_knobs / sizeof env_knobs[0]; i++) unsetenv(env_knobs[i]);
    return 0;
}

/* dir/name into buf of PATH_SIZE bytes. */
static const char *join_path(char *buf, const char *dir, const char *name) {
    const int n = snprintf(buf, PATH_SIZE, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_SIZE) fail_msg("path %s/%s is too long", dir, name);
    return buf;
}

/* Absolute path of the build directory + rel. */
static const char *build_path(char *buf, const char *rel) {
    char dir[PATH_SIZE];
    assert_non_null(realpath(tu_build_dir(), dir));
    return join_path(buf, dir, rel);
}

/* RT_PLUGIN_PATH naming the given directories under build/tests/plugins. */
static void set_plugin_path(const char *const *subdirs, int n) {
    char path[4 * PATH_SIZE] = "", dir[PATH_SIZE];
    for (int i = 0; i < n; i++) {
        if (i > 0) strcat(path, ":");
        strcat(path, build_path(dir, subdirs[i]));
    }
    setenv("RT_PLUGIN_PATH", path, 1);
}

static rt_registry_t *registry(void) {
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(NULL, &reg), RT_OK);
    return reg;
}

/* The record of the plugin named name (its own name or its file's). */
static const rt_plugin_info_t *find_plugin(const rt_registry_t *reg, const char *name) {
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++)
        if (strcmp(rt_registry_plugin(reg, i)->name, name) == 0) return rt_registry_plugin(reg, i);
    return NULL;
}

static char *make_temp_dir(char *buf) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, PATH_SIZE, "%s/rt-loader-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(buf));
    return buf;
}

static void remove_temp_dir(const char *dir) {
    char cmd[PATH_SIZE + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Builds tests/plugins/fake.c as rt-plugin-<name>.so in dir, from abi/
 * alone, the way a third party builds a plugin. */
static void build_third_party(const char *dir, const char *name) {
    char cmd[2 * PATH_SIZE];
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -std=c11 -Iabi tests/plugins/fake.c "
             "-DFAKE_NAME=%s -Wl,--version-script=abi/plugin.map -o '%s/rt-plugin-%s.so'",
             name, dir, name);
    assert_int_equal(system(cmd), 0);
}

static void copy_file(const char *from, const char *to) {
    char cmd[3 * PATH_SIZE];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}


//===--- loader-1: the CPU plugin next to the library ---===//

static void test_cpu_next_to_library(void **state) {
    (void)state;
    rt_registry_t *reg = registry();
    const rt_plugin_info_t *cpu = find_plugin(reg, "cpu");
    if (cpu == NULL) fail_msg("loader-1.1: no cpu plugin; searched %s", rt_registry_search_path(reg));
    assert_int_equal(cpu->status, RT_OK);                               /* loader-1.2 */
    tu_expect_contains(cpu->path, "/lib/rt-plugins/rt-plugin-cpu.so", "loader-1.3");
    assert_int_equal(cpu->abi_version >> 16, RT_ABI_VERSION_MAJOR);     /* loader-1.4 */
    assert_true(cpu->n_devices >= 1);                                   /* loader-1.5 */
    rt_device_t *dev = rt_registry_device_by_name(reg, "cpu0");
    assert_non_null(dev);                                               /* loader-1.6 */
    assert_string_equal(rt_device_plugin_name(dev), "cpu");
    tu_expect_contains(rt_registry_search_path(reg), "/lib/rt-plugins", "loader-1.7");
    assert_true(rt_buffer_type_is_host(rt_device_buffer_type(dev, 0))); /* loader-1.8 */
    assert_null(rt_registry_device(reg, rt_registry_device_count(reg)));
    rt_registry_destroy(reg);
}

//===--- loader-2: the fake plugin computes ADD through the public API ---===//

static void fill_and_add(rt_device_t *dev) {
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 8, 4);
    rt_tensor_t *b = rt_new_tensor_2d(ctx, RT_TYPE_F32, 8, 4);
    rt_tensor_t *c = rt_add(ctx, a, b);
    rt_tensor_t *v = rt_view_1d(ctx, c, 8, 8 * sizeof(float)); /* row 1 of c */
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, c);
    assert_true(rt_device_supports_op(dev, c));                              /* loader-2.2 */
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    assert_ptr_equal(v->data, (char *)c->data + 8 * sizeof(float));           /* loader-2.3 */
    assert_ptr_equal(v->buffer, buf);
    float xa[32], xb[32], xc[32], row[8];
    tu_fill(xa, 32, -1, 1);
    tu_fill(xb, 32, -1, 1);
    assert_int_equal(rt_tensor_set(a, xa, 0, sizeof xa), RT_OK);
    assert_int_equal(rt_tensor_set(b, xb, 0, sizeof xb), RT_OK);
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(dev, NULL, &q), RT_OK);
    assert_ptr_equal(rt_queue_device(q), dev);
    assert_int_equal(rt_queue_compute(q, g), RT_OK);                          /* loader-2.4 */
    assert_int_equal(rt_tensor_get(c, xc, 0, sizeof xc), RT_OK);
    for (int i = 0; i < 32; i++) assert_float_equal(xc[i], xa[i] + xb[i], 0);
    assert_int_equal(rt_tensor_get(v, row, 0, sizeof row), RT_OK);
    assert_float_equal(row[0], xa[8] + xb[8], 0);
    rt_queue_destroy(q);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

static void test_fake_computes_add(void **state) {
    (void)state;
    set_plugin_path((const char *const[]){"tests/plugins"}, 1);
    rt_registry_t *reg = registry();
    const rt_plugin_info_t *fake = find_plugin(reg, "fake");
    assert_non_null(fake);
    assert_int_equal(fake->status, RT_OK);                                    /* loader-2.1 */
    assert_int_equal(fake->n_devices, 1);
    assert_string_equal(fake->message, "");
    rt_device_t *dev = rt_registry_device_by_name(reg, "fake0");
    assert_non_null(dev);
    rt_device_props_t p = {.struct_size = sizeof p};
    assert_int_equal(rt_device_get_props(dev, &p), RT_OK);
    assert_int_equal(p.kind, RT_DEVICE_KIND_SOFTWARE);
    assert_int_equal(rt_device_buffer_type_count(dev), 1);
    assert_string_equal(rt_buffer_type_name(rt_device_buffer_type(dev, 0)), "Fake");
    assert_int_equal(rt_buffer_type_max_size(rt_device_buffer_type(dev, 0)), SIZE_MAX);
    assert_ptr_equal(rt_buffer_type_device(rt_device_buffer_type(dev, 0)), dev);
    fill_and_add(dev);
    /* Software devices such as fake0 come after the CPU, whose cores they
     * run on anyway. loader-2.5 */
    int32_t cpu_index = -1, fake_index = -1;
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        if (rt_registry_device(reg, i) == dev) fake_index = i;
        if (strcmp(rt_device_name(rt_registry_device(reg, i)), "cpu0") == 0) cpu_index = i;
    }
    assert_true(cpu_index >= 0 && fake_index > cpu_index);
    rt_registry_destroy(reg);
}

//===--- loader-3: refused plugins, with their messages ---===//

static void expect_refused(const rt_registry_t *reg, const char *name, rt_status_t status,
                           const char *needle) {
    const rt_plugin_info_t *p = find_plugin(reg, name);
    if (p == NULL) fail_msg("loader-3: plugin %s is not listed", name);
    assert_int_equal(p->status, status);
    assert_int_equal(p->n_devices, 0);
    tu_expect_contains(p->message, p->path, name);    /* the message names the file */
    tu_expect_contains(p->message, needle, name);
}

static void test_refusals(void **state) {
    (void)state;
    set_plugin_path((const char *const[]){"tests/plugins/badmajor", "tests/plugins/nosym",
                                          "tests/plugins/initfail"}, 3);
    rt_registry_t *reg = registry();
    expect_refused(reg, "badmajor", RT_ERR_INCOMPATIBLE, "plugin ABI 2.0");   /* loader-3.1 */
    char runtime_abi[32]; /* the message names the runtime's version too */
    snprintf(runtime_abi, sizeof runtime_abi, "ABI %d.%d", RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR);
    tu_expect_contains(find_plugin(reg, "badmajor")->message, runtime_abi, "loader-3.2");
    assert_int_equal(find_plugin(reg, "badmajor")->abi_version, RT_ABI_MAKE_VERSION(2, 0));
    expect_refused(reg, "nosym", RT_ERR_NOT_FOUND, "rt_plugin_query");         /* loader-3.3 */
    expect_refused(reg, "initfail", RT_ERR_DEVICE, "unplugged");               /* loader-3.4 */
    assert_int_equal(find_plugin(reg, "cpu")->status, RT_OK);                  /* loader-3.5 */
    assert_null(rt_registry_device_by_name(reg, "initfail0"));
    assert_null(rt_registry_device_by_name(reg, "badmajor0"));
    rt_registry_destroy(reg);
}

//===--- loader-4: RT_PLUGINS and RT_PLUGINS_DISABLE ---===//

static void set_all_plugin_dirs(void) {
    set_plugin_path((const char *const[]){"tests/plugins", "tests/plugins/badmajor",
                                          "tests/plugins/nosym", "tests/plugins/initfail"}, 4);
}

/* Whether a file whose name contains needle is mapped into this process. */
static bool is_mapped(const char *needle) {
    char line[PATH_SIZE];
    bool found = false;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) return false;
    while (!found && fgets(line, sizeof line, f) != NULL) found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void test_filters(void **state) {
    (void)state;
    set_all_plugin_dirs();
    setenv("RT_PLUGINS", "cpu, fa*", 1);
    rt_registry_t *reg = registry();
    assert_int_equal(rt_registry_plugin_count(reg), 2);                        /* loader-4.1 */
    assert_non_null(find_plugin(reg, "cpu"));
    assert_non_null(find_plugin(reg, "fake"));
    rt_registry_destroy(reg);

    unsetenv("RT_PLUGINS");
    setenv("RT_PLUGINS_DISABLE", "initfail,nosym,badmaj?r", 1);
    reg = registry();
    assert_null(find_plugin(reg, "initfail")); /* never opened: no failure recorded, loader-4.2 */
    assert_null(find_plugin(reg, "nosym"));
    assert_null(find_plugin(reg, "badmajor"));
    assert_false(is_mapped("rt-plugin-initfail.so"));                          /* loader-4.3 */
    assert_int_equal(find_plugin(reg, "fake")->status, RT_OK);
    rt_registry_destroy(reg);

    unsetenv("RT_PLUGINS_DISABLE");
    setenv("RT_PLUGINS", "nothing*", 1);
    reg = registry();
    assert_int_equal(rt_registry_plugin_count(reg), 0);                        /* loader-4.4 */
    assert_int_equal(rt_registry_device_count(reg), 0);
    rt_registry_destroy(reg);
}

//===--- loader-5: never the current directory, never a relative path ---===//

static void test_no_relative_dirs(void **state) {
    (void)state;
    char tmp[PATH_SIZE], from[PATH_SIZE], to[PATH_SIZE], cwd[PATH_SIZE];
    make_temp_dir(tmp);
    join_path(to, tmp, "rt-plugin-cwdfake.so");
    copy_file(build_path(from, "tests/plugins/rt-plugin-fake.so"), to);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tmp), 0);
    setenv("RT_PLUGIN_PATH", ".:rel/dir::", 1);
    rt_registry_t *reg = registry();
    assert_null(find_plugin(reg, "cwdfake"));                                  /* loader-5.1 */
    assert_null(find_plugin(reg, "fake"));
    assert_null(strstr(rt_registry_search_path(reg), "rel/dir"));              /* loader-5.2 */
    assert_int_equal(rt_registry_search_path(reg)[0], '/');
    assert_int_equal(rt_registry_load_plugin(reg, "rt-plugin-cwdfake.so"),     /* loader-5.3 */
                     RT_ERR_INVALID_ARGUMENT);
    rt_registry_destroy(reg);
    rt_registry_options_t opt = {.struct_size = sizeof opt, .plugin_path = "."};
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    assert_null(find_plugin(reg, "cwdfake"));                                  /* loader-5.4 */
    rt_registry_destroy(reg);
    assert_int_equal(chdir(cwd), 0);
    remove_temp_dir(tmp);
}

//===--- loader-6: one device reported by two plugins ---===//

static void test_same_pci_device(void **state) {
    (void)state;
    char tmp[PATH_SIZE], dir[PATH_SIZE];
    make_temp_dir(tmp);
    build_third_party(tmp, "twin");
    setenv("FAKE_PCI_ID", "0000:65:00.0", 1);
    rt_registry_options_t opt = {.struct_size = sizeof opt};
    char path[2 * PATH_SIZE + 2];
    snprintf(path, sizeof path, "%s:%s", build_path(dir, "tests/plugins"), tmp);
    opt.plugin_path = path;
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    rt_device_t *fake = rt_registry_device_by_name(reg, "fake0");
    rt_device_t *twin = rt_registry_device_by_name(reg, "twin0");
    assert_non_null(fake);
    assert_non_null(twin);
    assert_ptr_equal(rt_device_same_as(twin), fake);                           /* loader-6.1 */
    assert_null(rt_device_same_as(fake));
    assert_null(rt_device_same_as(rt_registry_device_by_name(reg, "cpu0")));   /* loader-6.2 */
    rt_registry_destroy(reg);
    remove_temp_dir(tmp);
}

//===--- loader-7: a third-party plugin, found by rt-devices ---===//

static char *rt_devices(const char *env, const char *args, int *out_status) {
    char cmd[3 * PATH_SIZE], exe[PATH_SIZE];
    snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env, build_path(exe, "bin/rt-devices"), args);
    return tu_run_capture(cmd, out_status);
}

static void test_third_party_in_rt_devices(void **state) {
    (void)state;
    char tmp[PATH_SIZE], env[PATH_SIZE + 32];
    make_temp_dir(tmp);
    build_third_party(tmp, "thirdparty");
    snprintf(env, sizeof env, "RT_PLUGIN_PATH='%s'", tmp);
    int status = 0;
    char *out = rt_devices(env, "", &status);
    assert_int_equal(status, 0);                                               /* loader-7.1 */
    tu_expect_contains(out, "thirdparty0", "loader-7.2");
    tu_expect_contains(out, tmp, "loader-7.3");
    tu_expect_contains(out, "cpu0", "loader-7.4");
    free(out);
    remove_temp_dir(tmp);
}

//===--- loader-8: rt-devices --json, --ops and with nothing loaded ---===//

static void test_rt_devices_outputs(void **state) {
    (void)state;
    int status = 0;
    char *out = rt_devices("", "--json", &status);
    assert_int_equal(status, 0);
    tu_expect_contains(out, "\"schema_version\": 1", "loader-8.1");
    tu_expect_contains(out, "\"name\": \"cpu0\"", "loader-8.2");
    free(out);
    out = rt_devices("", "--ops", &status);
    assert_int_equal(status, 0);
    tu_expect_contains(out, "MUL_MAT", "loader-8.3");
    free(out);
    out = rt_devices("RT_PLUGINS=nothing-matches", "", &status);
    assert_int_not_equal(status, 0);                                           /* loader-8.4 */
    tu_expect_contains(out, "no plugin loaded", "loader-8.5");
    tu_expect_contains(out, "/rt-plugins", "loader-8.6"); /* names the search path */
    free(out);
    out = rt_devices("", "--help", &status);
    assert_int_equal(status, 0);
    tu_expect_contains(out, "usage", "loader-8.7");
    free(out);
}

//===--- loader-9: plugins export only their entry point ---===//

static void expect_only_entry(const char *rel) {
    char cmd[PATH_SIZE + 64], lib[PATH_SIZE], sym[256];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", build_path(lib, rel));
    int status = 0, n = 0;
    char *out = tu_run_capture(cmd, &status);
    assert_int_equal(status, 0);
    for (const char *l = out; *l != '\0'; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "") {
        if (sscanf(l, "%*s %*s %255s", sym) != 1) continue;
        if (strcmp(sym, "rt_plugin_query") != 0) fail_msg("loader-9: %s exports %s", rel, sym);
        n++;
    }
    assert_int_equal(n, 1);
    free(out);
}

static void test_exports(void **state) {
    (void)state;
    expect_only_entry("lib/rt-plugins/rt-plugin-cpu.so");                      /* loader-9.1 */
    expect_only_entry("tests/plugins/rt-plugin-fake.so");                      /* loader-9.2 */
}

//===--- loader-10: topology decisions on recorded machines ---===//

static rt_topology_t *topology(const char *xml) {
    rt_topology_t *t = NULL;
    assert_int_equal(rt_topology_create(xml, &t), RT_OK);
    return t;
}

static bool have_hwloc(void) {
    rt_topology_t *t = topology(NULL);
    rt_topology_summary_t s = {.struct_size = sizeof s};
    assert_int_equal(rt_topology_get_summary(t, &s), RT_OK);
    rt_topology_destroy(t);
    return s.available;
}

static void append_text(const char *text, size_t len, void *user_data) {
    strncat(user_data, text, len);
}

static void test_topology_power8(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    rt_topology_t *t = topology("tests/topologies/power8gpudistances.xml");
    rt_topology_summary_t s = {.struct_size = sizeof s};
    assert_int_equal(rt_topology_get_summary(t, &s), RT_OK);
    assert_int_equal(s.n_packages, 2);                                         /* loader-10.1 */
    assert_int_equal(s.n_numa_nodes, 2);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0002:01:00.0"), 0);      /* loader-10.2 */
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0003:01:00.0"), 0);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "000a:01:00.0"), 1);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "000B:01:00.0"), 1);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0000000b:01:00.0"), 1);  /* CUDA's width */
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0007:09:00.0"), -1);     /* loader-10.3 */
    assert_int_equal(rt_topology_numa_node_of_pci(t, "not a bus id"), -1);
    assert_int_equal(rt_topology_numa_node_of_pci(t, ""), -1);
    rt_topology_destroy(t);
}

static void test_topology_intel(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    setenv("HWLOC_XMLFILE", "tests/topologies/32em64t-2n8c2t-pci-normalio.xml", 1);
    rt_topology_t *t = topology(NULL); /* HWLOC_XMLFILE is honoured, loader-10.4 */
    rt_topology_summary_t s = {.struct_size = sizeof s};
    assert_int_equal(rt_topology_get_summary(t, &s), RT_OK);
    assert_true(s.available);
    assert_int_equal(s.n_packages, 2);
    assert_int_equal(s.n_numa_nodes, 2);
    assert_int_equal(s.n_cores, 16);
    assert_int_equal(s.n_pus, 32);
    assert_in_range(s.memory_total >> 30, 60, 64); /* 2 x 32 GB, less what firmware keeps */
    assert_int_equal(s.l1d_size, 32 << 10);                                    /* loader-10.5 */
    assert_int_equal(s.l2_size, 256 << 10);
    assert_int_equal(s.l3_size, 20 << 20);
    assert_int_equal(s.n_l3, 2);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0000:03:00.0"), 0);      /* loader-10.6 */
    assert_int_equal(rt_topology_numa_node_of_pci(t, "83:00.0"), 1);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0000:84:00.0"), 1);
    static char text[4096];
    text[0] = '\0';
    rt_topology_write_text(t, append_text, text);
    tu_expect_contains(text, "NUMA node 1", "loader-10.7");
    rt_topology_destroy(t);
    assert_int_equal(rt_topology_create("tests/topologies/missing.xml", &t), RT_ERR_NOT_FOUND);
    assert_null(t);                                                            /* loader-10.8 */
    tu_expect_contains(rt_last_error(), "missing.xml", "loader-10.9");
}

//===--- loader-11: explicit loading and shadowed files ---===//

static void test_explicit_and_shadowed(void **state) {
    (void)state;
    char lib[PATH_SIZE], tmp[PATH_SIZE], to[PATH_SIZE], path[2 * PATH_SIZE + 2];
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    assert_int_equal(rt_registry_plugin_count(reg), 0);                        /* loader-11.1 */
    build_path(lib, "tests/plugins/rt-plugin-fake.so");
    assert_int_equal(rt_registry_load_plugin(reg, lib), RT_OK);                /* loader-11.2 */
    assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    assert_int_equal(rt_registry_load_plugin(reg, lib), RT_ERR_UNSUPPORTED);   /* loader-11.3 */
    tu_expect_contains(rt_registry_plugin(reg, 1)->message, "already loaded", "loader-11.4");
    assert_int_equal(rt_registry_device_count(reg), 1);
    rt_registry_destroy(reg);

    make_temp_dir(tmp);
    join_path(to, tmp, "rt-plugin-fake.so");
    copy_file(lib, to);
    snprintf(path, sizeof path, "%s:%s", tmp, build_path(lib, "tests/plugins"));
    opt = (rt_registry_options_t){.struct_size = sizeof opt, .plugin_path = path};
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    const rt_plugin_info_t *first = rt_registry_plugin(reg, 0);
    assert_string_equal(first->path, to);                                      /* loader-11.5 */
    assert_int_equal(first->status, RT_OK);
    bool shadowed = false;
    for (int32_t i = 1; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        if (strstr(p->path, "/tests/plugins/rt-plugin-fake.so") == NULL) continue;
        assert_int_not_equal(p->status, RT_OK);
        tu_expect_contains(p->message, "shadowed by", "loader-11.6");
        shadowed = true;
    }
    assert_true(shadowed);
    rt_registry_destroy(reg);
    remove_temp_dir(tmp);
}

//===--- loader-12: buffers ---===//

static rt_registry_t *fake_registry(void) {
    static char path[PATH_SIZE];
    rt_registry_options_t opt = {.struct_size = sizeof opt,
                                 .plugin_path = build_path(path, "tests/plugins")};
    rt_registry_t *reg = NULL;
    setenv("RT_PLUGINS", "fake", 1);
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    unsetenv("RT_PLUGINS");
    assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    return reg;
}

static rt_buffer_type_t *fake_buft(rt_registry_t *reg) {
    return rt_device_buffer_type(rt_registry_device_by_name(reg, "fake0"), 0);
}

static void test_buffer_limits(void **state) {
    (void)state;
    setenv("FAKE_MAX_SIZE", "4096", 1);
    rt_registry_t *reg = fake_registry();
    rt_buffer_type_t *bt = fake_buft(reg);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_buffer_type_max_size(bt), 4096);
    assert_int_equal(rt_buffer_alloc(bt, 0, &buf), RT_OK);                     /* loader-12.1 */
    assert_int_equal(rt_buffer_size(buf), 0);
    assert_non_null(rt_buffer_base(buf));
    rt_buffer_free(buf);
    assert_int_equal(rt_buffer_alloc(bt, 8192, &buf), RT_ERR_INVALID_ARGUMENT); /* loader-12.2 */
    assert_null(buf);
    tu_expect_contains(rt_last_error(), "Fake", "loader-12.3");
    tu_expect_contains(rt_last_error(), "8192", "loader-12.3");
    rt_context_t *ctx = tu_context(1, true);
    rt_new_tensor_1d(ctx, RT_TYPE_F32, 2048);
    assert_int_equal(rt_alloc_ctx_tensors(ctx, bt, &buf), RT_ERR_UNSUPPORTED); /* loader-12.4 */
    tu_expect_contains(rt_last_error(), "8192", "loader-12.5");
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);

    unsetenv("FAKE_MAX_SIZE");
    setenv("FAKE_ALLOC_FAILS", "1", 1);
    reg = fake_registry();
    assert_int_equal(rt_buffer_alloc(fake_buft(reg), 100, &buf), RT_ERR_OUT_OF_MEMORY);
    tu_expect_contains(rt_last_error(), "fake0: out of memory", "loader-12.6");
    tu_expect_contains(rt_last_error(), "100 bytes", "loader-12.7");
    rt_registry_destroy(reg);
}

static void test_tensor_placement(void **state) {
    (void)state;
    rt_registry_t *reg = fake_registry();
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_buffer_alloc(fake_buft(reg), 256, &buf), RT_OK);
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *t = rt_new_tensor_1d(ctx, RT_TYPE_F32, 32); /* 128 bytes */
    rt_tensor_t *v = rt_view_1d(ctx, t, 4, 16);
    char *base = rt_buffer_base(buf);
    assert_int_equal(rt_tensor_alloc(buf, t, base + 192), RT_ERR_INVALID_ARGUMENT); /* 12.8 */
    assert_null(t->data);
    assert_int_equal(rt_view_init(v), RT_ERR_INVALID_ARGUMENT);                /* loader-12.9 */
    assert_int_equal(rt_tensor_alloc(buf, v, base), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_tensor_alloc(buf, t, base + 128), RT_OK);              /* loader-12.10 */
    assert_int_equal(rt_tensor_alloc(buf, t, base), RT_ERR_INVALID_ARGUMENT);  /* already placed */
    assert_int_equal(rt_view_init(v), RT_OK);
    assert_ptr_equal(v->data, base + 144);
    float x[32], y[4];
    tu_fill(x, 32, -1, 1);
    assert_int_equal(rt_tensor_set(t, x, 0, sizeof x), RT_OK);
    assert_int_equal(rt_tensor_set(t, x, 4, sizeof x), RT_ERR_INVALID_ARGUMENT); /* 12.11 */
    assert_int_equal(rt_tensor_get(v, y, 0, sizeof y), RT_OK);
    assert_memory_equal(y, x + 4, sizeof y);
    assert_int_equal(rt_tensor_get(v, y, 8, 9), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_tensor_memset(v, 0, 0, 16), RT_OK);
    assert_int_equal(rt_tensor_get(t, x, 16, 16), RT_OK);
    assert_float_equal(x[0] + x[1] + x[2] + x[3], 0, 0);
    rt_tensor_t *none = rt_new_tensor_1d(ctx, RT_TYPE_F32, 4);
    assert_int_equal(rt_tensor_set(none, x, 0, 16), RT_ERR_INVALID_ARGUMENT);  /* loader-12.12 */
    tu_expect_contains(rt_last_error(), "no data", "loader-12.12");
    assert_int_equal(rt_buffer_clear(buf, 0), RT_OK);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg); /* frees buf, still alive: loader-12.13 */
}

static void test_tensor_copy(void **state) {
    (void)state;
    rt_registry_t *reg = fake_registry();
    rt_context_t *host = tu_context(1, false); /* context memory */
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *h = rt_new_tensor_2d(host, RT_TYPE_F32, 4, 4);
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, 4);
    rt_tensor_t *b = rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, 4);
    rt_tensor_t *odd = rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, 2);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, fake_buft(reg), &buf), RT_OK);
    float x[16], y[16];
    tu_fill(x, 16, -1, 1);
    assert_int_equal(rt_tensor_set(h, x, 0, sizeof x), RT_OK);               /* context memory */
    assert_memory_equal(h->data, x, sizeof x);
    assert_int_equal(rt_tensor_copy(h, a), RT_OK);                             /* loader-12.14 */
    assert_int_equal(rt_tensor_copy(a, b), RT_OK);
    assert_int_equal(rt_tensor_get(b, y, 0, sizeof y), RT_OK);
    assert_memory_equal(x, y, sizeof x);
    assert_int_equal(rt_tensor_copy(a, odd), RT_ERR_INVALID_ARGUMENT);         /* loader-12.15 */
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    rt_context_destroy(host);
    rt_registry_destroy(reg);
}

//===--- loader-13: what a queue checks before submitting ---===//

static void test_queue_checks(void **state) {
    (void)state;
    rt_registry_t *reg = fake_registry();
    rt_device_t *dev = rt_registry_device_by_name(reg, "fake0");
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, 8), "a");
    rt_tensor_t *c = rt_add(ctx, a, a);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, c);
    rt_queue_options_t small = {.struct_size = 8, .n_threads = 2}; /* an older, smaller struct */
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(dev, &small, &q), RT_OK);                 /* loader-13.1 */
    assert_int_equal(rt_queue_compute(q, g), RT_ERR_INVALID_ARGUMENT);         /* loader-13.2 */
    tu_expect_contains(rt_last_error(), "fake0", "loader-13.3");
    tu_expect_contains(rt_last_error(), "no data", "loader-13.3");
    /* Context memory is fine on a device whose default buffer type is host. */
    rt_context_t *host = tu_context(1, false);
    rt_tensor_t *ha = rt_new_tensor_1d(host, RT_TYPE_F32, 8);
    rt_tensor_t *hc = rt_add(host, ha, ha);
    rt_graph_t *hg = rt_graph_create(host, 8);
    rt_graph_build_forward_expand(hg, hc);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    memcpy(ha->data, x, sizeof x);
    assert_int_equal(rt_queue_compute(q, hg), RT_OK);                          /* loader-13.4 */
    assert_float_equal(((float *)hc->data)[7], 16, 0);
    rt_context_destroy(host);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg); /* destroys q: loader-13.5 */
}

//===--- loader-14: every allocation failing in turn ---===//

typedef struct counting {
    long calls, fail_at; /* the call that fails; -1: none */
    long long live;      /* bytes allocated and not freed */
} counting_t;

static void *counting_realloc(void *ud, void *ptr, size_t old_size, size_t new_size) {
    counting_t *c = ud;
    if (new_size == 0) {
        free(ptr);
        c->live -= (long long)old_size;
        return NULL;
    }
    if (c->calls++ == c->fail_at) return NULL;
    void *p = realloc(ptr, new_size);
    if (p != NULL) c->live += (long long)new_size - (long long)old_size;
    return p;
}

static void test_out_of_memory(void **state) {
    (void)state;
    char path[PATH_SIZE];
    setenv("RT_PLUGINS", "fake", 1);
    bool complete = false;
    for (long n = 0; n < 500 && !complete; n++) {
        counting_t c = {0, n, 0};
        rt_allocator_t a = {counting_realloc, &c};
        rt_registry_options_t opt = {.struct_size = sizeof opt, .allocator = &a,
                                     .plugin_path = build_path(path, "tests/plugins")};
        rt_registry_t *reg = NULL;
        const rt_status_t st = rt_registry_create(&opt, &reg);
        assert_true(st == RT_OK || st == RT_ERR_OUT_OF_MEMORY);                /* loader-14.1 */
        rt_registry_device_count(reg); /* starts the plugin: its allocations fail in turn too */
        complete = st == RT_OK && c.calls <= n; /* nothing failed */
        rt_registry_destroy(reg);
        if (c.live != 0) fail_msg("loader-14.2: %lld bytes leaked when call %ld failed", c.live, n);
    }
    assert_true(complete);
}

//===--- loader-15: a plugin starts only when one of its devices is needed ---===//

/* Lines in the fake plugin's FAKE_CREATE_LOG: how often it was created. */
static int creations(const char *log) {
    int n = 0, c;
    FILE *f = fopen(log, "r");
    if (f == NULL) return 0; /* never created: never written */
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static void test_lazy_start(void **state) {
    (void)state;
    char tmp[PATH_SIZE], log[PATH_SIZE], exe[PATH_SIZE], model[PATH_SIZE], cmd[4 * PATH_SIZE];
    join_path(log, make_temp_dir(tmp), "creations");
    set_plugin_path((const char *const[]){"tests/plugins"}, 1);
    setenv("RT_PLUGINS", "cpu,fake", 1);
    setenv("FAKE_CREATE_LOG", log, 1);
    rt_registry_t *reg = registry();
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));
    assert_true(is_mapped("rt-plugin-fake.so")); /* queried at creation ... */
    assert_int_equal(creations(log), 0);         /* ... but not started: loader-15.1 */
    assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    assert_int_equal(creations(log), 1);         /* started by its name: loader-15.2 */
    rt_registry_destroy(reg);

    reg = registry();
    assert_int_equal(rt_registry_device_count(reg), 2); /* counting starts all: loader-15.3 */
    assert_int_equal(creations(log), 2);
    assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    assert_null(rt_registry_device_by_name(reg, "fake7"));
    assert_int_equal(creations(log), 2);         /* once: loader-15.4 */
    assert_int_equal(find_plugin(reg, "fake")->status, RT_OK);
    rt_registry_destroy(reg);

    /* Whole processes: a run on cpu0 never starts the fake plugin, listing
     * devices does (loader-15.5, loader-15.6). */
    if (stat(tu_model_path("stories260K.gguf", model, sizeof model), &(struct stat){0}) == 0) {
        snprintf(cmd, sizeof cmd, "'%s' -m '%s' --devices cpu0 -n 2 -p Once --temp 0 "
                 ">/dev/null 2>&1", build_path(exe, "bin/rt-run"), model);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(creations(log), 2);
    } else {
        print_message("loader-15.5 not checked: no bundled model at %s\n", model);
    }
    int status = 0;
    char *out = rt_devices("", "--no-probe", &status); /* its probe would start each plugin once more */
    assert_int_equal(status, 0);
    tu_expect_contains(out, "fake0", "loader-15.6");
    assert_int_equal(creations(log), 3);
    free(out);
    remove_temp_dir(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cpu_next_to_library, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_fake_computes_add, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_refusals, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_filters, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_no_relative_dirs, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_same_pci_device, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_third_party_in_rt_devices, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_rt_devices_outputs, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_exports, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_topology_power8, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_topology_intel, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_explicit_and_shadowed, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_buffer_limits, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_tensor_placement, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_tensor_copy, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_queue_checks, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_out_of_memory, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_lazy_start, reset_env, reset_env),
    };
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
