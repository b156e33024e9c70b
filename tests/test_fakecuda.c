/* test_fakecuda.c - the device paths on the fake CUDA driver (tests/fakecuda), without a GPU:
 * plans (uploads, the fast path, upload slots, stream capture, the act16 workspace and tensor
 * maps), the MoE path, the tuning lookup, the GPU reference's launches, and driver failures
 * injected at every call the paths make: each gives the documented status and a message
 * naming the CUresult and what failed, leaks nothing (the fake's live counts; ASan for the
 * host) and leaves the plan usable. CTest sets NVFP4JIT_CUDA_DRIVER to the fake for this area
 * only; without it every test skips. */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu.h"
#include "fakecuda/fakecuda.h"
#include "family.h"
#include "heuristic.h"
#include "jit.h"
#include "reference.h"
#include "testutil.h"
#include "tunedb.h"

static struct {
    int ready;
    const drv_api *api;
    void (*stats)(fakecuda_stats *);
    long (*calls)(const char *);
    int (*fail)(const char *);
    void (*hook)(fakecuda_launch_hook, void *);
    void (*pending)(int);
    void (*set_sms)(int);
    void (*set_drift)(int);
    void (*set_cc)(int); /* NULL: a fake without it (the sm_100a test skips) */
    void (*second_ctx)(CUcontext *); /* NULL: a fake without it (modules_two_contexts skips) */
    char cache[4096];
    int own_cache;
} fk;

/* What the last launches passed (the hook runs inside the fake's cuLaunchKernel). */
static struct {
    char func[128];
    uint64_t blob;
    nj_moe_args moe;
    nj_moe_args prep; /* the act16 prep kernel's (blob, MoeArgs, PrepTab) */
    nj_prep_tab tab;
    unsigned char amap[128]; /* the sm_100a MoE entry's token map */
    int nparams;
    long n;
} seen;

/* 1: the hook runs grouped GEMM launches on the CPU (ref_gemm over the blob's groups), so
 * that nvfp4jit_tune's check of the winner passes */
static int exec_gemm;

static void run_on_cpu(uint64_t blob, int act16) {
    const unsigned char *b = (const unsigned char *)(uintptr_t)blob;
    int32_t hdr[4];
    memcpy(hdr, b, sizeof hdr);
    uint64_t goff = 16;
    if (act16) memcpy(&goff, b + 32, 8);
    for (int32_t i = 0; i < hdr[1]; i++) {
        uint64_t p[5];
        int32_t d[3];
        memcpy(p, b + goff + 64 * (uint64_t)i, sizeof p);
        memcpy(d, b + goff + 64 * (uint64_t)i + (act16 ? 48 : 40), sizeof d);
        if (d[0] <= 0) continue;
        ref_gemm((const uint8_t *)(uintptr_t)p[0], (const uint8_t *)(uintptr_t)p[2],
                 (const uint8_t *)(uintptr_t)p[1], (const uint8_t *)(uintptr_t)p[3], d[0], d[1],
                 d[2], (uint16_t *)(uintptr_t)p[4], 1);
    }
}

static void hook(const char *func, void **params, int nparams, void *user) {
    (void)user;
    snprintf(seen.func, sizeof seen.func, "%s", func);
    seen.nparams = nparams;
    seen.n++;
    if (!strcmp(func, NJ_KERNEL_NAME)) {
        memcpy(&seen.blob, params[0], 8); /* the dual kernel: (blob); act16: (blob, MoeArgs) */
        if (nparams >= 2) memcpy(&seen.moe, params[1], sizeof seen.moe);
        else memset(&seen.moe, 0, sizeof seen.moe);
        if (exec_gemm && !seen.moe.status) run_on_cpu(seen.blob, nparams >= 2);
    } else if (!strcmp(func, NJ_KERNEL_NAME "_prep") && nparams == 3) {
        memcpy(&seen.prep, params[1], sizeof seen.prep);
        memcpy(&seen.tab, params[2], sizeof seen.tab);
    } else if (!strcmp(func, NJ_KERNEL_NAME "_moe") && nparams == 3) {
        memcpy(&seen.blob, params[0], 8); /* sm_100a MoE: (blob, MoeArgs, token map) */
        memcpy(&seen.moe, params[1], sizeof seen.moe);
        memcpy(seen.amap, params[2], sizeof seen.amap);
    }
}

/* @return 1 with fk ready, else 0 (the caller skips). */
static int setup(void) {
    if (fk.ready) return 1;
    const char *path = getenv("NVFP4JIT_CUDA_DRIVER");
    if (!path || !*path) return 0;
    nvfp4jit_status st;
    fk.api = drv_get(NULL, &st); /* loads the driver, makes the primary context current */
    if (!fk.api) return 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return 0;
    *(void **)&fk.stats = dlsym(h, "fakecuda_get_stats");
    *(void **)&fk.calls = dlsym(h, "fakecuda_calls");
    *(void **)&fk.fail = dlsym(h, "fakecuda_fail");
    *(void **)&fk.hook = dlsym(h, "fakecuda_set_launch_hook");
    *(void **)&fk.pending = dlsym(h, "fakecuda_set_events_pending");
    *(void **)&fk.set_sms = dlsym(h, "fakecuda_set_sms");
    *(void **)&fk.set_drift = dlsym(h, "fakecuda_set_drift");
    *(void **)&fk.set_cc = dlsym(h, "fakecuda_set_cc");
    *(void **)&fk.second_ctx = dlsym(h, "fakecuda_second_context");
    dlclose(h); /* still loaded by the library */
    if (!fk.stats || !fk.calls || !fk.fail || !fk.hook || !fk.pending || !fk.set_sms ||
        !fk.set_drift)
        return 0;
    fk.hook(hook, NULL);
    /* one cache directory for the area: below the run's NVFP4JIT_CACHE_DIR (tools/test.sh
     * removes it), else a temporary one removed by the last test */
    const char *c = getenv("NVFP4JIT_CACHE_DIR");
    if (c && *c) {
        snprintf(fk.cache, sizeof fk.cache, "%s/fakecuda", c);
    } else {
        snprintf(fk.cache, sizeof fk.cache, "%s", tu_tmpdir());
        fk.own_cache = 1;
    }
    fk.ready = 1;
    return 1;
}

#define SETUP()                                                                              \
    do {                                                                                     \
        if (!setup()) SKIP("skipped: the fake CUDA driver is not configured "                \
                           "(NVFP4JIT_CUDA_DRIVER; CTest sets it for this area)");           \
    } while (0)

static nvfp4jit_ctx *new_ctx(void) {
    nvfp4jit_ctx_options o = {0};
    o.cache_dir = fk.cache;
    nvfp4jit_ctx *ctx = NULL;
    return nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK ? ctx : NULL;
}

static fakecuda_stats stats(void) {
    fakecuda_stats s;
    fk.stats(&s);
    return s;
}

/* Live device objects: equal before and after = nothing leaked on the device. */
static int same_live(const fakecuda_stats *a, const fakecuda_stats *b) {
    return a->live_dev_allocs == b->live_dev_allocs && a->live_dev_bytes == b->live_dev_bytes &&
           a->live_host_allocs == b->live_host_allocs && a->live_streams == b->live_streams &&
           a->live_events == b->live_events && a->live_graphs == b->live_graphs &&
           a->live_execs == b->live_execs;
}

static uint64_t dalloc(size_t n) {
    CUdeviceptr p = 0;
    return fk.api->cuMemAlloc(&p, n) == CUDA_SUCCESS ? (uint64_t)p : 0;
}

/* A problem set with real (fake-device) buffers. */
typedef struct gset {
    nvfp4jit_group g[3];
    size_t n;
} gset;

static int gset_make(gset *s, const int64_t (*shape)[3], size_t n) {
    memset(s, 0, sizeof *s);
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        nvfp4jit_group *g = &s->g[i];
        g->m = shape[i][0], g->n = shape[i][1], g->k = shape[i][2];
        int64_t m = g->m ? g->m : 1;
        g->a = dalloc((size_t)(m * g->k / 2));
        g->b = dalloc((size_t)(g->n * g->k / 2));
        g->sfa = dalloc(nvfp4jit_scale_bytes(m, g->k));
        g->sfb = dalloc(nvfp4jit_scale_bytes(g->n, g->k));
        g->c = dalloc((size_t)(m * g->n * 2));
        if (!g->a || !g->b || !g->sfa || !g->sfb || !g->c) return -1;
    }
    return 0;
}

static void gset_free(gset *s) {
    for (size_t i = 0; i < s->n; i++) {
        uint64_t *p = &s->g[i].a;
        for (int j = 0; j < 5; j++)
            if (p[j]) fk.api->cuMemFree((CUdeviceptr)p[j]);
    }
}

static const int64_t SHAPES[3][3] = {{5, 64, 128}, {0, 64, 128}, {130, 128, 256}};
static const nvfp4jit_variant DUAL = {NVFP4JIT_ARCH_SM90A, 64, 32, 64, 2, 0, 0};
static const nvfp4jit_variant ACT16P = {NVFP4JIT_ARCH_SM90A, 64, 32, 64, 2, 1,
                                        NVFP4JIT_STRATEGY_ACT16P};

static void t_device(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    int cc = 0;
    CHECK(nvfp4jit_device_arch(ctx, &cc) == NVFP4JIT_OK && cc == 90);
    CHECK(ctx->device_sms == 132);
    nvfp4jit_ctx_destroy(ctx);
}

/* The variant nvfp4jit_plan_create chooses in a child process forked now (with everything
 * this one holds, ctx included), as its name; "" on failure. */
static void child_choice(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n, char *out,
                         size_t cap) {
    out[0] = 0;
    int fd[2];
    if (pipe(fd) != 0) return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char name[96] = "";
        nvfp4jit_plan *p = NULL;
        if (nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, n, NULL, &p) == NVFP4JIT_OK)
            nvfp4jit_variant_format(nvfp4jit_plan_variant(p, NULL), name, sizeof name);
        ssize_t w = write(fd[1], name, strlen(name));
        _exit(w >= 0 ? 0 : 1);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t r;
    while (pid > 0 && len + 1 < cap && (r = read(fd[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = 0;
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
}

/* The heuristic's SM count is an input looked up at plan creation: on a device of 66 SMs
 * (where this set's choice differs from the one at the usual 132) the plan made before any
 * run and the one made after a run choose the same variant, the device's count is recorded,
 * and the choice is the heuristic's for 66 SMs. A plan for an arch the device does not run
 * models that arch's usual count. */
static void t_choice_sms(void) {
    SETUP();
    static const int64_t shape[1][3] = {{128, 2048, 1024}};
    gset s;
    REQUIRE(gset_make(&s, shape, 1) == 0);
    fk.set_sms(66);
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    setenv("NVFP4JIT_NO_TUNE", "1", 1); /* the heuristic's choice, not a tuned entry */
    nvfp4jit_variant want66, want132;
    nvfp4jit_choice ch;
    REQUIRE(heur_choose(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, 66, &want66, &ch) == NVFP4JIT_OK);
    REQUIRE(heur_choose(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, 132, &want132, &ch) == NVFP4JIT_OK);
    CHECK(memcmp(&want66, &want132, sizeof want66) != 0); /* else the test proves nothing */
    nvfp4jit_plan *before = NULL, *after = NULL;
    char child_before[96], child_after[96];
    child_choice(ctx, s.g, 1, child_before, sizeof child_before); /* another process, now */
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, NULL, &before) == NVFP4JIT_OK);
    const nvfp4jit_variant vb = *nvfp4jit_plan_variant(before, NULL);
    CHECK(nvfp4jit_plan_run(before, s.g, 1, NULL) == NVFP4JIT_OK); /* the device is known now */
    child_choice(ctx, s.g, 1, child_after, sizeof child_after); /* and one after the run */
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, NULL, &after) == NVFP4JIT_OK);
    const nvfp4jit_variant va = *nvfp4jit_plan_variant(after, NULL);
    char nb[96], na[96];
    nvfp4jit_variant_format(&vb, nb, sizeof nb);
    nvfp4jit_variant_format(&va, na, sizeof na);
    CHECKF(memcmp(&vb, &va, sizeof vb) == 0, "before a run %s, after %s", nb, na);
    CHECKF(memcmp(&vb, &want66, sizeof vb) == 0, "planned %s, not the choice for 66 SMs", nb);
    CHECKF(!strcmp(child_before, nb) && !strcmp(child_after, nb),
           "processes chose %s (forked before the run) and %s (after), this one %s",
           child_before, child_after, nb);
    CHECK(nvfp4jit_plan_sms(before) == 66 && nvfp4jit_plan_sms(after) == 66);
    CHECK(nvfp4jit_plan_sms(NULL) == 0);
    nvfp4jit_plan_destroy(before);
    nvfp4jit_plan_destroy(after);
    /* sm_100a on this cc 9.0 device: the B200's 148, whatever the device has */
    nvfp4jit_plan *p100 = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM100A, s.g, 1, NULL, &p100) == NVFP4JIT_OK);
    CHECK(nvfp4jit_plan_sms(p100) == 148);
    nvfp4jit_plan_destroy(p100);
    unsetenv("NVFP4JIT_NO_TUNE");
    fk.set_sms(132);
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* The dual kernel's blob: header {tiles, groups}, then 64 bytes per group. */
static void check_dual_blob(const gset *s, long tiles) {
    const int32_t *h = (const int32_t *)(uintptr_t)seen.blob;
    REQUIRE(h);
    CHECK(h[0] == tiles && h[1] == (int32_t)s->n);
    for (size_t i = 0; i < s->n; i++) {
        const uint64_t *p = (const uint64_t *)(uintptr_t)(seen.blob + 16 + 64 * i);
        const int32_t *d = (const int32_t *)(p + 5);
        CHECK(p[0] == s->g[i].a && p[1] == s->g[i].b && p[4] == s->g[i].c);
        CHECK(d[0] == s->g[i].m && d[1] == s->g[i].n && d[2] == s->g[i].k);
    }
}

