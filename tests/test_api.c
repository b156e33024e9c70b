/* test_api.c - the public API without a GPU: versions, status strings, contexts, validation
 * of every field with its group index, plans, and the driver-less paths. */
#include <sys/stat.h>

#include <dirent.h>
#include <limits.h>
#include <stdint.h>

#include "dispatch.h"
#include "driver.h"
#include "jit.h"
#include "testutil.h"

static void t_version(void) {
    CHECK(nvfp4jit_version_number() == NVFP4JIT_VERSION_NUMBER);
    CHECK(strcmp(nvfp4jit_version_string(), NVFP4JIT_VERSION_STRING) == 0);
}

static void t_status_strings(void) {
    /* fixed numeric values, distinct strings, unknown values handled */
    CHECK(NVFP4JIT_OK == 0 && NVFP4JIT_ERR_INVALID_PROBLEM == 2 && NVFP4JIT_ERR_INTERNAL == 17);
    for (int i = 0; i <= 17; i++) {
        const char *a = nvfp4jit_status_string((nvfp4jit_status)i);
        CHECK(a && strncmp(a, "NVFP4JIT_", 9) == 0);
        for (int j = 0; j < i; j++) CHECK(strcmp(a, nvfp4jit_status_string((nvfp4jit_status)j)));
    }
    CHECK(strstr(nvfp4jit_status_string((nvfp4jit_status)999), "unknown") != NULL);
}

