/* SPDX-License-Identifier: MIT */
/* metal_fake.c: see metal_fake.h. Every object is an instance of one of
 * three root classes made at load time through GNU's runtime API (NSString
 * and MTLFunctionConstantValues, which the plugin looks up by name, and
 * RtFake for the rest), all with the same methods, each a C function on
 * the object's fake_t. A selector the plugin sends that no Metal object
 * answers reaches the runtime's "does not recognize" abort, so a
 * misspelt selector fails the test. Single-threaded, as test-metal-fake. */
#include "metal_fake.h"

#include "../../plugins/metal/mtl_objc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FK_ARRAY, FK_STRING, FK_CONSTANTS, FK_DEVICE, FK_BUFFER, FK_QUEUE, FK_CMD, FK_BLIT,
       FK_COMPUTE, FK_LIBRARY, FK_FUNCTION, FK_PIPELINE, FK_EVENT };

#define FAKE_MAX_OPS 8

typedef struct fake_op {
    id src, dst;                  /* copy when src, else fill dst */
    size_t src_off, dst_off, size;
    uint8_t value;
} fake_op_t;

typedef struct fake {
    int kind;
    long refs;
    char *text;                   /* strings: the text; libraries: the source */
    unsigned char *mem;           /* buffers: the bytes */
    size_t size;                  /* buffers: bytes */
    bool shared, borrowed;        /* buffers: contents visible; mem not ours */
    uint64_t value;               /* events: signalled; cmd: value to signal */
    id item, event, cmd;          /* arrays: the device; cmd: the event; encoders: their cmd */
    fake_op_t ops[FAKE_MAX_OPS];  /* cmd: blits run at commit */
    int n_ops;
    uint32_t spec[16];            /* constants, functions and pipelines */
} fake_t;

static rt_fake_metal_stats_t stats;
static bool unified = true;
static Class cls_fake, cls_string, cls_constants;
static id autoreleased[4096];
static int n_autoreleased;
static size_t allocated;          /* bytes of live buffers */

rt_fake_metal_stats_t *rt_fake_metal_stats(void) { return &stats; }
void rt_fake_metal_set_unified(bool u) { unified = u; }

static fake_t *F(id obj) { return object_getIndexedIvars(obj); }

static void fake_die(const char *what, id obj) {
    fprintf(stderr, "metal_fake: %s (object kind %d)\n", what, obj ? F(obj)->kind : -1);
    abort();
}

static void fake_want(id obj, int kind, const char *what) {
    if (!obj || F(obj)->kind != kind) fake_die(what, obj);
}

static id fake_new(Class cls, int kind) {
    id obj = class_createInstance(cls, sizeof(fake_t));
    memset(F(obj), 0, sizeof(fake_t));
    F(obj)->kind = kind;
    F(obj)->refs = 1;
    stats.live++;
    return obj;
}

/* An object the caller does not own: the next drain releases it. */
static id fake_autorelease(id obj) {
    if (n_autoreleased == (int)(sizeof autoreleased / sizeof autoreleased[0]))
        fake_die("too many autoreleased objects", obj);
    autoreleased[n_autoreleased++] = obj;
    return obj;
}

static void fake_release(id obj);

static void fake_free(id obj) {
    fake_t *f = F(obj);
    free(f->text);
    if (f->kind == FK_BUFFER) allocated -= f->size;
    if (!f->borrowed) free(f->mem);
    if (f->item) fake_release(f->item);
    if (f->event) fake_release(f->event);
    object_dispose(obj);
    stats.live--;
}

static void fake_release(id obj) {
    if (F(obj)->refs <= 0) fake_die("released once too often", obj);
    if (--F(obj)->refs == 0) fake_free(obj);
}

void rt_fake_metal_drain(void) {
    for (int i = 0; i < n_autoreleased; i++) fake_release(autoreleased[i]);
    n_autoreleased = 0;
}

void *rt_fake_metal_buffer_bytes(void *buffer) { return F((id)buffer)->mem; }

