/* test_tool.c - the nvfp4jit command (run as a child process) and the problem-set parser.
 * No GPU needed: the GPU paths of demo and bench are exercised on the lent GPU by hand. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "nvfp4jit.h"
#include "problems.h"
#include "testutil.h"

#define OUT_CAP (1 << 20)
static char out[OUT_CAP];

/* The seed's sm_100a variant: compiles in ~0.25 s, runs nowhere here. */
#define VARIANT_ARGS "--arch sm_100a --tile 128x64x256 --stages 6"

/* The command's path, made absolute (some tests cd first). */
static const char *tool_path(void) {
    static char abs[4096];
    if (!abs[0] && !realpath(tu_tool(), abs)) snprintf(abs, sizeof abs, "%s", tu_tool());
    return abs;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Run the tool with NVFP4JIT_CACHE_DIR=cache (NULL: a path that must not be used) and the
 * given arguments (shell syntax). Output in `out`. @return the exit status. */
static int tool(const char *cache, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tool(const char *cache, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "NVFP4JIT_CACHE_DIR='%s' '%s' %s",
             cache ? cache : "/nonexistent/nvfp4jit-test-cache", tool_path(), args);
    return tu_run(cmd, out, sizeof out);
}

/* tool() under timeout(1): a hang ends as exit 137 within `secs`, not as a stuck CI job. */
static int tool_timed(int secs, const char *cache, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int tool_timed(int secs, const char *cache, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "NVFP4JIT_CACHE_DIR='%s' timeout -s KILL %d '%s' %s",
             cache ? cache : "/nonexistent/nvfp4jit-test-cache", secs, tool_path(), args);
    return tu_run(cmd, out, sizeof out);
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static int count_lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *e = strchr(line, '\n');
        size_t len = e ? (size_t)(e - line) : strlen(line);
        char buf[4096];
        if (len >= sizeof buf) len = sizeof buf - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (strstr(buf, needle)) n++;
        line = e ? e + 1 : NULL;
    }
    return n;
}

/* The value after "label" on its line, e.g. "cache entry:" -> the path. */
static int line_value(const char *text, const char *label, char *val, size_t n) {
    const char *p = strstr(text, label);
    if (!p) return -1;
    p += strlen(label);
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, "\n");
    if (len == 0 || len >= n) return -1;
    memcpy(val, p, len);
    val[len] = '\0';
    return 0;
}

static void dump_on_failure(int failed_before) {
    if (tu_failures > failed_before) fprintf(stderr, "  --- tool output ---\n%s\n  ---\n", out);
}

/* ---- usage ----------------------------------------------------------------------------------- */
static void test_help(void) {
    static const char *cmds[] = {"compile", "inspect", "cache", "demo", "bench"};
    int f0 = tu_failures;
    CHECK(tool(NULL, "--help") == 0);
    CHECK(contains(out, "usage: nvfp4jit"));
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CHECK(contains(out, cmds[i])); /* listed in the main help */
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: nvfp4jit %s", cmds[i]);
        int rc = tool(NULL, "%s --help", cmds[i]);
        CHECKF(rc == 0, "%s --help exited %d", cmds[i], rc);
        CHECKF(contains(out, want), "%s --help lacks '%s'", cmds[i], want);
        rc = tool(NULL, "help %s", cmds[i]);
        CHECKF(rc == 0 && contains(out, want), "help %s", cmds[i]);
    }
    CHECK(tool(NULL, "--version") == 0 && contains(out, NVFP4JIT_VERSION_STRING));
    dump_on_failure(f0);
}

static void test_bad_usage(void) {
    int f0 = tu_failures;
    CHECK(tool(NULL, "frobnicate") == 2 && contains(out, "frobnicate"));
    CHECK(tool(NULL, "%s", "") == 2 && contains(out, "missing command"));
    CHECK(tool(NULL, "--bogus compile") == 2 && contains(out, "--bogus"));
    CHECK(tool(NULL, "compile --frob " VARIANT_ARGS) == 2 && contains(out, "--frob"));
    CHECK(tool(NULL, "inspect --frob") == 2 && contains(out, "--frob"));
    CHECK(tool(NULL, "demo --nope 1") == 2 && contains(out, "--nope"));
    CHECK(tool(NULL, "bench --nope") == 2 && contains(out, "--nope"));
    CHECK(tool(NULL, "cache") == 2 && contains(out, "missing action"));
    CHECK(tool(NULL, "cache frob") == 2 && contains(out, "frob"));
    CHECK(tool(NULL, "cache list extra") == 2 && contains(out, "extra"));
    CHECK(tool(NULL, "compile --arch sm_80 --tile 128x64x256 --stages 6") == 2 &&
          contains(out, "sm_80"));
    CHECK(tool(NULL, "compile --arch sm_100a --tile 128x64 --stages 6") == 2 &&
          contains(out, "128x64"));
    CHECK(tool(NULL, "compile --arch sm_100a --tile 128x64x256 --stages x") == 2 &&
          contains(out, "--stages"));
    CHECK(tool(NULL, "compile --arch sm_100a --tile 128x64x256") == 2 &&
          contains(out, "--stages"));
    CHECK(tool(NULL, "compile --stages") == 2 && contains(out, "--stages"));
    CHECK(tool(NULL, "compile --swap=1 " VARIANT_ARGS) == 2 && contains(out, "--swap"));
    CHECK(tool(NULL, "compile --variant nonsense") == 2 && contains(out, "nonsense"));
    CHECK(tool(NULL, "demo --arch sm_70") == 2 && contains(out, "sm_70"));
    CHECK(tool(NULL, "demo --groups 128x256x512 --set bench1") == 2 &&
          contains(out, "--groups"));
    CHECK(tool(NULL, "bench --iters 3") == 2 && contains(out, "--iters"));
    dump_on_failure(f0);
}

