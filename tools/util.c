/* util.c - option parsing, messages, context, variant and problem-set options of the tool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

tool_globals tool_g;

/* ---- messages ------------------------------------------------------------------------------ */
int tool_bad_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "nvfp4jit %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'nvfp4jit %s --help'.\n", cmd);
    va_end(ap);
    return 2;
}

int tool_fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "nvfp4jit %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int tool_lib_fail(const char *cmd, nvfp4jit_ctx *ctx, nvfp4jit_status s, const char *what) {
    const char *detail = nvfp4jit_last_error(ctx);
    fflush(stdout);
    fprintf(stderr, "nvfp4jit %s: %s: %s%s%s\n", cmd, what, nvfp4jit_status_string(s),
            detail && *detail ? ": " : "", detail ? detail : "");
    return 1;
}

nvfp4jit_ctx *tool_ctx(const char *cmd) {
    nvfp4jit_ctx_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = tool_g.cache_dir;
    o.disable_disk_cache = tool_g.no_disk_cache;
    o.verbose = 1; /* warnings (a corrupt cache entry rebuilt, ...) go to stderr */
    nvfp4jit_ctx *ctx = NULL;
    nvfp4jit_status s = nvfp4jit_ctx_create(&o, &ctx);
    if (s != NVFP4JIT_OK) {
        tool_lib_fail(cmd, NULL, s, "cannot create a context");
        return NULL;
    }
    return ctx;
}

/* ---- options --------------------------------------------------------------------------------- */
static const tool_opt common_opts[] = {
    {"cache-dir", OPT_STRING, &tool_g.cache_dir, "DIR", "cache directory (default: "
     "$NVFP4JIT_CACHE_DIR, $XDG_CACHE_HOME/nvfp4jit, ~/.cache/nvfp4jit)", 0, 0},
    {"no-disk-cache", OPT_FLAG, &tool_g.no_disk_cache, NULL,
     "do not read or write the disk cache", 0, 0},
    {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
};

static void help_opts(const tool_opt *o) {
    for (; o && o->name; o++) {
        char left[64];
        if (o->kind == OPT_FLAG)
            snprintf(left, sizeof left, "--%s", o->name);
        else
            snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "X");
        char text[512];
        if (o->kind == OPT_INT)
            snprintf(text, sizeof text, "%s [%ld..%ld]", o->help ? o->help : "", o->lo, o->hi);
        else
            snprintf(text, sizeof text, "%s", o->help ? o->help : "");
        /* wrap the text at 96 columns, continuing under its first column */
        printf("  %-22s", left);
        const char *p = text;
        int col = 24, first = 1;
        while (*p) {
            size_t w = strcspn(p, " ");
            if (!first && col + 1 + (int)w > 96) {
                printf("\n%24s", "");
                col = 24;
                first = 1;
            }
            printf(" %.*s", (int)w, p);
            col += 1 + (int)w;
            first = 0;
            p += w;
            while (*p == ' ') p++;
        }
        printf("\n");
    }
}

void tool_help(const tool_usage *u, const tool_opt *opts) {
    printf("usage: nvfp4jit %s %s\n", u->cmd, u->synopsis ? u->synopsis : "[OPTIONS]");
    if (u->about) printf("\n%s\n", u->about);
    printf("\noptions:\n");
    help_opts(opts);
    help_opts(common_opts);
    printf("  %-22s %s\n", "--help, -h", "this help");
}

static const tool_opt *find_opt(const tool_opt *opts, const char *name, size_t len) {
    for (const tool_opt *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len)) return o;
    return NULL;
}

/* Strict decimal integer. @return 0 or -1. */
static int parse_long(const char *s, long *out) {
    /* strtol alone also takes leading blanks and a '+' */
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s) return -1;
    *out = v;
    return 0;
}

