/* test_tune.c - the tuning database, signatures, the tuned dispatch path, nvfp4jit_tune
 * without a GPU, and the variants/explain/warm/tune/inspect --mix subcommands (run as child
 * processes). The GPU parts skip without a device. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "driver.h"
#include "family.h"
#include "nvfp4jit.h"
#include "testutil.h"
#include "tunedb.h"

#define OUT_CAP (1 << 20)
static char out[OUT_CAP];

static int tool(const char *cache, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tool(const char *cache, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "NVFP4JIT_CACHE_DIR='%s' '%s' %s",
             cache ? cache : "/nonexistent/nvfp4jit-test-cache", tu_tool(), args);
    return tu_run(cmd, out, sizeof out);
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* Run the tool with PATH=dir:/usr/bin:/bin and CUDA_HOME=dir (the only SASS tools it can
 * find are dir's, /usr/bin's and /usr/local/cuda/bin's). */
static int tu_run_env_path(const char *dir, const char *cache, const char *args) {
    char cmd[20000];
    snprintf(cmd, sizeof cmd, "PATH='%s':/usr/bin:/bin CUDA_HOME='%s' NVFP4JIT_CACHE_DIR='%s' '%s' %s",
             dir, dir, cache, tu_tool(), args);
    return tu_run(cmd, out, sizeof out);
}

static void dump_on_failure(int f0) {
    if (tu_failures > f0) fprintf(stderr, "  --- tool output ---\n%s\n  ---\n", out);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static tdb_entry make_entry(const char *device, const char *sig, int bn, double us) {
    tdb_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.key.device, sizeof e.key.device, "%s", device);
    e.key.sms = 132;
    e.key.driver = 12080;
    snprintf(e.key.library, sizeof e.key.library, "%s", NVFP4JIT_VERSION_STRING);
    snprintf(e.key.sig, sizeof e.key.sig, "%s", sig);
    e.v = (nvfp4jit_variant){NVFP4JIT_ARCH_SM90A, 128, bn, 64, 3, 0, 0};
    e.us = us;
    return e;
}

static int count_files_with_prefix(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

/* ---- database -------------------------------------------------------------------------------- */
static void test_db_roundtrip(void) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(path, sizeof path, "%s/sub/%s", dir, TDB_FILE);
    tdb_entry a = make_entry("NVIDIA H200", "sm_90a:8x4096x7168", 64, 12.5);
    tdb_entry b = make_entry("NVIDIA H200", "sm_90a:16x4096x7168*2", 128, 20.25);
    char err[512] = "";
    REQUIRE(tdb_store(NULL, path, &a, err, sizeof err) == 0);
    REQUIRE(tdb_store(NULL, path, &b, err, sizeof err) == 0);
    tdb_entry got;
    CHECK(tdb_lookup(NULL, path, &a.key, &got) == 1);
    CHECK(got.v.block_n == 64 && got.us == 12.5 && !strcmp(got.key.device, "NVIDIA H200"));
    CHECK(tdb_lookup(NULL, path, &b.key, &got) == 1 && got.v.block_n == 128);
    /* other device, driver, library or SM count: not found */
    tdb_key k = a.key;
    k.sms = 114;
    CHECK(tdb_lookup(NULL, path, &k, &got) == 0);
    k = a.key;
    k.driver = 12090;
    CHECK(tdb_lookup(NULL, path, &k, &got) == 0);
    k = a.key;
    snprintf(k.library, sizeof k.library, "9.9.9");
    CHECK(tdb_lookup(NULL, path, &k, &got) == 0);
    k = a.key;
    snprintf(k.device, sizeof k.device, "NVIDIA H100 80GB HBM3");
    CHECK(tdb_lookup(NULL, path, &k, &got) == 0);
    /* last writer wins per key; the others stay */
    tdb_entry a2 = make_entry("NVIDIA H200", "sm_90a:8x4096x7168", 192, 11.0);
    REQUIRE(tdb_store(NULL, path, &a2, err, sizeof err) == 0);
    CHECK(tdb_lookup(NULL, path, &a.key, &got) == 1 && got.v.block_n == 192 && got.us == 11.0);
    CHECK(tdb_lookup(NULL, path, &b.key, &got) == 1 && got.v.block_n == 128);
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    CHECK(tdb_load(NULL, path, &all, &n, &ign) == 0 && n == 2 && ign == 0);
    free(all);
    /* the file: versioned header first, readable lines, no temporaries or lock leftovers
     * other than the lock file */
    nj_buf t;
    nj_buf_init(&t);
    REQUIRE(nj_read_file(path, &t) == 0);
    CHECK(!strncmp(t.data, TDB_HEADER "\n", strlen(TDB_HEADER) + 1));
    CHECK(contains(t.data, "NVIDIA H200\t132\t12080\t" NVFP4JIT_VERSION_STRING
                           "\tsm_90a:8x4096x7168\tsm90a:128x192x64:s3\t11.000\n"));
    nj_buf_free(&t);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    CHECK(count_files_with_prefix(sub, ".tune") == 0);
    /* a missing file is an empty database */
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/none/%s", dir, TDB_FILE);
    CHECK(tdb_lookup(NULL, missing, &a.key, &got) == 0);
    tu_rmtree(dir);
}

