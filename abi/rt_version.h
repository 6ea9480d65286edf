/* SPDX-License-Identifier: MIT */
/* rt_version.h: the one place where rt's version numbers live.
 *
 * Two numbers matter. RT_VERSION_* is the release of the library, for humans.
 * RT_ABI_VERSION is the version of the contract in abi/: plugins and
 * applications are checked against it, never against the release. */
#ifndef RT_VERSION_H
#define RT_VERSION_H

#define RT_VERSION_MAJOR 0
#define RT_VERSION_MINOR 2
#define RT_VERSION_PATCH 0
#define RT_VERSION_STRING "0.2.0"

/* ABI version as (major << 16) | minor. A major bump breaks compatibility
 * (and changes the core library's soname); a minor bump only adds. */
#define RT_ABI_VERSION_MAJOR 1
#define RT_ABI_VERSION_MINOR 3
#define RT_ABI_MAKE_VERSION(major, minor) (((unsigned)(major) << 16) | (unsigned)(minor))
#define RT_ABI_VERSION RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR)
#define RT_ABI_VERSION_GET_MAJOR(v) ((unsigned)(v) >> 16)
#define RT_ABI_VERSION_GET_MINOR(v) ((unsigned)(v) & 0xffffu)

/* The oldest plugin ABI this runtime still loads. */
#define RT_ABI_MIN RT_ABI_MAKE_VERSION(1, 0)

/* RT_ABI_MAKE_VERSION's number in a form #if can compare. */
#define RT_ABI(major, minor) ((major) * 65536 + (minor))

/* The ABI an application targets. One built against these headers for an
 * older core says so before including them:
 *
 *     #define RT_TARGET_ABI RT_ABI(1, 0)
 *     #include "rt.h"
 *
 * The headers then declare only what that release had (each later function
 * is marked `abi >= 1.N` beside it), so the application binds no later
 * symbol and starts on that release's core, and it declares itself that
 * version (rt_registry_create), so a newer core serves it as the older one
 * would. Default: these headers' own version. */
#ifndef RT_TARGET_ABI
#define RT_TARGET_ABI RT_ABI(RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR)
#endif
#if RT_TARGET_ABI < RT_ABI(1, 0) || RT_TARGET_ABI > RT_ABI(RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR)
#error "RT_TARGET_ABI: these headers declare ABI 1.0 up to their own version"
#endif
/* Whether the application targets ABI major.minor or later. */
#define RT_TARGETS(major, minor) (RT_TARGET_ABI >= RT_ABI(major, minor))

#endif /* RT_VERSION_H */