//===--- every object ---===//

static id m_retain(id self, SEL s) {
    (void)s;
    F(self)->refs++;
    return self;
}

static void m_release(id self, SEL s) {
    (void)s;
    fake_release(self);
}

static id m_alloc(id self, SEL s) {
    (void)s;
    return fake_new((Class)self, (Class)self == cls_string ? FK_STRING : FK_CONSTANTS);
}

static id m_init(id self, SEL s) {
    (void)s;
    return self;
}

//===--- Foundation ---===//

static NSUInteger m_count(id self, SEL s) {
    (void)s;
    fake_want(self, FK_ARRAY, "count of a non-array");
    return F(self)->item ? 1 : 0;
}

static id m_object_at(id self, SEL s, NSUInteger i) {
    (void)s;
    fake_want(self, FK_ARRAY, "objectAtIndex: of a non-array");
    if (i != 0) fake_die("objectAtIndex: out of range", self);
    return F(self)->item;
}

static id m_init_utf8(id self, SEL s, const char *text) {
    (void)s;
    fake_want(self, FK_STRING, "initWithUTF8String: of a non-string");
    F(self)->text = strdup(text);
    return self;
}

static const char *m_utf8(id self, SEL s) {
    (void)s;
    fake_want(self, FK_STRING, "UTF8String of a non-string");
    return F(self)->text;
}

static id fake_string(const char *text) {
    return fake_autorelease(m_init_utf8(fake_new(cls_string, FK_STRING), NULL, text));
}

//===--- MTLFunctionConstantValues ---===//

static void m_set_constant(id self, SEL s, const void *value, NSUInteger type, NSUInteger index) {
    (void)s;
    fake_want(self, FK_CONSTANTS, "setConstantValue: of a non-constant set");
    if (type != MTLDataTypeUInt || index >= 16) fake_die("constant not a uint with index < 16", self);
    memcpy(&F(self)->spec[index], value, 4);
}

//===--- the device ---===//

static id m_name(id self, SEL s) {
    (void)s;
    fake_want(self, FK_DEVICE, "name of a non-device");
    return fake_string("Fake Metal GPU");
}

static uint64_t m_working_set(id self, SEL s) {
    (void)self;
    (void)s;
    return (uint64_t)1 << 30;
}

static NSUInteger m_allocated(id self, SEL s) {
    (void)self;
    (void)s;
    return allocated;
}

static NSUInteger m_max_buffer(id self, SEL s) {
    (void)self;
    (void)s;
    return (NSUInteger)256 << 20;
}

static uint64_t m_registry_id(id self, SEL s) {
    (void)self;
    (void)s;
    return 0x1234;
}

static BOOL m_no(id self, SEL s) {
    (void)self;
    (void)s;
    return NO;
}

static BOOL m_unified(id self, SEL s) {
    (void)s;
    fake_want(self, FK_DEVICE, "hasUnifiedMemory of a non-device");
    return unified ? YES : NO;
}

static id m_new_queue(id self, SEL s) {
    (void)s;
    fake_want(self, FK_DEVICE, "newCommandQueue of a non-device");
    return fake_new(cls_fake, FK_QUEUE);
}

static id fake_buffer(size_t size, NSUInteger options, void *borrowed) {
    id b = fake_new(cls_fake, FK_BUFFER);
    fake_t *f = F(b);
    f->size = size;
    f->shared = (options & (0xfu << 4)) == MTLResourceStorageModeShared;
    f->borrowed = borrowed != NULL;
    f->mem = borrowed ? borrowed : calloc(1, size ? size : 1);
    allocated += size;
    return b;
}

static id m_new_buffer(id self, SEL s, NSUInteger size, NSUInteger options) {
    (void)s;
    fake_want(self, FK_DEVICE, "newBufferWithLength: of a non-device");
    return fake_buffer(size, options, NULL);
}