/* issue 11: a FIFO planted as tune-v1.txt (or its lock) hung every plan and tune */
static void test_db_fifo(void) {
    const char *dir = tu_tmpdir();
    char path[4200], lock[4300], err[512] = "";
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    snprintf(lock, sizeof lock, "%s.lock", path);
    REQUIRE(mkfifo(path, 0644) == 0);
    tdb_entry a = make_entry("NVIDIA H200", "sm_90a:8x4096x7168", 64, 12.5), got;
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    alarm(20); /* a hang kills the runner instead of CI */
    errno = 0;
    CHECK(tdb_load(NULL, path, &all, &n, &ign) == -1 && errno == ENODEV);
    CHECK(tdb_lookup(NULL, path, &a.key, &got) == -1);
    CHECK(tdb_store(NULL, path, &a, err, sizeof err) == -1);
    CHECKF(contains(err, "not a regular file"), "%s", err);
    unlink(path);
    unlink(lock);
    REQUIRE(mkfifo(lock, 0644) == 0);
    CHECK(tdb_store(NULL, path, &a, err, sizeof err) == -1);
    CHECKF(contains(err, "not a regular file"), "%s", err);
    alarm(0);
    free(all);
    tu_rmtree(dir);
}

/* issue 11 defect 9: a store rewrote the file from its parsed entries, dropping comments and
 * lines it could not parse (a newer library's, a hand edit); and a 4294967424-wide tile in a
 * line wrapped to 128 through sscanf */
