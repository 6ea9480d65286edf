/* SPDX-License-Identifier: MIT */
/* test-abi-layout.c: pins the layout of every struct and the value of every
 * number that crosses abi/. A failure here means a change broke the ABI
 * promise of abi/rt_base.h: grow structs at the end and bump the minor
 * version, never move, retype or renumber. */
#include "testutil.h"

#include <string.h>

#define PIN_OFFSET(type, field, off) \
    assert_int_equal(offsetof(type, field), (off))
#define PIN_SIZE(type, size) assert_int_equal(sizeof(type), (size))

/* abi-1.1: the tensor header, field by field. */
static void test_tensor_layout(void **state) {
    (void)state;
    PIN_OFFSET(rt_tensor_t, type, 0);
    PIN_OFFSET(rt_tensor_t, op, 4);
    PIN_OFFSET(rt_tensor_t, flags, 8);
    PIN_OFFSET(rt_tensor_t, reserved0, 12);
    PIN_OFFSET(rt_tensor_t, ne, 16);
    PIN_OFFSET(rt_tensor_t, nb, 48);
    PIN_OFFSET(rt_tensor_t, op_params, 80);
    PIN_OFFSET(rt_tensor_t, src, 144);
    PIN_OFFSET(rt_tensor_t, view_src, 208);
    PIN_OFFSET(rt_tensor_t, view_offs, 216);
    PIN_OFFSET(rt_tensor_t, data, 224);
    PIN_OFFSET(rt_tensor_t, buffer, 232);
    PIN_OFFSET(rt_tensor_t, extra, 240);
    PIN_OFFSET(rt_tensor_t, name, 248);
    PIN_OFFSET(rt_tensor_t, reserved, 312);
    PIN_SIZE(rt_tensor_t, 376);
    assert_int_equal(RT_MAX_DIMS, 4);
    assert_int_equal(RT_MAX_SRC, 8);
    assert_int_equal(RT_MAX_OP_PARAMS, 64);
    assert_int_equal(RT_MAX_NAME, 64);
}

/* abi-1.2: the plugin tables, 1.0 sizes and first/last slots. */
static void test_plugin_tables(void **state) {
    (void)state;
    PIN_OFFSET(rt_plugin_t, abi_version, 4);
    PIN_OFFSET(rt_plugin_t, name, 8);
    PIN_OFFSET(rt_plugin_t, flags, 32);
    PIN_OFFSET(rt_plugin_t, next, 40);
    PIN_OFFSET(rt_plugin_t, vtable, 48);
    PIN_SIZE(rt_plugin_t, 56);
    PIN_OFFSET(rt_plugin_vtable_t, destroy, 8);
    PIN_OFFSET(rt_plugin_vtable_t, create, 16);
    PIN_OFFSET(rt_plugin_vtable_t, device_count, 24);
    PIN_OFFSET(rt_plugin_vtable_t, device_get, 32);
    PIN_SIZE(rt_plugin_vtable_t, 40);
    PIN_OFFSET(rt_host_t, abi_version, 4);
    PIN_OFFSET(rt_host_t, allocator, 8);
    PIN_OFFSET(rt_host_t, log, 24);
    PIN_OFFSET(rt_host_t, set_error, 32);
    PIN_OFFSET(rt_host_t, type_traits, 40);
    PIN_OFFSET(rt_host_t, buffer_state, 72);
    PIN_OFFSET(rt_host_t, buffer_type, 88);
    PIN_SIZE(rt_host_t, 96);
    PIN_OFFSET(rt_device_vtable_t, destroy, 8);
    PIN_OFFSET(rt_device_vtable_t, get_props, 16);
    PIN_OFFSET(rt_device_vtable_t, supports_op, 40);
    PIN_OFFSET(rt_device_vtable_t, graph_compute, 72);
    PIN_OFFSET(rt_device_vtable_t, next, 88);
    PIN_SIZE(rt_device_vtable_t, 96);
    PIN_OFFSET(rt_buffer_type_desc_t, flags, 4);
    PIN_OFFSET(rt_buffer_type_desc_t, alignment, 16);
    PIN_OFFSET(rt_buffer_type_desc_t, buffer_state_size, 32);
    PIN_OFFSET(rt_buffer_type_desc_t, alloc, 48);
    PIN_OFFSET(rt_buffer_type_desc_t, buffer_vtable, 64);
    PIN_OFFSET(rt_buffer_type_desc_t, supports_tensor, 72); /* 1.1 */
    PIN_SIZE(rt_buffer_type_desc_t, 80);
    PIN_OFFSET(rt_buffer_vtable_t, destroy, 8);
    PIN_OFFSET(rt_buffer_vtable_t, set_tensor, 32);
    PIN_OFFSET(rt_buffer_vtable_t, clear, 64);
    PIN_SIZE(rt_buffer_vtable_t, 72);
    PIN_SIZE(rt_ext_header_t, 16);
    PIN_OFFSET(rt_device_ext_async_t, set_tensor_async, 16);
    PIN_OFFSET(rt_device_ext_async_t, event_synchronize, 72);
    PIN_SIZE(rt_device_ext_async_t, 80);
    PIN_OFFSET(rt_device_ext_host_ptr_t, buffer_type, 16);
    PIN_SIZE(rt_device_ext_host_ptr_t, 32);
}