static void t_ctx(void) {
    CHECK(nvfp4jit_ctx_create(NULL, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(strstr(nvfp4jit_last_error(NULL), "out") != NULL);
    nvfp4jit_ctx_destroy(NULL);
    nvfp4jit_ctx_options o = {0};
    o.cache_dir = "";
    nvfp4jit_ctx *c = (nvfp4jit_ctx *)1;
    CHECK(nvfp4jit_ctx_create(&o, &c) == NVFP4JIT_ERR_INVALID_ARG && c == NULL);
    o.cache_dir = "/some/dir";
    REQUIRE(nvfp4jit_ctx_create(&o, &c) == NVFP4JIT_OK);
    CHECK(strcmp(nvfp4jit_cache_dir(c), "/some/dir") == 0);
    CHECK(strcmp(nvfp4jit_last_error(c), "") == 0);
    nvfp4jit_ctx_destroy(c);
    setenv("NVFP4JIT_CACHE_DIR", "/env/dir", 1);
    REQUIRE(nvfp4jit_ctx_create(NULL, &c) == NVFP4JIT_OK);
    CHECK(strcmp(nvfp4jit_cache_dir(c), "/env/dir") == 0);
    nvfp4jit_ctx_destroy(c);
    unsetenv("NVFP4JIT_CACHE_DIR");
}

/* issue 11 defect 8: a too-long NVFP4JIT_CACHE_DIR silently disabled the disk cache; a cache
 * directory others can write to was used without a word */
static void t_ctx_cache_dir_hostile(void) {
    char *longdir = malloc(5000);
    REQUIRE(longdir);
    memset(longdir, 'a', 4999);
    longdir[0] = '/';
    longdir[4999] = '\0';
    setenv("NVFP4JIT_CACHE_DIR", longdir, 1);
    nvfp4jit_ctx *c = (nvfp4jit_ctx *)1;
    CHECK(nvfp4jit_ctx_create(NULL, &c) == NVFP4JIT_ERR_INVALID_ARG && c == NULL);
    CHECKF(strstr(nvfp4jit_last_error(NULL), "NVFP4JIT_CACHE_DIR") != NULL, "%s",
           nvfp4jit_last_error(NULL));
    unsetenv("NVFP4JIT_CACHE_DIR");
    free(longdir);
    char d[4096];
    snprintf(d, sizeof d, "%s", tu_tmpdir());
    REQUIRE(chmod(d, 0777) == 0);
    nvfp4jit_ctx_options o = {0};
    o.cache_dir = d;
    REQUIRE(nvfp4jit_ctx_create(&o, &c) == NVFP4JIT_OK);
    CHECKF(strstr(nvfp4jit_last_warning(c), "writable by other users") != NULL, "[%s]",
           nvfp4jit_last_warning(c));
    nvfp4jit_ctx_destroy(c);
    tu_rmtree(d);
}

static nvfp4jit_group G(int64_t m, int64_t n, int64_t k) {
    nvfp4jit_group g = {m, n, k, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
    return g;
}

static void expect(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n, int with_ptrs,
                   nvfp4jit_status want, const char *msg) {
    nvfp4jit_status s = with_ptrs ? nvfp4jit_problem_check(ctx, g, n)
                                  : nvfp4jit_problem_check_shapes(ctx, g, n);
    CHECKF(s == want, "%s: got %d want %d", msg ? msg : "", (int)s, (int)want);
    if (msg)
        CHECKF(strstr(nvfp4jit_last_error(ctx), msg) != NULL, "[%s] lacks [%s]",
               nvfp4jit_last_error(ctx), msg);
}

static void t_validation(void) {
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(NULL, &ctx) == NVFP4JIT_OK);
    nvfp4jit_group g[4] = {G(128, 256, 512), G(0, 256, 256), G(5, 8, 64), G(1, 4096, 7168)};
    expect(ctx, g, 4, 1, NVFP4JIT_OK, NULL);
    expect(ctx, g, 0, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "no groups");
    expect(ctx, NULL, 2, 1, NVFP4JIT_ERR_INVALID_ARG, "NULL");
    g[3].k = 100;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 3: K=100 is not a multiple of 64");
    g[3].k = 0;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 3: K=0");
    g[3] = G(1, 4096, 7168);
    g[2].n = 12;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 2: N=12");
    g[2].n = 0;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 2: N=0");
    g[2] = G(-1, 8, 64);
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 2: M=-1 is negative");
    g[2] = G(5, 8, 64);
    g[0].sfb = 0;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 0: pointer SFB is NULL");
    expect(ctx, g, 4, 0, NVFP4JIT_OK, NULL); /* shapes only */
    g[0].sfb = 0x4000;
    g[0].a = 0x1008;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 0: pointer A=0x1008 is not 16-byte aligned");
    g[0].a = 0x1000;
    /* an empty group's pointers are not looked at */
    g[1].a = g[1].b = g[1].c = g[1].sfa = g[1].sfb = 0;
    expect(ctx, g, 4, 1, NVFP4JIT_OK, NULL);
    g[0].m = (int64_t)1 << 30;
    expect(ctx, g, 4, 1, NVFP4JIT_ERR_INVALID_PROBLEM, "group 0:");
    nvfp4jit_ctx_destroy(ctx);
}

static void t_plan_no_driver(void) {
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    nvfp4jit_group g[2] = {G(64, 256, 512), G(0, 256, 512)};
    nvfp4jit_plan *p = (nvfp4jit_plan *)1;
    CHECK(nvfp4jit_plan_create(ctx, (nvfp4jit_arch)80, g, 2, NULL, &p) == NVFP4JIT_ERR_UNSUPPORTED_ARCH);
    CHECK(p == NULL);
    CHECK(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, NULL, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    nvfp4jit_variant bad = {NVFP4JIT_ARCH_SM90A, 96, 128, 64, 2, 0, 0};
    CHECK(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, &bad, &p) == NVFP4JIT_ERR_INVALID_VARIANT);
    nvfp4jit_variant other = {NVFP4JIT_ARCH_SM100A, 128, 64, 256, 6, 0, 0};
    CHECK(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, &other, &p) == NVFP4JIT_ERR_INVALID_VARIANT);
    g[1].k = 100;
    CHECK(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, NULL, &p) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "group 1: K=100") != NULL);
    g[1].k = 512;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_choice ch;
    const nvfp4jit_variant *v = nvfp4jit_plan_variant(p, &ch);
    CHECK(v && v->arch == NVFP4JIT_ARCH_SM90A && ch == NVFP4JIT_CHOICE_HEURISTIC);
    CHECK(nvfp4jit_plan_kernel(p) != NULL);
    /* run: wrong count; then no driver */
    CHECK(nvfp4jit_plan_run(p, g, 1, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(nvfp4jit_plan_run(p, NULL, 2, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(strstr(nvfp4jit_last_error(ctx), "groups is NULL") != NULL);
    drv_test_force_missing = 1;
    CHECK(nvfp4jit_plan_run(p, g, 2, NULL) == NVFP4JIT_ERR_NO_DRIVER);
    CHECK(strstr(nvfp4jit_last_error(ctx), "libcuda") != NULL);
    int cc = -1;
    CHECK(nvfp4jit_device_arch(ctx, &cc) == NVFP4JIT_ERR_NO_DRIVER && cc == 0);
    drv_test_force_missing = 0;
    CHECK(nvfp4jit_plan_run(NULL, g, 2, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    nvfp4jit_plan_destroy(p);
    nvfp4jit_plan_destroy(NULL);
    nvfp4jit_ctx_destroy(ctx);
}

/* issue 11 defect 7: act16 forced on a set over its token-block limit (2^31 - 256 blocks of
 * 16 token values) was accepted and failed at run time with a 2^51-byte allocation; the
 * header says planning refuses it. */
/* issue 11 defect 9: the limits are in the header (it said "any number of groups") */
static void t_documented_limits(void) {
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(NULL, &ctx) == NVFP4JIT_OK);
    nvfp4jit_group g[2] = {G(8, 256, 512), G(NVFP4JIT_MAX_DIM, NVFP4JIT_MAX_DIM, NVFP4JIT_MAX_DIM)};
    CHECK(nvfp4jit_problem_check_shapes(ctx, g, 2) == NVFP4JIT_OK);
    g[1].k = NVFP4JIT_MAX_DIM + 64;
    CHECK(nvfp4jit_problem_check_shapes(ctx, g, 2) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "group 1:") != NULL, "%s", nvfp4jit_last_error(ctx));
    size_t n = (size_t)NVFP4JIT_MAX_GROUPS + 1;
    nvfp4jit_group *many = malloc(n * sizeof *many);
    REQUIRE(many);
    for (size_t i = 0; i < n; i++) many[i] = G(0, 8, 64);
    CHECK(nvfp4jit_problem_check_shapes(ctx, many, n - 1) == NVFP4JIT_OK);
    CHECK(nvfp4jit_problem_check_shapes(ctx, many, n) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "at most 1048576") != NULL, "%s",
           nvfp4jit_last_error(ctx));
    free(many);
    nvfp4jit_ctx_destroy(ctx);
}

static void t_plan_act16_limit(void) {
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    nvfp4jit_group g[2] = {G(1 << 24, 256, 4096), G(8, 256, 4096)}; /* 2^32 + 2048 blocks */
    nvfp4jit_variant a16 = {NVFP4JIT_ARCH_SM90A, 192, 128, 64, 4, 1, NVFP4JIT_STRATEGY_ACT16};
    nvfp4jit_plan *p = (nvfp4jit_plan *)1;
    CHECK(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, &a16, &p) ==
          NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(p == NULL);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "token") != NULL, "%s", nvfp4jit_last_error(ctx));
    a16.strategy = NVFP4JIT_STRATEGY_ACT16P;
    CHECK(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, &a16, &p) ==
          NVFP4JIT_ERR_INVALID_PROBLEM);
    nvfp4jit_plan_destroy(p);
    nvfp4jit_ctx_destroy(ctx);
}

