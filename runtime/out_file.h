/* SPDX-License-Identifier: MIT */
/* out_file.h: how rt writes a file so that nothing is lost (the GGUF
 * writer, and every tool through tools/out_file.h). The new
 * contents go to a temporary file beside the target (after resolving
 * symlinks, so a link keeps pointing at the new file); commit flushes,
 * fsyncs and renames it over the target, so a reader sees the old file or
 * the whole new one, never a part. Any failure, and SIGINT/SIGTERM/SIGHUP
 * while the file is open, removes only the temporary file: rt never
 * unlinks a file it did not create. An output that is one of the inputs
 * (same device and inode, through links of either kind) is refused before
 * anything is opened. A target that exists and is not a regular file (a
 * device such as /dev/null, a FIFO) is written in place and never removed
 * or replaced. Temporary files of the same target that a killed writer left
 * (rt's naming, this user's, last written before this process began) are
 * removed by the next write.
 *
 *     rt_out_file_t of;
 *     const char *inputs[] = {in_path, NULL};
 *     if (rt_out_file_open(&of, out_path, inputs) != 0) return fail("%s", of.error);
 *     fprintf(of.f, "...");                 // or a library writing of.path by name
 *     if (rt_out_file_commit(&of) != 0) return fail("%s", of.error);
 *
 * Thread-safe for different files (one rt_out_file_t belongs to one
 * thread). An interrupt removes the temporary files of up to 8 files open
 * at once; past that, a temporary file may stay (the targets are intact). */
#ifndef RT_OUT_FILE_H
#define RT_OUT_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct rt_out_file {
    FILE *f;          /* write here; NULL once committed or aborted */
    const char *path; /* the file f writes, for a library that writes by name */
    char error[1024]; /* the message (naming the file) when a call returned -1 */
    /* private */
    char target[4096]; /* the resolved target path */
    char tmp[4096];    /* the temporary file's path; "" when writing in place */
    dev_t dev;         /* the temporary file as created, to notice a swap */
    ino_t ino;
    mode_t mode;       /* the replaced target's mode; (mode_t)-1 for a new file */
} rt_out_file_t;

/* Opens |path| for writing; |inputs| is a NULL-terminated list (or NULL)
 * of paths the output must not be. 0, or -1 with of->error set and
 * nothing created. */
int rt_out_file_open(rt_out_file_t *of, const char *path, const char *const *inputs);

/* Flushes, fsyncs and renames the temporary file over the target. 0, or
 * -1 with of->error set, the temporary file removed and the target as it
 * was. Either way of->f is closed. */
int rt_out_file_commit(rt_out_file_t *of);

/* Closes and removes the temporary file; the target stays as it was.
 * NULL-safe and safe after commit. */
void rt_out_file_abort(rt_out_file_t *of);

/* True when |a| and |b| name the same file (after links); false when
 * either does not exist. */
bool rt_out_file_same(const char *a, const char *b);

#endif
