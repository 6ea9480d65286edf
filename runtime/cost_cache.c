/* SPDX-License-Identifier: MIT */
/* cost_cache.c: rt_device_speed (abi/rt_sched.h), a device's speed figures
 * kept between runs so that calibration (cost_measure.c) runs once per
 * device. The cache is $XDG_CACHE_HOME/rt (else $HOME/.cache/rt), one
 * small text file per device: its name is the rt device name and a hash
 * of what makes the figures valid (the plugin's name and version, the
 * device's model name, its description, which carries the driver version,
 * and its PCI id or UUID), so a new driver or plugin measures again. The
 * file holds the figures on one line and that key on the next, which a
 * read compares, so a hash collision cannot hand over another device's
 * figures; the figures are the three of rt_device_speed_t and the prompt
 * figure (rt_device_prompt_speed) and the in-cache streaming figure
 * (rt_cost_cache_gain), and a file with fewer is measured again. The key names the calibration's format (CC_FORMAT), which grows
 * whenever what the kernels measure changes, so older figures are
 * measured again rather than trusted. Files are written through out_file.h (temporary file, rename);
 * a cache that cannot be read or written is only a debug message. A
 * plugin's own figures (rt_device_ext_speed_t) come before both, unless
 * the caller asks for a measurement. */
#include "cost_measure.h"
#include "device_impl.h"
#include "os.h"
#include "out_file.h"
#include "plugin_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define CC_PATH 4096
/* 2: the decode product past the last-level cache and one in it, Q4_0 weights. */
#define CC_FORMAT 2

/* What the figures depend on, one line. */
static void cc_key(const rt_device_t *dev, char *key, size_t size) {
    const rt_device_props_t *p = &dev->props;
    char uuid[33] = "";
    for (int i = 0; p->has_uuid && i < 16; i++) snprintf(uuid + 2 * i, 3, "%02x", p->uuid[i]);
    const char *version = dev->plugin->desc.version ? dev->plugin->desc.version : "";
    snprintf(key, size, "format=%d plugin=%s/%s device=%s driver=%s pci=%s uuid=%s", CC_FORMAT,
             rt_device_plugin_name(dev), version, p->name, p->description, p->pci_bus_id, uuid);
    for (char *c = key; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

static uint64_t cc_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* The cache directory, created; false when there is none. */
static bool cc_dir(char *dir, size_t size) {
    const char *xdg = rt_secure_getenv("XDG_CACHE_HOME"), *home = rt_secure_getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(dir, size, "%s", xdg);
    else if (home && home[0] == '/') n = snprintf(dir, size, "%s/.cache", home);
    else return false;
    if (n < 0 || (size_t)n + 4 >= size) return false;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
    strcat(dir, "/rt");
    return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

static bool cc_path(const rt_device_t *dev, const char *key, char *path, size_t size) {
    char dir[CC_PATH];
    if (!cc_dir(dir, sizeof dir)) return false;
    const int n = snprintf(path, size, "%s/speed-%s-%016llx.txt", dir, rt_device_name(dev),
                           (unsigned long long)cc_hash(key));
    return n > 0 && (size_t)n < size;
}

typedef rt_cost_figures_t cc_figures_t;

static bool cc_read(const char *path, const char *key, cc_figures_t *out) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[1024];
    cc_figures_t v;
    rt_device_speed_t *s = &v.s;
    bool ok = fscanf(f, "%lg %lg %lg %lg %lg\n", &s->bytes_per_s, &s->layer_s, &s->copy_in_s,
                     &v.prompt_bytes_per_s, &v.cached_bytes_per_s) == 5 &&
              fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (ok) line[strcspn(line, "\n")] = '\0';
    ok = ok && strcmp(line, key) == 0 && s->bytes_per_s > 0 && s->layer_s >= 0 &&
         s->copy_in_s >= 0 && v.prompt_bytes_per_s > 0 && v.cached_bytes_per_s > 0;
    if (ok) *out = v;
    return ok;
}

static void cc_write(const char *path, const char *key, const cc_figures_t *v) {
    const rt_device_speed_t *s = &v->s;
    rt_out_file_t of;
    if (rt_out_file_open(&of, path, NULL) != 0) {
        rt_log(RT_LOG_DEBUG, "speed cache: %s", of.error);
        return;
    }
    fprintf(of.f, "%.6g %.6g %.6g %.6g %.6g\n%s\n", s->bytes_per_s, s->layer_s, s->copy_in_s,
            v->prompt_bytes_per_s, v->cached_bytes_per_s, key);
    if (rt_out_file_commit(&of) != 0) rt_log(RT_LOG_DEBUG, "speed cache: %s", of.error);
}

/* The plugin's figures; false when it has none for dev. */
static bool cc_reported(const rt_device_t *dev, rt_device_speed_t *out) {
    if (dev->speed.get_speed == NULL) return false;
    rt_device_speed_t s = {0};
    if (dev->speed.get_speed(dev->handle, &s.bytes_per_s, &s.layer_s, &s.copy_in_s) != RT_OK)
        return false;
    if (!(s.bytes_per_s > 0 && s.layer_s >= 0 && s.copy_in_s >= 0)) {
        rt_log(RT_LOG_WARN, "%s: the plugin's speed figures are not usable; measuring",
               rt_device_name(dev));
        return false;
    }
    *out = s;
    return true;
}

/* The cached figures, else measured (and cached). */
static rt_status_t cc_figures(rt_device_t *dev, bool refresh, cc_figures_t *out) {
    char key[768], path[CC_PATH];
    cc_key(dev, key, sizeof key);
    const bool cached = cc_path(dev, key, path, sizeof path);
    if (cached && !refresh && cc_read(path, key, out)) return RT_OK;
    const rt_status_t st = rt_cost_measure(dev, out);
    if (st == RT_OK && cached) cc_write(path, key, out);
    return st;
}

rt_status_t rt_device_speed(rt_device_t *dev, bool refresh, rt_device_speed_t *out) {
    RT_ARMOR(dev != NULL && out != NULL);
    if (!refresh && cc_reported(dev, out)) return RT_OK;
    cc_figures_t v;
    const rt_status_t st = cc_figures(dev, refresh, &v);
    *out = st == RT_OK ? v.s : (rt_device_speed_t){0, 0, 0};
    return st;
}

rt_status_t rt_device_prompt_speed(rt_device_t *dev, bool refresh, double *out_bytes_per_s) {
    RT_ARMOR(dev != NULL && out_bytes_per_s != NULL);
    rt_device_speed_t reported;
    *out_bytes_per_s = 0;
    if (!refresh && cc_reported(dev, &reported)) return RT_OK;
    cc_figures_t v;
    const rt_status_t st = cc_figures(dev, refresh, &v);
    if (st == RT_OK) *out_bytes_per_s = v.prompt_bytes_per_s;
    return st;
}

double rt_cost_cache_gain(rt_device_t *dev) {
    rt_device_speed_t reported;
    cc_figures_t v;
    if (dev == NULL || cc_reported(dev, &reported) || cc_figures(dev, false, &v) != RT_OK) return 1;
    const double gain = v.cached_bytes_per_s / v.s.bytes_per_s;
    return gain > 1 ? gain : 1;
}