static void test_db_keeps_lines(void) {
    const char *dir = tu_tmpdir();
    char path[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    tdb_entry a = make_entry("NVIDIA H200", "sm_90a:8x4096x7168", 64, 12.5);
    tdb_entry b = make_entry("NVIDIA H200", "sm_90a:16x4096x7168", 96, 9.0);
    char la[2048], lb[2048];
    REQUIRE(tdb_format(&a, la, sizeof la) == 0 && tdb_format(&b, lb, sizeof lb) == 0);
    char text[8192];
    snprintf(text, sizeof text,
             TDB_HEADER "\n# tuned on the lab H200, 2026-12-03\n%s"
             "NVIDIA H200\t132\t12080\t9.9.9\tsm_90a:1x8x64\tsm90a:128x64x64:s3:swap:act99\t1.0\n"
             "NVIDIA H200\t132\t12080\t0.1.0\tsm_90a:2x8x64\tsm90a:4294967424x128x64:s4:swap\t1.0\n"
             "%s",
             la, lb);
    write_text(path, text);
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    CHECK(tdb_load(NULL, path, &all, &n, &ign) == 0 && n == 2 && ign == 2);
    free(all);
    tdb_entry b2 = make_entry("NVIDIA H200", "sm_90a:16x4096x7168", 192, 8.0);
    tdb_entry c = make_entry("NVIDIA H200", "sm_90a:32x4096x7168", 32, 7.0);
    REQUIRE(tdb_store(NULL, path, &b2, err, sizeof err) == 0);
    REQUIRE(tdb_store(NULL, path, &c, err, sizeof err) == 0);
    nj_buf t;
    nj_buf_init(&t);
    REQUIRE(nj_read_file(path, &t) == 0);
    char lb2[2048], lc[2048];
    REQUIRE(tdb_format(&b2, lb2, sizeof lb2) == 0 && tdb_format(&c, lc, sizeof lc) == 0);
    char want[8192];
    snprintf(want, sizeof want,
             TDB_HEADER "\n# tuned on the lab H200, 2026-12-03\n%s"
             "NVIDIA H200\t132\t12080\t9.9.9\tsm_90a:1x8x64\tsm90a:128x64x64:s3:swap:act99\t1.0\n"
             "NVIDIA H200\t132\t12080\t0.1.0\tsm_90a:2x8x64\tsm90a:4294967424x128x64:s4:swap\t1.0\n"
             "%s%s",
             la, lb2, lc);
    CHECKF(!strcmp(t.data, want), "got:\n%s\nwant:\n%s", t.data, want);
    nj_buf_free(&t);
    tu_rmtree(dir);
}

static void test_db_header(void) {
    const char *dir = tu_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    tdb_entry a = make_entry("NVIDIA H200", "sm_90a:8x4096x7168", 64, 12.5);
    char line[2048];
    REQUIRE(tdb_format(&a, line, sizeof line) == 0);
    /* a file of another version (or not ours): ignored as a whole, with a warning */
    char text[4096];
    snprintf(text, sizeof text, "# nvfp4jit tuning database v2\n%s", line);
    write_text(path, text);
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(NULL, &ctx) == NVFP4JIT_OK);
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    CHECK(tdb_load(ctx, path, &all, &n, &ign) == 0 && n == 0 && ign == 2);
    free(all);
    CHECK(contains(nvfp4jit_last_warning(ctx), "first line"));
    /* the next store rewrites it with our header */
    char err[512];
    tdb_entry b = make_entry("NVIDIA H200", "sm_90a:16x4096x7168", 96, 9.0);
    CHECK(tdb_store(ctx, path, &b, err, sizeof err) == 0);
    CHECK(tdb_lookup(ctx, path, &b.key, &a) == 1 && a.v.block_n == 96);
    nj_buf t;
    nj_buf_init(&t);
    CHECK(nj_read_file(path, &t) == 0 && !strncmp(t.data, TDB_HEADER "\n", strlen(TDB_HEADER)));
    nj_buf_free(&t);
    /* an empty file is an empty database */
    write_text(path, "");
    CHECK(tdb_load(ctx, path, &all, &n, &ign) == 0 && n == 0 && ign == 0);
    free(all);
    nvfp4jit_ctx_destroy(ctx);
    tu_rmtree(dir);
}

static void test_db_corrupt_lines(void) {
    const char *dir = tu_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    tdb_entry a = make_entry("NVIDIA H200", "sm_90a:8x4096x7168", 64, 12.5);
    char line[2048];
    REQUIRE(tdb_format(&a, line, sizeof line) == 0);
    char text[8192];
    snprintf(text, sizeof text,
             "%s\n"
             "# a comment\n"
             "\n"
             "garbage without tabs\n"
             "NVIDIA H200\t132\t12080\t0.1.0\tsm_90a:8x8x64\tnot-a-variant\t1.0\n"
             "NVIDIA H200\tx\t12080\t0.1.0\tsm_90a:8x8x64\tsm90a:128x64x64:s3\t1.0\n"
             "NVIDIA H200\t132\t12080\t0.1.0\tsm_90a:8x8x64\tsm90a:128x64x64:s3\t-4\n"
             "a\tb\tc\td\te\tf\tg\th\n"
             "%s"
             "NVIDIA H200\t132\t12080\t0.1.0\tsm_90a:8x8x64\tsm90a:128x64x64:s3\n",
             TDB_HEADER, line);
    write_text(path, text);
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(NULL, &ctx) == NVFP4JIT_OK);
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    CHECK(tdb_load(ctx, path, &all, &n, &ign) == 0);
    CHECKF(n == 1 && ign == 6, "n=%zu ignored=%zu", n, ign);
    free(all);
    CHECK(contains(nvfp4jit_last_warning(ctx), "line ignored"));
    tdb_entry got;
    CHECK(tdb_lookup(ctx, path, &a.key, &got) == 1 && got.v.block_n == 64);
    /* a store keeps the good entry and the lines it cannot parse (issue 11: they may be a
     * newer library's or a hand edit) */
    char err[512];
    tdb_entry b = make_entry("NVIDIA H200", "sm_90a:16x4096x7168", 96, 9.0);
    CHECK(tdb_store(ctx, path, &b, err, sizeof err) == 0);
    CHECK(tdb_load(ctx, path, &all, &n, &ign) == 0 && n == 2 && ign == 6);
    free(all);
    nvfp4jit_ctx_destroy(ctx);
    tu_rmtree(dir);
}