static void t_artifacts(void) {
    const void *d;
    size_t n;
    CHECK(nvfp4jit_kernel_artifact(NULL, NVFP4JIT_ARTIFACT_SOURCE, &d, &n) == NVFP4JIT_ERR_INVALID_ARG);
    nvfp4jit_resources r;
    CHECK(nvfp4jit_kernel_resources(NULL, &r) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_kernel_variant(NULL) == NULL);
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    nvfp4jit_variant v = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 2, 1, 0};
    nvfp4jit_kernel *k = NULL;
    CHECK(nvfp4jit_compile(ctx, NULL, &k) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_compile(NULL, &v, &k) == NVFP4JIT_ERR_INVALID_ARG);
    REQUIRE(nvfp4jit_compile(ctx, &v, &k) == NVFP4JIT_OK);
    CHECK(nvfp4jit_kernel_artifact(k, (nvfp4jit_artifact)99, &d, &n) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CACHE_PATH, &d, &n) == NVFP4JIT_OK && n == 0);
    CHECK(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CACHE_KEY, &d, &n) == NVFP4JIT_OK && n == 32);
    CHECK(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_SOURCE, &d, &n) == NVFP4JIT_OK &&
          strlen(d) == n);
    nvfp4jit_ctx_destroy(ctx);
}