static void t_plan_run(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &DUAL, &p) == NVFP4JIT_OK);
    /* tiles: (5 rows: 1 x 2) + (130 rows: 3 x 4) */
    long tiles = 1 * 2 + 3 * 4;
    REQUIRE(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
    fakecuda_stats a = stats();
    CHECK(a.launches == base.launches + 1 && a.htod_copies == base.htod_copies + 1);
    CHECK(a.grid[0] == (unsigned)tiles && a.block[0] == 128 && !strcmp(a.func, NJ_KERNEL_NAME));
    CHECKF(a.params == 1 && a.params_bytes == 8, "params %d (%zu bytes)", a.params,
           a.params_bytes); /* the dual kernel: (blob) */
    check_dual_blob(&s, tiles);
    /* the same groups: one launch, no copy, no allocation, no event query */
    long allocs = fk.calls("cuMemAlloc"), queries = fk.calls("cuEventQuery");
    long cid = fk.calls("cuCtxGetId");
    uint64_t blob0 = seen.blob;
    CHECK(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
    /* the context is read once per steady-state call (the module's check reuses it; the
     * fake counts cuCtxGetId, not cuCtxGetCurrent, which goes with it) */
    CHECKF(fk.calls("cuCtxGetId") == cid + 1, "cuCtxGetId called %ld times",
           fk.calls("cuCtxGetId") - cid);
    fakecuda_stats b = stats();
    CHECK(b.launches == a.launches + 1 && b.htod_copies == a.htod_copies && b.syncs == a.syncs);
    CHECK(fk.calls("cuMemAlloc") == allocs && fk.calls("cuEventQuery") == queries);
    CHECK(seen.blob == blob0);
    /* new pointers: another upload slot while the last one's launch is "in flight"; with
     * every event pending, 16 slots fill up and the 17th call waits for the oldest */
    fk.pending(1);
    long syncs = fk.calls("cuEventSynchronize"), waits = stats().syncs;
    gset s2 = s;
    for (int i = 0; i < 17; i++) {
        s2.g[0].c = s.g[0].c + 16 * (uint64_t)(i % 2); /* still inside the buffer */
        s2.g[2].m = 1 + i;
        CHECK(nvfp4jit_plan_run(p, s2.g, 3, NULL) == NVFP4JIT_OK);
        if (i < 15) CHECK(fk.calls("cuEventSynchronize") == syncs && stats().syncs == waits);
    }
    CHECK(stats().pageable_async_copies == 0); /* uploads from pinned memory only */
    CHECK(fk.calls("cuEventSynchronize") == syncs + 1);
    CHECK(stats().live_events == base.live_events + 16);
    CHECK(fk.calls("cuMemAlloc") == allocs);
    fk.pending(0);
    CHECK(fk.api->cuCtxSynchronize() == CUDA_SUCCESS);
    check_dual_blob(&s2, 1 * 2 + 1 * 4);
    /* a bigger problem outgrows the blob arena: a new one */
    s2.g[2].m = 130;
    s2.g[0].m = 0;
    CHECK(nvfp4jit_plan_run(p, s2.g, 3, NULL) == NVFP4JIT_OK);
    /* shapes that differ from the plan's */
    s2.g[1].n = 128;
    CHECK(nvfp4jit_plan_run(p, s2.g, 3, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "group 1: N=128") != NULL);
    nvfp4jit_plan_destroy(p);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* The prep's table (its third parameter) describes exactly these groups, as the blob at `blob`
 * does: @return 0 when it does. */
static int tab_matches(const nj_prep_tab *t, const nvfp4jit_group *g, size_t n,
                       const unsigned char *blob) {
    int32_t items = 0, want = 0;
    memcpy(&items, blob + 8, 4);
    for (size_t i = 0; i < n; i++) want += (int32_t)(g[i].m * (g[i].k / 16));
    if (t->num_groups != (int32_t)n || t->items != want || items != want) return 1;
    int32_t p0 = 0;
    uint64_t ws = t->g[0].ws;
    for (size_t i = 0; i < n; i++) {
        const nj_prep_group *e = &t->g[i];
        uint64_t bws;
        memcpy(&bws, blob + 64 + 64 * i + 40, 8); /* act16_group.ws */
        if (e->a != g[i].a || e->sfa != g[i].sfa || e->k != (int32_t)g[i].k || e->prep0 != p0 ||
            e->ws != ws || e->ws != bws)
            return 1;
        p0 += (int32_t)(g[i].m * (g[i].k / 16));
        ws += (uint64_t)(g[i].m * g[i].k * 2);
    }
    for (size_t i = n; i < NJ_PREP_TAB_GROUPS; i++)
        if (t->g[i].a || t->g[i].sfa || t->g[i].ws || t->g[i].k || t->g[i].prep0) return 1;
    return 0;
}

static void t_capture(void) {
    SETUP();
    const drv_api *api = fk.api;
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    fakecuda_stats base = stats();
    CUstream st;
    REQUIRE(api->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &ACT16P, &p) == NVFP4JIT_OK);
    REQUIRE(nvfp4jit_plan_run(p, s.g, 3, st) == NVFP4JIT_OK);
    /* a global-mode capture: the fake invalidates it on any unsafe call (allocation, module
     * load, synchronisation) the library would make without relaxing this thread */
    for (int round = 0; round < 2; round++) {
        fakecuda_stats a = stats();
        REQUIRE(api->cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
        gset s2 = s;
        s2.g[2].m = 200; /* more tokens: the workspace grows while capturing */
        s2.g[2].a = s.g[2].a; /* (A is only read for 130 rows by the fake: nothing) */
        CHECK(nvfp4jit_plan_run(p, s2.g, 3, st) == NVFP4JIT_OK);
        CUgraph g = NULL;
        CHECK(api->cuStreamEndCapture(st, &g) == CUDA_SUCCESS && g);
        fakecuda_stats b = stats();
        CHECK(b.launches == a.launches && b.captured_nodes == a.captured_nodes + 2);
        CHECK(b.pdl_launches == a.pdl_launches + 1); /* the GEMM: a programmatic edge */
        if (round == 1) /* the same capture again: its slot is shared, nothing allocated */
            CHECK(b.live_dev_allocs == a.live_dev_allocs);
        CUgraphExec ex = NULL;
        CHECK(api->cuGraphInstantiate(&ex, g, 0) == CUDA_SUCCESS);
        /* an eager call in between: the replay still carries the captured groups' prep table */
        CHECK(nvfp4jit_plan_run(p, s.g, 3, st) == NVFP4JIT_OK);
        CHECK(tab_matches(&seen.tab, s.g, 3, (const unsigned char *)(uintptr_t)seen.blob) == 0);
        b = stats();
        CHECK(api->cuGraphLaunch(ex, st) == CUDA_SUCCESS);
        CHECK(stats().launches == b.launches + 2);
        CHECK(tab_matches(&seen.tab, s2.g, 3, (const unsigned char *)(uintptr_t)seen.blob) == 0);
        api->cuGraphExecDestroy(ex);
        api->cuGraphDestroy(g);
    }
    /* eager again, with the first groups: the workspace a capture baked in is kept */
    CHECK(nvfp4jit_plan_run(p, s.g, 3, st) == NVFP4JIT_OK);
    CHECK(api->cuStreamSynchronize(st) == CUDA_SUCCESS);
    nvfp4jit_plan_destroy(p);
    api->cuStreamDestroy(st);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

static const fakecuda_tmap *tmap(const unsigned char *blob, uint64_t maps_off, size_t g, int which) {
    return (const fakecuda_tmap *)(blob + maps_off + 384 * g + 128 * (size_t)which);
}

static void t_act16(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &ACT16P, &p) == NVFP4JIT_OK);
    long launches = stats().launches, pdl = stats().pdl_launches;
    REQUIRE(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
    fakecuda_stats a = stats();
    CHECK(a.launches == launches + 2); /* prep + GEMM */
    CHECK(a.pdl_launches == pdl + 1);  /* the GEMM: the prep's programmatic dependent */
    /* a driver that refuses the programmatic launch (CUDA_ERROR_NOT_SUPPORTED, 801): the GEMM
     * goes out as an ordinary launch; any other error stays an error (fakecuda.faults_plan) */
    long plain = fk.calls("cuLaunchKernel");
    fk.fail("cuLaunchKernelEx:1:801");
    CHECK(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
    fk.fail(NULL);
    CHECK(stats().launches == a.launches + 2 && stats().pdl_launches == a.pdl_launches &&
          fk.calls("cuLaunchKernel") == plain + 2);
    a = stats();
    CHECK(a.live_dev_allocs == base.live_dev_allocs + 2); /* blob arena + workspace */
    const unsigned char *blob = (const unsigned char *)(uintptr_t)seen.blob;
    REQUIRE(blob);
    const int32_t *h = (const int32_t *)blob;
    uint64_t maps_off;
    memcpy(&maps_off, blob + 16, 8);
    CHECK(h[0] == 1 * 1 + 2 * 5 && h[1] == 3 && h[2] == 5 * 128 / 16 + 130 * 256 / 16);
    CHECKF(a.params == 2 && a.params_bytes == 8 + sizeof(nj_moe_args), "params %d (%zu bytes)",
           a.params, a.params_bytes); /* act16: (blob, MoeArgs) */
    /* the prep's table: this call's groups, also after new token pointers (a new slot) and
     * back (the first slot again, with its own table) */
    CHECK(tab_matches(&seen.tab, s.g, 3, blob) == 0);
    {
        gset s3 = s;
        s3.g[0].a += 4096;
        s3.g[2].sfa += 512;
        CHECK(nvfp4jit_plan_run(p, s3.g, 3, NULL) == NVFP4JIT_OK);
        CHECK(tab_matches(&seen.tab, s3.g, 3, (const unsigned char *)(uintptr_t)seen.blob) == 0);
        CHECK(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
        CHECK(tab_matches(&seen.tab, s.g, 3, (const unsigned char *)(uintptr_t)seen.blob) == 0);
        a = stats();
    }
    const fakecuda_tmap *tok = tmap(blob, maps_off, 2, 0), *w = tmap(blob, maps_off, 2, 1),
                        *sf = tmap(blob, maps_off, 2, 2);
    CHECK(tok->magic == FAKECUDA_TMAP_MAGIC && tok->type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    CHECK(tok->dims[0] == 256 && tok->dims[1] == 130 && tok->strides[0] == 512);
    CHECK(tok->box[0] == 64 && tok->box[1] == 32 && tok->swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
    CHECK(w->addr == s.g[2].b && w->dims[0] == 128 && w->dims[1] == 128 && w->box[1] == 64);
    CHECK(sf->addr == s.g[2].sfb && sf->type == CU_TENSOR_MAP_DATA_TYPE_UINT32);
    CHECK(tmap(blob, maps_off, 1, 0)->magic == 0); /* M = 0: no maps */
    /* more tokens: the workspace grows (after the stream's launches), a smaller set reuses it */
    long syncs = fk.calls("cuStreamSynchronize"), allocs = fk.calls("cuMemAlloc");
    gset s2 = s;
    s2.g[0].m = 64;
    CHECK(nvfp4jit_plan_run(p, s2.g, 3, NULL) == NVFP4JIT_OK);
    CHECK(fk.calls("cuStreamSynchronize") == syncs + 1 && fk.calls("cuMemAlloc") == allocs + 1);
    CHECK(stats().live_dev_allocs == base.live_dev_allocs + 2);
    CHECK(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
    CHECK(fk.calls("cuMemAlloc") == allocs + 1);
    nvfp4jit_plan_destroy(p);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* act16's wide form (BLOCK_M 256 x BLOCK_N > 64: two consumer warpgroups of 128 rows and a
 * producer warpgroup, setmaxnreg) on the fake driver, which applies the cubin's launch limits as
 * a GPU does (its launch bounds, EIATTR_MAX_THREADS, and its registers, EIATTR_REGCOUNT, x the
 * block's warps within 65536): the plan launches the GEMM with 384 threads, which its cubin
 * (168 registers, bounds 384) allows. The same kernel launched with 416 threads (two warpgroups
 * of 64 rows per 128 and a producer warp: the narrow form's count for 256 rows would be 544)
 * fails with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: the check sees a host/kernel mismatch. */
static void t_act16_wide(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_variant v;
    REQUIRE(nvfp4jit_variant_parse("sm90a:256x96x128:s4:swap:act16", &v) == NVFP4JIT_OK);
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &v, &p) == NVFP4JIT_OK);
    long launches = stats().launches;
    CHECKF(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK, "%s", nvfp4jit_last_error(ctx));
    fakecuda_stats a = stats();
    CHECK(a.launches == launches + 2 && !strcmp(a.func, NJ_KERNEL_NAME));
    CHECKF(a.block[0] == 384 && a.block[1] == 1 && a.grid[0] == 1 * 1 + 2 * 1,
           "block %u, grid %u", a.block[0], a.grid[0]); /* tiles: 1 (group 0) + 2 (group 2) */
    nvfp4jit_kernel *k = NULL;
    REQUIRE(nvfp4jit_compile(ctx, &v, &k) == NVFP4JIT_OK);
    const void *cubin;
    size_t cn;
    REQUIRE(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &cubin, &cn) == NVFP4JIT_OK);
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    REQUIRE(fk.api->cuModuleLoadData(&mod, cubin) == CUDA_SUCCESS);
    REQUIRE(fk.api->cuModuleGetFunction(&fn, mod, NJ_KERNEL_NAME) == CUDA_SUCCESS);
    REQUIRE(fk.api->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       100000) == CUDA_SUCCESS);
    unsigned char blob[8] = {0}, moe[sizeof(nj_moe_args)] = {0};
    void *args[] = {blob, moe};
    CUresult r416 = fk.api->cuLaunchKernel(fn, 1, 1, 1, 416, 1, 1, 1024, NULL, args, NULL);
    CUresult r384 = fk.api->cuLaunchKernel(fn, 1, 1, 1, 384, 1, 1, 1024, NULL, args, NULL);
    printf("  %s: 384 threads: %d, 416 threads: %d\n", NJ_KERNEL_NAME, (int)r384, (int)r416);
    CHECK(r416 == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES && r384 == CUDA_SUCCESS);
    CHECK(fk.api->cuModuleUnload(mod) == CUDA_SUCCESS);
    nvfp4jit_plan_destroy(p);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* ---- MoE ---- */
typedef struct moe_bufs {
    uint64_t b, sfb, a, sfa, c, off, sfoff;
} moe_bufs;

static int moe_alloc(moe_bufs *m, int E, int64_t n, int64_t k, int64_t rows) {
    m->b = dalloc((size_t)(E * n * k / 2));
    m->sfb = dalloc((size_t)E * nvfp4jit_scale_bytes(n, k));
    m->a = dalloc((size_t)(rows * k / 2));
    m->sfa = dalloc((size_t)(nvfp4jit_moe_scale_rows(rows, E) * k / 16));
    m->c = dalloc((size_t)(rows * n * 2));
    m->off = dalloc(4 * (size_t)(E + 1));
    m->sfoff = dalloc(4 * (size_t)E);
    return m->b && m->sfb && m->a && m->sfa && m->c && m->off && m->sfoff ? 0 : -1;
}

static void moe_free(moe_bufs *m) {
    uint64_t *p = &m->b;
    for (int i = 0; i < 7; i++)
        if (p[i]) fk.api->cuMemFree((CUdeviceptr)p[i]);
}

static void t_moe(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    const int E = 4;
    moe_bufs mb;
    REQUIRE(moe_alloc(&mb, E, 64, 128, 256) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_weights_desc d = {E, 64, 128, mb.b, mb.sfb, NULL, NULL};
    nvfp4jit_weights *w = NULL;
    REQUIRE(nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM90A, &d, &w) == NVFP4JIT_OK);
    nvfp4jit_variant v = ACT16P;
    v.strategy = NVFP4JIT_STRATEGY_ACT16; /* one CTA per tile, the worst case's grid */
    nvfp4jit_moe_plan *mp = NULL;
    long pdl0 = stats().pdl_edges;
    REQUIRE(nvfp4jit_moe_plan_create(w, 256, &v, &mp) == NVFP4JIT_OK);
    CHECK(stats().pdl_edges == pdl0 + 1); /* prep -> GEMM: a programmatic edge */
    nvfp4jit_moe_info info;
    REQUIRE(nvfp4jit_moe_plan_info(mp, &info) == NVFP4JIT_OK);
    CHECK(info.variant.strategy == NVFP4JIT_STRATEGY_ACT16 && info.choice == NVFP4JIT_CHOICE_FORCED);
    /* 64-row weight tiles: 1 x (256/32 + 4) tiles at most; prep: CTA 0 + 256 x 8 items / 1024 */
    CHECKF(info.grid == 12 && info.prep_grid == 1 + 2, "grid %u, prep grid %u", info.grid,
           info.prep_grid);
    size_t table = sm90_moe_table_bytes(&info.variant, E, 64, 256);
    CHECK(table == 16 * 13);
    CHECK(info.device_bytes == 256 * 128 * 2 + sm90_moe_blob_size(E) + 8 + table);
    CHECK(info.sms == 132); /* the fake device's count, looked up at plan creation */
    nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
    fakecuda_stats a = stats();
    long setp = fk.calls("cuGraphExecKernelNodeSetParams"), plain = fk.calls("cuLaunchKernel");
    REQUIRE(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK);
    fakecuda_stats b = stats();
    /* a MoE call: one graph launch of the prep and GEMM nodes, nothing else (no copy, no
     * allocation, no wait, no plain launch) */
    CHECK(b.graph_launches == a.graph_launches + 1 && b.launches == a.launches + 2);
    CHECK(b.coop_launches == a.coop_launches && fk.calls("cuLaunchKernel") == plain);
    CHECK(b.syncs == a.syncs && b.htod_copies == a.htod_copies && b.memsets == a.memsets &&
          b.live_dev_allocs == a.live_dev_allocs);
    CHECK(!strcmp(b.func, NJ_KERNEL_NAME) && b.grid[0] == info.grid);
    /* the prep node carries the call; the GEMM node only the plan's tile table */
    CHECK(seen.prep.a == mb.a && seen.prep.offsets == mb.off && seen.prep.c == mb.c &&
          seen.prep.max_rows == 256 && seen.prep.tiles != 0);
    CHECK(seen.moe.a == 0 && seen.moe.offsets == 0 && seen.moe.c == 0 &&
          seen.moe.tiles == seen.prep.tiles && seen.moe.max_rows == 256);
    CHECK(fk.calls("cuGraphExecKernelNodeSetParams") == setp + 1);
    /* the same call again: the instantiated node already holds it */
    REQUIRE(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK);
    CHECK(fk.calls("cuGraphExecKernelNodeSetParams") == setp + 1);
    /* another C: the node is updated, and the replay sees it */
    nvfp4jit_moe_call call2 = call;
    call2.c = mb.c + 64 * 2;
    REQUIRE(nvfp4jit_moe_run(mp, &call2, NULL) == NVFP4JIT_OK);
    CHECK(fk.calls("cuGraphExecKernelNodeSetParams") == setp + 2 && seen.prep.c == call2.c);
    /* the blob: every expert's weight map, the token map over the whole workspace */
    const unsigned char *blob = (const unsigned char *)(uintptr_t)seen.blob;
    uint64_t maps_off;
    memcpy(&maps_off, blob + 16, 8);
    for (int e = 0; e < E; e++)
        CHECK(tmap(blob, maps_off, (size_t)e, 1)->addr == mb.b + (uint64_t)e * 64 * 64);
    CHECK(tmap(blob, maps_off, (size_t)E, 0)->dims[1] == 256);
    /* a clean error word, then one the kernel would have written */
    int ex = 7;
    CHECK(nvfp4jit_moe_plan_check(mp, &ex) == NVFP4JIT_OK && ex == -1);
    int32_t planted[2] = {1 | 4, 2};
    memcpy((void *)(uintptr_t)seen.prep.status, planted, sizeof planted);
    CHECK(nvfp4jit_moe_plan_check(mp, &ex) == NVFP4JIT_ERR_INVALID_PROBLEM && ex == 2);
    const char *msg = nvfp4jit_last_error(ctx);
    CHECKF(strstr(msg, "expert 2") && strstr(msg, "negative or decreasing") &&
               strstr(msg, "scale offset") && !strstr(msg, "past max_rows"),
           "%s", msg);
    CHECK(nvfp4jit_moe_plan_check(mp, &ex) == NVFP4JIT_OK); /* cleared */
    /* a failed update: an error with its name, and the next call updates the node again */
    fk.fail("cuGraphExecKernelNodeSetParams:1");
    CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_ERR_CUDA);
    CHECK(strstr(nvfp4jit_last_error(ctx), "cuGraphExecKernelNodeSetParams") != NULL);
    fk.fail(NULL);
    setp = fk.calls("cuGraphExecKernelNodeSetParams");
    CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK && seen.prep.c == call.c);
    CHECK(fk.calls("cuGraphExecKernelNodeSetParams") == setp + 1);
    /* a failed graph launch is an error with its name */
    fk.fail("cuGraphLaunch:1");
    CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_ERR_CUDA);
    CHECK(strstr(nvfp4jit_last_error(ctx), "cuGraphLaunch") != NULL);
    fk.fail(NULL);
    /* a capture records the two kernels as plain launches with this call's pointers (not the
     * plan's graph, whose prep node later calls change) */
    const drv_api *api = fk.api;
    CUstream st;
    REQUIRE(api->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    a = stats();
    REQUIRE(api->cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    CHECK(nvfp4jit_moe_run(mp, &call2, st) == NVFP4JIT_OK);
    CUgraph g = NULL;
    CHECK(api->cuStreamEndCapture(st, &g) == CUDA_SUCCESS && g);
    b = stats();
    CHECK(b.captured_nodes == a.captured_nodes + 2 && b.graph_launches == a.graph_launches &&
          b.launches == a.launches && b.pdl_launches == a.pdl_launches + 1);
    if (g) api->cuGraphDestroy(g);
    api->cuStreamDestroy(st);
    call.a += 8;
    CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    nvfp4jit_moe_plan_destroy(mp);
    /* a driver refusing the programmatic edge: an ordinary one; refusing both: an error */
    fk.fail("cuGraphAddDependencies:1");
    pdl0 = stats().pdl_edges;
    CHECK(nvfp4jit_moe_plan_create(w, 256, &v, &mp) == NVFP4JIT_OK && stats().pdl_edges == pdl0);
    fk.fail(NULL);
    nvfp4jit_moe_plan_destroy(mp);
    mp = NULL;
    fk.fail("cuGraphAddDependencies:1+");
    CHECK(nvfp4jit_moe_plan_create(w, 256, &v, &mp) == NVFP4JIT_ERR_CUDA && !mp);
    CHECK(strstr(nvfp4jit_last_error(ctx), "cuGraphAddDependencies (MoE)") != NULL);
    fk.fail(NULL);
    /* act16p: a persistent grid, the CTAs that fit on the device, at most the worst case */
    REQUIRE(nvfp4jit_moe_plan_create(w, 1 << 16, &ACT16P, &mp) == NVFP4JIT_OK);
    nvfp4jit_moe_plan_info(mp, &info);
    CHECKF(info.variant.strategy == NVFP4JIT_STRATEGY_ACT16P && info.grid % 132 == 0 &&
               info.grid < sm90_moe_tiles_bound(&info.variant, E, 64, 1 << 16),
           "grid %u", info.grid);
    CHECK(nvfp4jit_moe_run(mp, &call2, NULL) == NVFP4JIT_OK && stats().grid[0] == info.grid);
    nvfp4jit_moe_plan_destroy(mp);
    nvfp4jit_weights_destroy(w);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    moe_free(&mb);
    nvfp4jit_ctx_destroy(ctx);
}


/* sm_100a MoE on the fake. At cc 9.0 (as on the H200): compiled-only plan, run refused with
 * NVFP4JIT_ERR_ARCH_MISMATCH. At cc 10.0 (set in-process, put back to 9.0): the host half
 * that no machine here runs for real. The plan builds its blob (every expert's
 * weight map and scale pointer) and error word once and loads the MoE entry; a run is one
 * ordinary launch of nvfp4jit_grouped_moe over the worst-case grid with (blob, MoeArgs, token
 * map) and nothing else (no copy, allocation or wait); the token map covers the call's
 * [max_rows, K] tokens; the error word decodes as sm_90a's. The kernel is not executed (the
 * emu area runs it). */
static void t_moe_sm100(void) {
    SETUP();
    if (!fk.set_cc) SKIP("skipped: the fake has no fakecuda_set_cc");
    const int E = 4;
    moe_bufs mb;
    REQUIRE(moe_alloc(&mb, E, 64, 128, 256) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_weights_desc d = {E, 64, 128, mb.b, mb.sfb, NULL, NULL};
    nvfp4jit_variant v = {NVFP4JIT_ARCH_SM100A, 128, 64, 128, 2, 0, 0};
    {
        /* at cc 9.0 (an H200): the plan is compiled only, its run refused as the grouped
         * call's, nothing allocated or launched */
        nvfp4jit_ctx *c9 = new_ctx();
        REQUIRE(c9);
        nvfp4jit_weights *w9 = NULL;
        nvfp4jit_moe_plan *p9 = NULL;
        REQUIRE(nvfp4jit_weights_create(c9, NVFP4JIT_ARCH_SM100A, &d, &w9) == NVFP4JIT_OK);
        REQUIRE(nvfp4jit_moe_plan_create(w9, 256, &v, &p9) == NVFP4JIT_OK);
        nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
        long launches = stats().launches;
        CHECK(nvfp4jit_moe_run(p9, &call, NULL) == NVFP4JIT_ERR_ARCH_MISMATCH);
        CHECKF(strstr(nvfp4jit_last_error(c9), "compute capability 9.0") != NULL, "%s",
               nvfp4jit_last_error(c9));
        CHECK(stats().launches == launches && stats().live_dev_allocs == base.live_dev_allocs);
        nvfp4jit_moe_info i9;
        nvfp4jit_moe_plan_info(p9, &i9);
        CHECK(i9.device_bytes == 0 && i9.grid == 6);
        int ex = 0;
        CHECK(nvfp4jit_moe_plan_check(p9, &ex) == NVFP4JIT_OK && ex == -1);
        nvfp4jit_moe_plan_destroy(p9);
        nvfp4jit_weights_destroy(w9);
        nvfp4jit_ctx_destroy(c9);
    }
    fk.set_cc(100);
    nvfp4jit_ctx *ctx = new_ctx();
    nvfp4jit_weights *w = NULL;
    nvfp4jit_moe_plan *mp = NULL;
    CHECK(ctx && nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM100A, &d, &w) == NVFP4JIT_OK);
    nvfp4jit_status s = w ? nvfp4jit_moe_plan_create(w, 256, &v, &mp) : NVFP4JIT_ERR_INVALID_ARG;
    CHECKF(s == NVFP4JIT_OK, "%s", ctx ? nvfp4jit_last_error(ctx) : "");
    if (mp) {
        nvfp4jit_moe_info info;
        nvfp4jit_moe_plan_info(mp, &info);
        CHECK(info.choice == NVFP4JIT_CHOICE_FORCED && info.prep_grid == 0);
        CHECKF(info.grid == 1 * (2 + 4), "grid %u", info.grid); /* 1 N tile x (2 + E) */
        CHECK(info.device_bytes == sm100_moe_blob_size(E) + 8);
        CHECK(stats().live_dev_allocs == base.live_dev_allocs + 2); /* blob + error word */
        nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
        fakecuda_stats a = stats();
        memset(&seen, 0, sizeof seen);
        CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK);
        fakecuda_stats b = stats();
        CHECK(b.launches == a.launches + 1 && b.coop_launches == a.coop_launches);
        CHECKF(!strcmp(b.func, NJ_KERNEL_NAME "_moe") && b.grid[0] == info.grid &&
                   b.block[0] == 192 && b.smem == fam_sm100a.dyn_smem(&v),
               "%s grid %u block %u smem %u", b.func, b.grid[0], b.block[0], b.smem);
        CHECKF(b.params == 3 && b.params_bytes == 8 + sizeof(nj_moe_args) + 128,
               "params %d (%zu bytes)", b.params, b.params_bytes);
        CHECK(b.syncs == a.syncs && b.htod_copies == a.htod_copies && b.memsets == a.memsets &&
              b.live_dev_allocs == a.live_dev_allocs);
        CHECK(seen.moe.a == mb.a && seen.moe.sfa == mb.sfa && seen.moe.c == mb.c &&
              seen.moe.offsets == mb.off && seen.moe.sf_offsets == mb.sfoff &&
              seen.moe.status != 0 && seen.moe.max_rows == 256 &&
              seen.moe.sf_rows == nvfp4jit_moe_scale_rows(256, E));
        const fakecuda_tmap *tok = (const fakecuda_tmap *)seen.amap;
        CHECK(tok->magic == FAKECUDA_TMAP_MAGIC && tok->addr == mb.a &&
              tok->type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B);
        CHECK(tok->dims[0] == 128 && tok->dims[1] == 256 && tok->strides[0] == 64 &&
              tok->box[0] == 128 && tok->box[1] == 128 && tok->swizzle == CU_TENSOR_MAP_SWIZZLE_64B);
        /* the blob: header {0, E, K}; per expert its scale pointer and weight map */
        const unsigned char *blob = (const unsigned char *)(uintptr_t)seen.blob;
        if (blob) {
            int32_t h[4];
            uint64_t maps_off;
            memcpy(h, blob, sizeof h);
            memcpy(&maps_off, blob + 16, 8);
            CHECK(h[0] == 0 && h[1] == E && h[2] == 128);
            for (int e = 0; e < E; e++) {
                uint64_t sfb;
                memcpy(&sfb, blob + 64 + 32 * e + 16, 8);
                CHECK(sfb == mb.sfb + (uint64_t)e * nvfp4jit_scale_bytes(64, 128));
                const fakecuda_tmap *bm = (const fakecuda_tmap *)(blob + maps_off + 256 * (size_t)e + 128);
                CHECK(bm->magic == FAKECUDA_TMAP_MAGIC && bm->addr == mb.b + (uint64_t)e * 64 * 64 &&
                      bm->dims[1] == 64 && bm->box[1] == 64);
            }
        }
        /* the error word: clean, then planted as the kernel writes it */
        int ex = 7;
        CHECK(nvfp4jit_moe_plan_check(mp, &ex) == NVFP4JIT_OK && ex == -1);
        int32_t planted[2] = {2, 3};
        if (seen.moe.status) memcpy((void *)(uintptr_t)seen.moe.status, planted, sizeof planted);
        CHECK(nvfp4jit_moe_plan_check(mp, &ex) == NVFP4JIT_ERR_INVALID_PROBLEM && ex == 3);
        CHECK(strstr(nvfp4jit_last_error(ctx), "past max_rows") != NULL);
        /* a launch failure is an error with its name; a misaligned pointer is refused first */
        fk.fail("cuLaunchKernel:1");
        CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_ERR_CUDA);
        fk.fail(NULL);
        call.sfa += 8;
        CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_ERR_INVALID_ARG);
        nvfp4jit_moe_plan_destroy(mp);
    }
    nvfp4jit_weights_destroy(w);
    nvfp4jit_ctx_destroy(ctx);
    fk.set_cc(90);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    moe_free(&mb);
}

/* A fake-format tensor map (what the fake's cuTensorMapEncodeTiled wrote) re-encoded for the
 * emulator, same parameters. @return 0 or -1. */
static int fk_map_to_emu(const void *fake, void *out) {
    fakecuda_tmap f;
    memcpy(&f, fake, sizeof f);
    if (f.magic != FAKECUDA_TMAP_MAGIC || f.rank != 2) return -1;
    cuuint64_t dims[2] = {f.dims[0], f.dims[1]}, str[1] = {f.strides[0]};
    cuuint32_t box[2] = {f.box[0], f.box[1]}, es[2] = {f.estrides[0], f.estrides[1]};
    return emu_encode_tiled((CUtensorMap *)out, (CUtensorMapDataType)f.type, 2,
                            (void *)(uintptr_t)f.addr, dims, str, box, es,
                            (CUtensorMapInterleave)f.interleave, (CUtensorMapSwizzle)f.swizzle,
                            (CUtensorMapL2promotion)f.l2, (CUtensorMapFloatOOBfill)f.oob) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

/* sm_100a MoE end to end without a B200: the library's own plan and run on the fake driver at
 * cc 10.0 (device memory is host memory), and the launch the run made - its grid, block,
 * shared memory and parameters (the plan's blob, the MoeArgs, the token map), maps re-encoded
 * for the emulator - executed by the CPU emulator on the variant's EMU render; every expert's
 * rows against the CPU reference, rows no expert owns untouched, a clean error word. */
static void t_moe_sm100_emu(void) {
    SETUP();
    if (!fk.set_cc) SKIP("skipped: the fake has no fakecuda_set_cc");
    static const char *spec = "sm100a:128x64x256:s3";
    static const int counts[5] = {0, 130, 1, 0, 77};
    const int E = 5;
    const int64_t N = 136, K = 320, R = 260;
    char err[2048], dir[4096];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    emu_kernel ek;
    memset(&ek, 0, sizeof ek);
    uint32_t sec = 0, sb = 0;
    int built = emu_build_moe_variant(spec, dir, &ek, &sec, &sb, err, sizeof err) == 0;
    CHECKF(built && ek.fn_moe && sec, "%s", built ? "no MoE entry" : err);
    if (!built) {
        tu_rmtree(dir);
        return;
    }
    int64_t sf_rows = nvfp4jit_moe_scale_rows(R, E);
    size_t sfb_bytes = nvfp4jit_scale_bytes(N, K);
    moe_bufs mb;
    memset(&mb, 0, sizeof mb);
    mb.b = dalloc((size_t)(E * N * K / 2));
    mb.sfb = dalloc((size_t)E * sfb_bytes);
    mb.a = dalloc((size_t)(R * K / 2));
    mb.sfa = dalloc((size_t)(sf_rows * K / 16));
    mb.c = dalloc((size_t)(R * N * 2));
    mb.off = dalloc(4 * (size_t)(E + 1));
    mb.sfoff = dalloc(4 * (size_t)E);
    REQUIRE(mb.b && mb.sfb && mb.a && mb.sfa && mb.c && mb.off && mb.sfoff);
    uint8_t *a = (uint8_t *)(uintptr_t)mb.a, *sfa = (uint8_t *)(uintptr_t)mb.sfa;
    uint8_t *b = (uint8_t *)(uintptr_t)mb.b, *sfb = (uint8_t *)(uintptr_t)mb.sfb;
    uint16_t *c = (uint16_t *)(uintptr_t)mb.c;
    int *off = (int *)(uintptr_t)mb.off, *sfo = (int *)(uintptr_t)mb.sfoff;
    ref_rng r;
    ref_rng_seed(&r, 0x5eed100);
    int cap = -1;
    while ((64LL << (2 * (-1 - cap))) < K) cap--;
    ref_fill_packed(&r, a, R, K);
    memset(sfa, 0xFF, (size_t)(sf_rows * K / 16));
    memset(c, 0xFF, (size_t)(R * N * 2));
    int rows = 0, srow = 0;
    for (int e = 0; e < E; e++) {
        ref_fill_packed(&r, b + (size_t)e * (size_t)(N * K / 2), N, K);
        ref_fill_scales(&r, sfb + (size_t)e * sfb_bytes, N, K, e % 2 ? 8 : cap);
        off[e] = rows;
        sfo[e] = srow;
        if (counts[e])
            ref_fill_scales(&r, sfa + (size_t)srow * (size_t)(K / 16), counts[e], K, e % 2 ? cap : 8);
        rows += counts[e];
        srow += (counts[e] + 127) / 128 * 128;
    }
    off[E] = rows;
    fk.set_cc(100);
    nvfp4jit_ctx *ctx = new_ctx();
    nvfp4jit_weights *w = NULL;
    nvfp4jit_moe_plan *mp = NULL;
    nvfp4jit_variant v;
    nvfp4jit_variant_parse(spec, &v);
    nvfp4jit_weights_desc d = {E, N, K, mb.b, mb.sfb, NULL, NULL};
    CHECK(ctx && nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM100A, &d, &w) == NVFP4JIT_OK);
    if (w) CHECK(nvfp4jit_moe_plan_create(w, R, &v, &mp) == NVFP4JIT_OK);
    nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
    memset(&seen, 0, sizeof seen);
    if (mp) CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK);
    fakecuda_stats st = stats();
    size_t bs = sm100_moe_blob_size(E);
    unsigned char *eb = aligned_alloc(64, (bs + 63) / 64 * 64);
    CUtensorMap am;
    int ok = mp && seen.blob && eb && !strcmp(st.func, NJ_KERNEL_NAME "_moe");
    CHECK(ok);
    if (ok) {
        /* the blob as the plan uploaded it, its weight maps re-encoded for the emulator */
        memcpy(eb, (const void *)(uintptr_t)seen.blob, bs);
        uint64_t maps_off;
        memcpy(&maps_off, eb + 16, 8);
        for (int e = 0; e < E && ok; e++) {
            unsigned char *slot = eb + maps_off + 256 * (size_t)e + 128;
            unsigned char tmp[128];
            memcpy(tmp, slot, sizeof tmp);
            ok = fk_map_to_emu(tmp, slot) == 0;
        }
        ok = ok && fk_map_to_emu(seen.amap, &am) == 0;
        CHECK(ok);
    }
    if (ok) {
        emu_range rg[4] = {{a, (size_t)(R * K / 2)},
                           {sfa, (size_t)(sf_rows * K / 16)},
                           {b, (size_t)(E * N * K / 2)},
                           {sfb, (size_t)E * sfb_bytes}};
        emu_launch l = {st.grid[0], st.block[0], st.smem, sec, sb, 1, rg, 4, 0x1234567, &seen.moe, &am};
        int rc = emu_run(&ek, &l, eb, NULL, err, sizeof err);
        CHECKF(rc == 0, "emulator: %s", err);
        if (rc == 0) {
            int64_t bad = 0;
            for (int e = 0; e < E; e++) {
                int64_t cnt = counts[e];
                if (!cnt) continue;
                const uint8_t *ea = a + (size_t)off[e] * (size_t)(K / 2);
                const uint8_t *es = sfa + (size_t)sfo[e] * (size_t)(K / 16);
                const uint8_t *wb = b + (size_t)e * (size_t)(N * K / 2), *ws = sfb + (size_t)e * sfb_bytes;
                uint16_t *ref = malloc((size_t)(cnt * N) * 2);
                double *abs_sum = malloc((size_t)(cnt * N) * sizeof *abs_sum);
                REQUIRE(ref && abs_sum);
                ref_gemm(ea, es, wb, ws, cnt, N, K, ref, 1);
                ref_gemm_abs(ea, es, wb, ws, cnt, N, K, abs_sum);
                for (int64_t i = 0; i < cnt * N; i++) {
                    double o = ref_f16_to_double(c[(size_t)off[e] * (size_t)N + (size_t)i]);
                    double q = ref_f16_to_double(ref[i]);
                    int good = !isnan(o) && !isnan(q) &&
                               (o == q || (!isinf(o) && !isinf(q) &&
                                           fabs(o - q) <= 1e-3 + 1e-3 * fabs(q) +
                                                              ((double)K / 16 + 4) / 16777216.0 * abs_sum[i]));
                    bad += !good;
                }
                free(ref);
                free(abs_sum);
            }
            for (int64_t i = (int64_t)rows * N; i < R * N; i++) bad += c[i] != 0xFFFF;
            const int32_t *status = (const int32_t *)(uintptr_t)seen.moe.status;
            CHECKF(bad == 0, "%lld elements wrong or written outside the experts' rows", (long long)bad);
            CHECKF(status[0] == 0 && status[1] == INT_MAX, "error word {%d, %d}", status[0], status[1]);
            if (!bad)
                printf("  %s through the library on the fake cc 10.0 device, launch run on the "
                       "emulator: %u CTAs, %d experts, %d rows right\n", spec, st.grid[0], E, rows);
        }
    }
    free(eb);
    nvfp4jit_moe_plan_destroy(mp);
    nvfp4jit_weights_destroy(w);
    nvfp4jit_ctx_destroy(ctx);
    fk.set_cc(90);
    moe_free(&mb);
    emu_kernel_close(&ek);
    tu_rmtree(dir);
}

/* ---- the tuning lookup: an entry for the fake device's key is used by plan_create ---- */
static void t_tune_lookup(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    nvfp4jit_group g[3];
    for (int i = 0; i < 3; i++)
        g[i] = (nvfp4jit_group){SHAPES[i][0], SHAPES[i][1], SHAPES[i][2], 0, 0, 0, 0, 0};
    tdb_entry e;
    memset(&e, 0, sizeof e);
    char sig[TDB_SIG_MAX];
    REQUIRE(tdb_signature(NVFP4JIT_ARCH_SM90A, g, 3, sig, sizeof sig) == 0);
    REQUIRE(tdb_device_key(sig, &e.key) == 0);
    CHECK(!strcmp(e.key.device, "fakecuda sm_90") && e.key.sms == 132 && e.key.driver == 13000);
    e.v = DUAL;
    e.us = 12.5;
    char err[256] = "";
    REQUIRE(tdb_store(ctx, nvfp4jit_tune_db_path(ctx), &e, err, sizeof err) == 0);
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 3, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_choice ch;
    const nvfp4jit_variant *v = nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_TUNED && !memcmp(v, &DUAL, sizeof DUAL));
    nvfp4jit_plan_destroy(p);
    /* other M buckets: another signature, the heuristic */
    g[0].m = 100;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 3, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_HEURISTIC);
    nvfp4jit_plan_destroy(p);
    /* the driver's name lookup failing: the lookup is skipped silently */
    g[0].m = 5;
    fk.fail("cuDeviceGetName:1");
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 3, NULL, &p) == NVFP4JIT_OK);
    nvfp4jit_plan_variant(p, &ch);
    CHECK(ch == NVFP4JIT_CHOICE_HEURISTIC);
    fk.fail(NULL);
    nvfp4jit_plan_destroy(p);
    nvfp4jit_ctx_destroy(ctx);
}

