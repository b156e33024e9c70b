/* cmd_compile.c - `nvfp4jit compile` and `nvfp4jit inspect`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static const char *artifact_str(const nvfp4jit_kernel *k, nvfp4jit_artifact a, size_t *size) {
    const void *d = NULL;
    size_t n = 0;
    if (nvfp4jit_kernel_artifact(k, a, &d, &n) != NVFP4JIT_OK || !d) {
        if (size) *size = 0;
        return "";
    }
    if (size) *size = n;
    return d;
}

/* Compile (or load) a variant, reporting failures. @return the kernel or NULL (*rc set). */
static nvfp4jit_kernel *compile_variant(const char *cmd, nvfp4jit_ctx *ctx,
                                        const nvfp4jit_variant *v, double *wall_ms, int *rc) {
    nvfp4jit_kernel *k = NULL;
    double t0 = now_ms();
    nvfp4jit_status s = nvfp4jit_compile(ctx, v, &k);
    *wall_ms = now_ms() - t0;
    if (s != NVFP4JIT_OK) {
        char what[192];
        snprintf(what, sizeof what, "cannot compile %s", tool_variant_str(v));
        *rc = tool_lib_fail(cmd, ctx, s, what);
        return NULL;
    }
    return k;
}

static void print_compile_report(const nvfp4jit_kernel *k, double wall_ms) {
    nvfp4jit_resources r;
    memset(&r, 0, sizeof r);
    nvfp4jit_kernel_resources(k, &r);
    size_t src_len = 0;
    artifact_str(k, NVFP4JIT_ARTIFACT_SOURCE, &src_len);
    const char *path = artifact_str(k, NVFP4JIT_ARTIFACT_CACHE_PATH, NULL);
    printf("variant:       %s\n", tool_variant_str(nvfp4jit_kernel_variant(k)));
    printf("cache key:     %s\n", artifact_str(k, NVFP4JIT_ARTIFACT_CACHE_KEY, NULL));
    printf("cache entry:   %s\n", *path ? path : "(disk cache disabled)");
    printf("origin:        %s\n", tool_cache_origin(r.from_cache));
    printf("compile time:  %.1f ms (render + NVRTC + nvJitLink; 0 on a cache hit)\n",
           r.compile_ms);
    printf("  render:      %.1f ms (template; also on a disk-cache hit)\n", r.render_ms);
    printf("  NVRTC:       %.1f ms (source -> PTX)\n", r.nvrtc_ms);
    printf("  nvJitLink:   %.1f ms (PTX -> cubin)\n", r.link_ms);
    printf("call time:     %.2f ms (nvfp4jit_compile, wall)\n", wall_ms);
    printf("source:        %zu bytes\n", src_len);
    tool_print_resources(&r, 0);
}

int cmd_compile(int argc, char **argv) {
    static const tool_usage u = {
        "compile", "--arch ARCH --tile MxNxK --stages S [--swap] | --variant V",
        "Render one kernel variant, compile it with NVRTC + nvJitLink (or load it from the\n"
        "disk cache) and print the variant, its cache entry, whether it was compiled or\n"
        "found in the cache, the compile time and its resources. A corrupt cache entry is\n"
        "rebuilt with a warning."};
    tool_variant_opts vo = {0};
    const tool_opt opts[] = {TOOL_VARIANT_OPTS(vo), {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0}};
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    nvfp4jit_variant v;
    if ((r = tool_variant_from_opts(u.cmd, &vo, &v))) return r;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) return 1;
    double wall;
    int rc = 0;
    nvfp4jit_kernel *k = compile_variant(u.cmd, ctx, &v, &wall, &rc);
    if (k) print_compile_report(k, wall);
    nvfp4jit_ctx_destroy(ctx);
    return rc;
}

/* ---- SASS ------------------------------------------------------------------------------------ */
static int executable(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* Find `name` on PATH, in $CUDA_HOME/bin, then /usr/local/cuda/bin. @return 0 and the path. */
int find_cuda_tool(const char *name, char *out, size_t n) {
    const char *path = getenv("PATH");
    if (path) {
        const char *p = path;
        for (;;) {
            const char *e = strchr(p, ':');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (len) {
                /* a candidate that does not fit is skipped: cut short, it names another file */
                int w = snprintf(out, n, "%.*s/%s", (int)len, p, name);
                if (w > 0 && (size_t)w < n && executable(out)) return 0;
            }
            if (!e) break;
            p = e + 1;
        }
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        int w = snprintf(out, n, "%s/bin/%s", home, name);
        if (w > 0 && (size_t)w < n && executable(out)) return 0;
    }
    int w = snprintf(out, n, "/usr/local/cuda/bin/%s", name);
    if (w > 0 && (size_t)w < n && executable(out)) return 0;
    return -1;
}

static int run_program(char *const argv[]) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "nvfp4jit: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int print_sass(const char *cmd, const nvfp4jit_kernel *k) {
    char tool[PATH_MAX];
    int use_nvdisasm = 1;
    if (find_cuda_tool("nvdisasm", tool, sizeof tool)) {
        use_nvdisasm = 0;
        if (find_cuda_tool("cuobjdump", tool, sizeof tool)) {
            fflush(stdout);
            fprintf(stderr,
                    "nvfp4jit %s: cannot print SASS: neither nvdisasm nor cuobjdump was found "
                    "on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin\n",
                    cmd);
            return 1;
        }
    }
    const void *cubin = NULL;
    size_t size = 0;
    if (nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &cubin, &size) != NVFP4JIT_OK ||
        !cubin || !size)
        return tool_fail(cmd, "the kernel has no cubin");
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    char file[PATH_MAX];
    int w = snprintf(file, sizeof file, "%s/nvfp4jit-sass-XXXXXX.cubin", tmp);
    if (w < 0 || (size_t)w >= sizeof file)
        return tool_fail(cmd, "cannot create a temporary file: TMPDIR is too long (%zu bytes)",
                         strlen(tmp));
    int fd = mkstemps(file, 6);
    if (fd < 0) return tool_fail(cmd, "cannot create a temporary file in %s: %s", tmp,
                                 strerror(errno));
    FILE *f = fdopen(fd, "wb");
    int ok = f && fwrite(cubin, 1, size, f) == size;
    if (f) ok = (fclose(f) == 0) && ok;
    else close(fd);
    if (!ok) {
        unlink(file);
        return tool_fail(cmd, "cannot write %s", file);
    }
    static char opt_c[] = "-c", opt_sass[] = "--dump-sass";
    char *args[4] = {tool, use_nvdisasm ? opt_c : opt_sass, file, NULL};
    int r = run_program(args);
    unlink(file);
    if (r != 0) return tool_fail(cmd, "%s exited with status %d", tool, r);
    return 0;
}