/* ---- issue 10 part 6: the environment is read once, errors are not clobbered ---- */

static int dir_entries(const char *d) {
    DIR *dp = opendir(d);
    if (!dp) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(dp);
    return n;
}

/* A change of the environment after nvfp4jit_ctx_create does not reach the context. */
static void t_env_read_once(void) {
    char tmpl[4096], dump[4096];
    snprintf(tmpl, sizeof tmpl, "%s", tu_tmpdir());
    snprintf(dump, sizeof dump, "%s", tu_tmpdir());
    char p[4200];
    snprintf(p, sizeof p, "%s/sm90a_grouped.cu", tmpl); /* a template that cannot compile */
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fputs("extern \"C\" __global__ void ${KERNEL_NAME}() { not_declared_y = 1; }\n", f);
    fclose(f);
    unsetenv("NVFP4JIT_TEMPLATE_DIR");
    unsetenv("NVFP4JIT_DUMP_DIR");
    setenv("NVFP4JIT_NO_TUNE", "1", 1);
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *c = NULL, *c2 = NULL;
    setenv("NVFP4JIT_CACHE_DIR", "/env/before", 1);
    REQUIRE(nvfp4jit_ctx_create(&o, &c) == NVFP4JIT_OK);
    CHECK(c->no_tune == 1);
    /* changed after creation: none of it applies to c */
    setenv("NVFP4JIT_TEMPLATE_DIR", tmpl, 1);
    setenv("NVFP4JIT_DUMP_DIR", dump, 1);
    setenv("NVFP4JIT_CACHE_DIR", "/env/after", 1);
    unsetenv("NVFP4JIT_NO_TUNE");
    CHECK(strcmp(nvfp4jit_cache_dir(c), "/env/before") == 0);
    CHECK(c->no_tune == 1 && c->template_dir[0] == '\0' && c->dump_dir[0] == '\0');
    nvfp4jit_variant v = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 2, 1, 0};
    nvfp4jit_kernel *k = NULL;
    CHECKF(nvfp4jit_compile(c, &v, &k) == NVFP4JIT_OK, "%s", nvfp4jit_last_error(c));
    CHECKF(dir_entries(dump) == 0, "%d files dumped", dir_entries(dump));
    /* a context created now sees the new values */
    REQUIRE(nvfp4jit_ctx_create(&o, &c2) == NVFP4JIT_OK);
    CHECK(strcmp(nvfp4jit_cache_dir(c2), "/env/after") == 0 && c2->no_tune == 0);
    CHECK(strcmp(c2->template_dir, tmpl) == 0 && strcmp(c2->dump_dir, dump) == 0);
    CHECK(nvfp4jit_compile(c2, &v, &k) == NVFP4JIT_ERR_COMPILE);
    CHECK(strstr(nvfp4jit_last_error(c2), "not_declared_y") != NULL);
    unsetenv("NVFP4JIT_TEMPLATE_DIR");
    unsetenv("NVFP4JIT_DUMP_DIR");
    unsetenv("NVFP4JIT_CACHE_DIR");
    /* and c still compiles the embedded template */
    CHECK(nvfp4jit_compile(c, &v, &k) == NVFP4JIT_OK && dir_entries(dump) == 0);
    nvfp4jit_ctx_destroy(c2);
    nvfp4jit_ctx_destroy(c);
    tu_rmtree(tmpl);
    tu_rmtree(dump);
}

