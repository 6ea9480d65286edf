/* SPDX-License-Identifier: MIT */
/* server_page.h: rt-server's chat page (GET /), tools/server_page.html
 * built into the binary as bytes by tools/embed_file.sh: one file, its
 * CSS and JavaScript inline, nothing loaded from anywhere else. */
#ifndef RT_TOOLS_SERVER_PAGE_H
#define RT_TOOLS_SERVER_PAGE_H

#include <stddef.h>

extern const unsigned char srv_page_html[];
extern const size_t srv_page_html_size; /* bytes, without a NUL */

#endif /* RT_TOOLS_SERVER_PAGE_H */