int tool_parse(const tool_usage *u, const tool_opt *opts, int argc, char **argv, char **pos,
               int pos_cap, int *npos) {
    int np = 0, only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || !a[1]) {
            if (np >= pos_cap) {
                if (pos_cap == 0) return tool_bad_usage(u->cmd, "unexpected argument '%s'", a);
                return tool_bad_usage(u->cmd, "unexpected extra argument '%s'", a);
            }
            pos[np++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            tool_help(u, opts);
            return 0;
        }
        if (a[1] != '-') return tool_bad_usage(u->cmd, "unknown option '%s'", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const tool_opt *o = find_opt(opts, name, len);
        if (!o) o = find_opt(common_opts, name, len);
        if (!o) return tool_bad_usage(u->cmd, "unknown option '--%.*s'", (int)len, name);
        if (o->kind == OPT_FLAG) {
            if (eq) return tool_bad_usage(u->cmd, "option --%s takes no argument", o->name);
            *(int *)o->dest = 1;
            continue;
        }
        const char *val;
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i]; /* taken as is, even if it starts with '-' */
        } else {
            return tool_bad_usage(u->cmd, "option --%s needs an argument (%s)", o->name,
                                  o->metavar ? o->metavar : "a value");
        }
        if (o->kind == OPT_STRING) {
            *(const char **)o->dest = val;
        } else {
            long v;
            if (parse_long(val, &v) || v < o->lo || v > o->hi)
                return tool_bad_usage(u->cmd, "option --%s: '%s' is not an integer in [%ld, %ld]",
                                      o->name, val, o->lo, o->hi);
            *(int *)o->dest = (int)v;
        }
    }
    if (npos) *npos = np;
    return -1;
}

/* ---- variants -------------------------------------------------------------------------------- */
int tool_parse_arch(const char *s, nvfp4jit_arch *out) {
    if (!strcmp(s, "sm_90a") || !strcmp(s, "sm90a")) {
        *out = NVFP4JIT_ARCH_SM90A;
        return 0;
    }
    if (!strcmp(s, "sm_100a") || !strcmp(s, "sm100a")) {
        *out = NVFP4JIT_ARCH_SM100A;
        return 0;
    }
    return -1;
}

const char *tool_arch_name(nvfp4jit_arch a) {
    switch (a) {
    case NVFP4JIT_ARCH_SM90A: return "sm_90a";
    case NVFP4JIT_ARCH_SM100A: return "sm_100a";
    }
    return "unknown-arch";
}

int tool_parse_tile(const char *s, int *m, int *n, int *k) {
    nvfp4jit_ext_shape sh;
    char err[128];
    if (nvfp4jit_ext_parse_shape(s, strlen(s), &sh, err, sizeof err)) return -1;
    if (sh.m <= 0 || sh.n <= 0 || sh.k <= 0 || sh.m > 4096 || sh.n > 4096 || sh.k > 4096)
        return -1;
    *m = (int)sh.m;
    *n = (int)sh.n;
    *k = (int)sh.k;
    return 0;
}

int tool_variant_from_opts(const char *cmd, const tool_variant_opts *vo, nvfp4jit_variant *v) {
    memset(v, 0, sizeof *v);
    if (vo->variant) {
        if (vo->arch || vo->tile || vo->stages || vo->swap)
            return tool_bad_usage(cmd, "--variant cannot be combined with --arch/--tile/"
                                       "--stages/--swap");
        if (nvfp4jit_variant_parse(vo->variant, v) != NVFP4JIT_OK)
            return tool_bad_usage(cmd, "--variant '%s': expected e.g. sm90a:128x128x64:s3 or "
                                       "sm100a:128x64x256:s6 (optionally :swap, or :swap:act16 on sm90a)", vo->variant);
        return 0;
    }
    if (!vo->arch) return tool_bad_usage(cmd, "missing --arch (sm_100a or sm_90a)");
    if (tool_parse_arch(vo->arch, &v->arch))
        return tool_bad_usage(cmd, "--arch '%s': expected sm_100a or sm_90a", vo->arch);
    if (!vo->tile) return tool_bad_usage(cmd, "missing --tile (BLOCK_MxBLOCK_NxBLOCK_K)");
    if (tool_parse_tile(vo->tile, &v->block_m, &v->block_n, &v->block_k))
        return tool_bad_usage(cmd, "--tile '%s': expected MxNxK with positive integers, e.g. "
                                   "128x64x256", vo->tile);
    if (!vo->stages) return tool_bad_usage(cmd, "missing --stages");
    v->stages = vo->stages;
    v->swap_ab = vo->swap;
    return 0;
}