/* ---- the GPU reference: validation, then one launch per non-empty group ---- */
static void t_reference_run(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    CHECK(nvfp4jit_reference_run(NULL, s.g, 3, NULL) == NVFP4JIT_ERR_INVALID_ARG);
    gset bad = s;
    bad.g[2].k = 100;
    CHECK(nvfp4jit_reference_run(ctx, bad.g, 3, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "group 2") != NULL);
    bad = s;
    bad.g[0].c += 2;
    CHECK(nvfp4jit_reference_run(ctx, bad.g, 3, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    uint64_t sums[3] = {dalloc(5 * 64 * 4), 0, dalloc(130 * 128 * 4)};
    uint64_t badsums[3] = {sums[0] + 2, 0, sums[2]};
    CHECK(nvfp4jit_reference_run_ex(ctx, s.g, 3, badsums, NULL) == NVFP4JIT_ERR_INVALID_PROBLEM);
    CHECK(strstr(nvfp4jit_last_error(ctx), "group 0: sum_abs") != NULL);
    long l0 = stats().launches;
    REQUIRE(nvfp4jit_reference_run_ex(ctx, s.g, 3, sums, NULL) == NVFP4JIT_OK);
    fakecuda_stats a = stats();
    CHECK(a.launches == l0 + 2 && a.grid[0] == 128 / 16 && a.grid[1] == (130 + 15) / 16);
    CHECK(a.block[0] == 16 && a.block[1] == 16);
    CHECKF(a.params == 9 && a.params_bytes == 6 * 8 + 3 * 4, "params %d (%zu bytes)", a.params,
           a.params_bytes);
    fk.fail("cuLaunchKernel:2");
    CHECK(nvfp4jit_reference_run(ctx, s.g, 3, NULL) == NVFP4JIT_ERR_CUDA);
    CHECKF(strstr(nvfp4jit_last_error(ctx), "reference kernel, group 2") &&
               strstr(nvfp4jit_last_error(ctx), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
           "%s", nvfp4jit_last_error(ctx));
    fk.fail(NULL);
    CHECK(nvfp4jit_reference_run(ctx, s.g, 3, NULL) == NVFP4JIT_OK);
    fk.api->cuMemFree(sums[0]);
    fk.api->cuMemFree(sums[2]);
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* ---- injected failures ---- */

/* Fail the n-th call of `api` during f(); @return the status; checks the message names the
 * CUresult and `what`, and that nothing leaked when `leakfree`. */
typedef nvfp4jit_status (*step_fn)(void *);

static void expect_fail(const char *spec, step_fn f, void *u, nvfp4jit_status want,
                        const char *name, const char *what, nvfp4jit_ctx *ctx) {
    fakecuda_stats a = stats();
    REQUIRE(fk.fail(spec) == 0);
    nvfp4jit_status s = f(u);
    fk.fail(NULL);
    const char *msg = nvfp4jit_last_error(ctx);
    CHECKF(s == want, "%s: got %s (%s)", spec, nvfp4jit_status_string(s), msg);
    CHECKF(strstr(msg, name) != NULL, "%s: message '%s' lacks %s", spec, msg, name);
    CHECKF(strstr(msg, what) != NULL, "%s: message '%s' lacks '%s'", spec, msg, what);
    fakecuda_stats b = stats();
    CHECKF(b.live_dev_allocs <= a.live_dev_allocs + 2, "%s: device allocations %ld -> %ld", spec,
           a.live_dev_allocs, b.live_dev_allocs);
}

typedef struct run_args {
    nvfp4jit_plan *p;
    gset *s;
    nvfp4jit_ctx *ctx;
    nvfp4jit_weights *w;
    nvfp4jit_moe_plan *mp;
    const nvfp4jit_variant *v;
} run_args;

static nvfp4jit_status do_run(void *u) {
    run_args *r = u;
    return nvfp4jit_plan_run(r->p, r->s->g, r->s->n, NULL);
}

static nvfp4jit_status do_moe_create(void *u) {
    run_args *r = u;
    nvfp4jit_status s = nvfp4jit_moe_plan_create(r->w, 256, r->v, &r->mp);
    if (s != NVFP4JIT_OK && r->mp) {
        fprintf(stderr, "  moe_plan_create failed but set *out\n");
        tu_failures++;
    }
    return s;
}

static void t_faults_plan(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &ACT16P, &p) == NVFP4JIT_OK);
    run_args r = {p, &s, ctx, NULL, NULL, NULL};
    /* the first run: module load, workspace, arena, tensor maps, upload, launches */
    expect_fail("cuModuleLoadData:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_INVALID_IMAGE",
                "cuModuleLoadData", ctx);
    expect_fail("cuMemAlloc:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_OUT_OF_MEMORY",
                "cuMemAlloc (plan workspace)", ctx);
    expect_fail("cuMemAllocHost:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_OUT_OF_MEMORY",
                "cuMemAllocHost (plan blobs)", ctx);
    expect_fail("cuMemAlloc:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_OUT_OF_MEMORY",
                "cuMemAlloc (plan blobs)", ctx);
    expect_fail("cuTensorMapEncodeTiled:2", do_run, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_INVALID_VALUE", "group 0: cuTensorMapEncodeTiled (weights)", ctx);
    expect_fail("cuTensorMapEncodeTiled:6", do_run, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_INVALID_VALUE", "group 2: cuTensorMapEncodeTiled (weight scales)", ctx);
    expect_fail("cuMemcpyHtoDAsync:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuMemcpyHtoDAsync (plan blob)", ctx);
    expect_fail("cuLaunchKernel:1", do_run, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "cuLaunchKernel (prep)", ctx);
    /* the GEMM launch fails after the prep launch and the upload were queued: the slot's
     * event is recorded after them, so no later call rewrites the slot under them */
    long records = fk.calls("cuEventRecord");
    expect_fail("cuLaunchKernelEx:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuLaunchKernelEx", ctx);
    CHECK(fk.calls("cuEventRecord") == records + 1);
    expect_fail("cuEventRecord:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuEventRecord", ctx);
    expect_fail("cuStreamIsCapturing:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuStreamIsCapturing", ctx);
    /* the plan is still usable: a clean run, then the fast path fails and recovers */
    long l0 = stats().launches;
    CHECK(do_run(&r) == NVFP4JIT_OK && stats().launches == l0 + 2);
    expect_fail("cuLaunchKernelEx:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuLaunchKernelEx", ctx);
    CHECK(do_run(&r) == NVFP4JIT_OK);
    /* the workspace growing fails: the old one is gone, the next call makes a new one */
    gset s2 = s;
    s2.g[0].m = 64;
    r.s = &s2;
    expect_fail("cuMemAlloc:1", do_run, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_OUT_OF_MEMORY",
                "cuMemAlloc (plan workspace)", ctx);
    CHECK(do_run(&r) == NVFP4JIT_OK);
    r.s = &s;
    CHECK(do_run(&r) == NVFP4JIT_OK);
    nvfp4jit_plan_destroy(p);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    /* a fresh context: no driver, then no device, make plan_run fail cleanly */
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

static void t_faults_moe(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    const int E = 3;
    moe_bufs mb;
    REQUIRE(moe_alloc(&mb, E, 64, 128, 256) == 0);
    fakecuda_stats base = stats();
    nvfp4jit_weights_desc d = {E, 64, 128, mb.b, mb.sfb, NULL, NULL};
    nvfp4jit_weights *w = NULL;
    REQUIRE(nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM90A, &d, &w) == NVFP4JIT_OK);
    run_args r = {NULL, NULL, ctx, w, NULL, &ACT16P};
    static const char *const what[] = {"MoE token workspace", "MoE blob", "MoE error word",
                                       "MoE tile table"};
    for (int i = 0; i < 4; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "cuMemAlloc:%d", i + 1);
        expect_fail(spec, do_moe_create, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_OUT_OF_MEMORY",
                    what[i], ctx);
        fakecuda_stats e = stats();
        CHECK(same_live(&base, &e));
    }
    expect_fail("cuTensorMapEncodeTiled:4", do_moe_create, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_INVALID_VALUE", "group 1: cuTensorMapEncodeTiled (expert weight scales)",
                ctx);
    expect_fail("cuTensorMapEncodeTiled:7", do_moe_create, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_INVALID_VALUE", "fp16 tokens (all experts)", ctx);
    expect_fail("cuModuleLoadData:1", do_moe_create, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_INVALID_IMAGE", "cuModuleLoadData", ctx);
    expect_fail("cuMemcpyHtoD:2", do_moe_create, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuMemcpyHtoD (MoE blob)", ctx);
    expect_fail("cuOccupancyMaxActiveBlocksPerMultiprocessor:1", do_moe_create, &r,
                NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", ctx);
    expect_fail("cuGraphCreate:1", do_moe_create, &r, NVFP4JIT_ERR_CUDA, "CUDA_ERROR_UNKNOWN",
                "cuGraphCreate (MoE)", ctx);
    expect_fail("cuGraphAddKernelNode:2", do_moe_create, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_UNKNOWN", "cuGraphAddKernelNode (MoE GEMM)", ctx);
    expect_fail("cuGraphInstantiate:1", do_moe_create, &r, NVFP4JIT_ERR_CUDA,
                "CUDA_ERROR_UNKNOWN", "cuGraphInstantiate (MoE)", ctx);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    /* and then it works */
    REQUIRE(do_moe_create(&r) == NVFP4JIT_OK);
    nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
    CHECK(nvfp4jit_moe_run(r.mp, &call, NULL) == NVFP4JIT_OK);
    fk.fail("cuMemcpyDtoH:1");
    CHECK(nvfp4jit_moe_plan_check(r.mp, NULL) == NVFP4JIT_ERR_CUDA);
    CHECK(strstr(nvfp4jit_last_error(ctx), "reading the MoE error word") != NULL);
    fk.fail(NULL);
    CHECK(nvfp4jit_moe_plan_check(r.mp, NULL) == NVFP4JIT_OK);
    nvfp4jit_moe_plan_destroy(r.mp);
    nvfp4jit_weights_destroy(w);
    e = stats();
    CHECK(same_live(&base, &e));
    moe_free(&mb);
    nvfp4jit_ctx_destroy(ctx);
}

/* Every driver call a first plan run makes, failed in turn (the 1st to 3rd call of each):
 * an error status with a CUresult name in the message, no device leak after destroy, and a
 * later run that works. */
static void t_faults_sweep(void) {
    SETUP();
    static const char *const apis[] = {
        "cuModuleLoadData", "cuModuleGetFunction", "cuFuncSetAttribute", "cuMemAlloc",
        "cuMemAllocHost", "cuMemcpyHtoDAsync", "cuTensorMapEncodeTiled", "cuLaunchKernel",
        "cuEventCreate", "cuEventRecord", "cuEventQuery", "cuStreamIsCapturing",
        "cuStreamSynchronize", "cuCtxGetDevice", "cuDeviceGetAttribute", "cuCtxGetId"};
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++) {
        for (int n = 1; n <= 3; n++) {
            nvfp4jit_ctx *ctx = new_ctx();
            REQUIRE(ctx);
            fakecuda_stats base = stats();
            nvfp4jit_plan *p = NULL;
            REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &ACT16P, &p) ==
                    NVFP4JIT_OK);
            char spec[96];
            snprintf(spec, sizeof spec, "%s:%d", apis[i], n);
            REQUIRE(fk.fail(spec) == 0);
            gset s2 = s;
            nvfp4jit_status st = nvfp4jit_plan_run(p, s.g, 3, NULL);
            if (st == NVFP4JIT_OK) { /* not reached yet: new pointers, a bigger set */
                s2.g[0].m = 64;
                s2.g[0].c = s.g[2].c;
                st = nvfp4jit_plan_run(p, s2.g, 3, NULL);
            }
            fk.fail(NULL);
            const char *msg = nvfp4jit_last_error(ctx);
            CHECKF(st == NVFP4JIT_OK || st == NVFP4JIT_ERR_CUDA || st == NVFP4JIT_ERR_NO_DEVICE,
                   "%s: %s", spec, nvfp4jit_status_string(st));
            CHECKF(st == NVFP4JIT_OK || strstr(msg, "CUDA_ERROR_"), "%s: '%s'", spec, msg);
            CHECKF(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK, "%s: then %s", spec,
                   nvfp4jit_last_error(ctx));
            nvfp4jit_plan_destroy(p);
            fakecuda_stats e = stats();
            CHECKF(same_live(&base, &e), "%s: device %ld -> %ld, host %ld -> %ld, events %ld -> %ld",
                   spec, base.live_dev_allocs, e.live_dev_allocs, base.live_host_allocs,
                   e.live_host_allocs, base.live_events, e.live_events);
            nvfp4jit_ctx_destroy(ctx);
        }
    }
    gset_free(&s);
}

/* ---- nvfp4jit_tune end to end: compile, time with events, check (launches run on the CPU
 * through the hook), store; then plan_create takes the result ---- */
static void fill_random(gset *s, uint64_t seed) {
    ref_rng r;
    ref_rng_seed(&r, seed);
    for (size_t i = 0; i < s->n; i++) {
        nvfp4jit_group *g = &s->g[i];
        if (!g->m) continue;
        ref_fill_packed(&r, (uint8_t *)(uintptr_t)g->a, g->m, g->k);
        ref_fill_packed(&r, (uint8_t *)(uintptr_t)g->b, g->n, g->k);
        ref_fill_scales(&r, (uint8_t *)(uintptr_t)g->sfa, g->m, g->k, 2);
        ref_fill_scales(&r, (uint8_t *)(uintptr_t)g->sfb, g->n, g->k, 2);
    }
}

static void t_tune(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    static const int64_t shapes[2][3] = {{24, 64, 128}, {0, 64, 128}};
    gset s;
    REQUIRE(gset_make(&s, shapes, 2) == 0);
    fill_random(&s, 11);
    fakecuda_stats base = stats();
    nvfp4jit_tune_options o = {0};
    o.candidates = 3;
    o.iters = 10;
    o.warmup = 1;
    o.jobs = 2;
    nvfp4jit_tune_result res[3];
    size_t nres = 0;
    o.results = res;
    o.results_cap = 3;
    o.results_count = &nres;
    nvfp4jit_variant best;
    double us = 0;
    exec_gemm = 1;
    long memsets = stats().memsets;
    nvfp4jit_status st = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, s.g, 2, &o, &best, &us);
    exec_gemm = 0;
    CHECKF(st == NVFP4JIT_OK, "%s: %s", nvfp4jit_status_string(st), nvfp4jit_last_error(ctx));
    CHECK(nres == 3 && us > 0);
    /* every timed launch after an L2 flush (the fake's L2: 1 MiB, flushed by 2 MiB) */
    CHECKF(stats().memsets - memsets >= 3 * 10, "%ld memsets for 3 x 10 timed launches",
           stats().memsets - memsets);
    int winners = 0;
    for (size_t i = 0; i < nres && i < 3; i++) winners += res[i].winner;
    CHECK(winners == 1);
    fakecuda_stats e = stats();
    CHECK(same_live(&base, &e));
    nvfp4jit_plan *p = NULL;
    nvfp4jit_choice ch;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 2, NULL, &p) == NVFP4JIT_OK);
    CHECK(!memcmp(nvfp4jit_plan_variant(p, &ch), &best, sizeof best) &&
          ch == NVFP4JIT_CHOICE_TUNED);
    nvfp4jit_plan_destroy(p);
    /* a GPU that slows down during the run (each interval 0.01 % longer per event recorded
     * before it): timed in turn, in short blocks, the candidates (equally fast on the fake) get
     * medians within 0.6 % of each other; timed one after the other, ~1.3 % apart per place */
    o.no_store = 1;
    o.iters = 50;
    fk.set_drift(100);
    exec_gemm = 1;
    st = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, s.g, 2, &o, &best, &us);
    exec_gemm = 0;
    fk.set_drift(0);
    o.iters = 10;
    CHECKF(st == NVFP4JIT_OK && nres == 3, "%s: %s", nvfp4jit_status_string(st),
           nvfp4jit_last_error(ctx));
    for (size_t i = 1; i < nres && i < 3; i++)
        CHECKF(res[0].median_us > 0 && fabs(res[i].median_us / res[0].median_us - 1) < 0.006,
               "candidate %zu: %.3f us, the first %.3f us", i, res[i].median_us,
               res[0].median_us);
    /* launches that compute nothing: every candidate fails the check */
    memset((void *)(uintptr_t)s.g[0].c, 0xFF, 24 * 64 * 2); /* fp16 NaN */
    st = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, s.g, 2, &o, &best, &us);
    CHECKF(st == NVFP4JIT_ERR_INTERNAL, "%s: %s", nvfp4jit_status_string(st),
           nvfp4jit_last_error(ctx));
    /* driver failures: an error (or a candidate dropped), nothing left behind */
    static const char *const apis[] = {"cuStreamCreate", "cuEventCreate", "cuEventRecord",
                                       "cuEventElapsedTime", "cuStreamSynchronize",
                                       "cuMemcpyDtoH", "cuLaunchKernel", "cuMemAlloc"};
    exec_gemm = 1;
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++) {
        for (int n = 1; n <= 2; n++) {
            char spec[96];
            snprintf(spec, sizeof spec, "%s:%d", apis[i], n);
            REQUIRE(fk.fail(spec) == 0);
            st = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, s.g, 2, &o, &best, &us);
            fk.fail(NULL);
            const char *msg = nvfp4jit_last_error(ctx);
            CHECKF(st == NVFP4JIT_OK || (st == NVFP4JIT_ERR_CUDA && strstr(msg, "CUDA_ERROR_")),
                   "%s: %s: %s", spec, nvfp4jit_status_string(st), msg);
            e = stats();
            CHECKF(same_live(&base, &e), "%s: device %ld -> %ld, host %ld -> %ld, events %ld -> "
                   "%ld, streams %ld -> %ld", spec, base.live_dev_allocs, e.live_dev_allocs,
                   base.live_host_allocs, e.live_host_allocs, base.live_events, e.live_events,
                   base.live_streams, e.live_streams);
        }
    }
    exec_gemm = 0;
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* The tuner's act16sk twins (src/tuner.c tuner_add_sk) on 16x640x1024: on a device of 2 SMs the
 * ranked candidates are 64x16x64 act16 (10 tiles on 8 CTA slots: act16sk splits), so the
 * candidates after the 3 ranked ones are act16sk, each the twin (same tile, stages, swap) of a
 * ranked act16 or act16p candidate before it, in their order, none twice; each is timed and
 * checked like the others, and a winner is chosen. On 3 SMs the ranked candidates are act16
 * again (128x16x128), but act16sk would not split there (act16p's schedule): no twins. */
static void t_tune_sk(void) {
    SETUP();
    static const int64_t shapes[1][3] = {{16, 640, 1024}};
    gset s;
    REQUIRE(gset_make(&s, shapes, 1) == 0);
    fill_random(&s, 12);
    for (int round = 0; round < 2; round++) {
        const int sms = round ? 3 : 2;
        fk.set_sms(sms);
        nvfp4jit_ctx *ctx = new_ctx();
        REQUIRE(ctx);
        nvfp4jit_tune_options o = {0};
        o.candidates = 3;
        o.iters = 10;
        o.warmup = 1;
        o.jobs = 2;
        o.no_store = 1;
        nvfp4jit_tune_result res[16];
        size_t nres = 0;
        o.results = res;
        o.results_cap = 16;
        o.results_count = &nres;
        nvfp4jit_variant best;
        double us = 0;
        exec_gemm = 1;
        nvfp4jit_status st = nvfp4jit_tune(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, &o, &best, &us);
        exec_gemm = 0;
        CHECKF(st == NVFP4JIT_OK, "%d SMs: %s: %s", sms, nvfp4jit_status_string(st),
               nvfp4jit_last_error(ctx));
        size_t twins = 0, from = 0;
        for (size_t i = 0; i < nres && i < 16; i++) {
            const nvfp4jit_variant *v = &res[i].variant;
            char vn[96];
            nvfp4jit_variant_format(v, vn, sizeof vn);
            if (i < 3) {
                CHECKF(v->strategy != NVFP4JIT_STRATEGY_ACT16SK, "ranked candidate %zu is %s", i, vn);
                continue;
            }
            CHECKF(v->strategy == NVFP4JIT_STRATEGY_ACT16SK, "candidate %zu after the ranked: %s", i, vn);
            size_t j = from; /* its sibling: a later ranked act16/act16p candidate of its tile */
            for (; j < 3; j++) {
                const nvfp4jit_variant *r = &res[j].variant;
                if (r->block_m == v->block_m && r->block_n == v->block_n &&
                    r->block_k == v->block_k && r->stages == v->stages && r->swap_ab == v->swap_ab &&
                    (r->strategy == NVFP4JIT_STRATEGY_ACT16 || r->strategy == NVFP4JIT_STRATEGY_ACT16P))
                    break;
            }
            CHECKF(j < 3, "%s twins no ranked candidate after #%zu", vn, from);
            from = j + 1;
            for (size_t k = 3; k < i; k++)
                CHECKF(memcmp(&res[k].variant, v, sizeof *v) != 0, "%s twice", vn);
            CHECKF(res[i].median_us > 0, "%s was not timed", vn);
            twins++;
        }
        if (round == 0)
            CHECKF(twins >= 1 && nres == 3 + twins, "2 SMs: %zu candidates, %zu twins", nres, twins);
        else
            CHECKF(twins == 0 && nres == 3 && res[0].variant.strategy == NVFP4JIT_STRATEGY_ACT16,
                   "3 SMs: %zu candidates, %zu twins, the first of strategy %d", nres, twins,
                   (int)res[0].variant.strategy);
        nvfp4jit_ctx_destroy(ctx);
    }
    fk.set_sms(132);
    gset_free(&s);
}

/* ---- the environment: FAKECUDA_FAIL at cuInit, FAKECUDA_DEVICES, FAKECUDA_CC, through the
 * command (a process of its own, so the driver is loaded afresh) ---- */
static void t_env(void) {
    SETUP();
    const char *drv = getenv("NVFP4JIT_CUDA_DRIVER");
    static const struct {
        const char *env, *want;
        int rc;
    } cases[] = {
        {"FAKECUDA_FAIL=cuInit:1", "could not be loaded or initialised", 0},
        {"FAKECUDA_DEVICES=0", "no CUDA device", 0},
        /* a driver path that is not there, a library that is not a driver */
        {"NVFP4JIT_CUDA_DRIVER=/nonexistent/libcuda.so.1", "could not be loaded", 0},
        {"NVFP4JIT_CUDA_DRIVER=libm.so.6", "could not be loaded", 0},
        /* sm_100a runs (its 16U4 maps accepted at cc 10.0) and fails the check: launches do
         * nothing */
        {"FAKECUDA_CC=100", "FAIL group 0", 1},
        {"FAKECUDA_FAIL=cuMemAlloc:1", "CUDA_ERROR_OUT_OF_MEMORY", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[8192], out[16384];
        snprintf(cmd, sizeof cmd,
                 "env NVFP4JIT_CUDA_DRIVER='%s' %s '%s' --cache-dir '%s' demo --groups 8x64x128",
                 drv, cases[i].env, tu_tool(), fk.cache);
        int rc = tu_run(cmd, out, sizeof out);
        CHECKF(strstr(out, cases[i].want) != NULL, "%s: rc %d, output:\n%s", cases[i].env, rc,
               out);
        CHECKF(rc == cases[i].rc, "%s: rc %d, output:\n%s", cases[i].env, rc, out);
    }
}

/* bench under a GPU that slows down as it runs (FAKECUDA_DRIFT: each interval 0.01 % longer
 * per event recorded before it): implementations timed one after the other would differ by
 * their place in the order (two copies of one variant: the second 1.5 % slower here, a graph
 * replay 1 % slower than the eager call before it); timed in turn, in short blocks, they agree
 * within 0.5 %. */
static void t_bench_drift(void) {
    SETUP();
    const char *drv = getenv("NVFP4JIT_CUDA_DRIVER");
    char cmd[8192], out[65536];
    snprintf(cmd, sizeof cmd,
             "env NVFP4JIT_CUDA_DRIVER='%s' FAKECUDA_DRIFT=100 '%s' --cache-dir '%s' bench "
             "--no-cublas --groups 8x64x128,3x64x128 --variant auto,auto --iters 20",
             drv, tu_tool(), fk.cache);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0) {
        CHECKF(rc == 0, "rc %d, output:\n%s", rc, out);
        return;
    }
    double row[2] = {0, 0}, rep[2] = {0, 0}, eag[2] = {0, 0};
    int nrow = 0, nrep = 0;
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        double a, b;
        if (nrow < 2 && sscanf(l, " nvfp4jit %*s %lf", &a) == 1) row[nrow++] = a;
        const char *g = strstr(l, "(GPU ");
        if (nrep < 2 && g && (!strchr(l, '\n') || g < strchr(l, '\n')) &&
            sscanf(g, "(GPU %lf us per replay, %lf eager", &a, &b) == 2) {
            rep[nrep] = a;
            eag[nrep++] = b;
        }
    }
    if (nrow != 2 || nrep != 2) {
        CHECKF(nrow == 2 && nrep == 2, "rows %d, replay lines %d, output:\n%s", nrow, nrep, out);
        return;
    }
    CHECKF(row[0] > 0 && fabs(row[1] / row[0] - 1) < 0.005, "the same variant: %.3f and %.3f us",
           row[0], row[1]);
    for (int i = 0; i < 2; i++)
        CHECKF(eag[i] > 0 && fabs(rep[i] / eag[i] - 1) < 0.005, "replay %.3f against eager %.3f us",
               rep[i], eag[i]);
}

