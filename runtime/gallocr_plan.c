/* SPDX-License-Identifier: MIT */
/* gallocr_plan.c: showing a gallocr's plan to people. A text dump (one
 * line per buffer, one per tensor) and an SVG picture: one panel per
 * buffer, node index across, byte offset down, a rectangle per block over
 * its lifetime coloured by op, named inside where the name fits, with the
 * details in a <title> that browsers show on hover. Reads only what gallocr.c recorded. */
#include "gallocr_impl.h"
#include "device_impl.h"
#include "registry_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


static int32_t n_entries(const rt_gallocr_t *ga) {
    return rt_gallocr_plan_count(ga);
}

//===--- text ---===//

static void text_notes(const rt_gallocr_plan_entry_t *e, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s%s", (e->flags & RT_GALLOCR_PLAN_INPUT) ? " input" : "",
                     (e->flags & RT_GALLOCR_PLAN_OUTPUT) ? " output" : "");
    if (n < 0 || (size_t)n >= size) return;
    if (e->flags & RT_GALLOCR_PLAN_INPLACE)
        snprintf(buf + n, size - (size_t)n, " in place of %d", (int)e->inplace_of);
    else if (e->flags & RT_GALLOCR_PLAN_VIEW)
        snprintf(buf + n, size - (size_t)n, " view of %d", (int)e->base);
    else if (e->buffer_id < 0)
        snprintf(buf + n, size - (size_t)n, " not placed");
}

static void text_entry(const rt_gallocr_t *ga, int32_t p, rt_write_fn write, void *ud) {
    const rt_gallocr_plan_entry_t *e = &ga->plan[p];
    char notes[96];
    text_notes(e, notes, sizeof notes);
    rt_write_text(write, ud, "%6d %-4s %5d  %-24.24s %-13s %-5s %3d %12zu %12zu %5d %5d%s\n", (int)p,
         (e->flags & RT_GALLOCR_PLAN_LEAF) ? "leaf" : "node", (int)e->index,
         e->name[0] ? e->name : "-", rt_op_name(e->op), rt_type_name(e->type),
         (int)e->buffer_id, e->offset, e->size, (int)e->first, (int)e->last,
         notes);
}

void rt_gallocr_write_plan_text(const rt_gallocr_t *ga, rt_write_fn write, void *ud) {
    if (ga == NULL || write == NULL) return;
    rt_write_text(write, ud, "gallocr plan: %d buffers, %d leafs, %d nodes%s\n", (int)ga->n_buffers,
         (int)(ga->planned ? ga->n_leafs : 0), (int)(ga->planned ? ga->n_nodes : 0),
         ga->planned ? "" : " (nothing planned)");
    for (int32_t b = 0; b < ga->n_buffers; b++)
        rt_write_text(write, ud, "buffer %d %s: peak %zu bytes, lower bound %zu, allocated %zu\n",
             (int)b, rt_buffer_type_name(ga->bufts[b]), rt_gallocr_get_peak(ga, b),
             rt_gallocr_get_lower_bound(ga, b), rt_gallocr_get_buffer_size(ga, b));
    if (n_entries(ga) == 0) return;
    rt_write_text(write, ud, "%6s %-4s %5s  %-24s %-13s %-5s %3s %12s %12s %5s %5s %s\n", "plan", "kind",
         "index", "name", "op", "type", "buf", "offset", "size", "first", "last", "notes");
    for (int32_t p = 0; p < n_entries(ga); p++) text_entry(ga, p, write, ud);
}

//===--- SVG ---===//

enum { SVG_LEFT = 90, SVG_RIGHT = 20, SVG_PLOT_W = 1100, SVG_PLOT_H = 360, SVG_GAP = 70 };

/* Names come from the application: escape what XML would read as markup. */
static void xml_escape(const char *s, char *out, size_t size) {
    size_t n = 0;
    for (; *s != 0 && n + 7 < size; s++) {
        const char *rep = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
                        : *s == '"' ? "&quot;" : NULL;
        if (rep == NULL) {
            out[n++] = *s;
            continue;
        }
        while (*rep) out[n++] = *rep++;
    }
    out[n] = 0;
}

/* A colour per op: Tableau's 20 and four darker ones, so that every op
 * code of 1.0 has its own. */
static const char *op_colour(rt_op_t op) {
    static const char *const palette[] = {
        "#7f7f7f", "#aec7e8", "#1f77b4", "#ffbb78", "#c7c7c7", "#e377c2", "#f7b6d2",
        "#17becf", "#ff7f0e", "#98df8a", "#bcbd22", "#dbdb8d", "#2ca02c", "#9467bd",
        "#c5b0d5", "#d62728", "#8c564b", "#c49c94", "#ff9896", "#9edae5", "#393b79",
        "#637939", "#8c6d31", "#843c39",
    };
    const size_t n = sizeof palette / sizeof palette[0];
    return palette[op >= 0 ? (size_t)op % n : 0];
}

#define SVG_LABEL_H 10.0 /* px: the least block height that takes a name */
#define SVG_GLYPH_W 5.5  /* px per character at font-size 9 */

typedef struct svg_panel {
    int32_t buffer_id;
    double y0;      /* top of the plot area, px */
    double x_scale; /* px per node */
    double y_scale; /* px per byte */
} svg_panel_t;

