/* SPDX-License-Identifier: MIT */
/* plugin_probe.h: starting a plugin in a child process before the tool
 * loads it (rt-devices --probe). A plugin that crashes, aborts, hangs or
 * exits while it is opened, queried or created takes only the child with
 * it; the registry then records it as refused, with the file, the signal or
 * exit status and the last step the child logged, and loads the others. */
#ifndef RT_PLUGIN_PROBE_H
#define RT_PLUGIN_PROBE_H

#include "../abi/rt.h"

typedef struct rt_probe {
    double timeout_s; /* a child still running after this long is killed; > 0 */
} rt_probe_t;

/* An rt_plugin_admit_fn (rt.h): user_data is an rt_probe_t. RT_OK when the
 * child started the plugin and came back (whether or not it loaded: the
 * registry then says why itself); RT_ERR_DEVICE with the reason when the
 * child died, exited or ran out of time. */
rt_status_t rt_probe_admit(void *user_data, const char *path, char *reason, size_t reason_size);

#endif /* RT_PLUGIN_PROBE_H */
