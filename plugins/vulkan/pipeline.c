/* SPDX-License-Identifier: MIT */
/* pipeline.c: compute pipelines, made on first use. Every shader shares one
 * descriptor set layout (five storage buffers: three sources, the
 * destination and the extra source of vk_impl.h) and one pipeline layout
 * (that set plus 128 bytes of push constants), so one generic dispatch
 * path serves every op. A pipeline is one embedded SPIR-V module
 * specialised with RT_VK_N_SPEC constants (workgroup size, op, the element
 * types of the four bindings, one extra, rows, three of a kernel's own);
 * the VkPipelineCache, the layouts and each shader module are created the
 * first time a pipeline needs them. */
#include "vk_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rt_status_t vk_layouts_create(rt_vk_device_t *dev) {
    VkDescriptorSetLayoutBinding bindings[RT_VK_N_BIND + 1];
    for (uint32_t i = 0; i < RT_VK_N_BIND + 1; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i < RT_VK_N_BIND ? i : RT_VK_BIND_EXTRA,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    const VkDescriptorSetLayoutCreateInfo dinfo = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = RT_VK_N_BIND + 1,
        .pBindings = bindings,
    };
    const VkPushConstantRange push = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .size = RT_VK_PUSH_WORDS * 4,
    };
    const VkPipelineLayoutCreateInfo linfo = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &dev->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push,
    };
    const VkPipelineCacheCreateInfo cinfo = { .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO };
    const rt_host_t *host = dev->host;
    /* Each step is skipped when an earlier, failed call already made it. */
    rt_status_t st = RT_OK;
    if (!dev->set_layout)
        st = RT_VK_TRY(host, dev->fn.vkCreateDescriptorSetLayout(dev->device, &dinfo, NULL,
                                                                &dev->set_layout));
    if (st == RT_OK && !dev->pipeline_layout)
        st = RT_VK_TRY(host, dev->fn.vkCreatePipelineLayout(dev->device, &linfo, NULL,
                                                           &dev->pipeline_layout));
    if (st == RT_OK && !dev->modules) {
        dev->modules = rt_vk_alloc(host, rt_vk_spirv_count * sizeof dev->modules[0]);
        if (!dev->modules) st = host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    }
    /* Last: its presence says everything above exists. */
    if (st == RT_OK)
        st = RT_VK_TRY(host, dev->fn.vkCreatePipelineCache(dev->device, &cinfo, NULL,
                                                          &dev->pipeline_cache));
    return st;
}

static uint32_t vk_shader_find(const char *name) {
    for (uint32_t i = 0; i < rt_vk_spirv_count; i++)
        if (strcmp(rt_vk_spirv_table[i].name, name) == 0) return i;
    return UINT32_MAX;
}

static VkPipeline vk_pipeline_find(const rt_vk_device_t *dev, uint32_t shader,
                                   const uint32_t spec[RT_VK_N_SPEC]) {
    for (uint32_t i = 0; i < dev->n_pipelines; i++) {
        const rt_vk_pipeline_t *p = &dev->pipelines[i];
        if (p->shader == shader && memcmp(p->spec, spec, sizeof p->spec) == 0) return p->pipeline;
    }
    return VK_NULL_HANDLE;
}

static rt_status_t vk_module_get(rt_vk_device_t *dev, uint32_t shader) {
    if (dev->modules[shader]) return RT_OK;
    const VkShaderModuleCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = rt_vk_spirv_table[shader].size,
        .pCode = rt_vk_spirv_table[shader].code,
    };
    return RT_VK_TRY(dev->host, dev->fn.vkCreateShaderModule(dev->device, &info, NULL,
                                                            &dev->modules[shader]));
}

static rt_status_t vk_pipeline_create(rt_vk_device_t *dev, uint32_t shader,
                                      const uint32_t spec[RT_VK_N_SPEC], VkPipeline *out) {
    VkSpecializationMapEntry map[RT_VK_N_SPEC];
    for (uint32_t i = 0; i < RT_VK_N_SPEC; i++)
        map[i] = (VkSpecializationMapEntry){ .constantID = i, .offset = 4 * i, .size = 4 };
    const VkSpecializationInfo sinfo = {
        .mapEntryCount = RT_VK_N_SPEC,
        .pMapEntries = map,
        .dataSize = RT_VK_N_SPEC * 4,
        .pData = spec,
    };
    const VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = dev->modules[shader],
            .pName = "main",
            .pSpecializationInfo = &sinfo,
        },
        .layout = dev->pipeline_layout,
    };
    return RT_VK_TRY(dev->host, dev->fn.vkCreateComputePipelines(dev->device, dev->pipeline_cache,
                                                                1, &info, NULL, out));
}