/* The same sweep for a run under a global-mode capture, and for MoE plan creation. */
static void t_faults_sweep_capture_moe(void) {
    SETUP();
    const drv_api *api = fk.api;
    static const char *const apis[] = {
        "cuModuleLoadData", "cuMemAlloc", "cuMemAllocHost", "cuMemcpyHtoDAsync",
        "cuTensorMapEncodeTiled", "cuLaunchKernel", "cuStreamCreate", "cuStreamSynchronize",
        "cuThreadExchangeStreamCaptureMode", "cuStreamIsCapturing", "cuMemcpyHtoD",
        "cuMemsetD8", "cuFuncSetAttribute", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        "cuGraphCreate", "cuGraphAddKernelNode", "cuGraphInstantiate", "cuCtxGetId"};
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    moe_bufs mb;
    REQUIRE(moe_alloc(&mb, 3, 64, 128, 256) == 0);
    CUstream st;
    REQUIRE(api->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++) {
        for (int n = 1; n <= 3; n++) {
            char spec[96];
            snprintf(spec, sizeof spec, "%s:%d", apis[i], n);
            nvfp4jit_ctx *ctx = new_ctx();
            REQUIRE(ctx);
            fakecuda_stats base = stats();
            /* a capture */
            nvfp4jit_plan *p = NULL;
            REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &ACT16P, &p) ==
                    NVFP4JIT_OK);
            REQUIRE(api->cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
            REQUIRE(fk.fail(spec) == 0);
            nvfp4jit_status r = nvfp4jit_plan_run(p, s.g, 3, st);
            fk.fail(NULL);
            const char *msg = nvfp4jit_last_error(ctx);
            CHECKF(r == NVFP4JIT_OK || (r == NVFP4JIT_ERR_CUDA && strstr(msg, "CUDA_ERROR_")),
                   "capture %s: %s: %s", spec, nvfp4jit_status_string(r), msg);
            CUgraph g = NULL;
            CUresult cr = api->cuStreamEndCapture(st, &g);
            CHECKF(cr == CUDA_SUCCESS || r != NVFP4JIT_OK, "capture %s: invalidated", spec);
            if (g) api->cuGraphDestroy(g);
            CHECKF(nvfp4jit_plan_run(p, s.g, 3, st) == NVFP4JIT_OK, "capture %s: then %s", spec,
                   nvfp4jit_last_error(ctx));
            CHECK(api->cuStreamSynchronize(st) == CUDA_SUCCESS);
            nvfp4jit_plan_destroy(p);
            /* a MoE plan */
            nvfp4jit_weights_desc d = {3, 64, 128, mb.b, mb.sfb, NULL, NULL};
            nvfp4jit_weights *w = NULL;
            REQUIRE(nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM90A, &d, &w) == NVFP4JIT_OK);
            nvfp4jit_moe_plan *mp = NULL;
            REQUIRE(fk.fail(spec) == 0);
            r = nvfp4jit_moe_plan_create(w, 256, &ACT16P, &mp);
            fk.fail(NULL);
            msg = nvfp4jit_last_error(ctx);
            CHECKF(r == NVFP4JIT_OK || (r == NVFP4JIT_ERR_CUDA && strstr(msg, "CUDA_ERROR_") &&
                                        !mp),
                   "moe %s: %s: %s", spec, nvfp4jit_status_string(r), msg);
            if (!mp) CHECK(nvfp4jit_moe_plan_create(w, 256, &ACT16P, &mp) == NVFP4JIT_OK);
            nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
            CHECKF(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK, "moe %s: then %s", spec,
                   nvfp4jit_last_error(ctx));
            nvfp4jit_moe_plan_destroy(mp);
            nvfp4jit_weights_destroy(w);
            fakecuda_stats e = stats();
            CHECKF(same_live(&base, &e), "%s: device %ld -> %ld, host %ld -> %ld, streams %ld -> %ld",
                   spec, base.live_dev_allocs, e.live_dev_allocs, base.live_host_allocs,
                   e.live_host_allocs, base.live_streams, e.live_streams);
            nvfp4jit_ctx_destroy(ctx);
        }
    }
    api->cuStreamDestroy(st);
    moe_free(&mb);
    gset_free(&s);
}