/* ---- problem sets through the command ------------------------------------------------------- */
static void test_groups_malformed(void) {
    static const char *bad[] = {"12x4096", "axbxc", "-1x8x64", "", "1x2x3x4", "12xx64",
                                "99999999999x8x64", "+1x8x64", "1.5x8x64"};
    int f0 = tu_failures;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = tool(NULL, "demo --arch sm_100a --groups '%s'", bad[i]);
        char want[128];
        snprintf(want, sizeof want, "group 0 '%s'", bad[i]);
        CHECKF(rc != 0, "--groups '%s' exited 0", bad[i]);
        CHECKF(contains(out, want), "--groups '%s': message lacks \"%s\"", bad[i], want);
    }
    /* the position of a bad token among good ones */
    CHECK(tool(NULL, "demo --arch sm_100a --groups 128x256x512,12x4096") != 0);
    CHECK(contains(out, "group 1 '12x4096'"));
    CHECK(contains(out, "expected MxNxK"));
    CHECK(tool(NULL, "demo --arch sm_100a --groups 128x256x512,") != 0);
    CHECK(contains(out, "group 1 ''"));
    dump_on_failure(f0);
}

static void test_groups_k100(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    int rc = tool(dir, "demo --arch sm_100a --groups 128x256x100");
    CHECKF(rc != 0 && rc != 2, "exit %d (want a library failure, 1)", rc);
    CHECK(contains(out, "K=100"));
    rc = tool(dir, "demo --arch sm_100a --groups 128x256x512,64x100x256");
    CHECK(rc != 0 && contains(out, "N=100") && contains(out, "group 1"));
    /* one numbering (from 0) in the command's parser and the library's checks */
    CHECK(tool(dir, "demo --arch sm_100a --groups 128x256x512,64x8x") == 2 &&
          contains(out, "group 1 '64x8x'"));
    dump_on_failure(f0);
    tu_rmtree(dir);
}

