/* SPDX-License-Identifier: MIT */
/* test-topo.c: the decisions the runtime takes from the machine's topology,
 * checked on recorded machines bigger than ours (tests/topologies: a
 * 2-socket POWER8 with 4 GPUs, a 2-socket Intel with SMT): the NUMA node of
 * each GPU's PCI bus id and that node's PUs, where worker threads would be
 * pinned (compact, spread, none, the RT_CPU_PLACEMENT default), the default
 * device order over mockgpu devices given PCI ids and memory sizes, and
 * what rt-devices explains. Pinning itself is checked on this machine
 * through /proc. Needs hwloc for most checks (skipped without it). Runs
 * from the repository root. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_SIZE 4096
#define POWER8 "tests/topologies/power8gpudistances.xml"
#define INTEL "tests/topologies/32em64t-2n8c2t-pci-normalio.xml"

static const char *const env_knobs[] = {
    "HWLOC_XMLFILE", "RT_CPU_PLACEMENT", "RT_DEVICE_ORDER", "RT_PLUGIN_PATH", "RT_PLUGINS",
    "RT_PLUGINS_DISABLE", "RT_MOCKGPU_COUNT", "RT_MOCKGPU_MEMORY", "RT_MOCKGPU_PCI",
    "RT_MOCKGPU_OPS", "FAKE_PCI_ID"};

//===--- helpers ---===//

static int reset_env(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof env_knobs / sizeof env_knobs[0]; i++) unsetenv(env_knobs[i]);
    return 0;
}

static rt_topology_t *topology(const char *xml) {
    rt_topology_t *t = NULL;
    assert_int_equal(rt_topology_create(xml, &t), RT_OK);
    return t;
}

/* Without hwloc no recorded topology can be read. */
static bool have_hwloc(void) {
    rt_topology_t *t = NULL;
    const rt_status_t st = rt_topology_create(POWER8, &t);
    rt_topology_destroy(t);
    return st == RT_OK;
}

/* This machine's topology, loaded once and kept: hwloc's PCI discovery
 * (libpciaccess) leaks a little on every destroy, which LeakSanitizer
 * would report. */
static const rt_topology_t *this_machine(void) {
    static rt_topology_t *t;
    if (t == NULL) t = topology(NULL);
    return t;
}

/* Where n threads go under placement; fails the check when the status is
 * not OK or the count is not n. */
static void place(const rt_topology_t *t, rt_cpu_placement_t placement, int32_t n, int32_t *ids,
                  int32_t max, const char *check) {
    int32_t got = -1;
    const rt_status_t st = rt_topology_place_threads(t, placement, n, max, ids, &got);
    if (st != RT_OK) fail_msg("%s: %s: %s", check, rt_status_name(st), rt_last_error());
    if (n > 0 && got != n) fail_msg("%s: %d ids for %d threads", check, (int)got, (int)n);
}

static void expect_ids(const int32_t *got, const int32_t *want, int32_t n, const char *check) {
    for (int32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: thread %d on PU %d, expected %d", check, (int)i, (int)got[i],
                     (int)want[i]);
}

/* The node (0 or 1) whose PU list holds id, -1 if neither. */
static int node_of(const int32_t nodes[2][64], const int32_t n_nodes[2], int32_t id) {
    for (int k = 0; k < 2; k++)
        for (int32_t i = 0; i < n_nodes[k]; i++)
            if (nodes[k][i] == id) return k;
    return -1;
}

//===--- topo-1: the NUMA node of each GPU and its PUs ---===//

static void test_numa_of_gpus(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    rt_topology_t *t = topology(POWER8);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0002:01:00.0"), 0);      /* topo-1.1 */
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0003:01:00.0"), 0);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "000a:01:00.0"), 1);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "000b:01:00.0"), 1);
    int32_t ids[32], n = 0;
    assert_int_equal(rt_topology_numa_node_cpus(t, 1, 32, ids, &n), RT_OK);     /* topo-1.2 */
    assert_int_equal(n, 8);
    expect_ids(ids, (const int32_t[]){80, 81, 88, 89, 96, 97, 104, 105}, 8, "topo-1.2");
    assert_int_equal(rt_topology_numa_node_cpus(t, 0, 2, ids, &n), RT_OK);     /* topo-1.3 */
    assert_int_equal(n, 8);              /* the whole count, though 2 were asked for */
    expect_ids(ids, (const int32_t[]){0, 1}, 2, "topo-1.3");
    assert_int_equal(rt_topology_numa_node_cpus(t, 2, 32, ids, &n), RT_ERR_NOT_FOUND); /* 1.4 */
    assert_int_equal(n, 0);
    rt_topology_summary_t s = {.struct_size = sizeof s};
    assert_int_equal(rt_topology_get_summary(t, &s), RT_OK);
    assert_false(s.is_this_system);                                            /* topo-1.5 */
    rt_topology_destroy(t);

    t = topology(INTEL);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0000:03:00.0"), 0);      /* topo-1.6 */
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0000:83:00.0"), 1);
    assert_int_equal(rt_topology_numa_node_of_pci(t, "0000:84:00.0"), 1);
    assert_int_equal(rt_topology_numa_node_cpus(t, 0, 32, ids, &n), RT_OK);
    assert_int_equal(n, 16);
    expect_ids(ids, (const int32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 16}, 9, "topo-1.7");
    rt_topology_destroy(t);

    assert_int_equal(rt_topology_get_summary(this_machine(), &s), RT_OK);
    assert_true(s.is_this_system);                                             /* topo-1.8 */
    assert_ptr_equal(rt_topology_get_shared(), rt_topology_get_shared());      /* topo-1.9 */
    assert_int_equal(rt_topology_get_summary(rt_topology_get_shared(), &s), RT_OK);
    assert_true(s.is_this_system);
}

//===--- topo-2: where threads would be pinned ---===//