/* The module unload policy (src/jit.h): nvfp4jit_ctx_destroy unloads the modules (variants and
 * the GPU reference alike) whose CUDA context is current, and leaves the others to their
 * context. */
static void t_modules_unloaded(void) {
    SETUP();
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    for (int current = 1; current >= 0; current--) {
        long base = stats().live_modules;
        nvfp4jit_ctx *ctx = new_ctx();
        REQUIRE(ctx);
        nvfp4jit_plan *p = NULL;
        REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, &DUAL, &p) ==
                NVFP4JIT_OK);
        REQUIRE(nvfp4jit_plan_run(p, s.g, 3, NULL) == NVFP4JIT_OK);
        REQUIRE(nvfp4jit_reference_run(ctx, s.g, 3, NULL) == NVFP4JIT_OK);
        CHECK(fk.api->cuCtxSynchronize() == CUDA_SUCCESS);
        CHECK(stats().live_modules == base + 2);
        nvfp4jit_plan_destroy(p);
        CUmodule mods[8];
        int nm = 0;
        for (nj_module *m = ctx->kernels; m && nm < 8; m = m->next)
            if (m->mod) mods[nm++] = m->mod;
        CHECK(nm == 2);
        CUcontext cur = NULL;
        REQUIRE(fk.api->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur);
        if (!current) REQUIRE(fk.api->cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
        nvfp4jit_ctx_destroy(ctx);
        if (!current) REQUIRE(fk.api->cuCtxSetCurrent(cur) == CUDA_SUCCESS);
        CHECKF(stats().live_modules == (current ? base : base + 2), "current %d: %ld modules, "
               "base %ld", current, stats().live_modules, base);
        if (!current) /* left to their context: here, the test unloads them */
            for (int i = 0; i < nm; i++) CHECK(fk.api->cuModuleUnload(mods[i]) == CUDA_SUCCESS);
        CHECK(stats().live_modules == base);
    }
    gset_free(&s);
}