/* Internals never clear the message; the calls the header says keep it, keep it. */
static void t_errors_kept(void) {
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *c = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &c) == NVFP4JIT_OK);
    nvfp4jit_variant good = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 2, 1, 0};
    nvfp4jit_variant bad = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 99, 1, 0};
    nvfp4jit_kernel *k = NULL;
    /* the internal paths (compile, plan creation: they used to call nvfp4jit_compile and
     * nvfp4jit_variant_check, which cleared the message) leave an earlier message alone */
    snprintf(c->msg, NJ_MSG_CAP, "earlier failure");
    CHECK(nj_jit_variant(c, &good, &k) == NVFP4JIT_OK && k);
    CHECKF(strcmp(nvfp4jit_last_error(c), "earlier failure") == 0, "[%s]",
           nvfp4jit_last_error(c));
    nvfp4jit_group g[2] = {{16, 64, 128, 0, 0, 0, 0, 0}, {0, 64, 128, 0, 0, 0, 0, 0}};
    nvfp4jit_plan *plan = NULL;
    CHECK(nj_plan_create(c, NVFP4JIT_ARCH_SM90A, g, 2, &good, &plan) == NVFP4JIT_OK && plan);
    nj_plan_destroy(plan);
    plan = NULL;
    CHECK(nj_plan_create(c, NVFP4JIT_ARCH_SM90A, g, 2, NULL, &plan) == NVFP4JIT_OK);
    CHECKF(strcmp(nvfp4jit_last_error(c), "earlier failure") == 0, "[%s]",
           nvfp4jit_last_error(c));
    nj_plan_destroy(plan);
    /* a failed public call: its message stays through every call that keeps it */
    CHECK(nvfp4jit_compile(c, &bad, &k) == NVFP4JIT_ERR_INVALID_VARIANT);
    char want[1024];
    snprintf(want, sizeof want, "%s", nvfp4jit_last_error(c));
    CHECK(strstr(want, "sm90a:64x8x64:s99") != NULL);
    REQUIRE(nvfp4jit_plan_create(c, NVFP4JIT_ARCH_SM90A, g, 2, &good, &plan) == NVFP4JIT_OK);
    CHECK(strcmp(nvfp4jit_last_error(c), "") == 0); /* a call that can fail clears it */
    CHECK(nvfp4jit_compile(c, &bad, &k) == NVFP4JIT_ERR_INVALID_VARIANT);
    char name[96];
    nvfp4jit_variant pv;
    size_t cnt = 0;
    const void *d = NULL;
    nvfp4jit_resources r;
    nvfp4jit_kernel *kg = nvfp4jit_plan_kernel(plan);
    CHECK(nvfp4jit_variant_format(&bad, name, sizeof name) > 0);
    CHECK(nvfp4jit_variant_parse("sm90a:bad", &pv) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, NULL, 0, &cnt) == NVFP4JIT_OK && cnt);
    CHECK(nvfp4jit_kernel_artifact(kg, NVFP4JIT_ARTIFACT_CACHE_KEY, &d, NULL) == NVFP4JIT_OK);
    CHECK(nvfp4jit_kernel_resources(kg, &r) == NVFP4JIT_OK);
    CHECK(nvfp4jit_kernel_variant(kg) && nvfp4jit_plan_variant(plan, NULL));
    (void)nvfp4jit_cache_dir(c);
    (void)nvfp4jit_tune_db_path(c);
    (void)nvfp4jit_last_warning(c);
    (void)nvfp4jit_scale_bytes(128, 256);
    (void)nvfp4jit_moe_scale_rows(64, 4);
    nvfp4jit_plan_destroy(plan);
    CHECKF(strcmp(nvfp4jit_last_error(c), want) == 0, "[%s], want [%s]",
           nvfp4jit_last_error(c), want);
    nvfp4jit_ctx_destroy(c);
}

/* nvfp4jit_variant_check(NULL, ...) keeps no message anywhere (it used to overwrite the
 * thread's message of a failed nvfp4jit_ctx_create); so does nvfp4jit_problem_check(NULL). */