static void test_set_selection(void) {
    const char *dir = tu_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/p.txt", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fprintf(f, "# a test file\n\nsmall 128x256x512 # trailing comment\nother 64x64x64\n");
    fclose(f);
    int f0 = tu_failures;
    CHECK(tool(dir, "demo --problems '%s' --set nosuch", path) == 2);
    CHECK(contains(out, "nosuch") && contains(out, "small") && contains(out, "other"));
    CHECK(tool(dir, "demo --problems '%s/missing.txt'", dir) == 2 && contains(out, "missing.txt"));
    f = fopen(path, "w");
    REQUIRE(f);
    fprintf(f, "ok 128x256x512\nbad 128x256x512 12x4096\n");
    fclose(f);
    CHECK(tool(dir, "demo --problems '%s'", path) == 2);
    CHECK(contains(out, ":2:") && contains(out, "group 1 '12x4096'"));
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* ---- the parser, in process --------------------------------------------------------------- */
static void test_parser_text(void) {
    const char *text = "# name groups\n"
                       "\n"
                       "   \t\n"
                       "a 1x8x64  2x16x128\t# comment 3x3x3\r\n"
                       "b\t0x4096x7168\n"
                       "  # indented comment\n"
                       "c 2147483647x8x64";
    prob_file f;
    char err[256] = "";
    REQUIRE(prob_parse_text(text, strlen(text), "t.txt", &f, err, sizeof err) == 0);
    CHECK(f.count == 3);
    const prob_set *a = prob_find(&f, "a");
    REQUIRE(a);
    CHECK(a->count == 2 && a->line == 4);
    CHECK(a->groups[0].m == 1 && a->groups[0].n == 8 && a->groups[0].k == 64);
    CHECK(a->groups[1].m == 2 && a->groups[1].n == 16 && a->groups[1].k == 128);
    const prob_set *b = prob_find(&f, "b");
    REQUIRE(b);
    CHECK(b->count == 1 && b->groups[0].m == 0 && b->groups[0].k == 7168);
    const prob_set *c = prob_find(&f, "c");
    REQUIRE(c);
    CHECK(c->groups[0].m == 2147483647);
    CHECK(prob_find(&f, "nosuch") == NULL);
    CHECK(prob_find(&f, "") == NULL);
    prob_file_free(&f);
    prob_file_free(&f); /* twice is harmless */

    static const struct {
        const char *text, *want;
    } bad[] = {
        {"a 1x8x64\nb 12x4096\n", "t.txt:2: group 0 '12x4096': expected MxNxK"},
        {"a 1x8x64 axbxc\n", "t.txt:1: group 1 'axbxc'"},
        {"a -1x8x64\n", "group 0 '-1x8x64'"},
        {"a 1x8x99999999999\n", "K=99999999999 out of range"},
        {"\n\nlonely\n", "t.txt:3: set 'lonely' has no groups"},
        {"a 1x8x64\na 2x8x64\n", "t.txt:2: duplicate set name 'a' (first on line 1)"},
        {"a 1x8x64 1x8\n", "group 1 '1x8'"},
        {"a 1x8x64x2\n", "group 0 '1x8x64x2'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = prob_parse_text(bad[i].text, strlen(bad[i].text), "t.txt", &f, err, sizeof err);
        CHECKF(rc == -1, "case %zu parsed", i);
        CHECKF(strstr(err, bad[i].want), "case %zu: '%s' lacks '%s'", i, err, bad[i].want);
        CHECK(f.count == 0 && f.sets == NULL);
    }
    /* empty text: no sets, no error */
    CHECK(prob_parse_text("", 0, "e.txt", &f, err, sizeof err) == 0 && f.count == 0);
    prob_file_free(&f);
    /* a NUL inside a line */
    CHECK(prob_parse_text("a 1x8x64\0x", 10, "n.txt", &f, err, sizeof err) == -1);
}

static void test_parser_groups(void) {
    prob_set s;
    char err[256];
    REQUIRE(prob_parse_groups("128x256x512, 0x8x64 ,1x4096x7168", NULL, &s, err, sizeof err) == 0);
    CHECK(!strcmp(s.name, "groups"));
    CHECK(s.count == 3);
    CHECK(s.groups[0].m == 128 && s.groups[0].n == 256 && s.groups[0].k == 512);
    CHECK(s.groups[1].m == 0 && s.groups[1].n == 8 && s.groups[1].k == 64);
    CHECK(s.groups[2].m == 1 && s.groups[2].n == 4096 && s.groups[2].k == 7168);
    prob_set copy;
    REQUIRE(prob_set_copy(&copy, &s) == 0);
    CHECK(copy.count == 3 && copy.groups != s.groups && copy.groups[2].k == 7168);
    prob_set_free(&copy);
    prob_set_free(&s);
    prob_set_free(&s);

    static const struct {
        const char *s, *want;
    } bad[] = {
        {"12x4096", "group 0 '12x4096': expected MxNxK"},
        {"axbxc", "group 0 'axbxc'"},
        {"-1x8x64", "group 0 '-1x8x64'"},
        {"", "group 0 ''"},
        {"1x8x64,,1x8x64", "group 1 ''"},
        {"1x8x64,2x8x64,3x8", "group 2 '3x8'"},
        {"1x8x64 2x8x64", "group 0 '1x8x64 2x8x64'"},
        {"1x99999999999999999999999x64", "N=99999999999999999999999 out of range"},
        {"2147483648x8x64", "M=2147483648 out of range"},
        {"1x8x0x", "group 0 '1x8x0x'"},
        {"x8x64", "group 0 'x8x64'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = prob_parse_groups(bad[i].s, "g", &s, err, sizeof err);
        CHECKF(rc == -1, "'%s' parsed", bad[i].s);
        CHECKF(strstr(err, bad[i].want), "'%s': '%s' lacks '%s'", bad[i].s, err, bad[i].want);
        CHECK(s.count == 0 && s.groups == NULL);
    }
    prob_shape sh;
    CHECK(prob_parse_shape("4x8x16", 6, &sh, err, sizeof err) == 0 && sh.k == 16);
    CHECK(prob_parse_shape("4x8x16", 5, &sh, err, sizeof err) == 0 && sh.k == 1);
    CHECK(prob_parse_shape("4X8X16", 6, &sh, err, sizeof err) == 0 && sh.n == 8);
}

static void test_parser_shipped_files(void) {
    const char *src = getenv("NVFP4JIT_SOURCE_DIR");
#ifdef NVFP4JIT_SOURCE_DIR
    if (!src || !*src) src = NVFP4JIT_SOURCE_DIR;
#endif
    REQUIRE(src && *src);
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/problems/gpumode.txt", src);
    prob_file f;
    REQUIRE(prob_load_file(path, &f, err, sizeof err) == 0);
    CHECK(f.count == 14);
    static const int64_t n1[] = {4096, 7168, 3072, 4096}, k1[] = {7168, 2048, 4096, 1536};
    static const size_t cnt[] = {8, 8, 2, 2};
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "bench%d", i + 1);
        const prob_set *s = prob_find(&f, name);
        CHECKF(s != NULL, "%s missing", name);
        if (!s) continue;
        CHECK(s->count == cnt[i]);
        for (size_t g = 0; g < s->count; g++)
            CHECK(s->groups[g].n == n1[i] && s->groups[g].k == k1[i] && s->groups[g].m > 0);
    }
    const prob_set *b1 = prob_find(&f, "bench1");
    CHECK(b1 && b1->groups[0].m == 80 && b1->groups[7].m == 160);
    prob_file_free(&f);

    snprintf(path, sizeof path, "%s/problems/moe.txt", src);
    REQUIRE(prob_load_file(path, &f, err, sizeof err) == 0);
    const prob_set *d = prob_find(&f, "decode64-up");
    CHECK(d && d->count == 64);
    const prob_set *e = prob_find(&f, "edges");
    CHECK(e && e->count == 5 && e->groups[1].m == 0);
    prob_file_free(&f);

    CHECK(prob_load_file("/nonexistent/p.txt", &f, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent/p.txt") != NULL);
}

/* ---- cache ----------------------------------------------------------------------------------- */
static void test_cache_dir(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    CHECK(tool(dir, "cache dir") == 0);
    char want[4200];
    snprintf(want, sizeof want, "%s\n", dir);
    CHECKF(!strcmp(out, want), "got '%s'", out);
    CHECK(tool(dir, "--cache-dir /tmp/elsewhere-nvfp4jit cache dir") == 0);
    CHECK(!strcmp(out, "/tmp/elsewhere-nvfp4jit\n"));
    CHECK(tool(dir, "cache dir --cache-dir=/tmp/other-nvfp4jit") == 0);
    CHECK(!strcmp(out, "/tmp/other-nvfp4jit\n"));
    CHECK(tool(dir, "cache list") == 0); /* empty cache: fine */
    CHECK(tool(dir, "cache verify") == 0);
    CHECK(tool(dir, "cache clear") == 0 && contains(out, "removed 0"));
    dump_on_failure(f0);
    tu_rmtree(dir);
}

static void test_compile_and_cache(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    int rc = tool(dir, "compile " VARIANT_ARGS);
    CHECKF(rc == 0, "compile exited %d", rc);
    CHECK(contains(out, "sm100a:128x64x256:s6"));
    CHECK(contains(out, "compiled"));
    CHECK(contains(out, "registers:"));
    /* the cold compile's parts (issue 10 part 7) */
    CHECK(contains(out, "  render:") && contains(out, "  NVRTC:") && contains(out, "  nvJitLink:"));
    char entry[4200] = "";
    CHECK(line_value(out, "cache entry:", entry, sizeof entry) == 0);
    CHECKF(!strncmp(entry, dir, strlen(dir)), "entry '%s' not under '%s'", entry, dir);
    dump_on_failure(f0);

    f0 = tu_failures;
    CHECK(tool(dir, "cache list") == 0);
    CHECKF(count_lines_with(out, "  ok  ") == 1, "want one ok entry");
    CHECK(count_lines_with(out, "BAD") == 0);
    CHECK(contains(out, "variant=sm100a:128x64x256:s6"));
    CHECK(contains(out, "sm_100a") || contains(out, "sm100a"));
    CHECK(tool(dir, "cache verify") == 0 && contains(out, "0 bad"));
    dump_on_failure(f0);

    /* a second process: served from the disk cache */
    f0 = tu_failures;
    CHECK(tool(dir, "compile --variant sm100a:128x64x256:s6") == 0);
    CHECK(contains(out, "disk cache"));
    char entry2[4200] = "";
    CHECK(line_value(out, "cache entry:", entry2, sizeof entry2) == 0 && !strcmp(entry, entry2));
    dump_on_failure(f0);

    /* inspect the same variant */
    f0 = tu_failures;
    CHECK(tool(dir, "inspect " VARIANT_ARGS " --source") == 0 && contains(out, "__global__"));
    CHECK(tool(dir, "inspect " VARIANT_ARGS " --ptx") == 0 && contains(out, ".entry"));
    CHECK(tool(dir, "inspect " VARIANT_ARGS " --log") == 0);
    CHECK(tool(dir, "inspect " VARIANT_ARGS) == 0 && contains(out, "registers:"));
    CHECK(tool(dir, "inspect " VARIANT_ARGS " --source --resources") == 0 &&
          contains(out, "==== source") && contains(out, "==== resources"));
    char cubin[4300];
    snprintf(cubin, sizeof cubin, "%s/k.cubin", dir);
    CHECK(tool(dir, "inspect " VARIANT_ARGS " --cubin '%s'", cubin) == 0);
    struct stat st;
    CHECK(stat(cubin, &st) == 0 && st.st_size > 4 * 1024);
    rc = tool(dir, "inspect " VARIANT_ARGS " --sass");
    if (rc == 0) {
        CHECK(strlen(out) > 1000); /* a disassembly */
    } else {
        CHECKF(rc == 1 && contains(out, "neither nvdisasm nor cuobjdump"), "--sass exit %d", rc);
    }
    /* with no disassembler reachable: a plain message and exit 1 (only checkable where the
     * fixed fallback /usr/local/cuda/bin has neither) */
    if (access("/usr/local/cuda/bin/nvdisasm", X_OK) && access("/usr/local/cuda/bin/cuobjdump", X_OK)) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "PATH=/nonexistent CUDA_HOME=/nonexistent NVFP4JIT_CACHE_DIR='%s' '%s' inspect "
                 VARIANT_ARGS " --sass", dir, tool_path());
        rc = tu_run(cmd, out, sizeof out);
        CHECK(rc == 1 && contains(out, "neither nvdisasm nor cuobjdump"));
    }
    dump_on_failure(f0);

    /* clear */
    f0 = tu_failures;
    CHECK(tool(dir, "cache clear") == 0 && contains(out, "removed 1 entry"));
    CHECK(tool(dir, "cache list") == 0 && count_lines_with(out, "  ok  ") == 0);
    dump_on_failure(f0);
    tu_rmtree(dir);
}

static void test_cache_corrupt(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    REQUIRE(tool(dir, "compile " VARIANT_ARGS) == 0);
    char entry[4200] = "", cubin[4300];
    REQUIRE(line_value(out, "cache entry:", entry, sizeof entry) == 0);
    snprintf(cubin, sizeof cubin, "%s/kernel.cubin", entry);
    struct stat st;
    REQUIRE(stat(cubin, &st) == 0 && st.st_size > 100);
    REQUIRE(truncate(cubin, st.st_size / 2) == 0);

    int rc = tool(dir, "cache verify");
    CHECKF(rc == 1, "verify of a truncated entry exited %d", rc);
    const char *key = strrchr(entry, '/');
    CHECK(key && contains(out, key + 1)); /* names the bad entry */
    CHECK(contains(out, "BAD"));
    CHECK(tool(dir, "cache list") == 0 && contains(out, "BAD"));

    rc = tool(dir, "compile " VARIANT_ARGS);
    CHECKF(rc == 0, "rebuild exited %d", rc);
    CHECK(contains(out, "warning"));
    CHECK(contains(out, "compiled"));
    CHECK(tool(dir, "cache verify") == 0 && contains(out, "0 bad"));
    CHECK(tool(dir, "cache list") == 0 && count_lines_with(out, "  ok  ") == 1);
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* ---- hostile files (issue 11) ----------------------------------------------------------- */
/* A FIFO planted as kernel.cubin or manifest.txt hung compile and `cache verify` forever
 * (opened without O_NONBLOCK). Every command runs under timeout(1), so a regression fails
 * (exit 124) instead of hanging CI. */
static void test_fifo_in_cache(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    REQUIRE(tool(dir, "compile " VARIANT_ARGS) == 0);
    char entry[4200] = "", path[4300];
    REQUIRE(line_value(out, "cache entry:", entry, sizeof entry) == 0);
    static const char *const names[] = {"kernel.cubin", "manifest.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", entry, names[i]);
        REQUIRE(unlink(path) == 0 && mkfifo(path, 0644) == 0);
        int rc = tool_timed(10, dir, "cache verify"); /* a hang is killed: rc 137 */
        CHECKF(rc == 1 && contains(out, "BAD") && contains(out, "not a regular file"),
               "verify with a FIFO as %s: rc %d", names[i], rc);
        rc = tool_timed(10, dir, "compile " VARIANT_ARGS);
        CHECKF(rc == 0 && contains(out, "compiled") && contains(out, "not a regular file"),
               "compile with a FIFO as %s: rc %d", names[i], rc);
    }
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* A cache directory others can write to was used without a word; `cache clear` followed a
 * symlinked prefix directory and deleted what it pointed to. */
static void test_cache_untrusted(void) {
    char dir[4096], outside[4096], p[4300];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(outside, sizeof outside, "%s", tu_tmpdir());
    int f0 = tu_failures;
    REQUIRE(chmod(dir, 0777) == 0);
    int rc = tool(dir, "compile " VARIANT_ARGS);
    CHECKF(rc == 0 && contains(out, "writable by other users") && contains(out, "compiled"),
           "rc %d", rc);
    snprintf(p, sizeof p, "%s/v1", dir);
    struct stat st;
    CHECK(lstat(p, &st) != 0); /* nothing written there */
    REQUIRE(chmod(dir, 0700) == 0);
    REQUIRE(tool(dir, "compile " VARIANT_ARGS) == 0);
    /* a prefix directory replaced by a link to a directory with data */
    snprintf(p, sizeof p, "%s/e3aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", outside); /* a key's name */
    REQUIRE(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/e3aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/keep.txt", outside);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fputs("precious\n", f);
    fclose(f);
    char link[4300];
    snprintf(link, sizeof link, "%s/v1/e3", dir);
    REQUIRE(symlink(outside, link) == 0);
    CHECK(tool(dir, "cache verify") == 1 && contains(out, "BAD e3"));
    CHECK(tool(dir, "cache clear") == 0 && contains(out, "removed 1 entry"));
    CHECK(stat(p, &st) == 0 && st.st_size == 9);
    dump_on_failure(f0);
    tu_rmtree(dir);
    tu_rmtree(outside);
}

/* `cache list` read "<entry_dir>/manifest.txt" by path: a symlinked entry or prefix directory
 * was followed (O_NOFOLLOW guarded the last component only) and data outside the cache printed. */
static void test_cache_list_symlinks(void) {
    char dir[4096], outside[4096], p[4400], link[4400];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(outside, sizeof outside, "%s", tu_tmpdir());
    int f0 = tu_failures;
    REQUIRE(tool(dir, "compile " VARIANT_ARGS) == 0);
    /* outside: an entry-like directory, and a prefix-like one holding one */
    static const char *const made[] = {"e", "pfx", "pfx/cd00000000000000000000000000000000"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", outside, made[i]);
        REQUIRE(mkdir(p, 0755) == 0);
        snprintf(p, sizeof p, "%s/%s/manifest.txt", outside, made[i]);
        FILE *f = fopen(p, "w");
        REQUIRE(f);
        fprintf(f, "format = 1\nvariant = LEAKED-%d\nkey.arch = sm_LEAK\n", i);
        fclose(f);
    }
    snprintf(p, sizeof p, "%s/v1/ab", dir);
    REQUIRE(mkdir(p, 0755) == 0);
    snprintf(link, sizeof link, "%s/v1/ab/ab000000000000000000000000000000", dir);
    snprintf(p, sizeof p, "%s/e", outside);
    REQUIRE(symlink(p, link) == 0);
    snprintf(link, sizeof link, "%s/v1/cd", dir);
    snprintf(p, sizeof p, "%s/pfx", outside);
    REQUIRE(symlink(p, link) == 0);
    int rc = tool(dir, "cache list");
    CHECKF(rc == 0, "list exited %d", rc);
    CHECK(count_lines_with(out, "  ok  ") == 1); /* the real entry, with its manifest */
    CHECK(contains(out, "variant=sm100a:128x64x256:s6"));
    CHECK(contains(out, "ab000000000000000000000000000000  BAD  variant=-  arch=-"));
    CHECK(contains(out, "BAD"));
    CHECK(!contains(out, "LEAK")); /* nothing read through a link */
    dump_on_failure(f0);
    tu_rmtree(dir);
    tu_rmtree(outside);
}

/* --problems /dev/zero grew to 8.6 GB; a FIFO hung; 100k sets took 2 minutes (quadratic
 * duplicate check); a path longer than PATH_MAX was cut short and another file read. */
static void test_problems_hostile(void) {
    char err[512];
    prob_file f;
    CHECK(prob_load_file("/dev/zero", &f, err, sizeof err) == -1);
    CHECKF(strstr(err, "not a regular file") != NULL, "%s", err);
    const char *dir = tu_tmpdir();
    char p[4200];
    snprintf(p, sizeof p, "%s/fifo.txt", dir);
    REQUIRE(mkfifo(p, 0644) == 0);
    alarm(20); /* a hang kills the runner instead of CI */
    CHECK(prob_load_file(p, &f, err, sizeof err) == -1);
    alarm(0);
    CHECKF(strstr(err, "not a regular file") != NULL, "%s", err);
    CHECK(tool_timed(10, NULL, "demo --arch sm_100a --problems '%s'", p) == 2 &&
          contains(out, "not a regular file"));
    /* over the size cap: a sparse file, refused by its size before reading */
    snprintf(p, sizeof p, "%s/big.txt", dir);
    FILE *fp = fopen(p, "w");
    REQUIRE(fp);
    fclose(fp);
    REQUIRE(truncate(p, (off_t)PROB_FILE_MAX + 1) == 0);
    CHECK(prob_load_file(p, &f, err, sizeof err) == -1);
    CHECKF(strstr(err, "larger than") != NULL, "%s", err);
    /* a path longer than PATH_MAX whose first PATH_MAX-1 bytes name a real file */
    snprintf(p, sizeof p, "%s/ok.txt", dir);
    fp = fopen(p, "w");
    REQUIRE(fp);
    fputs("a 8x8x64\n", fp);
    fclose(fp);
    char *longp = malloc(PATH_MAX + 64);
    REQUIRE(longp);
    size_t n = strlen(p);
    memcpy(longp, p, n);
    while (n < PATH_MAX - 1) longp[n++] = '/'; /* "ok.txt////...": the same file if cut */
    memcpy(longp + n, "x/y", 4);
    CHECK(prob_load_file(longp, &f, err, sizeof err) == -1);
    CHECKF(strstr(err, "longer than") != NULL, "%s", err);
    free(longp);
    tu_rmtree(dir);
    /* 100k sets: linear duplicate check */
    size_t sets = 100000;
    char *text = malloc(sets * 24);
    REQUIRE(text);
    size_t len = 0;
    for (size_t i = 0; i < sets; i++) len += (size_t)sprintf(text + len, "s%zu 8x8x64\n", i);
    clock_t c0 = clock(); /* CPU time: the quadratic check took 2 minutes */
    CHECK(prob_parse_text(text, len, "many.txt", &f, err, sizeof err) == 0 && f.count == sets);
    double ms = (double)(clock() - c0) * 1e3 / CLOCKS_PER_SEC;
    CHECKF(ms < 3000, "100k sets took %.0f ms of CPU", ms);
    prob_file_free(&f);
    len += (size_t)sprintf(text + len, "s77 8x8x64\n");
    CHECK(prob_parse_text(text, len, "many.txt", &f, err, sizeof err) == -1);
    CHECKF(strstr(err, "many.txt:100001: duplicate set name 's77' (first on line 78)"), "%s",
           err);
    free(text);
}

/* A --problems path of exactly PATH_MAX (4096) bytes was copied into a PATH_MAX buffer and
 * lost its last byte: "./"x2045 + "a.txtt" read a.txt instead (a different file, exit 0). */
static void test_problems_path_max(void) {
    const char *dir = tu_tmpdir();
    char p[4200];
    snprintf(p, sizeof p, "%s/a.txt", dir);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fputs("good 128x4096x7168\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/a.txtt", dir);
    f = fopen(p, "w");
    REQUIRE(f);
    fputs("intended 256x4096x7168\n", f);
    fclose(f);
    int f0 = tu_failures;
    /* "./" x 2045 + name: 4090 bytes of prefix, then "a.txtt" (4096) or "a.txt" (4095) */
    char *rel = malloc(PATH_MAX + 16);
    char *cmd = malloc(PATH_MAX + 8192);
    REQUIRE(rel && cmd);
    size_t n = 0;
    for (int i = 0; i < 2045; i++, n += 2) memcpy(rel + n, "./", 2);
    memcpy(rel + n, "a.txtt", 7);
    REQUIRE(strlen(rel) == PATH_MAX);
    snprintf(cmd, PATH_MAX + 8192, "cd '%s' && '%s' explain --problems '%s' --arch sm_90a", dir,
             tool_path(), rel);
    int rc = tu_run(cmd, out, sizeof out);
    CHECKF(rc == 2, "a %d-byte --problems path: exit %d (want 2)", PATH_MAX, rc);
    CHECK(!contains(out, "good")); /* never the file its first 4095 bytes name */
    CHECK(contains(out, "--problems") && contains(out, "too long"));
    /* one byte shorter fits: "a.txt", read as named */
    memcpy(rel + n, "a.txt", 6);
    REQUIRE(strlen(rel) == PATH_MAX - 1);
    snprintf(cmd, PATH_MAX + 8192, "cd '%s' && '%s' explain --problems '%s' --arch sm_90a", dir,
             tool_path(), rel);
    rc = tu_run(cmd, out, sizeof out);
    CHECKF(rc == 0 && contains(out, "good"), "a %d-byte path: exit %d", PATH_MAX - 1, rc);
    free(rel);
    free(cmd);
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* find_cuda_tool cut "<PATH entry>/nvdisasm" to fit PATH_MAX and ran what the cut path named:
 * with a 4087-byte PATH entry, "<entry>/nvdisas". */
static void test_sass_tool_path_max(void) {
    const char *dir = tu_tmpdir();
    char *d = malloc(PATH_MAX + 64);
    REQUIRE(d);
    size_t n = (size_t)snprintf(d, PATH_MAX, "%s", dir);
    while (n < PATH_MAX - 9) { /* components of at most 200 bytes up to 4087 bytes */
        size_t want = PATH_MAX - 9 - n - 1, c = want > 200 ? 200 : want;
        if (want > 200 && want - 200 < 2) c = 190; /* leave room for one more "/x" */
        d[n++] = '/';
        memset(d + n, 'd', c);
        n += c;
        d[n] = '\0';
        REQUIRE(mkdir(d, 0755) == 0);
    }
    REQUIRE(strlen(d) == PATH_MAX - 9);
    char *fake = malloc(PATH_MAX + 64);
    REQUIRE(fake);
    snprintf(fake, PATH_MAX + 64, "%s/nvdisas", d); /* 4095 bytes: what the cut path names */
    FILE *f = fopen(fake, "w");
    REQUIRE(f);
    fputs("#!/bin/sh\necho FAKE-NVDISAS-RAN\n", f);
    fclose(f);
    REQUIRE(chmod(fake, 0755) == 0);
    char *cmd = malloc(PATH_MAX + 8192);
    REQUIRE(cmd);
    snprintf(cmd, PATH_MAX + 8192,
             "PATH='%s' CUDA_HOME=/nonexistent NVFP4JIT_CACHE_DIR='%s/cache' '%s' inspect "
             VARIANT_ARGS " --sass", d, dir, tool_path());
    int f0 = tu_failures;
    int rc = tu_run(cmd, out, sizeof out);
    CHECKF(!contains(out, "FAKE-NVDISAS-RAN"), "ran %s (exit %d)", "<entry>/nvdisas", rc);
    CHECK(rc == 0 || (rc == 1 && contains(out, "neither nvdisasm nor cuobjdump")));
    dump_on_failure(f0);
    free(cmd);
    free(fake);
    free(d);
    tu_rmtree(dir);
}

/* ---- warm: its whole job is filling the disk cache ----------------------------------------- */
#define WARM_ARGS "warm --arch sm_100a --groups 128x256x512 --jobs 1"

/* No HOME, XDG_CACHE_HOME or NVFP4JIT_CACHE_DIR: there is no cache directory. warm printed
 * "into " (empty) and "1 compiled, 0 failed", exit 0. */
static void test_warm_no_cache_dir(void) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env -u HOME -u XDG_CACHE_HOME -u NVFP4JIT_CACHE_DIR '%s' " WARM_ARGS,
             tool_path());
    int f0 = tu_failures;
    int rc = tu_run(cmd, out, sizeof out);
    CHECKF(rc == 1, "exit %d (want 1)", rc);
    CHECK(contains(out, "no disk cache directory"));
    CHECK(!contains(out, "1 compiled"));
    /* compile is not warm: memory only, as before */
    snprintf(cmd, sizeof cmd, "env -u HOME -u XDG_CACHE_HOME -u NVFP4JIT_CACHE_DIR '%s' compile "
             VARIANT_ARGS, tool_path());
    CHECK(tu_run(cmd, out, sizeof out) == 0 && contains(out, "compiled"));
    dump_on_failure(f0);
}

/* A cache directory others can write to is not used (untrusted): warm stored nothing and
 * exited 0. */
static void test_warm_untrusted_dir(void) {
    char dir[4096], p[4300];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    REQUIRE(chmod(dir, 0777) == 0);
    int f0 = tu_failures;
    int rc = tool(dir, WARM_ARGS);
    CHECKF(rc == 1, "exit %d (want 1)", rc);
    CHECK(contains(out, "writable by other users") && contains(out, "not used"));
    CHECK(contains(out, "0 compiled, 0 already cached, 1 failed"));
    snprintf(p, sizeof p, "%s/v1", dir);
    struct stat st;
    CHECK(lstat(p, &st) != 0); /* nothing written there */
    dump_on_failure(f0);
    /* another user's directory is used read-only: nothing stored either (root: a directory
     * given to uid 65534; others: "/") */
    f0 = tu_failures;
    REQUIRE(chmod(dir, 0700) == 0);
    snprintf(p, sizeof p, "%s/theirs", dir);
    REQUIRE(mkdir(p, 0755) == 0);
    const char *theirs = geteuid() == 0 ? (chown(p, 65534, 65534) == 0 ? p : NULL)
                         : stat("/", &st) == 0 && st.st_uid != geteuid() ? "/"
                                                                        : NULL;
    CHECK(theirs != NULL);
    if (theirs) {
        rc = tool(theirs, WARM_ARGS);
        CHECKF(rc == 1, "another user's directory: exit %d (want 1)", rc);
        CHECK(contains(out, "belongs to another user") && contains(out, "1 failed"));
    }
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* A store that fails (here: <dir>/v1 is a file, so no entry can be written, even as root):
 * the library warns and goes on; warm counted the variant as compiled and exited 0. */
static void test_warm_store_fails(void) {
    const char *dir = tu_tmpdir();
    char p[4300];
    snprintf(p, sizeof p, "%s/v1", dir);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fclose(f);
    int f0 = tu_failures;
    int rc = tool(dir, WARM_ARGS);
    CHECKF(rc == 1, "exit %d (want 1)", rc);
    CHECK(contains(out, "0 compiled, 0 already cached, 1 failed"));
    CHECK(contains(out, "not stored in the disk cache"));
    /* compile and bench keep a failed store a warning: exit 0 */
    rc = tool(dir, "compile " VARIANT_ARGS);
    CHECKF(rc == 0 && contains(out, "warning") && contains(out, "cannot store"), "compile: %d",
           rc);
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* A read-only cache directory (0555) of the user running warm: the store fails with EACCES.
 * Root writes there anyway: as root, warm runs as uid 65534 through setpriv(1) where it can,
 * and the test is skipped where it cannot. */
static void test_warm_read_only_dir(void) {
    char dir[4096], cache[4200], cmd[16384], pre[256] = "";
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(cache, sizeof cache, "%s/cache", dir);
    REQUIRE(mkdir(cache, 0700) == 0);
    if (geteuid() == 0) {
        snprintf(pre, sizeof pre, "setpriv --reuid=65534 --regid=65534 --clear-groups ");
        snprintf(cmd, sizeof cmd, "%s'%s' --version", pre, tool_path());
        if (chmod(dir, 0755) != 0 || chown(cache, 65534, 65534) != 0 ||
            tu_run(cmd, out, sizeof out) != 0) {
            tu_rmtree(dir);
            SKIP("skipped: needs a non-root user (root writes a 0555 directory) and setpriv "
                 "cannot run the tool as uid 65534 here");
        }
    }
    REQUIRE(chmod(cache, 0555) == 0);
    snprintf(cmd, sizeof cmd, "%senv HOME=/nonexistent NVFP4JIT_CACHE_DIR='%s' '%s' " WARM_ARGS,
             pre, cache, tool_path());
    int f0 = tu_failures;
    int rc = tu_run(cmd, out, sizeof out);
    CHECKF(rc == 1, "exit %d (want 1)", rc);
    CHECK(contains(out, "0 compiled, 0 already cached, 1 failed"));
    CHECK(contains(out, "not stored in the disk cache") && contains(out, "Permission denied"));
    dump_on_failure(f0);
    chmod(cache, 0700);
    tu_rmtree(dir);
}

/* The good case stays as it was: compiled and stored, then found cached. */
static void test_warm_stores(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    CHECK(tool(dir, WARM_ARGS) == 0 && contains(out, "1 compiled, 0 already cached, 0 failed"));
    CHECK(tool(dir, WARM_ARGS) == 0 && contains(out, "0 compiled, 1 already cached, 0 failed"));
    CHECK(tool(dir, "cache list") == 0 && count_lines_with(out, "  ok  ") == 1);
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* ---- demo without a GPU of the arch ------------------------------------------------------- */
static void test_demo_groups(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    int rc = tool(dir, "demo --arch sm_100a --groups 128x256x512");
    CHECKF(rc == 0, "demo exited %d", rc);
    CHECK(contains(out, "variant:") && contains(out, "sm100a:"));
    CHECK(contains(out, "source:") && contains(out, "registers:"));
    CHECK(contains(out, "miss")); /* a fresh cache */
    /* no sm_100a GPU is lent: it says so plainly */
    CHECK(contains(out, "no CUDA device: rendered, compiled and cached only") ||
          contains(out, "skipped (the GPU is") || contains(out, "runs neither"));
    rc = tool(dir, "demo --arch sm_100a --groups 128x256x512");
    CHECK(rc == 0 && contains(out, "hit"));
    dump_on_failure(f0);
    tu_rmtree(dir);
}

static void test_bench_needs_gpu(void) {
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(NULL, &ctx) == NVFP4JIT_OK);
    int cc = 0;
    nvfp4jit_status s = nvfp4jit_device_arch(ctx, &cc);
    nvfp4jit_ctx_destroy(ctx);
    if (s == NVFP4JIT_OK) SKIP("a GPU is present: bench is exercised by hand there");
    int f0 = tu_failures;
    const char *dir = tu_tmpdir();
    CHECK(tool(dir, "bench --groups 128x256x512") == 1 && contains(out, "needs a CUDA device"));
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* ---- many processes at once ------------------------------------------------------------------ */
static void test_concurrent_compile(void) {
    const char *dir = tu_tmpdir();
    char cache[4200], cmd[16384];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for i in $(seq 16); do "
             "( NVFP4JIT_CACHE_DIR='%s' '%s' compile " VARIANT_ARGS " > out.$i 2>&1; "
             "echo $? > rc.$i ) & done; wait; "
             "for i in $(seq 16); do printf 'rc%%s=%%s\\n' $i \"$(cat rc.$i)\"; done",
             dir, cache, tool_path());
    int f0 = tu_failures;
    CHECK(tu_run(cmd, out, sizeof out) == 0);
    for (int i = 1; i <= 16; i++) {
        char want[32];
        snprintf(want, sizeof want, "rc%d=0\n", i);
        CHECKF(contains(out, want), "process %d did not exit 0", i);
    }
    dump_on_failure(f0);
    f0 = tu_failures;
    CHECK(tool(cache, "cache list") == 0);
    CHECKF(count_lines_with(out, "  ok  ") == 1, "want exactly one entry");
    CHECK(count_lines_with(out, "BAD") == 0);
    CHECK(tool(cache, "cache verify") == 0);
    snprintf(cmd, sizeof cmd, "find '%s' -name 'tmp.*' | wc -l", cache);
    CHECK(tu_run(cmd, out, sizeof out) == 0);
    CHECKF(atoi(out) == 0, "%d tmp.* left behind", atoi(out));
    dump_on_failure(f0);
    tu_rmtree(dir);
}

/* ---- how long a cold compile and a cache hit take (whole processes) ------------------------ */
static void test_compile_times(void) {
    const char *dir = tu_tmpdir();
    int f0 = tu_failures;
    double t0 = now_ms();
    int rc = tool(dir, "compile " VARIANT_ARGS);
    double cold = now_ms() - t0;
    CHECK(rc == 0 && contains(out, "compiled"));
    double hit = 1e9;
    for (int i = 0; i < 5; i++) { /* best of 5: the machine may be busy */
        t0 = now_ms();
        rc = tool(dir, "compile " VARIANT_ARGS);
        double t = now_ms() - t0;
        CHECK(rc == 0 && contains(out, "disk cache"));
        if (t < hit) hit = t;
    }
    printf("  compile times (whole process, sm100a:128x64x256:s6): cold %.1f ms (target < 1000), "
           "cache hit %.1f ms (target < 20)\n", cold, hit);
    CHECKF(cold < 5000, "cold compile took %.0f ms", cold);
    CHECKF(hit < 200, "cache hit took %.0f ms", hit);
    dump_on_failure(f0);
    tu_rmtree(dir);
}

const test_case tests_tool[] = {
    {"help", test_help},
    {"bad_usage", test_bad_usage},
    {"groups_malformed", test_groups_malformed},
    {"groups_k100", test_groups_k100},
    {"set_selection", test_set_selection},
    {"parser_text", test_parser_text},
    {"parser_groups", test_parser_groups},
    {"parser_shipped_files", test_parser_shipped_files},
    {"cache_dir", test_cache_dir},
    {"compile_and_cache", test_compile_and_cache},
    {"cache_corrupt", test_cache_corrupt},
    {"demo_groups", test_demo_groups},
    {"bench_needs_gpu", test_bench_needs_gpu},
    {"concurrent_compile", test_concurrent_compile},
    {"compile_times", test_compile_times},
    {"fifo_in_cache", test_fifo_in_cache},
    {"cache_untrusted", test_cache_untrusted},
    {"cache_list_symlinks", test_cache_list_symlinks},
    {"problems_hostile", test_problems_hostile},
    {"problems_path_max", test_problems_path_max},
    {"sass_tool_path_max", test_sass_tool_path_max},
    {"warm_no_cache_dir", test_warm_no_cache_dir},
    {"warm_untrusted_dir", test_warm_untrusted_dir},
    {"warm_store_fails", test_warm_store_fails},
    {"warm_read_only_dir", test_warm_read_only_dir},
    {"warm_stores", test_warm_stores},
    {NULL, NULL},
};
