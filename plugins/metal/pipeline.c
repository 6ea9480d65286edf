/* SPDX-License-Identifier: MIT */
/* pipeline.c: the Metal plugin's libraries and compute pipelines. At
 * device start every embedded MSL translation (tools/embed_msl.sh) is
 * compiled with newLibraryWithSource, so a shader Metal rejects shows at
 * start-up, naming the shader, and never in the middle of a graph. A
 * pipeline is one library's main0 specialised with the RT_VK_N_SPEC
 * function constants the Vulkan plugin's op builders chose (workgroup size,
 * op, the four bindings' element types, one extra: the binding convention
 * in mtl_impl.h); pipelines are made on first use and kept for the
 * device's life. */
#include "mtl_impl.h"

#include <string.h>

//===--- libraries ---===//

/* One shader's library (+1), or an error naming it with Metal's reason. */
static rt_status_t mtl_library_create(rt_mtl_device_t *dev, uint32_t shader, id *out) {
    const rt_mtl_msl_t *msl = &rt_mtl_msl_table[shader];
    id source = rt_ns_string(msl->source);
    id err = nil;
    *out = source ? RT_OBJC(id (*)(id, SEL, id, id, id *), dev->device,
                            "newLibraryWithSource:options:error:", source, nil, &err)
                  : nil;
    rt_objc_release(source);
    if (*out) return RT_OK;
    /* Logged too: the device is then left out, and Metal's compiler
     * message is what a bug report about a translated shader needs. */
    dev->host->log(RT_LOG_ERROR, "metal%u: shader %s does not compile: %s", dev->index, msl->name,
                   rt_ns_error_text(err));
    return dev->host->set_error(RT_ERR_DEVICE, "%s: metal%u: shader %s does not compile: %s",
                                __func__, dev->index, msl->name, rt_ns_error_text(err));
}

rt_status_t rt_mtl_libraries_create(rt_mtl_device_t *dev) {
    dev->libraries = rt_vk_alloc(dev->host, rt_mtl_msl_count * sizeof dev->libraries[0]);
    if (!dev->libraries) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    rt_status_t st = RT_OK;
    void *pool = rt_objc_pool_push();
    for (uint32_t i = 0; st == RT_OK && i < rt_mtl_msl_count; i++)
        st = mtl_library_create(dev, i, &dev->libraries[i]);
    rt_objc_pool_pop(pool);
    return st;
}

//===--- pipelines ---===//

static uint32_t mtl_shader_find(const char *name) {
    for (uint32_t i = 0; i < rt_mtl_msl_count; i++)
        if (strcmp(rt_mtl_msl_table[i].name, name) == 0) return i;
    return UINT32_MAX;
}

static const rt_mtl_pipeline_t *mtl_pipeline_find(const rt_mtl_device_t *dev, uint32_t shader,
                                                  const uint32_t spec[RT_VK_N_SPEC]) {
    for (uint32_t i = 0; i < dev->n_pipelines; i++) {
        const rt_mtl_pipeline_t *p = &dev->pipelines[i];
        if (p->shader == shader && memcmp(p->spec, spec, sizeof p->spec) == 0) return p;
    }
    return NULL;
}

/* main0 of the shader's library with the function constants (+1). */
static id mtl_function_create(const rt_mtl_device_t *dev, uint32_t shader,
                              const uint32_t spec[RT_VK_N_SPEC], id *out_err) {
    id values = rt_objc_id(rt_objc_id(rt_objc_class("MTLFunctionConstantValues"), "alloc"), "init");
    for (NSUInteger i = 0; i < RT_VK_N_SPEC; i++)
        RT_OBJC(void (*)(id, SEL, const void *, NSUInteger, NSUInteger), values,
                "setConstantValue:type:atIndex:", &spec[i], (NSUInteger)MTLDataTypeUInt, i);
    id name = rt_ns_string("main0");
    id fn = RT_OBJC(id (*)(id, SEL, id, id, id *), dev->libraries[shader],
                    "newFunctionWithName:constantValues:error:", name, values, out_err);
    rt_objc_release(name);
    rt_objc_release(values);
    return fn;
}

static rt_status_t mtl_pipeline_create(rt_mtl_device_t *dev, uint32_t shader,
                                       const uint32_t spec[RT_VK_N_SPEC], rt_mtl_pipeline_t *out) {
    id err = nil;
    id fn = mtl_function_create(dev, shader, spec, &err);
    id state = fn ? RT_OBJC(id (*)(id, SEL, id, id *), dev->device,
                            "newComputePipelineStateWithFunction:error:", fn, &err)
                  : nil;
    rt_objc_release(fn);
    if (!state)
        return dev->host->set_error(RT_ERR_DEVICE, "%s: metal%u: no pipeline for %s (op %u): %s",
                                    __func__, dev->index, rt_mtl_msl_table[shader].name,
                                    spec[RT_VK_SPEC_OP], rt_ns_error_text(err));
    out->shader = shader;
    memcpy(out->spec, spec, sizeof out->spec);
    out->state = state;
    out->max_threads = rt_objc_uint(state, "maxTotalThreadsPerThreadgroup");
    return RT_OK;
}

static rt_status_t mtl_pipeline_add(rt_mtl_device_t *dev, uint32_t shader,
                                    const uint32_t spec[RT_VK_N_SPEC],
                                    const rt_mtl_pipeline_t **out) {
    if (!rt_vk_grow(dev->host, (void **)&dev->pipelines, &dev->cap_pipelines,
                     dev->n_pipelines + 1, sizeof dev->pipelines[0]))
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    void *pool = rt_objc_pool_push();
    const rt_status_t st = mtl_pipeline_create(dev, shader, spec, &dev->pipelines[dev->n_pipelines]);
    rt_objc_pool_pop(pool);
    if (st == RT_OK) *out = &dev->pipelines[dev->n_pipelines++];
    return st;
}

/* The pipeline is copied out under the lock: the array may grow (and
 * move) as another queue adds one; the state object stays until the
 * device goes. */
rt_status_t rt_mtl_pipeline_get(rt_mtl_device_t *dev, const char *name,
                                const uint32_t spec[RT_VK_N_SPEC], rt_mtl_pipeline_t *out_pipeline) {
    memset(out_pipeline, 0, sizeof *out_pipeline);
    const uint32_t shader = mtl_shader_find(name);
    if (shader == UINT32_MAX)
        return dev->host->set_error(RT_ERR_INTERNAL, "%s: no shader named %s", __func__, name);
    rt_plugin_mutex_lock(&dev->pipe_lock);
    const rt_mtl_pipeline_t *p = mtl_pipeline_find(dev, shader, spec);
    const rt_status_t st = p ? RT_OK : mtl_pipeline_add(dev, shader, spec, &p);
    if (st == RT_OK) *out_pipeline = *p;
    rt_plugin_mutex_unlock(&dev->pipe_lock);
    return st;
}

void rt_mtl_pipelines_destroy(rt_mtl_device_t *dev) {
    for (uint32_t i = 0; i < dev->n_pipelines; i++) rt_objc_release(dev->pipelines[i].state);
    rt_vk_free(dev->host, dev->pipelines, dev->cap_pipelines * sizeof dev->pipelines[0]);
    dev->pipelines = NULL;
    dev->n_pipelines = dev->cap_pipelines = 0;
    for (uint32_t i = 0; dev->libraries && i < rt_mtl_msl_count; i++)
        rt_objc_release(dev->libraries[i]);
    rt_vk_free(dev->host, dev->libraries, rt_mtl_msl_count * sizeof dev->libraries[0]);
    dev->libraries = NULL;
}