/* One variant's plans in two CUDA contexts of one nvfp4jit context share a kernel: runs that
 * alternate between them load its module once in each context (not at every switch, each
 * load dropping the other context's module without unloading it), launch each context's own
 * function (the fake refuses a function of another context), and nvfp4jit_ctx_destroy unloads
 * the module of the context current then; the other is left to its context (jit.h). */
static void t_modules_two_contexts(void) {
    SETUP();
    if (!fk.second_ctx) SKIP("skipped: the fake has no fakecuda_second_context");
    CUcontext c1 = NULL, c2 = NULL;
    REQUIRE(fk.api->cuCtxGetCurrent(&c1) == CUDA_SUCCESS && c1);
    fk.second_ctx(&c2);
    REQUIRE(c2 && c2 != c1);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    const nvfp4jit_variant *vs[2] = {&DUAL, &ACT16P};
    for (int vi = 0; vi < 2; vi++) {
        nvfp4jit_ctx *ctx = new_ctx();
        REQUIRE(ctx);
        nvfp4jit_plan *pa = NULL, *pb = NULL;
        REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, vs[vi], &pa) ==
                NVFP4JIT_OK);
        REQUIRE(fk.api->cuCtxSetCurrent(c2) == CUDA_SUCCESS);
        REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, vs[vi], &pb) ==
                NVFP4JIT_OK);
        REQUIRE(fk.api->cuCtxSetCurrent(c1) == CUDA_SUCCESS);
        long loads = fk.calls("cuModuleLoadData"), live = stats().live_modules;
        long launches = stats().launches;
        int failed = 0;
        CUmodule m2 = NULL; /* the module of c2 (the last one loaded or switched to there) */
        for (int i = 0; i < 10; i++) {
            REQUIRE(fk.api->cuCtxSetCurrent(c1) == CUDA_SUCCESS);
            if (nvfp4jit_plan_run(pa, s.g, 3, NULL) != NVFP4JIT_OK) failed++;
            REQUIRE(fk.api->cuCtxSetCurrent(c2) == CUDA_SUCCESS);
            if (nvfp4jit_plan_run(pb, s.g, 3, NULL) != NVFP4JIT_OK) failed++;
            for (nj_module *m = ctx->kernels; m; m = m->next)
                if (m->mod) m2 = m->mod;
        }
        CHECKF(!failed, "%s: %d runs failed (%s)", vi ? "act16p" : "dual", failed,
               nvfp4jit_last_error(ctx));
        CHECK(stats().launches > launches);
        long nloads = fk.calls("cuModuleLoadData") - loads, grew = stats().live_modules - live;
        CHECKF(nloads <= 2, "%s: %ld module loads for 20 alternating runs in 2 contexts",
               vi ? "act16p" : "dual", nloads);
        CHECKF(grew <= 2, "%s: %ld more live modules after 20 alternating runs in 2 contexts",
               vi ? "act16p" : "dual", grew);
        REQUIRE(fk.api->cuCtxSetCurrent(c1) == CUDA_SUCCESS);
        nvfp4jit_plan_destroy(pb); /* makes its own context current to free its buffers */
        nvfp4jit_plan_destroy(pa);
        nvfp4jit_ctx_destroy(ctx); /* unloads c1's module; c2's is left to c2 */
        CHECKF(stats().live_modules == live + 1, "%ld live modules, %ld before the runs",
               stats().live_modules, live);
        REQUIRE(fk.api->cuCtxSetCurrent(c2) == CUDA_SUCCESS);
        CHECK(m2 && fk.api->cuModuleUnload(m2) == CUDA_SUCCESS); /* as c2's destruction would */
        REQUIRE(fk.api->cuCtxSetCurrent(c1) == CUDA_SUCCESS);
        CHECKF(stats().live_modules == live, "%ld live modules, %ld before the runs",
               stats().live_modules, live);
    }
    gset_free(&s);
}