static void test_db_concurrent(void) {
    const char *dir = tu_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    enum { NPROC = 8, ROUNDS = 20 };
    pid_t pids[NPROC];
    for (int p = 0; p < NPROC; p++) {
        pids[p] = fork();
        REQUIRE(pids[p] >= 0);
        if (pids[p] == 0) {
            int bad = 0;
            for (int r = 0; r < ROUNDS; r++) {
                char sig[64], err[512];
                snprintf(sig, sizeof sig, "sm_90a:%dx4096x7168", 8 << p);
                tdb_entry e = make_entry("NVIDIA H200", sig, 8 * (p + 1), 1.0 + r);
                if (tdb_store(NULL, path, &e, err, sizeof err) != 0) bad = 1;
            }
            _exit(bad);
        }
    }
    int ok = 1;
    for (int p = 0; p < NPROC; p++) {
        int st = 0;
        waitpid(pids[p], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ok = 0;
    }
    CHECK(ok);
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    CHECK(tdb_load(NULL, path, &all, &n, &ign) == 0);
    CHECKF(n == NPROC && ign == 0, "n=%zu ignored=%zu", n, ign);
    for (int p = 0; p < NPROC; p++) {
        char sig[64];
        snprintf(sig, sizeof sig, "sm_90a:%dx4096x7168", 8 << p);
        tdb_entry want = make_entry("NVIDIA H200", sig, 8 * (p + 1), 0), got;
        CHECKF(tdb_lookup(NULL, path, &want.key, &got) == 1 && got.v.block_n == 8 * (p + 1) &&
                   got.us == ROUNDS,
               "process %d", p);
    }
    free(all);
    CHECK(count_files_with_prefix(dir, ".tune") == 0);
    tu_rmtree(dir);
}

/* ---- signatures -------------------------------------------------------------------------------- */
static void test_signature(void) {
    CHECK(tdb_m_bucket(0) == 0);
    CHECK(tdb_m_bucket(1) == 8 && tdb_m_bucket(5) == 8 && tdb_m_bucket(8) == 8);
    CHECK(tdb_m_bucket(9) == 16 && tdb_m_bucket(16) == 16 && tdb_m_bucket(17) == 32);
    CHECK(tdb_m_bucket(100) == 128 && tdb_m_bucket(128) == 128 && tdb_m_bucket(129) == 256);
    CHECK(tdb_m_bucket(4096) == 4096 && tdb_m_bucket(4097) == 8192);
    nvfp4jit_group g[4];
    memset(g, 0, sizeof g);
    int64_t ms[4] = {3, 8, 0, 20};
    for (int i = 0; i < 4; i++) {
        g[i].m = ms[i];
        g[i].n = 4096;
        g[i].k = 7168;
    }
    char s1[TDB_SIG_MAX], s2[TDB_SIG_MAX];
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, g, 4, s1, sizeof s1) == 0);
    CHECKF(!strcmp(s1, "sm_90a:8x4096x7168*2,0x4096x7168,32x4096x7168"), "%s", s1);
    /* M inside the same buckets: same signature; across a bucket: different */
    g[0].m = 1;
    g[3].m = 32;
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, g, 4, s2, sizeof s2) == 0);
    CHECK(!strcmp(s1, s2));
    g[3].m = 33;
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, g, 4, s2, sizeof s2) == 0);
    CHECK(strcmp(s1, s2) != 0);
    g[3].m = 20;
    g[2].m = 1; /* 0 is its own bucket */
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, g, 4, s2, sizeof s2) == 0);
    CHECK(strcmp(s1, s2) != 0);
    g[2].m = 0;
    /* N/K and the arch are part of it; so is the group order */
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM100A, g, 4, s2, sizeof s2) == 0);
    CHECK(!strncmp(s2, "sm_100a:", 8) && strcmp(s1, s2));
    g[1].k = 2048;
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, g, 4, s2, sizeof s2) == 0);
    CHECK(strcmp(s1, s2) != 0);
    /* very long sets get the hashed form, still deterministic */
    size_t big = 2000;
    nvfp4jit_group *bg = calloc(big, sizeof *bg);
    REQUIRE(bg);
    for (size_t i = 0; i < big; i++) {
        bg[i].m = (int64_t)(i % 7) * 3;
        bg[i].n = 4096;
        bg[i].k = 7168;
    }
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, bg, big, s1, sizeof s1) == 0);
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, bg, big, s2, sizeof s2) == 0);
    CHECKF(!strncmp(s1, "sm_90a:g2000:h", 14) && strlen(s1) == 14 + 32 && !strcmp(s1, s2), "%s",
           s1);
    free(bg);
    CHECK(tdb_signature((nvfp4jit_arch)80, g, 4, s1, sizeof s1) == -1);
}

