/* testutil.h - the tiny test framework: one runner (tests/main.c), one file per area.
 * A test is a function; CHECK records a failure with file:line and goes on; REQUIRE returns.
 * SKIP marks the test skipped with a reason ("skipped: no CUDA device"). */
#ifndef NJ_TESTUTIL_H
#define NJ_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

extern int tu_failures;   /* failures in the current test */
extern int tu_skipped;    /* set by SKIP */
extern char tu_skip_reason[256];

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            tu_failures++;                                                                   \
        }                                                                                    \
    } while (0)
#define CHECKF(cond, ...)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            tu_failures++;                                                                   \
        }                                                                                    \
    } while (0)
#define REQUIRE(cond)                                                                        \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "  FAIL %s:%d: %s (fatal)\n", __FILE__, __LINE__, #cond);        \
            tu_failures++;                                                                   \
            return;                                                                          \
        }                                                                                    \
    } while (0)
#define SKIP(...)                                                                            \
    do {                                                                                     \
        snprintf(tu_skip_reason, sizeof tu_skip_reason, __VA_ARGS__);                        \
        tu_skipped = 1;                                                                      \
        return;                                                                              \
    } while (0)

/* Per-area tables, defined in tests/test_<area>.c and listed in tests/main.c. */
#define TEST_AREA(area) extern const test_case tests_##area[];

/* A fresh temporary directory for a test (mkdtemp under $TMPDIR or /tmp). */
const char *tu_tmpdir(void);
/* Remove a directory tree. */
void tu_rmtree(const char *path);
/* Path of the built nvfp4jit command (from the NVFP4JIT_TOOL env var set by CTest). */
const char *tu_tool(void);
/* Run a shell command, capture stdout+stderr into out (cap bytes). @return exit status. */
int tu_run(const char *cmd, char *out, size_t cap);

#endif