static void test_compact(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    rt_topology_t *t = topology(INTEL);
    int32_t ids[64], nodes[2][64], n_nodes[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(rt_topology_numa_node_cpus(t, k, 64, nodes[k], &n_nodes[k]), RT_OK);
    /* One PU per core of node 0 first (0-7), then their SMT siblings (16-23). */
    place(t, RT_CPU_PLACEMENT_COMPACT, 10, ids, 64, "topo-2.1");
    expect_ids(ids, (const int32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 16, 17}, 10, "topo-2.1");
    place(t, RT_CPU_PLACEMENT_COMPACT, 16, ids, 64, "topo-2.2");
    for (int32_t i = 0; i < 16; i++)
        if (node_of(nodes, n_nodes, ids[i]) != 0)
            fail_msg("topo-2.2: thread %d off node 0", (int)i);
    /* Every usable PU when n_threads is 0: node 0, then node 1. */
    place(t, RT_CPU_PLACEMENT_COMPACT, 0, ids, 64, "topo-2.3");
    expect_ids(ids, (const int32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23,
                                      8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
               32, "topo-2.3");
    /* More threads than PUs wrap around. topo-2.4 */
    place(t, RT_CPU_PLACEMENT_COMPACT, 34, ids, 64, "topo-2.4");
    expect_ids(ids + 32, (const int32_t[]){0, 1}, 2, "topo-2.4");
    rt_topology_destroy(t);

    t = topology(POWER8); /* cores of 2 PUs: 0,1 8,9 16,17 24,25 | 80,81 ... */
    place(t, RT_CPU_PLACEMENT_COMPACT, 8, ids, 64, "topo-2.5");
    expect_ids(ids, (const int32_t[]){0, 8, 16, 24, 1, 9, 17, 25}, 8, "topo-2.5");
    rt_topology_destroy(t);
}

static void test_spread_and_none(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    rt_topology_t *t = topology(INTEL);
    int32_t ids[64], nodes[2][64], n_nodes[2], n = -1;
    for (int k = 0; k < 2; k++)
        assert_int_equal(rt_topology_numa_node_cpus(t, k, 64, nodes[k], &n_nodes[k]), RT_OK);
    place(t, RT_CPU_PLACEMENT_SPREAD, 16, ids, 64, "topo-2.6");
    for (int32_t i = 0; i < 16; i++) {
        if (node_of(nodes, n_nodes, ids[i]) != i % 2)
            fail_msg("topo-2.6: thread %d on PU %d, not on node %d", (int)i, (int)ids[i],
                     (int)i % 2);
        if (ids[i] >= 16)
            fail_msg("topo-2.7: thread %d on an SMT sibling before every core", (int)i);
    }
    expect_ids(ids, (const int32_t[]){0, 8, 1, 9}, 4, "topo-2.8");
    rt_topology_destroy(t);

    t = topology(POWER8);
    place(t, RT_CPU_PLACEMENT_SPREAD, 4, ids, 64, "topo-2.9");
    expect_ids(ids, (const int32_t[]){0, 80, 8, 88}, 4, "topo-2.9");
    assert_int_equal(rt_topology_place_threads(t, RT_CPU_PLACEMENT_NONE, 4, 64, ids, &n), RT_OK);
    assert_int_equal(n, 0);                                                    /* topo-2.10 */
    /* Only max_ids are written; the count is the whole answer. topo-2.11 */
    ids[2] = -7;
    assert_int_equal(rt_topology_place_threads(t, RT_CPU_PLACEMENT_COMPACT, 8, 2, ids, &n), RT_OK);
    assert_int_equal(n, 8);
    assert_int_equal(ids[2], -7);
    assert_int_equal(rt_topology_place_threads(t, 99, 4, 64, ids, &n),       /* topo-2.12 */
                     RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_topology_place_threads(t, RT_CPU_PLACEMENT_COMPACT, -1, 64, ids, &n),
                     RT_ERR_INVALID_ARGUMENT);
    rt_topology_destroy(t);
}

static void test_default_placement(void **state) {
    (void)state;
    assert_int_equal(rt_topology_default_placement(), RT_CPU_PLACEMENT_COMPACT); /* topo-2.13 */
    setenv("RT_CPU_PLACEMENT", "spread", 1);
    assert_int_equal(rt_topology_default_placement(), RT_CPU_PLACEMENT_SPREAD);
    setenv("RT_CPU_PLACEMENT", "none", 1);
    assert_int_equal(rt_topology_default_placement(), RT_CPU_PLACEMENT_NONE);
    setenv("RT_CPU_PLACEMENT", "sideways", 1);                                  /* topo-2.14 */
    assert_int_equal(rt_topology_default_placement(), RT_CPU_PLACEMENT_COMPACT);
    assert_string_equal(rt_cpu_placement_name(RT_CPU_PLACEMENT_SPREAD), "spread");
    assert_string_equal(rt_cpu_placement_name(42), "?");
    if (!have_hwloc()) return;
    setenv("RT_CPU_PLACEMENT", "spread", 1);
    rt_topology_t *t = topology(POWER8);
    int32_t ids[4];
    place(t, RT_CPU_PLACEMENT_DEFAULT, 4, ids, 4, "topo-2.15");
    expect_ids(ids, (const int32_t[]){0, 80, 8, 88}, 4, "topo-2.15");
    rt_topology_destroy(t);
}

//===--- topo-3: queues of the CPU device really pinned, on this machine only ---===//

/* How many threads of this process may run on exactly `cpu` alone. */
static int threads_pinned_to(int32_t cpu) {
    char path[PATH_SIZE], line[256], want[32];
    int n = 0;
    snprintf(want, sizeof want, "%d\n", (int)cpu);
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        while (f != NULL && fgets(line, sizeof line, f) != NULL)
            if (strncmp(line, "Cpus_allowed_list:", 18) == 0)
                n += strcmp(line + 18 + strspn(line + 18, " \t"), want) == 0;
        if (f != NULL) fclose(f);
    }
    closedir(d);
    return n;
}

static rt_queue_t *cpu_queue(rt_device_t *cpu, int32_t n_threads) {
    const rt_queue_options_t o = {.struct_size = sizeof o, .n_threads = n_threads};
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(cpu, &o, &q), RT_OK);
    return q;
}

static void test_queue_pinning(void **state) {
    (void)state;
    rt_device_t *cpu = tu_cpu_device();
    const rt_queue_options_t bad = {.struct_size = sizeof bad, .cpu_placement = 9};
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(cpu, &bad, &q), RT_ERR_INVALID_ARGUMENT);  /* topo-3.1 */
    assert_null(q);
    if (!have_hwloc()) skip();
    const rt_topology_t *t = this_machine();
    int32_t ids[2], n = 0;
    assert_int_equal(rt_topology_place_threads(t, RT_CPU_PLACEMENT_COMPACT, 0, 0, NULL, &n), RT_OK);
    if (n < 2) skip(); /* one PU: pinning cannot be told from the default */
    place(t, RT_CPU_PLACEMENT_COMPACT, 2, ids, 2, "topo-3.2");
    const int before = threads_pinned_to(ids[1]);
    q = cpu_queue(cpu, 2);         /* worker 1 goes to ids[1] */
    assert_int_equal(threads_pinned_to(ids[1]), before + 1);                  /* topo-3.2 */
    rt_queue_destroy(q);
    setenv("RT_CPU_PLACEMENT", "none", 1);
    q = cpu_queue(cpu, 2);
    assert_int_equal(threads_pinned_to(ids[1]), before);                      /* topo-3.3 */
    rt_queue_destroy(q);
    unsetenv("RT_CPU_PLACEMENT");
    setenv("HWLOC_XMLFILE", INTEL, 1); /* a recorded machine's ids are never pinned to */
    q = cpu_queue(cpu, 2);
    assert_int_equal(threads_pinned_to(ids[1]), before);                      /* topo-3.4 */
    rt_queue_destroy(q);
}