static void t_variant_check_null(void) {
    CHECK(nvfp4jit_ctx_create(NULL, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    char want[1024];
    snprintf(want, sizeof want, "%s", nvfp4jit_last_error(NULL));
    CHECK(strstr(want, "out is NULL") != NULL);
    nvfp4jit_variant bad = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 99, 1, 0};
    nvfp4jit_variant arch = {(nvfp4jit_arch)80, 64, 8, 64, 2, 1, 0};
    nvfp4jit_variant good = {NVFP4JIT_ARCH_SM90A, 64, 8, 64, 2, 1, 0};
    CHECK(nvfp4jit_variant_check(NULL, &bad) == NVFP4JIT_ERR_INVALID_VARIANT);
    CHECK(nvfp4jit_variant_check(NULL, &arch) == NVFP4JIT_ERR_UNSUPPORTED_ARCH);
    CHECK(nvfp4jit_variant_check(NULL, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_variant_check(NULL, &good) == NVFP4JIT_OK);
    nvfp4jit_group g = {16, 60, 128, 0, 0, 0, 0, 0};
    CHECK(nvfp4jit_problem_check_shapes(NULL, &g, 1) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECKF(strcmp(nvfp4jit_last_error(NULL), want) == 0, "[%s]", nvfp4jit_last_error(NULL));
    /* with a context, the message is there */
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *c = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &c) == NVFP4JIT_OK);
    CHECK(nvfp4jit_variant_check(c, &bad) == NVFP4JIT_ERR_INVALID_VARIANT);
    CHECK(strstr(nvfp4jit_last_error(c), "sm90a:64x8x64:s99") != NULL);
    CHECK(nvfp4jit_variant_check(c, &good) == NVFP4JIT_OK && !*nvfp4jit_last_error(c));
    nvfp4jit_ctx_destroy(c);
}

/* The buffer-size helpers: the documented values, and 0 (not a wrapped size, which a caller
 * would allocate) for negative arguments and results that do not fit. */
static void scale_sizes(void) {
    CHECK(nvfp4jit_scale_bytes(128, 256) == 128 * 16);
    CHECK(nvfp4jit_scale_bytes(130, 64) == 256 * 4);
    CHECK(nvfp4jit_scale_bytes(1, 16) == 128 * 4); /* K/16 columns padded to 4 */
    CHECK(nvfp4jit_scale_bytes(0, 64) == 0);
    CHECK(nvfp4jit_scale_bytes(-1, 64) == 0 && nvfp4jit_scale_bytes(64, -64) == 0);
    CHECKF(nvfp4jit_scale_bytes(INT64_MAX, 64) == 0, "%zu", nvfp4jit_scale_bytes(INT64_MAX, 64));
    CHECKF(nvfp4jit_scale_bytes((int64_t)1 << 40, (int64_t)1 << 40) == 0, "%zu",
           nvfp4jit_scale_bytes((int64_t)1 << 40, (int64_t)1 << 40));
    /* 2^40 x (2^36 + 4) wraps to 2^42, a plausible size */
    CHECKF(nvfp4jit_scale_bytes((int64_t)1 << 40, ((int64_t)1 << 40) + 64) == 0, "%zu",
           nvfp4jit_scale_bytes((int64_t)1 << 40, ((int64_t)1 << 40) + 64));
    CHECK(nvfp4jit_moe_scale_rows(64, 4) == (64 + 127 * 4 + 127) / 128 * 128);
    CHECK(nvfp4jit_moe_scale_rows(0, 0) == 0 && nvfp4jit_moe_scale_rows(1, 0) == 128);
    CHECK(nvfp4jit_moe_scale_rows(-1, 4) == 0 && nvfp4jit_moe_scale_rows(64, -1) == 0);
    CHECKF(nvfp4jit_moe_scale_rows(INT64_MAX - 100, 1) == 0, "%lld",
           (long long)nvfp4jit_moe_scale_rows(INT64_MAX - 100, 1));
    CHECKF(nvfp4jit_moe_scale_rows(INT64_MAX - 300, INT_MAX) == 0, "%lld",
           (long long)nvfp4jit_moe_scale_rows(INT64_MAX - 300, INT_MAX));
}

const test_case tests_api[] = {
    {"scale_sizes", scale_sizes},
    {"version", t_version},       {"status_strings", t_status_strings},
    {"ctx", t_ctx},               {"validation", t_validation},
    {"ctx_cache_dir_hostile", t_ctx_cache_dir_hostile},
    {"plan_no_driver", t_plan_no_driver},
    {"plan_act16_limit", t_plan_act16_limit},
    {"documented_limits", t_documented_limits}, {"artifacts", t_artifacts},
    {"env_read_once", t_env_read_once}, {"errors_kept", t_errors_kept},
    {"variant_check_null", t_variant_check_null},
    {0, 0},
};
