/* SPDX-License-Identifier: MIT */
/* metal_none.c: Metal.framework's one C entry point the Metal plugin calls,
 * for a system without Metal (Linux, where CI compiles and links the
 * plugin): no devices, so the plugin loads and reports zero devices
 * without ever sending a message to a Metal object. */
#include "../../plugins/metal/mtl_objc.h"

id MTLCopyAllDevices(void) { return nil; }
