/* problems.h - problem sets: the text format of problems/NAME.txt and the --groups string.
 *
 * A problems file holds one set per line: a name, then one MxNxK token per group, separated
 * by blanks. '#' starts a comment (to the end of the line); blank lines are skipped. A
 * --groups string is MxNxK tokens separated by commas (blanks around a token are ignored).
 * Numbers are decimal digits only (no sign), at most PROB_MAX_DIM. Only syntax and range are
 * checked here; the data contract (K % 64, N % 8, ...) is the library's
 * nvfp4jit_problem_check_shapes. Internal, not API. */
#ifndef NJ_PROBLEMS_H
#define NJ_PROBLEMS_H

#include <stddef.h>
#include <stdint.h>

/* The types are the extension API's (include/nvfp4jit_ext.h), which the command uses. */
#ifndef NVFP4JIT_STATIC_LINKING_ONLY
#define NVFP4JIT_STATIC_LINKING_ONLY
#endif
#include "nvfp4jit_ext.h"

/* Largest accepted M, N or K (cuBLAS and launch geometry take int). */
#define PROB_MAX_DIM NVFP4JIT_EXT_DIM_MAX
#define PROB_NAME_MAX NVFP4JIT_EXT_SET_NAME_MAX
/* Largest problems file read (bytes); a larger one is an error, not a slow death. */
#define PROB_FILE_MAX ((size_t)16 << 20)

typedef nvfp4jit_ext_shape prob_shape;
typedef nvfp4jit_ext_set prob_set;     /* name, groups (malloc'ed, count), line (0: a string) */
typedef nvfp4jit_ext_problems prob_file; /* sets (malloc'ed, count, in file order) */

/* Parse one MxNxK token (len bytes at tok, not NUL-terminated). @return 0, or -1 with the
 * reason in err ("expected MxNxK", "K=99999999999 out of range ..."); the caller prefixes
 * where the token was. */
int prob_parse_shape(const char *tok, size_t len, prob_shape *out, char *err, size_t err_n);

/* Parse a --groups string "MxNxK,MxNxK,..." into a set named `name` (NULL: "groups").
 * @return 0, or -1 with e.g. "group 2 '12x4096': expected MxNxK" in err. Groups are numbered
 * from 0, as in the library's messages ("group 2: K=100 ..."). The set is empty (and needs no
 * free) on error. */
int prob_parse_groups(const char *s, const char *name, prob_set *out, char *err, size_t err_n);

/* Parse the text of a problems file. `filename` is only used in messages
 * ("gpumode.txt:5: group 1 '12x4096': expected MxNxK"; groups numbered from 0 after the set's
 * name, as in the library's messages). Duplicate set names and sets without groups are errors.
 * @return 0, or -1 with the message in err (out is then empty). */
int prob_parse_text(const char *text, size_t len, const char *filename, prob_file *out,
                    char *err, size_t err_n);

/* Read and parse a problems file: a regular file of at most PROB_FILE_MAX bytes (opened
 * O_NONBLOCK, so a FIFO or /dev/zero is refused at once), path shorter than PATH_MAX.
 * @return 0, or -1 with the message in err. */
int prob_load_file(const char *path, prob_file *out, char *err, size_t err_n);

/* @return the set called name, or NULL. */
const prob_set *prob_find(const prob_file *f, const char *name);

/* Release what a set / a file owns; both accept a zeroed or already-freed object. */
void prob_set_free(prob_set *s);
void prob_file_free(prob_file *f);

/* Deep copy. @return 0, -1 when out of memory. */
int prob_set_copy(prob_set *dst, const prob_set *src);

#endif