/* ---- library: dispatch and tune without a GPU ------------------------------------------------ */
static void test_dispatch_lookup(void) {
    const char *dir = tu_tmpdir();
    nvfp4jit_ctx_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    char want[4200];
    snprintf(want, sizeof want, "%s/%s", dir, TDB_FILE);
    CHECK(!strcmp(nvfp4jit_tune_db_path(ctx), want));
    nvfp4jit_group g = {8, 4096, 7168, 0, 0, 0, 0, 0};
    char sig[TDB_SIG_MAX];
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, &g, 1, sig, sizeof sig) == 0);
    /* an entry for a device that is not this one: never used */
    tdb_entry other = make_entry("Some Other GPU", sig, 64, 1.0);
    char err[512];
    REQUIRE(tdb_store(NULL, want, &other, err, sizeof err) == 0);
    nvfp4jit_plan *p = NULL;
    nvfp4jit_choice ch = NVFP4JIT_CHOICE_TUNED;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_HEURISTIC);
    nvfp4jit_plan_destroy(p);
    tdb_key key;
    if (tdb_device_key(sig, &key) != 0) {
        nvfp4jit_ctx_destroy(ctx);
        tu_rmtree(dir);
        SKIP("skipped: no CUDA device (the tuned path of nvfp4jit_plan_create needs one)");
    }
    /* this device: the entry is used (a variant the heuristic would not pick) */
    tdb_entry mine;
    memset(&mine, 0, sizeof mine);
    mine.key = key;
    mine.v = (nvfp4jit_variant){NVFP4JIT_ARCH_SM90A, 128, 64, 64, 3, 0, 0};
    mine.us = 5.0;
    REQUIRE(tdb_store(NULL, want, &mine, err, sizeof err) == 0);
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, &p) == NVFP4JIT_OK);
    const nvfp4jit_variant *v = nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_TUNED && v->block_m == 128 && v->block_n == 64 && !v->swap_ab);
    nvfp4jit_plan_destroy(p);
    /* M in the same bucket: the same entry; another bucket: the heuristic */
    g.m = 3;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_TUNED);
    nvfp4jit_plan_destroy(p);
    g.m = 9;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_HEURISTIC);
    nvfp4jit_plan_destroy(p);
    /* forced still wins */
    g.m = 8;
    nvfp4jit_variant f = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 2, 1, 0};
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, &f, &p) == NVFP4JIT_OK);
    nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_FORCED);
    nvfp4jit_plan_destroy(p);
    nvfp4jit_ctx_destroy(ctx);
    tu_rmtree(dir);
}

static void test_tune_no_gpu(void) {
    const char *dir = tu_tmpdir();
    nvfp4jit_ctx_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    nvfp4jit_group g = {8, 4096, 7168, 0, 0, 0, 0, 0};
    nvfp4jit_variant best;
    double us = -1;
    /* argument errors come first */
    CHECK(nvfp4jit_tune(NULL, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, &best, &us) ==
          NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, NULL, &us) ==
          NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_tune(ctx, (nvfp4jit_arch)80, &g, 1, NULL, &best, &us) ==
          NVFP4JIT_ERR_UNSUPPORTED_ARCH);
    nvfp4jit_group bad = {8, 4096, 100, 0, 0, 0, 0, 0};
    CHECK(nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, &bad, 1, NULL, &best, &us) ==
          NVFP4JIT_ERR_INVALID_PROBLEM);
    /* no driver (forced through the test hook): a clean error, nothing written */
    drv_test_force_missing = 1;
    nvfp4jit_tune_result res[4];
    size_t nres = 99;
    nvfp4jit_tune_options to;
    memset(&to, 0, sizeof to);
    to.results = res;
    to.results_cap = 4;
    to.results_count = &nres;
    nvfp4jit_status s = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, &to, &best, &us);
    drv_test_force_missing = 0;
    CHECK(s == NVFP4JIT_ERR_NO_DRIVER);
    CHECK(contains(nvfp4jit_last_error(ctx), "libcuda"));
    CHECK(nres == 0 && us == -1);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    CHECK(access(path, F_OK) != 0);
    /* and without the hook: no driver / no device here, or (on a GPU) the NULL pointers */
    s = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, &g, 1, NULL, &best, &us);
    CHECKF(s == NVFP4JIT_ERR_NO_DRIVER || s == NVFP4JIT_ERR_NO_DEVICE ||
               s == NVFP4JIT_ERR_INVALID_PROBLEM,
           "%s", nvfp4jit_status_string(s));
    nvfp4jit_ctx_destroy(ctx);
    tu_rmtree(dir);
}

