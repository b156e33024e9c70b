/* tool.h - shared pieces of the nvfp4jit command: the subcommand table, option parsing,
 * error reporting, variant and problem-set options, and device-data helpers.
 *
 * Exit codes of every subcommand: 0 success, 1 a library or device failure (or a FAIL of a
 * correctness check), 2 a bad option or argument. */
#ifndef NJ_TOOL_H
#define NJ_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "nvfp4jit.h"
/* the extension API: problem files, the CPU reference, cache listing, the tuning database,
 * the heuristic's ranking, the library's CUDA driver (not ABI-stable; the command links
 * libnvfp4jit.a) */
#define NVFP4JIT_STATIC_LINKING_ONLY
#include "nvfp4jit_ext.h"

#if defined(__GNUC__)
#define TOOL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TOOL_PRINTF(a, b)
#endif

/* ---- subcommands -------------------------------------------------------------------------- */
/* A subcommand: run(argc, argv) with argv[0] the subcommand's name. @return the exit code.
 * New subcommands (variants, explain, tune, warm) are one more entry in tool_commands[]. */
typedef struct tool_cmd {
    const char *name;
    const char *summary; /* one line for `nvfp4jit --help` */
    int (*run)(int argc, char **argv);
} tool_cmd;

int cmd_compile(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Options given before the subcommand (and accepted by every subcommand). */
typedef struct tool_globals {
    const char *cache_dir; /* --cache-dir, NULL = library default */
    int no_disk_cache;     /* --no-disk-cache */
    const char *argv0;
} tool_globals;
extern tool_globals tool_g;

/* ---- option parsing ----------------------------------------------------------------------- */
typedef enum tool_opt_kind {
    OPT_FLAG,   /* int *: set to 1 */
    OPT_STRING, /* const char **: the argument */
    OPT_INT     /* int *: a decimal integer in [lo, hi] */
} tool_opt_kind;

typedef struct tool_opt {
    const char *name; /* long name without the dashes: "arch" is --arch */
    tool_opt_kind kind;
    void *dest;
    const char *metavar; /* for the help text of STRING/INT options */
    const char *help;
    long lo, hi; /* OPT_INT range */
} tool_opt;

typedef struct tool_usage {
    const char *cmd;      /* "compile", "cache" */
    const char *synopsis; /* "--arch A --tile MxNxK --stages S [--swap]" */
    const char *about;    /* a paragraph (may hold newlines) */
} tool_usage;

/* Parse argv[1..argc) against opts (terminated by a {NULL} entry); --opt=value and
 * --opt value are accepted, "--" ends the options; the common options (--cache-dir,
 * --no-disk-cache) and --help/-h are always accepted. Positional arguments are collected in
 * pos (at most pos_cap; *npos receives the count).
 * @return -1 to go on, 0 when --help was printed, 2 after a message for a bad option. */
int tool_parse(const tool_usage *u, const tool_opt *opts, int argc, char **argv, char **pos,
               int pos_cap, int *npos);
/* Print the help of a subcommand to stdout. */
void tool_help(const tool_usage *u, const tool_opt *opts);

/* Print "nvfp4jit CMD: message" and a hint to use --help to stderr. @return 2. */
int tool_bad_usage(const char *cmd, const char *fmt, ...) TOOL_PRINTF(2, 3);
/* Print "nvfp4jit CMD: what: <status string>: <last error>" to stderr. @return 1. */
int tool_lib_fail(const char *cmd, nvfp4jit_ctx *ctx, nvfp4jit_status s, const char *what);
/* Print "nvfp4jit CMD: message" to stderr. @return 1. */
int tool_fail(const char *cmd, const char *fmt, ...) TOOL_PRINTF(2, 3);

/* Create the context (cache dir from --cache-dir, warnings printed to stderr).
 * @return it, or NULL after a message. */
nvfp4jit_ctx *tool_ctx(const char *cmd);

/* ---- variants ----------------------------------------------------------------------------- */
/* Parse "sm_90a", "sm90a", "sm_100a", "sm100a". @return 0, -1 if unknown. */
int tool_parse_arch(const char *s, nvfp4jit_arch *out);
const char *tool_arch_name(nvfp4jit_arch a); /* "sm_90a" */
/* Parse "128x64x256" into three positive ints. @return 0 or -1. */
int tool_parse_tile(const char *s, int *m, int *n, int *k);

/* The variant options shared by compile and inspect. */
typedef struct tool_variant_opts {
    const char *arch, *tile, *variant;
    int stages; /* 0 = not given */
    int swap;
} tool_variant_opts;
#define TOOL_VARIANT_OPTS(vo)                                                                 \
    {"arch", OPT_STRING, &(vo).arch, "ARCH", "target: sm_100a or sm_90a", 0, 0},            \
    {"tile", OPT_STRING, &(vo).tile, "MxNxK", "BLOCK_M x BLOCK_N x BLOCK_K, e.g. 128x64x256", \
     0, 0},                                                                                  \
    {"stages", OPT_INT, &(vo).stages, "S", "pipeline stages", 1, 64},                         \
    {"swap", OPT_FLAG, &(vo).swap, NULL, "swap A/B (sm_90a: weights on the MMA's M side)", 0, \
     0},                                                                                     \
    {"variant", OPT_STRING, &(vo).variant, "V",                                               \
     "the whole variant as printed, e.g. sm90a:128x128x64:s3[:swap] (instead of the above)",  \
     0, 0}
/* Build a variant from the options. @return 0, or 2 after a usage message. */
int tool_variant_from_opts(const char *cmd, const tool_variant_opts *vo, nvfp4jit_variant *v);
/* Format into a static buffer (not reentrant; for printing). */
const char *tool_variant_str(const nvfp4jit_variant *v);

/* Print the resource report block (indented by `indent` spaces). */
void tool_print_resources(const nvfp4jit_resources *r, int indent);
const char *tool_cache_origin(int from_cache); /* "compiled", "disk cache hit", ... */

/* Print a plan's variant, how it was chosen, source size, cache hit/miss, compile time and
 * resources (indented). */
void tool_print_plan(const nvfp4jit_plan *plan, int indent);

/* ---- problem sets ------------------------------------------------------------------------- */
/* The --problems/--set/--groups options shared by demo and bench. */
typedef struct tool_prob_opts {
    const char *problems, *set, *groups;
} tool_prob_opts;
#define TOOL_PROB_OPTS(po)                                                                    \
    {"problems", OPT_STRING, &(po).problems, "FILE",                                          \
     "problems file (default: problems/gpumode.txt)", 0, 0},                                 \
    {"set", OPT_STRING, &(po).set, "NAME",                                                    \
     "set name(s) in the file: comma-separated, shell patterns allowed (default: bench*, or "  \
     "every set of a --problems file)",                                                       \
     0, 0},                                                                                  \
    {"groups", OPT_STRING, &(po).groups, "MxNxK,...", "one ad-hoc set instead of a file", 0, 0}
/* Resolve the options into an array of sets (owned by the caller: tool_sets_free).
 * @return 0, or 2 after a message naming the bad token / file line / set. */
int tool_load_sets(const char *cmd, const tool_prob_opts *po, nvfp4jit_ext_set **sets,
                   size_t *count);
void tool_sets_free(nvfp4jit_ext_set *sets, size_t count);
/* The default problems file, found at run time: $NVFP4JIT_PROBLEMS when set (and then only
 * it), else ./problems/gpumode.txt, else relative to the executable (/proc/self/exe):
 * problems/ (the Python package), ../problems/ (a build directory in the source tree),
 * ../share/nvfp4jit/problems/ (an install). @return 0 and the path, -1 if none is readable. */
int tool_default_problems(char *out, size_t n);

/* Fill nvfp4jit groups with the shapes of a set (pointers 0). Caller frees. NULL if OOM. */
nvfp4jit_group *tool_groups_from_set(const nvfp4jit_ext_set *s);
double tool_set_flops(const nvfp4jit_ext_set *s); /* 2 * sum(M*N*K) */

/* ---- misc ----------------------------------------------------------------------------------- */
/* Monotonic wall clock in milliseconds. */
double tool_now_ms(void);
/* Read a small text file the way the library reads untrusted files: a regular file (not
 * followed through a symlink, opened O_NONBLOCK) of at most max bytes. @return it
 * NUL-terminated (malloc'ed, the caller frees), or NULL. */
char *tool_read_text(const char *path, size_t max);
int tool_nthreads(void);
double tool_median(double *v, int n); /* sorts v */
/* Largest e4m3 exponent for random test scales that keeps a K-long dot product of the
 * random data well inside fp16 range and its fp32 accumulation error well inside the
 * 1e-3 tolerance (see the comment in gpudata.c). */
int tool_scale_max_exp(int64_t k);

/* Find a CUDA tool (nvdisasm, cuobjdump) on PATH, in $CUDA_HOME/bin, then /usr/local/cuda/bin.
 * @return 0 with its path in out, -1 if not found. (tools/cmd_compile.c) */
int find_cuda_tool(const char *name, char *out, size_t n);

#endif
