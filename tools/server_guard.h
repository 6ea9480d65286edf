/* SPDX-License-Identifier: MIT */
/* server_guard.h: what a request to rt-server must pass before an
 * endpoint sees it. Its framing (RFC 9112 section 6.3): two Content-Length
 * headers that disagree, or a Content-Length beside a Transfer-Encoding,
 * leave the body's end in doubt, the ground request smuggling stands on,
 * so such a request is answered 400 and the connection closed; a transfer
 * coding other than chunked is 501. And the API key, which comes from
 * --api-key-file, RT_API_KEY or --api-key (then wiped from the command
 * line, where ps shows it) and is compared in time that does not depend
 * on how much of a guess is right. */
#ifndef RT_TOOLS_SERVER_GUARD_H
#define RT_TOOLS_SERVER_GUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* NULL when the request's framing is sound; else why not, and *status
 * the answer (400 or 501). */
const char *srv_guard_framing(struct MHD_Connection *c, unsigned *status);

/* The key from file (its first line), else RT_API_KEY, else arg; NULL
 * when none is set (no key asked for). *err is set (and NULL returned)
 * when the file cannot be read or the key is empty. malloc'd. */
char *srv_guard_load_key(const char *file, const char *arg, const char **err);
/* Overwrites a command-line argument in place, so that ps no longer shows it. */
void srv_guard_wipe_arg(char *arg);
/* Whether the request carries "Authorization: Bearer KEY" (key NULL: any
 * request passes). */
bool srv_guard_authorised(struct MHD_Connection *c, const char *key);

#endif /* RT_TOOLS_SERVER_GUARD_H */