int cmd_inspect(int argc, char **argv) {
    static const tool_usage u = {
        "inspect",
        "(--arch ARCH --tile MxNxK --stages S [--swap] | --variant V) "
        "[--source] [--ptx] [--sass] [--log] [--resources] [--cubin FILE]",
        "Compile a variant (or load it from the cache) and print what was asked for, in the\n"
        "order source, PTX, SASS, log, resources (default: --resources). --sass disassembles\n"
        "the cubin with nvdisasm (or cuobjdump --dump-sass) from PATH, $CUDA_HOME/bin or\n"
        "/usr/local/cuda/bin. --cubin writes the cubin to FILE."};
    tool_variant_opts vo = {0};
    int source = 0, ptx = 0, sass = 0, log = 0, res = 0;
    const char *cubin_out = NULL;
    const tool_opt opts[] = {
        TOOL_VARIANT_OPTS(vo),
        {"source", OPT_FLAG, &source, NULL, "print the rendered CUDA source", 0, 0},
        {"ptx", OPT_FLAG, &ptx, NULL, "print the PTX", 0, 0},
        {"sass", OPT_FLAG, &sass, NULL, "print the SASS (needs nvdisasm or cuobjdump)", 0, 0},
        {"log", OPT_FLAG, &log, NULL, "print the NVRTC and nvJitLink logs", 0, 0},
        {"resources", OPT_FLAG, &res, NULL, "print the resource report (the default)", 0, 0},
        {"cubin", OPT_STRING, &cubin_out, "FILE", "write the cubin to FILE", 0, 0},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    nvfp4jit_variant v;
    if ((r = tool_variant_from_opts(u.cmd, &vo, &v))) return r;
    if (!source && !ptx && !sass && !log && !cubin_out) res = 1;
    int sections = source + ptx + sass + log + res;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) return 1;
    double wall;
    int rc = 0;
    nvfp4jit_kernel *k = compile_variant(u.cmd, ctx, &v, &wall, &rc);
    if (!k) goto done;
#define SECTION(title)                                                                        \
    do {                                                                                      \
        if (sections > 1) printf("==== %s: %s ====\n", title, tool_variant_str(&v));           \
    } while (0)
    if (source) {
        SECTION("source");
        size_t n;
        const char *s = artifact_str(k, NVFP4JIT_ARTIFACT_SOURCE, &n);
        fwrite(s, 1, strnlen(s, n), stdout);
        if (n && s[strnlen(s, n) - 1] != '\n') putchar('\n');
    }
    if (ptx) {
        SECTION("ptx");
        size_t n;
        const char *s = artifact_str(k, NVFP4JIT_ARTIFACT_PTX, &n);
        fwrite(s, 1, strnlen(s, n), stdout);
        if (n && s[strnlen(s, n) - 1] != '\n') putchar('\n');
    }
    if (sass) {
        SECTION("sass");
        if ((rc = print_sass(u.cmd, k))) goto done;
    }
    if (log) {
        SECTION("log");
        size_t n;
        const char *s = artifact_str(k, NVFP4JIT_ARTIFACT_LOG, &n);
        size_t len = strnlen(s, n);
        if (len == 0) printf("(empty log)\n");
        fwrite(s, 1, len, stdout);
        if (len && s[len - 1] != '\n') putchar('\n');
    }
    if (res) {
        SECTION("resources");
        print_compile_report(k, wall);
    }
#undef SECTION
    if (cubin_out) {
        const void *d = NULL;
        size_t n = 0;
        if (nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &d, &n) != NVFP4JIT_OK || !d) {
            rc = tool_fail(u.cmd, "the kernel has no cubin");
            goto done;
        }
        FILE *f = fopen(cubin_out, "wb");
        int ok = f && fwrite(d, 1, n, f) == n;
        if (f) ok = (fclose(f) == 0) && ok;
        if (!ok) {
            rc = tool_fail(u.cmd, "cannot write %s: %s", cubin_out, strerror(errno));
            goto done;
        }
        fprintf(stderr, "wrote %zu bytes to %s\n", n, cubin_out);
    }
done:
    nvfp4jit_ctx_destroy(ctx);
    return rc;
}