const char *tool_variant_str(const nvfp4jit_variant *v) {
    static char buf[128];
    if (!v) return "(none)";
    nvfp4jit_variant_format(v, buf, sizeof buf);
    return buf;
}

const char *tool_cache_origin(int from_cache) {
    switch (from_cache) {
    case 0: return "compiled (cache miss)";
    case 1: return "loaded from the disk cache (hit)";
    case 2: return "found in memory (hit)";
    }
    return "unknown origin";
}

void tool_print_resources(const nvfp4jit_resources *r, int ind) {
    printf("%*sregisters:     %d per thread, %d threads per CTA\n", ind, "", r->registers,
           r->threads);
    printf("%*sshared memory: %d B static, %d B dynamic\n", ind, "", r->shared_static_bytes,
           r->shared_dynamic_bytes);
    printf("%*sspills:        %d B stores, %d B loads\n", ind, "", r->spill_store_bytes,
           r->spill_load_bytes);
    printf("%*slocal memory:  %d B per thread\n", ind, "", r->local_bytes);
}

/* ---- problem sets ---------------------------------------------------------------------------- */
static int readable(const char *p) { return access(p, R_OK) == 0; }

int tool_default_problems(char *out, size_t n) {
    /* found at run time, never a path baked in at build time: the binary may be moved,
     * installed, or built in a tree that is gone */
    const char *env = getenv("NVFP4JIT_PROBLEMS");
    if (env && *env) {
        if (!readable(env)) return -1; /* a named file that is not there is an error */
        if (strlen(env) >= n) return -1; /* never shortened: that names another file */
        snprintf(out, n, "%s", env);
        return 0;
    }
    if (readable("problems/gpumode.txt") && n > strlen("problems/gpumode.txt")) {
        snprintf(out, n, "%s", "problems/gpumode.txt");
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *rel[] = {"problems/gpumode.txt", "../problems/gpumode.txt",
                                    "../share/nvfp4jit/problems/gpumode.txt"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char p[PATH_MAX + 64];
            int w = snprintf(p, sizeof p, "%s/%s", exe, rel[i]);
            /* a path that does not fit (p or out) is skipped, never shortened */
            if (w < 0 || (size_t)w >= sizeof p || (size_t)w >= n) continue;
            if (readable(p)) {
                snprintf(out, n, "%s", p);
                return 0;
            }
        }
    }
    return -1;
}

void tool_sets_free(nvfp4jit_ext_set *sets, size_t count) {
    for (size_t i = 0; i < count; i++) nvfp4jit_ext_set_free(&sets[i]);
    free(sets);
}

/* Does name match one of the comma-separated shell patterns? */
static int set_matches(const char *patterns, const char *name) {
    const char *p = patterns;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char pat[NVFP4JIT_EXT_SET_NAME_MAX * 2];
        if (len < sizeof pat) {
            memcpy(pat, p, len);
            pat[len] = '\0';
            if (len && fnmatch(pat, name, 0) == 0) return 1;
        }
        if (!e) return 0;
        p = e + 1;
    }
}

