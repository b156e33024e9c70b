/* test_api.c - the public API without a GPU: versions, status strings, contexts, validation
 * of every field with its group index, plans, and the driver-less paths. */
#include <sys/stat.h>

#include "driver.h"
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

const test_case tests_api[] = {
    {"version", t_version},       {"status_strings", t_status_strings},
    {"ctx", t_ctx},               {"validation", t_validation},
    {"ctx_cache_dir_hostile", t_ctx_cache_dir_hostile},
    {"plan_no_driver", t_plan_no_driver},
    {"plan_act16_limit", t_plan_act16_limit},
    {"documented_limits", t_documented_limits}, {"artifacts", t_artifacts},
    {0, 0},
};