static id m_new_buffer_bytes(id self, SEL s, const void *bytes, NSUInteger size, NSUInteger options) {
    (void)s;
    fake_want(self, FK_DEVICE, "newBufferWithBytes: of a non-device");
    id b = fake_buffer(size, options, NULL);
    memcpy(F(b)->mem, bytes, size);
    return b;
}

/* Metal's rule: page-aligned memory, a whole number of pages. */
static id m_new_buffer_nocopy(id self, SEL s, void *bytes, NSUInteger size, NSUInteger options,
                              void *deallocator) {
    (void)s;
    fake_want(self, FK_DEVICE, "newBufferWithBytesNoCopy: of a non-device");
    if ((uintptr_t)bytes % 4096 != 0 || size % 4096 != 0 || deallocator != NULL)
        fake_die("newBufferWithBytesNoCopy: not whole pages", self);
    return fake_buffer(size, options, bytes);
}

static id m_new_event(id self, SEL s) {
    (void)s;
    fake_want(self, FK_DEVICE, "newSharedEvent of a non-device");
    return fake_new(cls_fake, FK_EVENT);
}

static id m_new_library(id self, SEL s, id source, id options, id *error) {
    (void)s;
    (void)options;
    fake_want(self, FK_DEVICE, "newLibraryWithSource: of a non-device");
    fake_want(source, FK_STRING, "newLibraryWithSource: with a non-string");
    *error = nil;
    if (!strstr(F(source)->text, "kernel void main0(")) fake_die("MSL without main0", source);
    id lib = fake_new(cls_fake, FK_LIBRARY);
    F(lib)->text = strdup(F(source)->text);
    stats.libraries++;
    return lib;
}

static id m_new_pipeline(id self, SEL s, id fn, id *error) {
    (void)s;
    fake_want(self, FK_DEVICE, "newComputePipelineStateWithFunction: of a non-device");
    fake_want(fn, FK_FUNCTION, "a pipeline of a non-function");
    *error = nil;
    id p = fake_new(cls_fake, FK_PIPELINE);
    memcpy(F(p)->spec, F(fn)->spec, sizeof F(p)->spec);
    stats.pipelines++;
    return p;
}

//===--- libraries, functions, pipelines ---===//

static id m_new_function(id self, SEL s, id name, id constants, id *error) {
    (void)s;
    fake_want(self, FK_LIBRARY, "newFunctionWithName: of a non-library");
    fake_want(constants, FK_CONSTANTS, "function constants of another kind");
    *error = nil;
    if (strcmp(m_utf8(name, NULL), "main0") != 0) fake_die("a function other than main0", self);
    id fn = fake_new(cls_fake, FK_FUNCTION);
    memcpy(F(fn)->spec, F(constants)->spec, sizeof F(fn)->spec);
    return fn;
}

static NSUInteger m_max_threads(id self, SEL s) {
    (void)s;
    fake_want(self, FK_PIPELINE, "maxTotalThreadsPerThreadgroup of a non-pipeline");
    return 1024;
}

//===--- buffers ---===//

static void *m_contents(id self, SEL s) {
    (void)s;
    fake_want(self, FK_BUFFER, "contents of a non-buffer");
    return F(self)->shared ? F(self)->mem : NULL;
}

//===--- queues and command buffers ---===//

static id m_command_buffer(id self, SEL s) {
    (void)s;
    fake_want(self, FK_QUEUE, "commandBuffer of a non-queue");
    return fake_autorelease(fake_new(cls_fake, FK_CMD));
}

static id fake_encoder(id cmd, int kind) {
    fake_want(cmd, FK_CMD, "an encoder of a non-command-buffer");
    id enc = fake_new(cls_fake, kind);
    F(enc)->cmd = cmd;
    return fake_autorelease(enc);
}

static id m_compute_encoder(id self, SEL s) {
    (void)s;
    return fake_encoder(self, FK_COMPUTE);
}

static id m_blit_encoder(id self, SEL s) {
    (void)s;
    return fake_encoder(self, FK_BLIT);
}

