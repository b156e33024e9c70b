/* fuzz.h - shared by the libFuzzer targets of tests/fuzz (README "Fuzzing").
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput. Built with NVFP4JIT_FUZZ=ON (clang), each
 * becomes its own libFuzzer executable fuzz_<name>; in every build the corpus driver
 * (corpus_main.c) links all of them, each compiled with LLVMFuzzerTestOneInput renamed to
 * fuzz_one_<name>, and runs them over tests/fuzz/corpus/<name>/ (CTest fuzz_corpus).
 *
 * A target returns 0 for every input; a crash, a sanitizer report or a broken invariant
 * (FUZZ_CHECK: abort with the condition) is a finding. */
#ifndef NJ_FUZZ_H
#define NJ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* A private scratch directory for this process (made on first use under $TMPDIR or /tmp,
 * removed at exit). Never NULL: aborts if it cannot be made. */
const char *fuzz_tmpdir(void);

/* Write n bytes to path (created or truncated, 0600). @return 0, -1 with errno. */
int fuzz_write_file(const char *path, const void *p, size_t n);

/* rm -rf path (no symlink is followed). */
void fuzz_rmtree(const char *path);

/* A NUL-terminated malloc'ed copy of data (never NULL: aborts when out of memory). */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif
