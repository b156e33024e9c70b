/* cmd_mix.c - `nvfp4jit inspect ... --mix`: an instruction-mix summary of a variant's SASS.
 *
 * `inspect` itself lives in cmd_compile.c; cmd_inspect_mix (the table entry for "inspect")
 * passes everything to it and only handles --mix: the cubin is disassembled with nvdisasm
 * (or cuobjdump --dump-sass) and the opcodes are counted by class. The tool search is the same
 * cmd_compile.c's find_cuda_tool (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "choose.h"
#include "tool.h"

/* Run argv, capturing stdout into *out (malloc'ed, NUL-terminated). @return exit status or -1. */
static int capture(char *const argv[], char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        fprintf(stderr, "nvfp4jit: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 0;
    char buf[65536];
    int oom = 0;
    for (;;) {
        ssize_t r = read(fds[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (oom) continue;
        if (*len + (size_t)r + 1 > cap) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            while (nc < *len + (size_t)r + 1) nc *= 2;
            char *p = realloc(*out, nc);
            if (!p) {
                oom = 1;
                continue;
            }
            *out = p;
            cap = nc;
        }
        memcpy(*out + *len, buf, (size_t)r);
        *len += (size_t)r;
        (*out)[*len] = '\0';
    }
    close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (oom) return -1;
    if (!*out) {
        *out = calloc(1, 1);
        if (!*out) return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ---- counting ------------------------------------------------------------------------------ */
enum { MIX_MMA, MIX_SHARED, MIX_LOCAL, MIX_BAR, MIX_GLOBAL, MIX_LDGSTS, MIX_TMA, MIX_N };
static const char *mix_title[MIX_N] = {
    "MMA (HGMMA/UTC*MMA)", "shared loads/stores (LDS/STS)", "local loads/stores (LDL/STL)",
    "barriers (BAR)", "global loads/stores (LDG/STG)", "async copies (LDGSTS)",
    "TMA / bulk copies (UTMALDG/UBLKCP)"};

static int mix_class(const char *op) {
    if (!strcmp(op, "HGMMA") || !strcmp(op, "QGMMA") || !strcmp(op, "IGMMA") ||
        !strcmp(op, "HMMA") || (!strncmp(op, "UTC", 3) && strstr(op, "MMA")))
        return MIX_MMA;
    if (!strcmp(op, "LDS") || !strcmp(op, "STS") || !strcmp(op, "LDSM") || !strcmp(op, "STSM"))
        return MIX_SHARED;
    if (!strcmp(op, "LDL") || !strcmp(op, "STL")) return MIX_LOCAL;
    if (!strcmp(op, "BAR")) return MIX_BAR;
    if (!strcmp(op, "LDG") || !strcmp(op, "STG")) return MIX_GLOBAL;
    if (!strcmp(op, "LDGSTS")) return MIX_LDGSTS;
    if (!strncmp(op, "UTMA", 4) || !strncmp(op, "UBLKCP", 6)) return MIX_TMA;
    return -1;
}

typedef struct op_count {
    char op[32];
    long n;
    int cls;
} op_count;

/* The opcode of a SASS line, e.g. "/\* 0090 *\/  @!P0 LDG.E.128 R4, ..." -> "LDG" (base name). */
static int line_opcode(const char *line, char *op, size_t n) {
    const char *p = strstr(line, "*/");
    if (!p || !strstr(line, ";")) return -1;
    const char *a = strstr(line, "/*");
    if (!a || a > p) return -1;
    /* the address comment holds hex digits only */
    for (const char *q = a + 2; q < p; q++)
        if (!isxdigit((unsigned char)*q)) return -1;
    p += 2;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '@') {
        while (*p && *p != ' ' && *p != '\t') p++;
        while (*p == ' ' || *p == '\t') p++;
    }
    size_t len = 0;
    while (p[len] && (isupper((unsigned char)p[len]) || isdigit((unsigned char)p[len]) ||
                      p[len] == '_'))
        len++;
    if (len == 0 || len >= n) return -1;
    memcpy(op, p, len);
    op[len] = '\0';
    return 0;
}

static int print_mix(const char *cmd, const nvfp4jit_kernel *k) {
    char tool[PATH_MAX];
    int nvdisasm = 1;
    if (find_cuda_tool("nvdisasm", tool, sizeof tool)) {
        nvdisasm = 0;
        if (find_cuda_tool("cuobjdump", tool, sizeof tool)) {
            fflush(stdout);
            fprintf(stderr,
                    "nvfp4jit %s: --mix needs the SASS, but neither nvdisasm nor cuobjdump "
                    "was found (looked on PATH, in $CUDA_HOME/bin and in /usr/local/cuda/bin); "
                    "install the CUDA toolkit's binary utilities or put them on PATH\n",
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
    int w = snprintf(file, sizeof file, "%s/nvfp4jit-mix-XXXXXX.cubin", tmp);
    if (w < 0 || (size_t)w >= sizeof file)
        return tool_fail(cmd, "cannot create a temporary file: TMPDIR is too long (%zu bytes)",
                         strlen(tmp));
    int fd = mkstemps(file, 6);
    if (fd < 0)
        return tool_fail(cmd, "cannot create a temporary file in %s: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    int ok = f && fwrite(cubin, 1, size, f) == size;
    if (f) ok = (fclose(f) == 0) && ok;
    else close(fd);
    if (!ok) {
        unlink(file);
        return tool_fail(cmd, "cannot write %s", file);
    }
    static char opt_c[] = "-c", opt_sass[] = "--dump-sass";
    char *args[4] = {tool, nvdisasm ? opt_c : opt_sass, file, NULL};
    char *text = NULL;
    size_t len = 0;
    int r = capture(args, &text, &len);
    unlink(file);
    if (r != 0) {
        free(text);
        return tool_fail(cmd, "%s exited with status %d", tool, r);
    }
    op_count ops[256];
    int nops = 0;
    long total = 0, cls_n[MIX_N] = {0};
    for (char *line = text; line && *line;) {
        char *e = strchr(line, '\n');
        if (e) *e = '\0';
        char op[32];
        if (line_opcode(line, op, sizeof op) == 0) {
            total++;
            int c = mix_class(op);
            if (c >= 0) {
                cls_n[c]++;
                int j = 0;
                while (j < nops && strcmp(ops[j].op, op)) j++;
                if (j == nops && nops < 256) {
                    snprintf(ops[nops].op, sizeof ops[nops].op, "%s", op);
                    ops[nops].n = 0;
                    ops[nops].cls = c;
                    nops++;
                }
                if (j < nops) ops[j].n++;
            }
        }
        line = e ? e + 1 : NULL;
    }
    free(text);
    printf("instruction mix of %s (SASS from %s, static counts):\n",
           tool_variant_str(nvfp4jit_kernel_variant(k)), tool);
    for (int c = 0; c < MIX_N; c++) {
        printf("  %-36s %7ld", mix_title[c], cls_n[c]);
        int first = 1;
        for (int j = 0; j < nops; j++) {
            if (ops[j].cls != c) continue;
            printf("%s%s %ld", first ? "  (" : ", ", ops[j].op, ops[j].n);
            first = 0;
        }
        printf("%s\n", first ? "" : ")");
    }
    printf("  %-36s %7ld\n", "all instructions", total);
    return 0;
}

/* ---- inspect wrapper ----------------------------------------------------------------------- */
int cmd_inspect(int argc, char **argv);

int cmd_inspect_mix(int argc, char **argv) {
    int mix = 0, help = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--mix")) mix = 1;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) help = 1;
    }
    if (help) {
        int r = cmd_inspect(argc, argv);
        if (r == 0)
            printf("\n--mix (also accepted): print an instruction-mix summary of the SASS: counts "
                   "of MMA\n(HGMMA/UTC*MMA), shared (LDS/STS), local (LDL/STL), BAR, global "
                   "(LDG/STG), LDGSTS\nand TMA/bulk (UTMALDG/UBLKCP) instructions; needs nvdisasm "
                   "or cuobjdump.\n");
        return r;
    }
    if (!mix) return cmd_inspect(argc, argv);
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return tool_fail("inspect", "out of memory");
    int n = 0, others = 0, after = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && !after && !strcmp(argv[i], "--mix")) continue;
        if (i > 0 && !strcmp(argv[i], "--")) after = 1;
        if (i > 0 && !after &&
            (!strcmp(argv[i], "--source") || !strcmp(argv[i], "--ptx") ||
             !strcmp(argv[i], "--sass") || !strcmp(argv[i], "--log") ||
             !strcmp(argv[i], "--resources") || !strncmp(argv[i], "--cubin", 7)))
            others = 1;
        rest[n++] = argv[i];
    }
    int rc = 0;
    if (others) {
        rc = cmd_inspect(n, rest);
        if (rc) {
            free(rest);
            return rc;
        }
        printf("==== mix ====\n");
    }
    /* parse the variant (the other inspect options are accepted and ignored here) */
    static const tool_usage u = {"inspect", NULL, NULL};
    tool_variant_opts vo = {0};
    int ign = 0;
    const char *ign_s = NULL;
    const tool_opt opts[] = {
        TOOL_VARIANT_OPTS(vo),
        {"source", OPT_FLAG, &ign, NULL, NULL, 0, 0},
        {"ptx", OPT_FLAG, &ign, NULL, NULL, 0, 0},
        {"sass", OPT_FLAG, &ign, NULL, NULL, 0, 0},
        {"log", OPT_FLAG, &ign, NULL, NULL, 0, 0},
        {"resources", OPT_FLAG, &ign, NULL, NULL, 0, 0},
        {"cubin", OPT_STRING, &ign_s, "FILE", NULL, 0, 0},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, n, rest, NULL, 0, NULL);
    free(rest);
    if (r >= 0) return r;
    nvfp4jit_variant v;
    if ((r = tool_variant_from_opts(u.cmd, &vo, &v))) return r;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) return 1;
    nvfp4jit_kernel *k = NULL;
    nvfp4jit_status s = nvfp4jit_compile(ctx, &v, &k);
    if (s != NVFP4JIT_OK) {
        char what[192];
        snprintf(what, sizeof what, "cannot compile %s", tool_variant_str(&v));
        rc = tool_lib_fail(u.cmd, ctx, s, what);
    } else {
        rc = print_mix(u.cmd, k);
    }
    nvfp4jit_ctx_destroy(ctx);
    return rc;
}