/* ---- the command ----------------------------------------------------------------------------- */
static void test_tool_usage(void) {
    static const char *cmds[] = {"variants", "explain", "tune", "warm"};
    int f0 = tu_failures;
    CHECK(tool(NULL, "--help") == 0);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CHECKF(contains(out, cmds[i]), "main help lacks %s", cmds[i]);
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: nvfp4jit %s", cmds[i]);
        int rc = tool(NULL, "%s --help", cmds[i]);
        CHECKF(rc == 0 && contains(out, want), "%s --help", cmds[i]);
        rc = tool(NULL, "%s --frob", cmds[i]);
        CHECKF(rc == 2 && contains(out, "--frob"), "%s --frob: %d", cmds[i], rc);
    }
    CHECK(tool(NULL, "inspect --help") == 0 && contains(out, "--mix"));
    CHECK(tool(NULL, "variants --arch sm_80") == 2 && contains(out, "sm_80"));
    CHECK(tool(NULL, "explain --arch sm_90a --top 0 --groups 8x4096x7168") == 2 &&
          contains(out, "--top"));
    CHECK(tool(NULL, "explain --groups 8x4096") == 2 && contains(out, "8x4096"));
    CHECK(tool(NULL, "warm --arch sm_90a,sm_70") == 2 && contains(out, "sm_70"));
    CHECK(tool(NULL, "warm --jobs 0") == 2 && contains(out, "--jobs"));
    CHECK(tool(NULL, "--no-disk-cache warm --arch sm_90a") == 2);
    CHECK(tool(NULL, "tune --time-limit soon") == 2 && contains(out, "soon"));
    CHECK(tool(NULL, "tune --candidates 0") == 2 && contains(out, "--candidates"));
    CHECK(tool(NULL, "tune --iters 5") == 2 && contains(out, "--iters"));
    CHECK(tool(NULL, "tune --arch sm_75") == 2 && contains(out, "sm_75"));
    CHECK(tool(NULL, "explain --arch sm_90a --groups 8x4096x100") == 1 &&
          contains(out, "multiple of 64"));
    dump_on_failure(f0);
}

static void test_tool_variants(void) {
    int f0 = tu_failures;
    size_t n = 0;
    REQUIRE(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, NULL, 0, &n) == NVFP4JIT_OK);
    char want[64];
    snprintf(want, sizeof want, "sm_90a: %zu valid variants", n);
    CHECK(tool(NULL, "variants --arch sm_90a --count") == 0 && contains(out, want));
    CHECK(tool(NULL, "variants --arch sm_90a") == 0 && contains(out, "sm90a:64x8x64:s2:swap") &&
          contains(out, "dyn_smem"));
    /* one line per variant */
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "\n  sm90a:")); p++) lines++;
    CHECKF((size_t)lines == n, "%d lines, %zu variants", lines, n);
    dump_on_failure(f0);
}