//===--- topo-4: the default device order and each device's NUMA node ---===//

/* A registry over mockgpu (devices with the given memory and PCI ids),
 * the fake plugin (one software device) and the CPU plugin. */
static rt_registry_t *mock_registry(const char *memory, const char *pci) {
    char dir[PATH_SIZE], path[4 * PATH_SIZE];
    assert_non_null(realpath(tu_build_dir(), dir));
    snprintf(path, sizeof path, "%s/tests/plugins/mockgpu:%s/tests/plugins:%s/lib/rt-plugins", dir,
             dir, dir);
    setenv("RT_MOCKGPU_COUNT", "4", 1);
    setenv("RT_MOCKGPU_MEMORY", memory, 1);
    setenv("RT_MOCKGPU_PCI", pci, 1);
    setenv("RT_PLUGINS", "mockgpu,fake,cpu", 1);
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = path};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&o, &reg), RT_OK);
    if (rt_registry_device_by_name(reg, "mockgpu3") == NULL) fail_msg("mockgpu did not load");
    return reg;
}

static void expect_order(const rt_registry_t *reg, const char *const *names, int32_t n,
                         const char *check) {
    assert_int_equal(rt_registry_device_count(reg), n);
    for (int32_t i = 0; i < n; i++) {
        const char *got = rt_device_name(rt_registry_device(reg, i));
        if (strcmp(got, names[i]) != 0)
            fail_msg("%s: device %d is %s, expected %s", check, (int)i, got, names[i]);
    }
}

static void test_device_order(void **state) {
    (void)state;
    rt_registry_t *reg = mock_registry("1G,4G,2G,4G", "0002:01:00.0,0003:01:00.0,000a:01:00.0,"
                                       "000b:01:00.0");
    /* Discrete GPUs by free memory (ties by index), the CPU, then the software fake0. */
    expect_order(reg, (const char *const[]){"mockgpu1", "mockgpu3", "mockgpu2", "mockgpu0",
                                            "cpu0", "fake0"}, 6, "topo-4.1");
    rt_device_t *gpu2 = rt_registry_device_by_name(reg, "mockgpu2");          /* topo-4.2 */
    assert_ptr_equal(rt_registry_device(reg, 2), gpu2);
    rt_device_props_t p = {.struct_size = sizeof p};
    assert_int_equal(rt_device_get_props(gpu2, &p), RT_OK);
    assert_string_equal(p.pci_bus_id, "000a:01:00.0");
    rt_registry_destroy(reg);

    setenv("RT_DEVICE_ORDER", "plugin", 1);
    reg = mock_registry("1G,4G,2G,4G", "");
    expect_order(reg, (const char *const[]){"cpu0", "fake0", "mockgpu0", "mockgpu1", "mockgpu2",
                                            "mockgpu3"}, 6, "topo-4.3");
    rt_registry_destroy(reg);
}

static void expect_numa(const rt_registry_t *reg, const char *name, int32_t node,
                        const char *check) {
    const int32_t got = rt_device_numa_node(rt_registry_device_by_name(reg, name));
    if (got != node)
        fail_msg("%s: %s on NUMA node %d, expected %d", check, name, (int)got, (int)node);
}