static void svg_block(const rt_gallocr_t *ga, const svg_panel_t *pn, int32_t p, rt_write_fn write,
                      void *ud) {
    const rt_gallocr_plan_entry_t *e = &ga->plan[p];
    char name[RT_MAX_NAME * 6];
    xml_escape(e->name[0] ? e->name : "(unnamed)", name, sizeof name);
    const double x = SVG_LEFT + e->first * pn->x_scale;
    const double w = (e->last - e->first + 1) * pn->x_scale;
    const double y = pn->y0 + (double)e->offset * pn->y_scale;
    double h = (double)e->size * pn->y_scale;
    if (h < 0.5) h = 0.5; /* keep tiny blocks visible */
    rt_write_text(write, ud, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
         "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.3\"><title>%s (%s %s): "
         "%zu bytes at %zu, nodes %d..%d%s</title></rect>\n", x, y, w, h, op_colour(e->op), name,
         rt_op_name(e->op), rt_type_name(e->type), e->size, e->offset, (int)e->first,
         (int)e->last, (e->flags & RT_GALLOCR_PLAN_INPLACE) ? ", in place" : "");
    /* The name inside the block where it fits: 9 px text, ~5.5 px a glyph. */
    if (e->name[0] && h >= SVG_LABEL_H && w >= SVG_GLYPH_W * (double)strlen(e->name) + 2)
        rt_write_text(write, ud, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"9\" pointer-events=\"none\">%s</text>\n",
             x + 1, y + h / 2 + 3, name);
}

static void svg_axes(const rt_gallocr_t *ga, const svg_panel_t *pn, rt_write_fn write, void *ud) {
    const int32_t b = pn->buffer_id;
    const size_t peak = rt_gallocr_get_peak(ga, b);
    rt_write_text(write, ud, "<text x=\"%d\" y=\"%.1f\" font-weight=\"bold\">buffer %d (%s): peak %zu "
         "bytes (%.2f MiB), lower bound %zu</text>\n", SVG_LEFT, pn->y0 - 12, (int)b,
         rt_buffer_type_name(ga->bufts[b]), peak, peak / 1048576.0,
         rt_gallocr_get_lower_bound(ga, b));
    rt_write_text(write, ud, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\" "
         "stroke=\"#999\"/>\n", SVG_LEFT, pn->y0, SVG_PLOT_W, SVG_PLOT_H);
    for (int k = 0; k <= 4; k++) {
        const double y = pn->y0 + SVG_PLOT_H * k / 4.0;
        rt_write_text(write, ud, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\">"
             "%.2f MiB</text>\n", SVG_LEFT - 4, y + 3, peak * (k / 4.0) / 1048576.0);
        const int node = (int)(ga->n_nodes * k / 4);
        rt_write_text(write, ud, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">"
             "%d</text>\n", SVG_LEFT + node * pn->x_scale, pn->y0 + SVG_PLOT_H + 14, node);
    }
    rt_write_text(write, ud, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">node "
         "index (execution order); y: byte offset</text>\n", SVG_LEFT + SVG_PLOT_W / 2,
         pn->y0 + SVG_PLOT_H + 30);
}

static void svg_panel(const rt_gallocr_t *ga, int32_t b, double y0, rt_write_fn write, void *ud) {
    const size_t peak = rt_gallocr_get_peak(ga, b);
    svg_panel_t pn = {b, y0, (double)SVG_PLOT_W / (ga->n_nodes > 0 ? ga->n_nodes : 1),
                      (double)SVG_PLOT_H / (double)(peak > 0 ? peak : 1)};
    svg_axes(ga, &pn, write, ud);
    for (int32_t p = 0; p < n_entries(ga); p++) {
        const rt_gallocr_plan_entry_t *e = &ga->plan[p];
        if (e->buffer_id == b && !(e->flags & RT_GALLOCR_PLAN_VIEW)) svg_block(ga, &pn, p, write, ud);
    }
}

/* A swatch per op that has a block, across the bottom. */
static void svg_legend(const rt_gallocr_t *ga, double y, rt_write_fn write, void *ud) {
    bool seen[RT_OP_COUNT] = {false};
    for (int32_t p = 0; p < n_entries(ga); p++) {
        const rt_gallocr_plan_entry_t *e = &ga->plan[p];
        if (e->buffer_id >= 0 && !(e->flags & RT_GALLOCR_PLAN_VIEW) && e->op >= 0 && e->op < RT_OP_COUNT)
            seen[e->op] = true;
    }
    int k = 0;
    for (rt_op_t op = 0; op < RT_OP_COUNT; op++) {
        if (!seen[op]) continue;
        const int x = SVG_LEFT + (k % 8) * 135;
        const double yy = y + (k / 8) * 18;
        rt_write_text(write, ud, "<rect x=\"%d\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
             "<text x=\"%d\" y=\"%.1f\" font-size=\"11\">%s</text>\n", x, yy, op_colour(op),
             x + 16, yy + 10, op == RT_OP_NONE ? "leaf" : rt_op_name(op));
        k++;
    }
}

void rt_gallocr_write_plan_svg(const rt_gallocr_t *ga, rt_write_fn write, void *ud) {
    if (ga == NULL || write == NULL) return;
    const double panel = 30 + SVG_PLOT_H + SVG_GAP;
    const double legend_y = 10 + ga->n_buffers * panel;
    const int height = (int)(legend_y + 3 * 18 + 10);
    rt_write_text(write, ud, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
         "font-family=\"sans-serif\" font-size=\"12\">\n", SVG_LEFT + SVG_PLOT_W + SVG_RIGHT,
         height);
    rt_write_text(write, ud, "<title>gallocr plan: %d leafs, %d nodes</title>\n", (int)ga->n_leafs,
         (int)ga->n_nodes);
    for (int32_t b = 0; b < ga->n_buffers; b++) svg_panel(ga, b, 40 + b * panel, write, ud);
    svg_legend(ga, legend_y, write, ud);
    rt_write_text(write, ud, "</svg>\n");
}