/* A context destroyed and a new one made at its handle (fakecuda_recreate_second_context; a
 * real driver may hand the handle out again). Then: a kernel used in the dead context must be
 * loaded again for the new one (keyed by the handle alone, the dead context's function was
 * launched: CUDA_ERROR_INVALID_HANDLE); a plan and a MoE plan of the dead context refuse to
 * run, saying why; their destruction frees nothing on the device (the handle names the new
 * context now, whose allocations are not theirs) and all of their host memory (a captured
 * slot's groups leaked: LeakSanitizer in the sanitizer build). */
static void t_context_recreated(void) {
    SETUP();
    void (*recreate)(void) = NULL;
    void *h = dlopen(getenv("NVFP4JIT_CUDA_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
    if (h) {
        *(void **)&recreate = dlsym(h, "fakecuda_recreate_second_context");
        dlclose(h);
    }
    if (!recreate || !fk.second_ctx) SKIP("skipped: the fake has no context recreation");
    CUcontext c1 = NULL, c2 = NULL;
    REQUIRE(fk.api->cuCtxGetCurrent(&c1) == CUDA_SUCCESS && c1);
    fk.second_ctx(&c2);
    gset s;
    REQUIRE(gset_make(&s, SHAPES, 3) == 0);
    const nvfp4jit_variant *vs[2] = {&DUAL, &ACT16P};
    for (int vi = 0; vi < 2; vi++) {
        const char *vn = vi ? "act16p" : "dual";
        nvfp4jit_ctx *ctx = new_ctx();
        REQUIRE(ctx);
        REQUIRE(fk.api->cuCtxSetCurrent(c2) == CUDA_SUCCESS);
        nvfp4jit_plan *pa = NULL, *pb = NULL;
        REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, vs[vi], &pa) ==
                NVFP4JIT_OK);
        CHECKF(nvfp4jit_plan_run(pa, s.g, 3, NULL) == NVFP4JIT_OK, "%s: %s", vn,
               nvfp4jit_last_error(ctx));
        { /* a capture too: the plan keeps its slot (host memory included) until destroyed */
            CUstream st;
            CUgraph g = NULL;
            REQUIRE(fk.api->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
            REQUIRE(fk.api->cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
                    CUDA_SUCCESS);
            CHECKF(nvfp4jit_plan_run(pa, s.g, 3, st) == NVFP4JIT_OK, "%s: captured: %s", vn,
                   nvfp4jit_last_error(ctx));
            REQUIRE(fk.api->cuStreamEndCapture(st, &g) == CUDA_SUCCESS && g);
            fk.api->cuGraphDestroy(g);
            fk.api->cuStreamDestroy(st);
        }
        recreate(); /* c2's handle now names a new context, current on this thread */
        long loads = fk.calls("cuModuleLoadData");
        CHECKF(nvfp4jit_plan_run(pa, s.g, 3, NULL) == NVFP4JIT_ERR_INVALID_ARG &&
                   strstr(nvfp4jit_last_error(ctx), "destroyed"),
               "%s: a plan of the dead context: %s", vn, nvfp4jit_last_error(ctx));
        REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 3, vs[vi], &pb) ==
                NVFP4JIT_OK);
        long launches = stats().launches;
        CHECKF(nvfp4jit_plan_run(pb, s.g, 3, NULL) == NVFP4JIT_OK, "%s: a new plan in the new "
               "context: %s", vn, nvfp4jit_last_error(ctx));
        CHECK(stats().launches > launches);
        CHECKF(fk.calls("cuModuleLoadData") == loads + 1, "%s: %ld module loads in the new "
               "context (1 expected)", vn, fk.calls("cuModuleLoadData") - loads);
        long frees = fk.calls("cuMemFree"), hfrees = fk.calls("cuMemFreeHost");
        long allocs = stats().live_dev_allocs;
        nvfp4jit_plan_destroy(pa);
        CHECKF(fk.calls("cuMemFree") == frees && fk.calls("cuMemFreeHost") == hfrees &&
                   stats().live_dev_allocs == allocs,
               "%s: the dead context's plan freed %ld device and %ld host blocks", vn,
               fk.calls("cuMemFree") - frees, fk.calls("cuMemFreeHost") - hfrees);
        nvfp4jit_plan_destroy(pb);
        CHECK(stats().live_dev_allocs < allocs); /* pb's own buffers */
        if (vi) { /* a MoE plan of the dead context */
            const int E = 4;
            moe_bufs mb;
            REQUIRE(moe_alloc(&mb, E, 64, 128, 256) == 0);
            nvfp4jit_weights_desc d = {E, 64, 128, mb.b, mb.sfb, NULL, NULL};
            nvfp4jit_weights *w = NULL;
            REQUIRE(nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM90A, &d, &w) == NVFP4JIT_OK);
            nvfp4jit_moe_plan *mp = NULL;
            REQUIRE(nvfp4jit_moe_plan_create(w, 256, vs[vi], &mp) == NVFP4JIT_OK);
            nvfp4jit_moe_call call = {mb.a, mb.sfa, mb.c, mb.off, mb.sfoff};
            CHECK(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_OK);
            recreate(); /* mb's buffers go too */
            CHECKF(nvfp4jit_moe_run(mp, &call, NULL) == NVFP4JIT_ERR_INVALID_ARG &&
                       strstr(nvfp4jit_last_error(ctx), "destroyed"),
                   "a MoE plan of the dead context: %s", nvfp4jit_last_error(ctx));
            frees = fk.calls("cuMemFree");
            long graphs = fk.calls("cuGraphDestroy") + fk.calls("cuGraphExecDestroy");
            nvfp4jit_moe_plan_destroy(mp);
            CHECKF(fk.calls("cuMemFree") == frees &&
                       fk.calls("cuGraphDestroy") + fk.calls("cuGraphExecDestroy") == graphs,
                   "the dead context's MoE plan freed %ld blocks",
                   fk.calls("cuMemFree") - frees);
            nvfp4jit_weights_destroy(w);
        }
        REQUIRE(fk.api->cuCtxSetCurrent(c1) == CUDA_SUCCESS);
        nvfp4jit_ctx_destroy(ctx);
        recreate(); /* the new context's module and objects go (as its destruction would) */
    }
    REQUIRE(fk.api->cuCtxSetCurrent(c1) == CUDA_SUCCESS);
    gset_free(&s);
}