static void m_end_encoding(id self, SEL s) {
    (void)s;
    if (F(self)->kind != FK_BLIT && F(self)->kind != FK_COMPUTE) fake_die("endEncoding", self);
}

static void fake_op_add(id enc, fake_op_t op) {
    fake_want(enc, FK_BLIT, "a blit on a non-blit encoder");
    fake_t *c = F(F(enc)->cmd);
    if (c->n_ops == FAKE_MAX_OPS) fake_die("too many blits", enc);
    if (op.dst_off + op.size > F(op.dst)->size || (op.src && op.src_off + op.size > F(op.src)->size))
        fake_die("a blit outside its buffer", enc);
    c->ops[c->n_ops++] = op;
}

static void m_copy(id self, SEL s, id src, NSUInteger src_off, id dst, NSUInteger dst_off,
                   NSUInteger size) {
    (void)s;
    fake_op_add(self, (fake_op_t){ src, dst, src_off, dst_off, size, 0 });
}

static void m_fill(id self, SEL s, id dst, NSRange range, uint8_t value) {
    (void)s;
    fake_op_add(self, (fake_op_t){ nil, dst, 0, range.location, range.length, value });
}

static void m_signal(id self, SEL s, id event, uint64_t value) {
    (void)s;
    fake_want(event, FK_EVENT, "encodeSignalEvent: of a non-event");
    F(self)->event = m_retain(event, NULL);
    F(self)->value = value;
}

static void m_wait_event(id self, SEL s, id event, uint64_t value) {
    (void)s;
    fake_want(event, FK_EVENT, "encodeWaitForEvent: of a non-event");
    /* Command buffers run at commit, in order: the value must be there. */
    if (F(event)->value < value) fake_die("a wait for a value never signalled", event);
}

static void m_commit(id self, SEL s) {
    (void)s;
    fake_t *c = F(self);
    fake_want(self, FK_CMD, "commit of a non-command-buffer");
    for (int i = 0; i < c->n_ops; i++) {
        const fake_op_t *op = &c->ops[i];
        unsigned char *dst = F(op->dst)->mem + op->dst_off;
        if (op->src) memmove(dst, F(op->src)->mem + op->src_off, op->size);
        else memset(dst, op->value, op->size);
        stats.blits++;
    }
    if (c->event) F(c->event)->value = c->value;
    stats.commits++;
}

static void m_wait(id self, SEL s) {
    (void)s;
    fake_want(self, FK_CMD, "waitUntilCompleted of a non-command-buffer");
}

static NSUInteger m_status(id self, SEL s) {
    (void)s;
    fake_want(self, FK_CMD, "status of a non-command-buffer");
    return MTLCommandBufferStatusCompleted;
}

static uint64_t m_signaled(id self, SEL s) {
    (void)s;
    fake_want(self, FK_EVENT, "signaledValue of a non-event");
    return F(self)->value;
}

//===--- compute encoders ---===//

static void m_set_pipeline(id self, SEL s, id pipeline) {
    (void)s;
    fake_want(self, FK_COMPUTE, "setComputePipelineState: of a non-compute encoder");
    fake_want(pipeline, FK_PIPELINE, "a pipeline state of another kind");
    memcpy(stats.spec, F(pipeline)->spec, sizeof stats.spec);
}

static void m_set_buffer(id self, SEL s, id buffer, NSUInteger offset, NSUInteger index) {
    (void)s;
    fake_want(self, FK_COMPUTE, "setBuffer: of a non-compute encoder");
    fake_want(buffer, FK_BUFFER, "setBuffer: with a non-buffer");
    if (index >= 5 || offset > F(buffer)->size) fake_die("setBuffer: index or offset", self);
    stats.buffers[index] = buffer;
    stats.offsets[index] = offset;
}

static void m_set_bytes(id self, SEL s, const void *bytes, NSUInteger length, NSUInteger index) {
    (void)s;
    fake_want(self, FK_COMPUTE, "setBytes: of a non-compute encoder");
    if (index != 4 || length > sizeof stats.push) fake_die("setBytes: not the push words", self);
    memcpy(stats.push, bytes, length);
    stats.push_bytes = length;
}

