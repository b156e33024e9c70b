/* test_gpuref.c - the GPU reference (nvfp4jit_reference_run, templates/reference_gemm.cu).
 * Without a GPU: argument and problem validation, and the kernel rendered + compiled for
 * sm_90a and sm_100a through the disk cache. With a GPU of compute capability 9.0: every
 * e2m1 code times every e4m3 byte (NaN included) against hand-made expectations, then fresh
 * random data (tests/gpudata.c) on many shapes against the CPU reference (ref_gemm and
 * ref_gemm_abs), which it must match to 1 fp16 ulp (in fact bit for bit: see the kernel's
 * NOTE on exactness); NaN never passes. Outputs are poisoned with 0xFF before every run. */
#include <math.h>
#include <stdint.h>

#include "cache.h"
#include "gpudata.h"
#include "gpuref.h"
#include "reference.h"

/* ---- without a device ---------------------------------------------------------------------- */

static void t_bad_args(void) {
    nvfp4jit_group g[2] = {{4, 64, 128, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000},
                           {0, 64, 128, 0, 0, 0, 0, 0}};
    CHECK(nvfp4jit_reference_run(NULL, g, 2, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(nvfp4jit_reference_run_ex(NULL, g, 2, NULL, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    CHECK(nvfp4jit_reference_run(ctx, NULL, 2, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    CHECK(strstr(nvfp4jit_last_error(ctx), "groups") != NULL);
    CHECK(nvfp4jit_reference_run(ctx, g, 0, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "no groups") != NULL);

    g[1].k = 100; /* an empty group is still checked */
    CHECK(nvfp4jit_reference_run(ctx, g, 2, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "group 1: K=100") != NULL, "%s",
           nvfp4jit_last_error(ctx));
    g[1].k = 128;
    g[0].k = 100;
    CHECK(nvfp4jit_reference_run(ctx, g, 2, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "group 0: K=100") != NULL, "%s",
           nvfp4jit_last_error(ctx));
    g[0].k = 128;
    g[0].n = 12;
    CHECK(nvfp4jit_reference_run(ctx, g, 2, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "group 0: N=12") != NULL);
    g[0].n = 64;
    g[0].sfb = 0x4008;
    CHECK(nvfp4jit_reference_run(ctx, g, 2, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "pointer SFB") != NULL);
    g[0].sfb = 0x4000;
    g[0].c = 0;
    CHECK(nvfp4jit_reference_run(ctx, g, 2, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "pointer C is NULL") != NULL);
    g[0].c = 0x5000;

    /* sum_abs: 4-byte aligned where M > 0; anything (here 2) where M = 0 */
    uint64_t sa[2] = {0x6002, 2};
    CHECK(nvfp4jit_reference_run_ex(ctx, g, 2, sa, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "group 0: sum_abs") != NULL, "%s",
           nvfp4jit_last_error(ctx));

    /* valid input, no driver: a status, nothing launched (forced, so that this also holds on
     * a machine with a GPU, where the fake pointers above must never reach a kernel) */
    sa[0] = 0x6004;
    drv_test_force_missing = 1;
    CHECK(nvfp4jit_reference_run(ctx, g, 2, NULL) == NVFP4JIT_ERR_NO_DRIVER);
    CHECK(nvfp4jit_reference_run_ex(ctx, g, 2, sa, NULL) == NVFP4JIT_ERR_NO_DRIVER);
    CHECK(strstr(nvfp4jit_last_error(ctx), "libcuda") != NULL);
    drv_test_force_missing = 0;
    nvfp4jit_ctx_destroy(ctx);
}

/* See test_compile.c: cubins are ELF64, e_machine 190 (EM_CUDA), SM in e_flags. */
static int cubin_sm(const unsigned char *d, size_t n) {
    if (n < 64 || memcmp(d, "\177ELF", 4) != 0 || d[4] != 2) return -1;
    uint16_t mach = (uint16_t)(d[18] | d[19] << 8);
    if (mach != 190) return -2;
    uint32_t fl = (uint32_t)d[48] | (uint32_t)d[49] << 8 | (uint32_t)d[50] << 16 |
                  (uint32_t)d[51] << 24;
    return d[8] >= 8 ? (int)((fl >> 8) & 0xff) : (int)(fl & 0xff);
}

static void t_compile(void) {
    /* render + compile for both arches (no device needed), through a fresh disk cache */
    const char *tmp = tu_tmpdir();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tmp);
    nvfp4jit_ctx_options o = {0};
    o.cache_dir = dir;
    nvfp4jit_ctx *ctx = NULL;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    static const struct { nvfp4jit_arch arch; int sm; } arches[] = {
        {NVFP4JIT_ARCH_SM90A, 90}, {NVFP4JIT_ARCH_SM100A, 100}};
    char keys[2][33];
    for (int i = 0; i < 2; i++) {
        nj_module *g = NULL;
        nvfp4jit_status s = gpuref_get(ctx, arches[i].arch, &g);
        CHECKF(s == NVFP4JIT_OK, "sm_%d: %s", arches[i].sm, nvfp4jit_last_error(ctx));
        if (s != NVFP4JIT_OK) continue;
        CHECKF(cubin_sm((const unsigned char *)g->cubin.data, g->cubin.len) == arches[i].sm,
               "cubin SM %d, want %d", cubin_sm((const unsigned char *)g->cubin.data,
                                                g->cubin.len), arches[i].sm);
        CHECK(strstr(g->ptx.data, ".entry nvfp4jit_reference") != NULL);
        CHECK(strstr(g->source.data, "sm_") != NULL);
        CHECKF(g->res.spill_store_bytes == 0 && g->res.spill_load_bytes == 0 &&
                   g->res.local_bytes == 0,
               "spills %d/%d stack %d", g->res.spill_store_bytes, g->res.spill_load_bytes,
               g->res.local_bytes);
        CHECKF(g->res.registers > 0 && g->res.registers <= 255, "registers %d; log: %.300s",
               g->res.registers, g->log.data ? g->log.data : "(none)");
        CHECK(g->res.from_cache == 0 && cache_key_valid(g->key));
        snprintf(keys[i], sizeof keys[i], "%s", g->key);
        printf("  reference sm_%d: regs %d, cubin %zu bytes, compile %.0f ms, key %s\n",
               arches[i].sm, g->res.registers, g->cubin.len, g->res.compile_ms, g->key);
        nj_module *again = NULL;
        CHECK(gpuref_get(ctx, arches[i].arch, &again) == NVFP4JIT_OK && again == g);
        CHECK(again && again->res.from_cache == 2);
        /* the cache entry says what it is */
        char path[4300];
        snprintf(path, sizeof path, "%s/manifest.txt", g->path);
        nj_buf m;
        nj_buf_init(&m);
        CHECKF(nj_read_file(path, &m) == 0, "%s", path);
        CHECK(m.data && strstr(m.data, "variant = reference\n") != NULL);
        CHECK(m.data && strstr(m.data, "key.kind = reference\n") != NULL);
        nj_buf_free(&m);
    }
    CHECK(strcmp(keys[0], keys[1]) != 0);
    nj_module *bad = NULL;
    CHECK(gpuref_get(ctx, (nvfp4jit_arch)80, &bad) == NVFP4JIT_ERR_UNSUPPORTED_ARCH && !bad);
    nvfp4jit_ctx_destroy(ctx);

    /* a second context finds both in the disk cache, under the same keys */
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    for (int i = 0; i < 2; i++) {
        nj_module *g = NULL;
        REQUIRE(gpuref_get(ctx, arches[i].arch, &g) == NVFP4JIT_OK);
        CHECK(g->res.from_cache == 1 && strcmp(g->key, keys[i]) == 0);
        CHECK(g->res.registers > 0);
        CHECK(cubin_sm((const unsigned char *)g->cubin.data, g->cubin.len) == arches[i].sm);
    }
    nvfp4jit_ctx_destroy(ctx);
    tu_rmtree(dir);
}

/* ---- on a GPU -------------------------------------------------------------------------------- */

static int is_nan16(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }

/* fp16 bits -> a integer that counts ulps (+0 and -0 are both 0). */
static int64_t ord16(uint16_t h) {
    return (h & 0x8000) ? -(int64_t)(h & 0x7FFF) : (int64_t)(h & 0x7FFF);
}

/* x rounded up (toward +inf) to float: the kernel's __double2float_ru. */
static float float_up(double x) {
    float f = (float)x;
    if ((double)f < x) f = nextafterf(f, INFINITY);
    return f;
}

typedef struct diff_stats {
    int64_t count, exact, bad, first_bad;
    int64_t max_ulps;
    double max_abs;
    int64_t abs_bad; /* sum_abs elements that differ from the CPU's, rounded up */
} diff_stats;

/* Compare GPU and CPU outputs of one group: at most 1 ulp apart, NaN never passes. */
static void diff16(const uint16_t *gpu, const uint16_t *cpu, int64_t count, diff_stats *st) {
    for (int64_t e = 0; e < count; e++) {
        st->count++;
        int bad = is_nan16(gpu[e]) || is_nan16(cpu[e]);
        int64_t d = bad ? 0 : llabs(ord16(gpu[e]) - ord16(cpu[e]));
        if (d > 1) bad = 1;
        if (!bad && d == 0) st->exact++;
        if (!bad && d > st->max_ulps) st->max_ulps = d;
        double ad = fabs(ref_f16_to_double(gpu[e]) - ref_f16_to_double(cpu[e]));
        if (!bad && ad > st->max_abs) st->max_abs = ad;
        if (bad && st->bad++ == 0) st->first_bad = e;
    }
}

/* Run the GPU reference on a case (with sum_abs), compare every group with the CPU reference.
 * @return the number of failing groups. */
static int check_case(nvfp4jit_ctx *ctx, const drv_api *api, gpu_case *c, const char *label,
                      uint64_t seed, CUstream stream) {
    uint64_t sa[256] = {0};
    int fails = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->g[i].m) continue;
        size_t bytes = (size_t)(c->g[i].m * c->g[i].n) * sizeof(float);
        CUdeviceptr d = 0;
        if (api->cuMemAlloc(&d, bytes) != CUDA_SUCCESS) fails++;
        else api->cuMemsetD8(d, 0xFF, bytes); /* NaN */
        sa[i] = d;
    }
    poison(api, c);
    nvfp4jit_status s = fails ? NVFP4JIT_ERR_CUDA
                              : nvfp4jit_reference_run_ex(ctx, c->g, c->n, sa, stream);
    if (s == NVFP4JIT_OK &&
        (stream ? api->cuStreamSynchronize(stream) : api->cuCtxSynchronize()) != CUDA_SUCCESS)
        s = NVFP4JIT_ERR_CUDA;
    if (s != NVFP4JIT_OK) {
        fprintf(stderr, "  %s: reference run: %s %s\n", label, nvfp4jit_status_string(s),
                nvfp4jit_last_error(ctx));
        fails++;
    }
    diff_stats st = {0};
    st.first_bad = -1;
    for (size_t i = 0; !fails && i < c->n; i++) {
        int64_t m = c->g[i].m, n = c->g[i].n, k = c->g[i].k;
        if (!m) continue;
        size_t cnt = (size_t)(m * n);
        uint16_t *gpu = malloc(cnt * 2), *cpu = malloc(cnt * 2);
        float *gabs = malloc(cnt * sizeof *gabs);
        double *cabs = malloc(cnt * sizeof *cabs);
        if (!gpu || !cpu || !gabs || !cabs || api->cuMemcpyDtoH(gpu, c->dc[i], cnt * 2) ||
            api->cuMemcpyDtoH(gabs, sa[i], cnt * sizeof *gabs)) {
            fprintf(stderr, "  %s group %zu: download failed\n", label, i);
            fails++;
        } else {
            ref_gemm(c->ha[i], c->hsfa[i], c->hb[i], c->hsfb[i], m, n, k, cpu, 8);
            ref_gemm_abs(c->ha[i], c->hsfa[i], c->hb[i], c->hsfb[i], m, n, k, cabs);
            diff_stats g = {0};
            g.first_bad = -1;
            diff16(gpu, cpu, (int64_t)cnt, &g);
            for (size_t e = 0; e < cnt; e++)
                if (!(gabs[e] == float_up(cabs[e]))) g.abs_bad++;
            if (g.bad || g.abs_bad) {
                int64_t f = g.first_bad;
                fprintf(stderr,
                        "  %s group %zu (%lldx%lldx%lld): %lld bad (first at (%lld,%lld): gpu "
                        "%g cpu %g), %lld sum_abs differ\n",
                        label, i, (long long)m, (long long)n, (long long)k, (long long)g.bad,
                        f >= 0 ? (long long)(f / n) : -1LL, f >= 0 ? (long long)(f % n) : -1LL,
                        f >= 0 ? ref_f16_to_double(gpu[f]) : 0.0,
                        f >= 0 ? ref_f16_to_double(cpu[f]) : 0.0, (long long)g.abs_bad);
                fails++;
            }
            st.count += g.count;
            st.exact += g.exact;
            st.bad += g.bad;
            st.abs_bad += g.abs_bad;
            if (g.max_ulps > st.max_ulps) st.max_ulps = g.max_ulps;
            if (g.max_abs > st.max_abs) st.max_abs = g.max_abs;
        }
        free(gpu);
        free(cpu);
        free(gabs);
        free(cabs);
    }
    printf("  %s seed %llu: %lld outputs, %lld bit-exact, max diff %lld ulp (%g), %lld bad, "
           "%lld sum_abs differ: %s\n",
           label, (unsigned long long)seed, (long long)st.count, (long long)st.exact,
           (long long)st.max_ulps, st.max_abs, (long long)st.bad, (long long)st.abs_bad,
           fails ? "FAIL" : "ok");
    for (size_t i = 0; i < c->n; i++)
        if (sa[i]) api->cuMemFree(sa[i]);
    return fails;
}

static int run_random(nvfp4jit_ctx *ctx, const drv_api *api, const int64_t (*shapes)[3],
                      size_t n, const char *label, CUstream stream) {
    gpu_case *c = calloc(1, sizeof *c);
    if (!c) return 1;
    uint64_t seed = fresh_seed();
    int fails;
    if (case_alloc(api, c, shapes, n, seed) != 0) {
        fprintf(stderr, "  %s: allocation failed\n", label);
        fails = 1;
    } else {
        fails = check_case(ctx, api, c, label, seed, stream);
    }
    case_free(api, c);
    free(c);
    return fails;
}

static void t_decode_tables(void) {
    /* Every e4m3 byte (row r of A has scale byte r in its first scale block) times every
     * e2m1 code (row n of B holds code n 16 times, scale 1.0): C[r][n] = 16 * e2m1(n) *
     * e4m3(r), exact in fp16; NaN for r = 0x7F and 0xFF. The rest of k is zero. */
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    NEED_SM90(ctx, api);
    enum { M = 256, N = 16, K = 64 };
    static uint8_t ha[M * K / 2], hb[N * K / 2], plain_a[M * K / 16], plain_b[N * K / 16];
    uint8_t *sfa = calloc(1, ref_sf_bytes(M, K)), *sfb = calloc(1, ref_sf_bytes(N, K));
    REQUIRE(sfa && sfb);
    memset(ha, 0, sizeof ha);
    memset(hb, 0, sizeof hb);
    for (int r = 0; r < M; r++) {
        memset(ha + r * K / 2, 0x22, 8); /* code 2 (1.0) for k = 0..15 */
        for (int j = 0; j < K / 16; j++) plain_a[r * K / 16 + j] = j == 0 ? (uint8_t)r : 0x38;
    }
    for (int n = 0; n < N; n++) {
        memset(hb + n * K / 2, n | n << 4, 8);
        for (int j = 0; j < K / 16; j++) plain_b[n * K / 16 + j] = 0x38; /* 1.0 */
    }
    ref_sf_to_blocked(plain_a, M, K, sfa);
    ref_sf_to_blocked(plain_b, N, K, sfb);
    CUdeviceptr d[6] = {0};
    size_t sz[6] = {sizeof ha, sizeof hb, ref_sf_bytes(M, K), ref_sf_bytes(N, K), M * N * 2,
                    M * N * 4};
    const void *src[4] = {ha, hb, sfa, sfb};
    int ok = 1;
    for (int i = 0; i < 6; i++) ok = ok && api->cuMemAlloc(&d[i], sz[i]) == CUDA_SUCCESS;
    for (int i = 0; ok && i < 4; i++) ok = api->cuMemcpyHtoD(d[i], src[i], sz[i]) == CUDA_SUCCESS;
    CHECK(ok);
    if (ok) {
        api->cuMemsetD8(d[4], 0xFF, sz[4]);
        api->cuMemsetD8(d[5], 0xFF, sz[5]);
        nvfp4jit_group g = {M, N, K, d[0], d[1], d[2], d[3], d[4]};
        uint64_t sa = d[5];
        nvfp4jit_status s = nvfp4jit_reference_run_ex(ctx, &g, 1, &sa, NULL);
        CHECKF(s == NVFP4JIT_OK, "%s", nvfp4jit_last_error(ctx));
        CHECK(api->cuCtxSynchronize() == CUDA_SUCCESS);
        static uint16_t out[M * N], cpu[M * N];
        static float abs_out[M * N];
        CHECK(api->cuMemcpyDtoH(out, d[4], sizeof out) == CUDA_SUCCESS);
        CHECK(api->cuMemcpyDtoH(abs_out, d[5], sizeof abs_out) == CUDA_SUCCESS);
        ref_gemm(ha, sfa, hb, sfb, M, N, K, cpu, 1);
        int bad = 0, nans = 0;
        for (int r = 0; r < M; r++) {
            for (int n = 0; n < N; n++) {
                uint16_t o = out[r * N + n];
                double want = 16.0 * ref_e2m1((unsigned)n) * ref_e4m3((unsigned)r);
                double want_abs = fabs(want);
                if (isnan(want)) {
                    nans++;
                    if (!is_nan16(o) || !isnan(abs_out[r * N + n]) || !is_nan16(cpu[r * N + n]))
                        bad++;
                } else if (ord16(o) != ord16(ref_f16_from_double(want)) ||
                           ord16(o) != ord16(cpu[r * N + n]) ||
                           abs_out[r * N + n] != (float)want_abs) {
                    if (bad < 5)
                        fprintf(stderr, "  scale 0x%02x code %d: got %g (sum_abs %g), want %g\n",
                                r, n, ref_f16_to_double(o), abs_out[r * N + n], want);
                    bad++;
                }
            }
        }
        CHECKF(bad == 0, "%d of %d outputs wrong", bad, M * N);
        CHECK(nans == 2 * N);
        printf("  16 e2m1 codes x 256 e4m3 bytes: %d wrong (%d NaN expected and found)\n", bad,
               nans);
    }
    for (int i = 0; i < 6; i++)
        if (d[i]) api->cuMemFree(d[i]);
    free(sfa);
    free(sfb);
    nvfp4jit_ctx_destroy(ctx);
}

static void t_vs_cpu(void) {
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    NEED_SM90(ctx, api);
    /* small K, tails everywhere (M not a multiple of anything, N a multiple of 8 only), empty
     * groups first, in the middle and last */
    static const int64_t s1[][3] = {{0, 256, 256},   {1, 8, 64},   {37, 136, 64}, {0, 64, 64},
                                    {129, 264, 192}, {200, 520, 320}, {17, 24, 128}, {0, 8, 64}};
    CHECK(run_random(ctx, api, s1, sizeof s1 / sizeof s1[0], "small", NULL) == 0);
    /* K = 7168 (DeepSeek's hidden size), on a stream of its own */
    static const int64_t s2[][3] = {{5, 256, 7168}, {0, 128, 7168}, {130, 72, 7168},
                                    {64, 1024, 7168}};
    CUstream st = NULL;
    CHECK(api->cuStreamCreate(&st, 0) == CUDA_SUCCESS);
    CHECK(run_random(ctx, api, s2, sizeof s2 / sizeof s2[0], "k7168", st) == 0);
    if (st) api->cuStreamDestroy(st);
    /* medium K, wide N, tall M */
    static const int64_t s3[][3] = {{1000, 40, 1024}, {3, 4096, 512}, {300, 296, 2048}};
    CHECK(run_random(ctx, api, s3, sizeof s3 / sizeof s3[0], "medium", NULL) == 0);
    /* M beyond one grid pass (gridDim.y is capped at 65535 tiles of 16 rows) */
    static const int64_t s4[][3] = {{16 * 65535 + 40, 8, 64}};
    CHECK(run_random(ctx, api, s4, 1, "tall", NULL) == 0);
    nvfp4jit_ctx_destroy(ctx);
}

static void t_nan_scale(void) {
    /* a NaN scale (0x7F or 0xFF) in SFB makes exactly its column NaN, on the GPU and the CPU */
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    NEED_SM90(ctx, api);
    static const int64_t s[][3] = {{40, 64, 256}};
    gpu_case *c = calloc(1, sizeof *c);
    REQUIRE(c);
    if (case_alloc(api, c, s, 1, fresh_seed()) == 0) {
        int64_t m = 40, n = 64, k = 256;
        c->hsfb[0][ref_sf_offset(5, 2, k)] = 0xFF;
        c->hsfb[0][ref_sf_offset(50, 0, k)] = 0x7F;
        CHECK(api->cuMemcpyHtoD(c->dsfb[0], c->hsfb[0], ref_sf_bytes(n, k)) == CUDA_SUCCESS);
        poison(api, c);
        CHECK(nvfp4jit_reference_run(ctx, c->g, 1, NULL) == NVFP4JIT_OK);
        CHECK(api->cuCtxSynchronize() == CUDA_SUCCESS);
        uint16_t *out = malloc((size_t)(m * n) * 2), *cpu = malloc((size_t)(m * n) * 2);
        REQUIRE(out && cpu);
        CHECK(api->cuMemcpyDtoH(out, c->dc[0], (size_t)(m * n) * 2) == CUDA_SUCCESS);
        ref_gemm(c->ha[0], c->hsfa[0], c->hb[0], c->hsfb[0], m, n, k, cpu, 1);
        int bad = 0;
        for (int64_t e = 0; e < m * n; e++) {
            int col = (int)(e % n), want_nan = col == 5 || col == 50;
            if (want_nan ? !(is_nan16(out[e]) && is_nan16(cpu[e]))
                         : (is_nan16(out[e]) || llabs(ord16(out[e]) - ord16(cpu[e])) > 1))
                bad++;
        }
        CHECKF(bad == 0, "%d wrong", bad);
        free(out);
        free(cpu);
    } else {
        CHECK(!"allocation failed");
    }
    case_free(api, c);
    free(c);
    nvfp4jit_ctx_destroy(ctx);
}

const test_case tests_gpuref[] = {
    {"bad_args", t_bad_args},
    {"compile", t_compile},
    {"decode_tables", t_decode_tables},
    {"vs_cpu", t_vs_cpu},
    {"nan_scale", t_nan_scale},
    {0, 0},
};