static void test_device_numa(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    setenv("HWLOC_XMLFILE", POWER8, 1);
    rt_registry_t *reg = mock_registry("1G", "0002:01:00.0,0003:01:00.0,000a:01:00.0,"
                                       "000b:01:00.0");
    expect_numa(reg, "mockgpu0", 0, "topo-4.4");
    expect_numa(reg, "mockgpu1", 0, "topo-4.4");
    expect_numa(reg, "mockgpu2", 1, "topo-4.4");
    expect_numa(reg, "mockgpu3", 1, "topo-4.4");
    expect_numa(reg, "cpu0", -1, "topo-4.5");      /* no PCI bus id */
    expect_numa(reg, "fake0", -1, "topo-4.5");
    int32_t ids[16], n = 0;
    rt_device_t *gpu3 = rt_registry_device_by_name(reg, "mockgpu3");
    assert_int_equal(rt_device_numa_cpus(gpu3, 16, ids, &n), RT_OK);           /* topo-4.6 */
    assert_int_equal(n, 8);
    expect_ids(ids, (const int32_t[]){80, 81, 88, 89}, 4, "topo-4.6");
    assert_int_equal(rt_device_numa_cpus(rt_registry_device_by_name(reg, "cpu0"), 16, ids, &n),
                     RT_ERR_NOT_FOUND);                                        /* topo-4.7 */
    /* A queue of a placed device gets the placement record (the mock hands
     * it to the CPU plugin, which skips it). topo-4.8 */
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(gpu3, NULL, &q), RT_OK);
    rt_queue_destroy(q);
    rt_registry_destroy(reg);

    setenv("HWLOC_XMLFILE", INTEL, 1); /* another machine, the same process */
    reg = mock_registry("1G", "0000:03:00.0,0000:83:00.0,0000:84:00.0,0000:99:00.0");
    expect_numa(reg, "mockgpu0", 0, "topo-4.9");
    expect_numa(reg, "mockgpu1", 1, "topo-4.9");
    expect_numa(reg, "mockgpu2", 1, "topo-4.9");
    expect_numa(reg, "mockgpu3", -1, "topo-4.10"); /* not in the topology */
    rt_registry_destroy(reg);
}

//===--- topo-5: rt-devices explains ---===//


static char *rt_devices(const char *args) {
    char dir[PATH_SIZE], cmd[3 * PATH_SIZE];
    assert_non_null(realpath(tu_build_dir(), dir));
    snprintf(cmd, sizeof cmd, "RT_PLUGIN_PATH='%s/tests/plugins/mockgpu' RT_PLUGINS=mockgpu,cpu "
             "RT_MOCKGPU_COUNT=2 RT_MOCKGPU_MEMORY=1G,3G RT_MOCKGPU_PCI=0002:01:00.0,000b:01:00.0 "
             "HWLOC_XMLFILE=" POWER8 " '%s/bin/rt-devices' %s 2>&1", dir, dir, args);
    int status;
    char *out = tu_run_capture(cmd, &status);
    assert_int_equal(status, 0);
    return out;
}

static void test_rt_devices(void **state) {
    (void)state;
    if (!have_hwloc()) skip();
    char *out = rt_devices("");
    tu_expect_contains(out, "NUMA node: 1 (PCI 000b:01:00.0 is attached under it; its PUs "
                    "80-81,88-89,96-97,104-105)", "topo-5.1");
    tu_expect_contains(out, "[0] mockgpu1     discrete GPU, 3.0 GiB free", "topo-5.2");
    tu_expect_contains(out, "[2] cpu0         CPU, after every GPU and accelerator", "topo-5.3");
    tu_expect_contains(out, "placement compact, the default", "topo-5.4");
    tu_expect_contains(out, "0,8,16,24,1,9,17,25,80,88,96,104,81,89,97,105", "topo-5.5");
    tu_expect_contains(out, "a recorded topology: shown, never pinned", "topo-5.6");
    free(out);
    out = rt_devices("--json");
    tu_expect_contains(out, "\"schema_version\": 1", "topo-5.7");
    tu_expect_contains(out, "\"numa_node\": 1, \"numa_reason\": \"PCI 000b:01:00.0 is attached "
                    "under it\", \"numa_cpus\": [80, 81, 88, 89, 96, 97, 104, 105]", "topo-5.8");
    tu_expect_contains(out, "\"order_reason\": \"discrete GPU, 3.0 GiB free\"", "topo-5.9");
    tu_expect_contains(out, "\"device_order\": \"kind\", \"cpu_threads\": {\"placement\": "
                    "\"compact\", \"from_environment\": false, \"applied\": false, \"cpu_ids\": "
                    "[0, 8, 16, 24, 1, 9, 17, 25, 80,", "topo-5.10");
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_numa_of_gpus, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_compact, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_spread_and_none, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_default_placement, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_queue_pinning, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_device_order, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_device_numa, reset_env, reset_env),
        cmocka_unit_test_setup_teardown(test_rt_devices, reset_env, reset_env),
    };
    return cmocka_run_group_tests_name("topo", tests, NULL, NULL);
}