static void m_dispatch(id self, SEL s, MTLSize groups, MTLSize threads) {
    (void)s;
    fake_want(self, FK_COMPUTE, "a dispatch on a non-compute encoder");
    stats.groups = groups.width * groups.height * groups.depth;
    stats.threads = threads.width * threads.height * threads.depth;
    stats.dispatches++;
}

//===--- the classes, and MTLCopyAllDevices ---===//

typedef struct fake_method {
    const char *name;
    IMP imp;
} fake_method_t;

#define M(name, fn) { name, (IMP)(void (*)(void))fn }
static const fake_method_t methods[] = {
    M("retain", m_retain), M("release", m_release), M("init", m_init), M("count", m_count),
    M("objectAtIndex:", m_object_at), M("initWithUTF8String:", m_init_utf8),
    M("UTF8String", m_utf8), M("setConstantValue:type:atIndex:", m_set_constant),
    M("name", m_name), M("recommendedMaxWorkingSetSize", m_working_set),
    M("currentAllocatedSize", m_allocated), M("maxBufferLength", m_max_buffer),
    M("registryID", m_registry_id), M("isLowPower", m_no), M("hasUnifiedMemory", m_unified),
    M("newCommandQueue", m_new_queue), M("newBufferWithLength:options:", m_new_buffer),
    M("newBufferWithBytes:length:options:", m_new_buffer_bytes),
    M("newBufferWithBytesNoCopy:length:options:deallocator:", m_new_buffer_nocopy),
    M("newSharedEvent", m_new_event), M("newLibraryWithSource:options:error:", m_new_library),
    M("newComputePipelineStateWithFunction:error:", m_new_pipeline),
    M("newFunctionWithName:constantValues:error:", m_new_function),
    M("maxTotalThreadsPerThreadgroup", m_max_threads), M("contents", m_contents),
    M("commandBuffer", m_command_buffer), M("computeCommandEncoder", m_compute_encoder),
    M("blitCommandEncoder", m_blit_encoder), M("endEncoding", m_end_encoding),
    M("copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:", m_copy),
    M("fillBuffer:range:value:", m_fill), M("encodeSignalEvent:value:", m_signal),
    M("encodeWaitForEvent:value:", m_wait_event), M("commit", m_commit),
    M("waitUntilCompleted", m_wait), M("status", m_status), M("signaledValue", m_signaled),
    M("setComputePipelineState:", m_set_pipeline), M("setBuffer:offset:atIndex:", m_set_buffer),
    M("setBytes:length:atIndex:", m_set_bytes),
    M("dispatchThreadgroups:threadsPerThreadgroup:", m_dispatch),
};

static Class fake_class(const char *name) {
    Class c = objc_allocateClassPair(Nil, name, 0);
    if (!c) fake_die("cannot make a class", nil);
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        class_addMethod(c, sel_registerName(methods[i].name), methods[i].imp, "@@:");
    class_addMethod(object_getClass((id)c), sel_registerName("alloc"), (IMP)(void (*)(void))m_alloc,
                    "@@:");
    /* A root class of ours holds its isa pointer itself; the indexed
     * ivars (the fake_t) come after it. */
    if (class_getInstanceSize(c) < sizeof(Class))
        class_addIvar(c, "isa", sizeof(Class), sizeof(Class) == 8 ? 3 : 2, "#");
    objc_registerClassPair(c);
    return c;
}

RT_FAKE_METAL_API id MTLCopyAllDevices(void) {
    if (!cls_fake) {
        cls_fake = fake_class("RtFake");
        cls_string = fake_class("NSString");
        cls_constants = fake_class("MTLFunctionConstantValues");
    }
    id all = fake_new(cls_fake, FK_ARRAY);
    F(all)->item = fake_new(cls_fake, FK_DEVICE);
    return all;
}
