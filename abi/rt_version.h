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

#endif /* RT_VERSION_H */