int tool_load_sets(const char *cmd, const tool_prob_opts *po, nvfp4jit_ext_set **sets,
                   size_t *count) {
    char err[512];
    *sets = NULL;
    *count = 0;
    if (po->groups) {
        if (po->problems || po->set)
            return tool_bad_usage(cmd, "--groups cannot be combined with --problems/--set");
        nvfp4jit_ext_set *s = calloc(1, sizeof *s);
        if (!s) return tool_fail(cmd, "out of memory");
        if (nvfp4jit_ext_parse_groups(po->groups, "groups", s, err, sizeof err)) {
            free(s);
            return tool_bad_usage(cmd, "--groups: %s", err);
        }
        *sets = s;
        *count = 1;
        return 0;
    }
    char path[PATH_MAX];
    const char *pattern = po->set;
    if (po->problems) {
        /* never shortened: a shortened path names another file */
        size_t len = strlen(po->problems);
        if (len >= sizeof path)
            return tool_bad_usage(cmd, "--problems: the path is too long (%zu bytes; at most "
                                       "%zu)", len, sizeof path - 1);
        memcpy(path, po->problems, len + 1);
        if (!pattern) pattern = "*";
    } else {
        if (tool_default_problems(path, sizeof path))
            return tool_bad_usage(cmd, "cannot find the default problems file (gpumode.txt: "
                                       "$NVFP4JIT_PROBLEMS, ./problems/, next to the "
                                       "executable); give --problems FILE or --groups");
        if (!pattern) pattern = "bench*";
    }
    nvfp4jit_ext_problems f;
    if (nvfp4jit_ext_problems_load(path, &f, err, sizeof err))
        return tool_bad_usage(cmd, "%s", err);
    size_t n = 0;
    for (size_t i = 0; i < f.count; i++) n += set_matches(pattern, f.sets[i].name);
    if (n == 0) {
        char names[2048];
        size_t len = 0;
        names[0] = '\0';
        for (size_t i = 0; i < f.count && len + 2 < sizeof names; i++) {
            int w = snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                             f.sets[i].name);
            if (w < 0) break;
            len += (size_t)w;
            if (len >= sizeof names) len = sizeof names - 1;
        }
        nvfp4jit_ext_problems_free(&f);
        return tool_bad_usage(cmd, "no set named '%s' in %s (sets: %s)", pattern, path, names);
    }
    nvfp4jit_ext_set *out = calloc(n, sizeof *out);
    if (!out) {
        nvfp4jit_ext_problems_free(&f);
        return tool_fail(cmd, "out of memory");
    }
    size_t j = 0;
    for (size_t i = 0; i < f.count; i++) {
        if (!set_matches(pattern, f.sets[i].name)) continue;
        out[j++] = f.sets[i]; /* move: the file gives up the groups array */
        f.sets[i].groups = NULL;
        f.sets[i].count = 0;
    }
    nvfp4jit_ext_problems_free(&f);
    *sets = out;
    *count = n;
    return 0;
}

nvfp4jit_group *tool_groups_from_set(const nvfp4jit_ext_set *s) {
    nvfp4jit_group *g = calloc(s->count ? s->count : 1, sizeof *g);
    if (!g) return NULL;
    for (size_t i = 0; i < s->count; i++) {
        g[i].m = s->groups[i].m;
        g[i].n = s->groups[i].n;
        g[i].k = s->groups[i].k;
    }
    return g;
}

double tool_set_flops(const nvfp4jit_ext_set *s) {
    double f = 0;
    for (size_t i = 0; i < s->count; i++)
        f += 2.0 * (double)s->groups[i].m * (double)s->groups[i].n * (double)s->groups[i].k;
    return f;
}

/* ---- misc ------------------------------------------------------------------------------------ */
double tool_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

char *tool_read_text(const char *path, size_t max) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
        (buf = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break; /* shrank while read: keep what there is */
            got += (size_t)r;
        }
        buf[got] = '\0';
    }
    close(fd);
    return buf;
}

int tool_nthreads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 64) n = 64;
    return (int)n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double tool_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