static rt_status_t vk_pipeline_add(rt_vk_device_t *dev, uint32_t shader,
                                   const uint32_t spec[RT_VK_N_SPEC], VkPipeline *out) {
    if (!rt_vk_grow(dev->host, (void **)&dev->pipelines, &dev->cap_pipelines,
                    dev->n_pipelines + 1, sizeof dev->pipelines[0]))
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    rt_status_t st = vk_module_get(dev, shader);
    if (st == RT_OK) st = vk_pipeline_create(dev, shader, spec, out);
    if (st != RT_OK) return st;
    rt_vk_pipeline_t *p = &dev->pipelines[dev->n_pipelines++];
    p->shader = shader;
    memcpy(p->spec, spec, sizeof p->spec);
    p->pipeline = *out;
    return RT_OK;
}

rt_status_t rt_vk_pipeline_get(rt_vk_device_t *dev, const char *name,
                               const uint32_t spec[RT_VK_N_SPEC], VkPipeline *out_pipeline) {
    *out_pipeline = VK_NULL_HANDLE;
    const uint32_t shader = vk_shader_find(name);
    if (shader == UINT32_MAX)
        return dev->host->set_error(RT_ERR_INTERNAL, "%s: no shader named %s", __func__, name);
    rt_plugin_mutex_lock(&dev->pipe_lock);
    rt_status_t st = dev->pipeline_cache ? RT_OK : vk_layouts_create(dev);
    if (st == RT_OK) *out_pipeline = vk_pipeline_find(dev, shader, spec);
    if (st == RT_OK && !*out_pipeline) st = vk_pipeline_add(dev, shader, spec, out_pipeline);
    rt_plugin_mutex_unlock(&dev->pipe_lock);
    return st;
}

void rt_vk_pipelines_destroy(rt_vk_device_t *dev) {
    const rt_vk_device_fns_t *fn = &dev->fn;
    for (uint32_t i = 0; i < dev->n_pipelines; i++)
        fn->vkDestroyPipeline(dev->device, dev->pipelines[i].pipeline, NULL);
    rt_vk_free(dev->host, dev->pipelines, dev->cap_pipelines * sizeof dev->pipelines[0]);
    dev->pipelines = NULL;
    dev->n_pipelines = dev->cap_pipelines = 0;
    for (uint32_t i = 0; dev->modules && i < rt_vk_spirv_count; i++)
        if (dev->modules[i]) fn->vkDestroyShaderModule(dev->device, dev->modules[i], NULL);
    rt_vk_free(dev->host, dev->modules, rt_vk_spirv_count * sizeof dev->modules[0]);
    dev->modules = NULL;
    if (dev->pipeline_cache) fn->vkDestroyPipelineCache(dev->device, dev->pipeline_cache, NULL);
    if (dev->pipeline_layout) fn->vkDestroyPipelineLayout(dev->device, dev->pipeline_layout, NULL);
    if (dev->set_layout) fn->vkDestroyDescriptorSetLayout(dev->device, dev->set_layout, NULL);
    dev->pipeline_cache = VK_NULL_HANDLE;
    dev->pipeline_layout = VK_NULL_HANDLE;
    dev->set_layout = VK_NULL_HANDLE;
}

//===--- kernel shapes per device ---===//

/* Mat-vec: with subgroup arithmetic, a workgroup of a few subgroups, each
 * reducing its own rows with no barrier; ROWS rows per workgroup keep the
 * dispatch at a few hundred workgroups for a 4096-row weight. Without it,
 * one row per workgroup of 32 reduced in shared memory. A subgroup takes
 * RT_VK_MV_TEAM_ROWS rows of a float weight, or of one in blocks of 32, at
 * once, reading each piece of b (or of b's levels) once for them all (b's
 * loads are most of a mat-vec's at n > 1). RT_VULKAN_MV=WG,ROWS[,TEAM]
 * overrides them (measurements), RT_VULKAN_NO_SUBGROUP=1 takes the
 * fallback on any device (tests). The blocks of 32 read b's levels made
 * once per node (mv_levels) unless RT_VULKAN_MV_LEVELS=0 (measurements). */
#define RT_VK_MV_TEAM_ROWS 4u