/* abi-1.3: the structs devices and applications exchange. */
static void test_device_structs(void **state) {
    (void)state;
    PIN_OFFSET(rt_device_props_t, kind, 4);
    PIN_OFFSET(rt_device_props_t, name, 8);
    PIN_OFFSET(rt_device_props_t, description, 72);
    PIN_OFFSET(rt_device_props_t, memory_total, 264);
    PIN_OFFSET(rt_device_props_t, caps, 280);
    PIN_OFFSET(rt_device_props_t, pci_bus_id, 288);
    PIN_OFFSET(rt_device_props_t, uuid, 320);
    PIN_OFFSET(rt_device_props_t, has_uuid, 336);
    PIN_SIZE(rt_device_props_t, 344);
    PIN_OFFSET(rt_queue_options_t, n_threads, 4);
    PIN_OFFSET(rt_queue_options_t, cpu_ids, 8);
    PIN_OFFSET(rt_queue_options_t, next, 24);
    PIN_SIZE(rt_queue_options_t, 32);
    PIN_OFFSET(rt_type_traits_t, name, 8);
    PIN_OFFSET(rt_type_traits_t, block_size, 16);
    PIN_OFFSET(rt_type_traits_t, type_size, 24);
    PIN_SIZE(rt_type_traits_t, 32);
}

/* abi-1.4: numbers: GGUF's type ids, op codes, status codes, flags. */
static void test_numbers(void **state) {
    (void)state;
    assert_int_equal(RT_TYPE_F32, 0);
    assert_int_equal(RT_TYPE_F16, 1);
    assert_int_equal(RT_TYPE_Q4_0, 2);
    assert_int_equal(RT_TYPE_Q8_0, 8);
    assert_int_equal(RT_TYPE_I32, 26);
    assert_int_equal(RT_TYPE_BF16, 30);
    static const int ops[] = {
        RT_OP_NONE, RT_OP_VIEW, RT_OP_RESHAPE, RT_OP_PERMUTE, RT_OP_TRANSPOSE, RT_OP_CONT,
        RT_OP_CPY, RT_OP_GET_ROWS, RT_OP_ADD, RT_OP_SUB, RT_OP_MUL, RT_OP_DIV, RT_OP_SCALE,
        RT_OP_NORM, RT_OP_RMS_NORM, RT_OP_MUL_MAT, RT_OP_SOFT_MAX, RT_OP_DIAG_MASK_INF,
        RT_OP_GELU, RT_OP_SILU, RT_OP_SWIGLU, RT_OP_ROPE, RT_OP_ARGMAX,
        RT_OP_SET_ROWS, /* 1.1 */
        RT_OP_TANH,     /* 1.2 */
    };
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++) assert_int_equal(ops[i], i);
    assert_int_equal(RT_ROPE_MODE_NORMAL, 0);
    assert_int_equal(RT_ROPE_MODE_NEOX, 2);
    assert_int_equal(RT_OK, 0);
    assert_int_equal(RT_ERR_OUT_OF_MEMORY, 2);
    assert_int_equal(RT_ERR_INCOMPATIBLE, 7);
    assert_int_equal(RT_ERR_DOES_NOT_FIT, 11);
    assert_int_equal(RT_TENSOR_FLAG_INPUT, 1);
    assert_int_equal(RT_TENSOR_FLAG_OUTPUT, 2);
    assert_int_equal(RT_TENSOR_FLAG_PARAM, 4);
    assert_int_equal(RT_BUFT_FLAG_HOST, 1);
    assert_int_equal(RT_BUFT_FLAG_WEIGHTS, 2); /* 1.1 */
    assert_int_equal(RT_DEVICE_KIND_SOFTWARE, 4);
    assert_int_equal(RT_EXT_DEVICE_ASYNC, 1);
    assert_int_equal(RT_EXT_DEVICE_HOST_PTR, 2);
}

/* abi-1.5: the loaded library speaks the header's ABI. */
static void test_library_version(void **state) {
    (void)state;
    assert_int_equal(rt_abi_version(), RT_ABI_VERSION);
    assert_string_equal(rt_version_string(), RT_VERSION_STRING);
    assert_int_equal(RT_ABI_VERSION_GET_MAJOR(RT_ABI_VERSION), RT_ABI_VERSION_MAJOR);
    assert_int_equal(RT_ABI_VERSION_GET_MINOR(RT_ABI_VERSION), RT_ABI_VERSION_MINOR);
}

/* abi-1.6: RT_STRUCT_HAS reads struct_size the way older producers set it. */
static void test_struct_has(void **state) {
    (void)state;
    rt_device_props_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = (uint32_t)offsetof(rt_device_props_t, caps);
    assert_true(RT_STRUCT_HAS(&p, rt_device_props_t, memory_free));
    assert_false(RT_STRUCT_HAS(&p, rt_device_props_t, caps));
    p.struct_size = sizeof p;
    assert_true(RT_STRUCT_HAS(&p, rt_device_props_t, reserved));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_layout),  cmocka_unit_test(test_plugin_tables),
        cmocka_unit_test(test_device_structs), cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_library_version), cmocka_unit_test(test_struct_has),
    };
    return cmocka_run_group_tests_name("abi-layout", tests, NULL, NULL);
}
