/* SPDX-License-Identifier: MIT */
/* mtl_objc.h: the little of the Objective-C runtime, Foundation and Metal
 * that the Metal plugin uses, declared here so that the plugin is plain C11
 * and compiles on Linux against GNU's libobjc headers as well as on macOS
 * against Apple's (no SDK headers of Metal or Foundation are included).
 *
 * Why C and not Objective-C: the plugin then builds with the project's one
 * C compiler and warning list, on Linux too, where CI compiles and links
 * every file of it; the price is that every message is sent through a
 * typed cast, which this header keeps in one macro.
 *
 * A message is RT_OBJC(RET (*)(id, SEL, ARGS...), receiver, "selector:",
 * args...): it looks up the implementation (objc_msgSend on Apple's
 * runtime, objc_msg_lookup on GNU's), casts it to the method's exact C type
 * and calls it. No method used here returns a struct or a floating-point
 * value, so objc_msgSend serves on arm64 and x86_64 alike (no _stret or
 * _fpret variant is needed). Objects named "new..."/"alloc" are owned
 * (+1) and released with rt_objc_release; others are autoreleased, so
 * every function that receives them runs inside rt_objc_pool_push/pop.
 *
 * The Metal enumerations are Apple's values (MTLResourceOptions,
 * MTLDataType, MTLCommandBufferStatus), written here by hand: a wrong one
 * is a bug only a Mac finds (tests/device/metal.sh). */
#ifndef RT_MTL_OBJC_H
#define RT_MTL_OBJC_H

#include <objc/runtime.h>
#include <objc/message.h>
#include <stddef.h>
#include <stdint.h>

//===--- the runtime ---===//

typedef unsigned long NSUInteger; /* 64-bit Apple platforms and LP64 Linux alike */

/* The implementation of sel for obj, as a generic function pointer. */
static inline void (*rt_objc_imp(id obj, SEL sel))(void) {
#if defined(__APPLE__)
    (void)obj;
    (void)sel;
    return (void (*)(void))objc_msgSend;
#else
    return (void (*)(void))objc_msg_lookup(obj, sel);
#endif
}

#define RT_OBJC(type, obj, name, ...)                                              \
    ((type)rt_objc_imp((id)(obj), sel_registerName(name)))((id)(obj), sel_registerName(name), \
                                                           ##__VA_ARGS__)

/* Autorelease pools, through the runtime's C entry points (Apple's libobjc
 * exports them; GNU's runtime has no autorelease, so they do nothing). */
#if defined(__APPLE__)
void *objc_autoreleasePoolPush(void);
void objc_autoreleasePoolPop(void *pool);
static inline void *rt_objc_pool_push(void) { return objc_autoreleasePoolPush(); }
static inline void rt_objc_pool_pop(void *pool) { objc_autoreleasePoolPop(pool); }
#else
static inline void *rt_objc_pool_push(void) { return NULL; }
static inline void rt_objc_pool_pop(void *pool) { (void)pool; }
#endif

/* The usual shapes of a message. */
static inline id rt_objc_id(id obj, const char *name) { return RT_OBJC(id (*)(id, SEL), obj, name); }
static inline NSUInteger rt_objc_uint(id obj, const char *name) {
    return RT_OBJC(NSUInteger (*)(id, SEL), obj, name);
}
static inline uint64_t rt_objc_u64(id obj, const char *name) {
    return RT_OBJC(uint64_t (*)(id, SEL), obj, name);
}
static inline BOOL rt_objc_bool(id obj, const char *name) { return RT_OBJC(BOOL (*)(id, SEL), obj, name); }
static inline void *rt_objc_ptr(id obj, const char *name) { return RT_OBJC(void *(*)(id, SEL), obj, name); }
static inline void rt_objc_void(id obj, const char *name) { RT_OBJC(void (*)(id, SEL), obj, name); }
static inline void rt_objc_release(id obj) {
    if (obj) rt_objc_void(obj, "release");
}
static inline id rt_objc_retain(id obj) { return obj ? rt_objc_id(obj, "retain") : obj; }
static inline id rt_objc_class(const char *name) { return (id)objc_getClass(name); }

//===--- Foundation ---===//

typedef struct rt_ns_range {
    NSUInteger location, length;
} NSRange;

/* A new NSString (+1) holding a copy of s, or nil. */
static inline id rt_ns_string(const char *s) {
    id str = rt_objc_id(rt_objc_class("NSString"), "alloc");
    return RT_OBJC(id (*)(id, SEL, const char *), str, "initWithUTF8String:", s);
}

/* The UTF-8 text of an NSString (borrowed), "" for nil. */
static inline const char *rt_ns_cstr(id str) {
    const char *s = str ? RT_OBJC(const char *(*)(id, SEL), str, "UTF8String") : NULL;
    return s ? s : "";
}

/* An NSError's localizedDescription, "" for nil. */
static inline const char *rt_ns_error_text(id err) {
    return err ? rt_ns_cstr(rt_objc_id(err, "localizedDescription")) : "";
}

//===--- Metal ---===//

typedef struct rt_mtl_size {
    NSUInteger width, height, depth;
} MTLSize;

enum {
    MTLResourceStorageModeShared = 0u << 4,
    MTLResourceStorageModePrivate = 2u << 4,
    MTLResourceHazardTrackingModeDefault = 0u << 8
};

enum { MTLDataTypeUInt = 33 };

enum {
    MTLCommandBufferStatusCompleted = 4,
    MTLCommandBufferStatusError = 5
};

/* Every Metal device of the machine, an NSArray (+1): Metal.framework. */
extern id MTLCopyAllDevices(void);

#endif /* RT_MTL_OBJC_H */