static void test_tool_explain(void) {
    int f0 = tu_failures;
    int rc = tool(NULL, "explain --arch sm_90a --groups 8x4096x7168");
    CHECK(rc == 0);
    static const char *cols[] = {"est_us", "mma_us", "decode_us", "mem_us", "tiles", "waves",
                                 "waste"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        CHECKF(contains(out, cols[i]), "no column %s", cols[i]);
    const char *w = strstr(out, "winner: ");
    REQUIRE(w);
    size_t len = strcspn(w, "\n");
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)len, w);
    CHECKF(contains(line, "sm90a:") && contains(line, ":swap"), "%s", line);
    CHECK(contains(out, "dominant term:") && contains(out, "runner-up:"));
    CHECK(contains(out, "margin"));
    /* top 10 by default, --top / --all */
    CHECK(contains(out, "    10  sm90a:") && !contains(out, "    11  sm90a:"));
    CHECK(tool(NULL, "explain --arch sm_90a --groups 8x4096x7168 --top 3") == 0 &&
          contains(out, "     3  sm90a:") && !contains(out, "     4  sm90a:"));
    /* --all: every ranked variant, i.e. the valid space less act16sk and act16's wide form,
     * which the heuristic does not rank (src/heuristic.c rank_emit) */
    size_t n = 0, all = 0;
    nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, NULL, 0, &all);
    nvfp4jit_variant *space = calloc(all ? all : 1, sizeof *space);
    REQUIRE(space);
    nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, space, all, &all);
    for (size_t i = 0; i < all; i++)
        n += space[i].strategy != NVFP4JIT_STRATEGY_ACT16SK && !sm90_act16_wide(&space[i]);
    free(space);
    CHECK(n > 0 && n < all);
    char last[64];
    snprintf(last, sizeof last, "  %4zu  sm90a:", n);
    CHECK(tool(NULL, "explain --arch sm_90a --groups 8x4096x7168 --all") == 0 &&
          contains(out, last) && !contains(out, "more (--all"));
    /* a large-M set gets wide token tiles (act16 measured fastest there on the H200:
     * bench/RESULTS.md); a problems file with a set */
    CHECK(tool(NULL, "explain --arch sm_90a --groups 4096x4096x4096 --top 1") == 0);
    w = strstr(out, "winner: ");
    nvfp4jit_variant wv;
    char wname[96] = "";
    CHECK(w && sscanf(w, "winner: %95[^,]", wname) == 1 &&
          nvfp4jit_variant_parse(wname, &wv) == NVFP4JIT_OK && wv.block_n >= 96 &&
          wv.block_m >= 128);
    char file[4200];
    const char *dir = tu_tmpdir();
    snprintf(file, sizeof file, "%s/p.txt", dir);
    write_text(file, "# two sets\nsmall 8x4096x7168 0x4096x7168\nbig 512x4096x7168\n");
    CHECK(tool(NULL, "explain --arch sm_90a --problems '%s' --set small --top 2", file) == 0 &&
          contains(out, "== set small") && !contains(out, "== set big") &&
          contains(out, "signature: sm_90a:8x4096x7168,0x4096x7168"));
    tu_rmtree(dir);
    dump_on_failure(f0);
}

static void cache_count_cb(const char *key, const char *entry_dir, int ok, const char *why,
                           void *user) {
    (void)key;
    (void)entry_dir;
    (void)why;
    if (ok) (*(int *)user)++;
}

static void test_tool_warm(void) {
    int f0 = tu_failures;
    char dir[4096], file[4200];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(file, sizeof file, "%s/p.txt", dir);
    write_text(file, "small 64x256x128 8x128x64\n");
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    int rc = tool(cache, "warm --arch sm_90a --problems '%s' --jobs 2", file);
    CHECK(rc == 0);
    CHECK(contains(out, "1 compiled, 0 already cached, 0 failed"));
    CHECK(contains(out, "variants/s"));
    int good = 0;
    CHECK(cache_foreach(cache, cache_count_cb, &good) == 1 && good == 1);
    /* the entry is the heuristic's choice: `compile` of it is a hit now */
    rc = tool(cache, "warm --arch sm_90a --problems '%s'", file);
    CHECK(rc == 0 && contains(out, "0 compiled, 1 already cached"));
    rc = tool(cache, "warm --arch sm_90a --groups 8x4096x7168,16x4096x7168");
    CHECK(rc == 0 && contains(out, "warm: 1 variant") && contains(out, "0 failed"));
    good = 0;
    CHECK(cache_foreach(cache, cache_count_cb, &good) == 2 && good == 2);
    tu_rmtree(dir);
    dump_on_failure(f0);
}

static void test_tool_tune_no_gpu(void) {
    int f0 = tu_failures;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(NULL, &ctx) == NVFP4JIT_OK);
    int cc = 0;
    nvfp4jit_status s = nvfp4jit_device_arch(ctx, &cc);
    nvfp4jit_ctx_destroy(ctx);
    if (s == NVFP4JIT_OK) SKIP("skipped: a CUDA device is present (tune runs there by hand)");
    const char *dir = tu_tmpdir();
    int rc = tool(dir, "tune --groups 8x4096x7168");
    CHECK(rc == 1 && contains(out, "needs a GPU"));
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TDB_FILE);
    CHECK(access(path, F_OK) != 0);
    tu_rmtree(dir);
    dump_on_failure(f0);
}

