/* SPDX-License-Identifier: MIT */
/* nosym.c: a shared object that is named like a plugin but does not export
 * rt_plugin_query, for the loader test that such a file is refused with a
 * message naming it. */

int rt_nosym_answer(void);

int rt_nosym_answer(void) { return 42; }