static void vk_tuning_mat_vec(rt_vk_device_t *dev) {
    rt_vk_tuning_t *t = &dev->tune;
    const char *off = getenv("RT_VULKAN_NO_SUBGROUP");
    if (off && *off && strcmp(off, "0") != 0) t->subgroup_arith = false;
    const uint32_t sg = t->subgroup_size, max_wg = dev->limits.maxComputeWorkGroupInvocations;
    const bool sub = t->subgroup_arith && sg >= 4 && sg <= 128 && (sg & (sg - 1)) == 0;
    t->subgroup_arith = sub;
    t->mv_wg = sub ? (sg < 64 ? 64 : sg) : 32;
    if (t->mv_wg > max_wg) t->mv_wg = sub ? sg : 32;
    t->mv_rows = sub ? 2 * (t->mv_wg / sg) : 1;
    t->mv_team_rows = sub ? RT_VK_MV_TEAM_ROWS : 1;
    const char *levels = getenv("RT_VULKAN_MV_LEVELS");
    t->mv_levels = !(levels && strcmp(levels, "0") == 0);
    unsigned wg = 0, rows = 0, team = 0;
    const char *env = getenv("RT_VULKAN_MV");
    const int got = env ? sscanf(env, "%u,%u,%u", &wg, &rows, &team) : 0;
    if (got >= 2 && wg >= 1 && wg <= 256 && (wg & (wg - 1)) == 0 && rows >= 1 && rows <= 64) {
        t->mv_wg = wg;
        t->mv_rows = rows;
    }
    if (got == 3 && sub && team >= 1 && team <= 4) t->mv_team_rows = team;
}

/* mul_mm: an 8 x 8 register block (64 invocations) reads shared memory
 * half as often per multiply-add as 4 x 4 (256), which is what a CPU
 * running the shader (lavapipe) and a GPU short of registers per
 * invocation both want less of; 4 x 4 keeps a GPU with wide workgroups
 * busier. RT_VULKAN_MM=TM,TN overrides (4 or 8 each). */
static void vk_tuning_mat_mat(rt_vk_device_t *dev) {
    rt_vk_tuning_t *t = &dev->tune;
    const bool cpu = dev->props.kind == RT_DEVICE_KIND_SOFTWARE;
    const uint32_t max_wg = dev->limits.maxComputeWorkGroupInvocations;
    t->mm_tm = t->mm_tn = cpu || max_wg < 256 ? 8 : 4;
    unsigned tm = 0, tn = 0;
    const char *env = getenv("RT_VULKAN_MM");
    if (env && sscanf(env, "%u,%u", &tm, &tn) == 2 && (tm == 4 || tm == 8) && (tn == 4 || tn == 8)) {
        t->mm_tm = tm;
        t->mm_tn = tn;
    }
}

/* flash_attn: four or more subgroups per workgroup (the rows' softmax
 * steps run side by side, one per subgroup) of 128 invocations at least;
 * a prompt's tile of 16 queries reuses each staged key 16 times, keys in
 * tiles of 64 on a GPU (fewer barriers per key) and of 32 on a CPU running
 * the shader, whose shared memory is 32 KiB and whose cost is per
 * instruction, not per barrier. Decode's tile (no staging) is 128 keys.
 * ops_build.c shrinks the tiles a head size does not fit in shared memory.
 * Decode on a GPU splits the keys until there are 512 workgroups (a few
 * per compute unit of a large GPU) when the heads are fewer; not on a CPU
 * running the shader, whose few threads the heads alone keep busy.
 * RT_VULKAN_FA_SPLIT=G sets that count (0: never split).
 * Without subgroup arithmetic there is no kernel (fa_wg = 0).
 * RT_VULKAN_FA=WG,BR,BC overrides (measurements, tests), BC for decode too. */
static void vk_tuning_flash_attn(rt_vk_device_t *dev) {
    rt_vk_tuning_t *t = &dev->tune;
    const uint32_t sg = t->subgroup_size, max_wg = dev->limits.maxComputeWorkGroupInvocations;
    t->fa_wg = t->fa_br = t->fa_bc = t->fa_bc1 = 0;
    if (!t->subgroup_arith) return;
    uint32_t wg = 4 * sg < 128 ? 128 : 4 * sg;
    if (wg > 256) wg = 256;
    if (wg > max_wg) return;
    t->fa_wg = wg;
    t->fa_br = 16;
    t->fa_bc = dev->props.kind == RT_DEVICE_KIND_SOFTWARE ? 32 : 64;
    t->fa_bc1 = 128;
    t->fa_split_groups = dev->props.kind == RT_DEVICE_KIND_SOFTWARE ? 0 : 512;
    const char *split = getenv("RT_VULKAN_FA_SPLIT");
    if (split && *split) t->fa_split_groups = (uint32_t)strtoul(split, NULL, 10);
    unsigned w = 0, br = 0, bc = 0;
    const char *env = getenv("RT_VULKAN_FA");
    if (env && sscanf(env, "%u,%u,%u", &w, &br, &bc) == 3 && w >= sg && w <= max_wg && w % sg == 0 &&
        br >= 1 && br <= 64 && bc >= 1 && bc <= 512) {
        t->fa_wg = w;
        t->fa_br = br;
        t->fa_bc = t->fa_bc1 = bc;
    }
}

void rt_vk_tuning_choose(rt_vk_device_t *dev) {
    vk_tuning_mat_vec(dev);
    vk_tuning_mat_mat(dev);
    vk_tuning_flash_attn(dev);
}