static void test_tool_mix(void) {
    int f0 = tu_failures;
    char dir[4096], cache[4200], script[4200];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(script, sizeof script, "%s/nvdisasm", dir);
    /* a stand-in nvdisasm that prints a fixed listing */
    write_text(script,
               "#!/bin/sh\n"
               "cat <<'EOF'\n"
               "\t.text.nvfp4jit_kernel:\n"
               "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
               "        /*0010*/                   HGMMA.64x8x16.F32 R24, gdesc[UR4], RZ ;\n"
               "        /*0020*/              @!P0 LDS.128 R4, [R2] ;\n"
               "        /*0030*/                   STS [R3], R4 ;\n"
               "        /*0040*/                   STS.64 [R3+0x8], R6 ;\n"
               "        /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
               "        /*0060*/                   LDG.E.128 R8, desc[UR6][R10.64] ;\n"
               "        /*0070*/                   UTMALDG.2D [UR8], [UR10] ;\n"
               "        /*0080*/                   LDGSTS.E.128 [R2], desc[UR4][R4.64] ;\n"
               "        /*0090*/                   STL [R1], R2 ;\n"
               "        /*00a0*/                   EXIT ;\n"
               "EOF\n");
    chmod(script, 0755);
    int rc = tu_run_env_path(dir, cache, "inspect --variant sm90a:64x8x64:s2:swap --mix");
    CHECK(rc == 0);
    CHECK(contains(out, "instruction mix of sm90a:64x8x64:s2:swap"));
    CHECK(contains(out, "MMA (HGMMA/UTC*MMA)                        1  (HGMMA 1)"));
    CHECK(contains(out, "shared loads/stores (LDS/STS)              3  (LDS 1, STS 2)"));
    CHECK(contains(out, "local loads/stores (LDL/STL)               1  (STL 1)"));
    CHECK(contains(out, "barriers (BAR)                             1"));
    CHECK(contains(out, "global loads/stores (LDG/STG)              1"));
    CHECK(contains(out, "async copies (LDGSTS)                      1"));
    CHECK(contains(out, "TMA / bulk copies (UTMALDG/UBLKCP)         1"));
    CHECK(contains(out, "all instructions                          11"));
    /* with --resources too: both sections */
    rc = tu_run_env_path(dir, cache, "inspect --variant sm90a:64x8x64:s2:swap --resources --mix");
    CHECK(rc == 0 && contains(out, "registers:") && contains(out, "==== mix ===="));
    /* neither tool: said plainly (only checkable where the toolkit has neither) */
    static const char *where[] = {"/usr/local/cuda/bin/nvdisasm", "/usr/local/cuda/bin/cuobjdump",
                                  "/usr/bin/nvdisasm", "/usr/bin/cuobjdump", "/bin/nvdisasm",
                                  "/bin/cuobjdump"};
    int found = 0;
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) found |= access(where[i], X_OK) == 0;
    if (!found) {
        unlink(script);
        rc = tu_run_env_path(dir, cache, "inspect --variant sm90a:64x8x64:s2:swap --mix");
        CHECK(rc == 1 && contains(out, "neither nvdisasm nor cuobjdump"));
    }
    tu_rmtree(dir);
    dump_on_failure(f0);
}

const test_case tests_tune[] = {
    {"db_roundtrip", test_db_roundtrip},
    {"db_header", test_db_header},
    {"db_fifo", test_db_fifo},
    {"db_keeps_lines", test_db_keeps_lines},
    {"db_corrupt_lines", test_db_corrupt_lines},
    {"db_concurrent", test_db_concurrent},
    {"signature", test_signature},
    {"dispatch_lookup", test_dispatch_lookup},
    {"tune_no_gpu", test_tune_no_gpu},
    {"tool_usage", test_tool_usage},
    {"tool_variants", test_tool_variants},
    {"tool_explain", test_tool_explain},
    {"tool_warm", test_tool_warm},
    {"tool_tune_no_gpu", test_tool_tune_no_gpu},
    {"tool_mix", test_tool_mix},
    {NULL, NULL},
};