/* A failed workspace growth, then a capture whose smaller workspace lands at the freed address
 * (fakecuda_set_reuse: a real allocator may hand it out again): the eager run of the first
 * groups must not take the fast path with the blob built on the old workspace, whose token map
 * covers more rows than the new allocation holds (it did: the slot was matched by the
 * workspace's address). Every launched token map must lie inside live device memory. */
static void t_stale_workspace(void) {
    SETUP();
    void (*reuse)(int) = NULL;
    void *h = dlopen(getenv("NVFP4JIT_CUDA_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
    if (h) {
        *(void **)&reuse = dlsym(h, "fakecuda_set_reuse");
        dlclose(h);
    }
    REQUIRE(reuse);
    const drv_api *api = fk.api;
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    static const int64_t SH[1][3] = {{256, 64, 128}};
    gset s;
    REQUIRE(gset_make(&s, SH, 1) == 0);
    CUstream st;
    REQUIRE(api->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    nvfp4jit_plan *p = NULL;
    REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, &ACT16P, &p) == NVFP4JIT_OK);
    reuse(1);
    CHECK(nvfp4jit_plan_run(p, s.g, 1, st) == NVFP4JIT_OK);
    gset big = s, small = s;
    big.g[0].m = 1024;  /* (A is not read by the fake) */
    small.g[0].m = 16;
    fk.fail("cuMemAlloc:1"); /* the workspace's growth fails, after the old one was freed */
    CHECK(nvfp4jit_plan_run(p, big.g, 1, st) != NVFP4JIT_OK);
    fk.fail(NULL);
    REQUIRE(api->cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    CHECK(nvfp4jit_plan_run(p, small.g, 1, st) == NVFP4JIT_OK);
    CUgraph g = NULL;
    CHECK(api->cuStreamEndCapture(st, &g) == CUDA_SUCCESS && g);
    if (g) api->cuGraphDestroy(g);
    CHECK(nvfp4jit_plan_run(p, s.g, 1, st) == NVFP4JIT_OK);
    const unsigned char *blob = (const unsigned char *)(uintptr_t)seen.blob;
    REQUIRE(blob && !strcmp(seen.func, NJ_KERNEL_NAME));
    uint64_t maps_off;
    memcpy(&maps_off, blob + 16, 8);
    const fakecuda_tmap *tok = tmap(blob, maps_off, 0, 0);
    CHECK(tok->magic == FAKECUDA_TMAP_MAGIC && tok->dims[1] == 256);
    size_t bytes = (size_t)(tok->dims[1] * tok->strides[0]);
    void *tmp = malloc(bytes);
    REQUIRE(tmp);
    /* the fake's copies fail unless the range lies inside one live allocation */
    CHECKF(api->cuMemcpyDtoH(tmp, (CUdeviceptr)tok->addr, bytes) == CUDA_SUCCESS,
           "the launched token map (%zu bytes at 0x%llx) is not inside live device memory", bytes,
           (unsigned long long)tok->addr);
    free(tmp);
    reuse(0);
    CHECK(api->cuStreamSynchronize(st) == CUDA_SUCCESS);
    nvfp4jit_plan_destroy(p);
    api->cuStreamDestroy(st);
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

/* A run whose M exceeds a limit of the plan's variant (tiles per grid; act16's token items),
 * where the plan was made for small M: refused as an invalid problem before anything is sized
 * or allocated for it (it asked the driver for the blob arena or the workspace first, and
 * reported what the driver said: out of memory; with 2^20 such groups the arena's size
 * computation wrapped and the call never returned), and the plan still runs its set. */
static void t_run_limits(void) {
    SETUP();
    nvfp4jit_ctx *ctx = new_ctx();
    REQUIRE(ctx);
    static const int64_t SH[1][3] = {{64, 64, 128}};
    gset s;
    REQUIRE(gset_make(&s, SH, 1) == 0);
    const nvfp4jit_variant *vs[2] = {&DUAL, &ACT16P};
    for (int i = 0; i < 2; i++) {
        nvfp4jit_plan *p = NULL;
        REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, s.g, 1, vs[i], &p) ==
                NVFP4JIT_OK);
        CHECK(nvfp4jit_plan_run(p, s.g, 1, NULL) == NVFP4JIT_OK);
        nvfp4jit_group g = s.g[0];
        /* dual 64x32: 2^18 x 2^19 tiles; act16p: 2^24 x 2^16 / 16 token items (2^36) */
        g.m = NVFP4JIT_MAX_DIM;
        g.n = i == 0 ? NVFP4JIT_MAX_DIM : 64;
        nvfp4jit_plan *q = NULL;
        if (i == 0) { /* N is fixed at creation: a plan of this N */
            nvfp4jit_group g0 = g;
            g0.m = 64;
            REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g0, 1, vs[i], &q) ==
                    NVFP4JIT_OK);
        } else {
            g.k = 1 << 16;
            nvfp4jit_group g0 = g;
            g0.m = 64;
            REQUIRE(nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, &g0, 1, vs[i], &q) ==
                    NVFP4JIT_OK);
        }
        long allocs = fk.calls("cuMemAlloc"), host = fk.calls("cuMemAllocHost");
        nvfp4jit_status r = nvfp4jit_plan_run(q, &g, 1, NULL);
        CHECKF(r == NVFP4JIT_ERR_INVALID_PROBLEM, "%s: %s (%s)", i ? "act16p" : "dual",
               nvfp4jit_status_string(r), nvfp4jit_last_error(ctx));
        CHECKF(strstr(nvfp4jit_last_error(ctx), i ? "token values" : "tiles") != NULL, "%s",
               nvfp4jit_last_error(ctx));
        CHECK(fk.calls("cuMemAlloc") == allocs && fk.calls("cuMemAllocHost") == host);
        nvfp4jit_plan_destroy(q);
        CHECK(nvfp4jit_plan_run(p, s.g, 1, NULL) == NVFP4JIT_OK);
        nvfp4jit_plan_destroy(p);
    }
    gset_free(&s);
    nvfp4jit_ctx_destroy(ctx);
}

static void t_cleanup(void) {
    if (fk.own_cache) tu_rmtree(fk.cache);
    fk.own_cache = 0;
}

const test_case tests_fakecuda[] = {
    {"device", t_device},
    {"plan_run", t_plan_run},
    {"choice_sms", t_choice_sms},
    {"capture", t_capture},
    {"act16", t_act16},
    {"act16_wide", t_act16_wide},
    {"stale_workspace", t_stale_workspace},
    {"run_limits", t_run_limits},
    {"moe", t_moe},
    {"moe_sm100", t_moe_sm100},
    {"moe_sm100_emu", t_moe_sm100_emu},
    {"tune_lookup", t_tune_lookup},
    {"tune", t_tune},
    {"tune_sk", t_tune_sk},
    {"reference_run", t_reference_run},
    {"modules_unloaded", t_modules_unloaded},
    {"modules_two_contexts", t_modules_two_contexts},
    {"context_recreated", t_context_recreated},
    {"faults_plan", t_faults_plan},
    {"faults_moe", t_faults_moe},
    {"faults_sweep", t_faults_sweep},
    {"faults_sweep_capture_moe", t_faults_sweep_capture_moe},
    {"env", t_env},
    {"bench_drift", t_bench_drift},
    {"cleanup", t_cleanup},
    {0, 0},
};
