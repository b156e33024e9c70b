/* fakecuda.c - a fake CUDA driver (libcuda.so.1 stand-in) for CPU tests: see fakecuda.h.
 * It exports every entry point src/driver.c looks up, under the same versioned names. */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FK_API __attribute__((visibility("default")))
#define FK_SMEM_OPTIN 232448 /* sm_90: opt-in dynamic shared memory per block */
#define FK_SMEM_SM 233472    /* per SM */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&g_lock)
#define UNLOCK() pthread_mutex_unlock(&g_lock)

/* ---- configuration ---- */
static int g_inited, g_cc = 90, g_sms = 132, g_devices = 1;
static fakecuda_stats g_st;
static fakecuda_launch_hook g_hook;
static void *g_hook_user;
static int g_events_pending;
/* the timing drift (fakecuda_set_drift): parts per million of the base elapsed time per event
 * recorded before an interval's start; g_event_seq numbers every eager cuEventRecord */
static int g_drift;
static long g_event_seq;

/* ---- call counts and faults ---- */
#define FK_MAX_NAMES 64
#define FK_MAX_FAULTS 32
static struct {
    char name[48];
    long calls;
} g_calls[FK_MAX_NAMES];
static int g_ncalls;
static struct {
    char name[48];
    long at;   /* fail the at-th call counted from when the fault was set */
    long base; /* calls of name when the fault was set */
    int sticky;
    CUresult code;
} g_faults[FK_MAX_FAULTS];
static int g_nfaults;

static long *calls_slot(const char *name) {
    for (int i = 0; i < g_ncalls; i++)
        if (!strcmp(g_calls[i].name, name)) return &g_calls[i].calls;
    if (g_ncalls == FK_MAX_NAMES) return NULL;
    snprintf(g_calls[g_ncalls].name, sizeof g_calls[g_ncalls].name, "%s", name);
    return &g_calls[g_ncalls++].calls;
}

static CUresult default_code(const char *name) {
    if (!strcmp(name, "cuMemAlloc") || !strcmp(name, "cuMemAllocHost"))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!strcmp(name, "cuModuleLoadData")) return CUDA_ERROR_INVALID_IMAGE;
    if (!strcmp(name, "cuLaunchKernel") || !strcmp(name, "cuLaunchCooperativeKernel"))
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (!strcmp(name, "cuTensorMapEncodeTiled")) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_UNKNOWN;
}

/* Count a call of name; @return the injected error, or CUDA_SUCCESS. */
static CUresult fault(const char *name) {
    LOCK();
    long *c = calls_slot(name);
    long n = c ? ++*c : 0;
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < g_nfaults && c; i++) {
        if (strcmp(g_faults[i].name, name)) continue;
        long k = n - g_faults[i].base;
        if (k == g_faults[i].at || (g_faults[i].sticky && k > g_faults[i].at)) {
            r = g_faults[i].code;
            break;
        }
    }
    UNLOCK();
    return r;
}

#define FAULT(name)                                                                          \
    do {                                                                                     \
        CUresult fk_r_ = fault(name);                                                        \
        if (fk_r_ != CUDA_SUCCESS) return fk_r_;                                             \
    } while (0)

static int add_faults(const char *spec) {
    if (!spec || !*spec) {
        g_nfaults = 0;
        return 0;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon || colon == tok || (size_t)(colon - tok) >= sizeof g_faults[0].name ||
            g_nfaults == FK_MAX_FAULTS)
            return -1;
        *colon = '\0';
        char *end;
        long at = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || at < 1) return -1;
        int sticky = 0;
        if (*end == '+') {
            sticky = 1;
            end++;
        }
        CUresult code = default_code(tok);
        if (*end == ':') {
            char *e2;
            long v = strtol(end + 1, &e2, 10);
            if (e2 == end + 1 || *e2 || v <= 0) return -1;
            code = (CUresult)v;
        } else if (*end) {
            return -1;
        }
        long *c = calls_slot(tok);
        snprintf(g_faults[g_nfaults].name, sizeof g_faults[0].name, "%s", tok);
        g_faults[g_nfaults].at = at;
        g_faults[g_nfaults].base = c ? *c : 0;
        g_faults[g_nfaults].sticky = sticky;
        g_faults[g_nfaults].code = code;
        g_nfaults++;
    }
    return 0;
}

FK_API int fakecuda_fail(const char *spec) {
    LOCK();
    int r = add_faults(spec);
    UNLOCK();
    return r;
}

FK_API long fakecuda_calls(const char *name) {
    LOCK();
    long n = 0;
    for (int i = 0; i < g_ncalls; i++)
        if (!strcmp(g_calls[i].name, name)) n = g_calls[i].calls;
    UNLOCK();
    return n;
}

FK_API void fakecuda_get_stats(fakecuda_stats *out) {
    LOCK();
    *out = g_st;
    UNLOCK();
}

FK_API void fakecuda_set_launch_hook(fakecuda_launch_hook hook, void *user) {
    LOCK();
    g_hook = hook;
    g_hook_user = user;
    UNLOCK();
}

FK_API void fakecuda_set_cc(int cc) {
    LOCK();
    g_cc = cc;
    UNLOCK();
}

FK_API void fakecuda_set_events_pending(int on) {
    LOCK();
    g_events_pending = on;
    UNLOCK();
}

FK_API void fakecuda_set_drift(int ppm) {
    LOCK();
    g_drift = ppm;
    UNLOCK();
}

/* fakecuda_set_reuse: the block kept from the last device free (g_reuse_mem, its capacity) */
static int g_reuse;
static void *g_reuse_mem;
static size_t g_reuse_cap;
FK_API void fakecuda_set_reuse(int on) {
    LOCK();
    g_reuse = on;
    if (!on) {
        free(g_reuse_mem);
        g_reuse_mem = NULL;
        g_reuse_cap = 0;
    }
    UNLOCK();
}

FK_API void fakecuda_set_sms(int sms) {
    LOCK();
    g_sms = sms;
    UNLOCK();
}

/* ---- handles: every object is a tagged heap block on one list ---- */
enum { K_DEV = 1, K_HOST, K_STREAM, K_EVENT, K_MODULE, K_GRAPH, K_EXEC };
typedef struct fk_obj {
    struct fk_obj *next;
    int kind;
    size_t size;  /* memory */
    void *mem;    /* memory: the block */
    /* streams */
    CUstreamCaptureStatus cap;
    int cap_global; /* the capture was begun in global mode */
    long cap_nodes;
    /* events */
    unsigned flags;
    int recorded, pending;
    long seq; /* g_event_seq at its last eager record */
    /* modules */
    const unsigned char *image;
    size_t image_size;
    CUcontext ctx; /* the context current at its creation (a module: at its load) */
    /* graphs / execs */
    long nodes;
    struct fk_knode *kn; /* kernel nodes: added by cuGraphAddKernelNode, or captured
                          * (a stream's: those of the capture under way) */
    int nkn;
} fk_obj;

/* A kernel node of a built graph (or of its instantiation): the launch and a copy of its
 * parameter bytes; origin: the graph node an exec's copy came from. */
#define FK_NODE_PARAMS 4096
typedef struct fk_knode {
    struct fk_knode *origin;
    CUfunction fn;
    unsigned grid[3], block[3], smem;
    int np;
    unsigned psize[64];
    unsigned char bytes[FK_NODE_PARAMS];
} fk_knode;
static fk_obj *g_objs;
static __thread CUcontext t_cur;

static fk_obj *obj_new(int kind) {
    fk_obj *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->kind = kind;
    o->ctx = t_cur; /* objects die with the context current at their creation */
    o->next = g_objs;
    g_objs = o;
    return o;
}

static fk_obj *obj_find(const void *h, int kind) {
    for (fk_obj *o = g_objs; o; o = o->next)
        if (o == h && o->kind == kind) return o;
    return NULL;
}

static void obj_del(fk_obj *o) {
    for (fk_obj **p = &g_objs; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            free(o->kn);
            free(o);
            return;
        }
}

/* The device allocation holding [p, p+n). */
static fk_obj *mem_find(uintptr_t p, size_t n, int kind) {
    for (fk_obj *o = g_objs; o; o = o->next) {
        if (o->kind != kind) continue;
        uintptr_t b = (uintptr_t)o->mem;
        if (p >= b && p - b <= o->size && n <= o->size - (p - b)) return o;
    }
    return NULL;
}

/* ---- contexts and capture mode ---- */
static struct {
    int magic;
    unsigned long long id; /* cuCtxGetId: a new one for each (re)creation */
} g_primary = {0x43545831, 1}, g_second = {0x43545832, 2}; /* g_second: fakecuda_second_context */
static unsigned long long g_next_ctx_id = 3;

FK_API void fakecuda_second_context(CUcontext *out) {
    if (out) *out = (CUcontext)(void *)&g_second;
}

static __thread CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static int g_global_captures; /* active captures begun in global mode */

/* A "potentially unsafe" call while a global-mode capture is active and this thread is not
 * relaxed: the real driver fails it and invalidates the captures. Called under the lock. */
static CUresult unsafe_call(void) {
    if (g_global_captures == 0 || t_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    for (fk_obj *o = g_objs; o; o = o->next)
        if (o->kind == K_STREAM && o->cap == CU_STREAM_CAPTURE_STATUS_ACTIVE && o->cap_global)
            o->cap = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static int is_legacy(CUstream s) {
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* A stream handle: NULL for the legacy streams, else the object (under the lock).
 * @return CUDA_ERROR_INVALID_HANDLE for an unknown handle. */
static CUresult stream_get(CUstream s, fk_obj **out) {
    *out = NULL;
    if (is_legacy(s)) return CUDA_SUCCESS;
    *out = obj_find(s, K_STREAM);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

#define NEED_INIT()                                                                          \
    do {                                                                                     \
        if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;                                    \
    } while (0)
#define NEED_CTX()                                                                           \
    do {                                                                                     \
        NEED_INIT();                                                                         \
        if (!t_cur) return CUDA_ERROR_INVALID_CONTEXT;                                       \
    } while (0)

static int env_int(const char *name, int def) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > 100000 ? def : (int)x;
}

/* ---- init, errors, version ---- */
FK_API CUresult cuInit(unsigned flags) {
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!g_inited) {
        g_cc = env_int("FAKECUDA_CC", 90);
        g_sms = env_int("FAKECUDA_SMS", 132);
        g_drift = env_int("FAKECUDA_DRIFT", 0);
        g_devices = env_int("FAKECUDA_DEVICES", 1) ? 1 : 0;
        if (add_faults(getenv("FAKECUDA_FAIL")) != 0)
            fprintf(stderr, "fakecuda: bad FAKECUDA_FAIL '%s'\n", getenv("FAKECUDA_FAIL"));
    }
    UNLOCK();
    FAULT("cuInit");
    LOCK();
    g_inited = 1;
    UNLOCK();
    return CUDA_SUCCESS;
}

static const struct {
    CUresult r;
    const char *name, *str;
} g_errs[] = {
#define E(x, s) {x, #x, s},
    E(CUDA_SUCCESS, "no error")
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument")
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error")
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device")
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found")
    E(CUDA_ERROR_NOT_READY, "device not ready")
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
      "too many blocks in cooperative launch")
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
      "operation not permitted when stream is capturing")
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
      "operation failed due to a previous error during capture")
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
      "attempt to terminate a thread-local capture sequence from another thread")
    E(CUDA_ERROR_UNKNOWN, "unknown error")
#undef E
};

FK_API CUresult cuGetErrorName(CUresult r, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_errs / sizeof *g_errs; i++)
        if (g_errs[i].r == r) {
            *s = g_errs[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

FK_API CUresult cuGetErrorString(CUresult r, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_errs / sizeof *g_errs; i++)
        if (g_errs[i].r == r) {
            *s = g_errs[i].str;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

FK_API CUresult cuDriverGetVersion(int *v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuDriverGetVersion");
    *v = 13000;
    return CUDA_SUCCESS;
}

/* ---- devices and contexts ---- */
FK_API CUresult cuDeviceGetCount(int *n) {
    NEED_INIT();
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuDeviceGetCount");
    *n = g_devices;
    return CUDA_SUCCESS;
}

FK_API CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    NEED_INIT();
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuDeviceGet");
    if (ordinal < 0 || ordinal >= g_devices) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

FK_API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    NEED_INIT();
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return CUDA_ERROR_INVALID_DEVICE;
    FAULT("cuDeviceGetAttribute");
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = g_cc / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = g_cc % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = g_sms; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = FK_SMEM_OPTIN; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = FK_SMEM_SM; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break; /* a small L2: cheap flushes */
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

FK_API CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    NEED_INIT();
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return CUDA_ERROR_INVALID_DEVICE;
    FAULT("cuDeviceGetName");
    snprintf(name, (size_t)len, "fakecuda sm_%d", g_cc);
    return CUDA_SUCCESS;
}

FK_API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    NEED_INIT();
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    if (d < 0 || d >= g_devices) return CUDA_ERROR_INVALID_DEVICE;
    FAULT("cuDevicePrimaryCtxRetain");
    *c = (CUcontext)(void *)&g_primary;
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxGetCurrent(CUcontext *c) {
    NEED_INIT();
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    *c = t_cur;
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxGetId(CUcontext c, unsigned long long *id) {
    NEED_INIT();
    FAULT("cuCtxGetId");
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    if (!c) c = t_cur;
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    CUresult r = CUDA_SUCCESS;
    if (c == (CUcontext)(void *)&g_primary) *id = g_primary.id;
    else if (c == (CUcontext)(void *)&g_second) *id = g_second.id;
    else r = CUDA_ERROR_INVALID_CONTEXT;
    UNLOCK();
    return r;
}

FK_API CUresult cuCtxSetCurrent(CUcontext c) {
    NEED_INIT();
    FAULT("cuCtxSetCurrent");
    if (c && c != (CUcontext)(void *)&g_primary && c != (CUcontext)(void *)&g_second)
        return CUDA_ERROR_INVALID_CONTEXT;
    t_cur = c;
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxGetDevice(CUdevice *d) {
    NEED_CTX();
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuCtxGetDevice");
    *d = 0;
    return CUDA_SUCCESS;
}

static void complete_all_events(void) {
    for (fk_obj *o = g_objs; o; o = o->next)
        if (o->kind == K_EVENT) o->pending = 0;
}

FK_API CUresult cuCtxSynchronize(void) {
    NEED_CTX();
    FAULT("cuCtxSynchronize");
    LOCK();
    CUresult r = unsafe_call();
    if (r == CUDA_SUCCESS) complete_all_events();
    g_st.syncs++;
    UNLOCK();
    return r;
}

/* ---- modules: the image must be an ELF (a cubin); functions are found by name; each
 * function's parameter sizes come from its .nv.info.<name> section when it parses ---- */
typedef struct fk_func {
    struct fk_func *next;
    fk_obj *mod;
    char name[128];
    int nparams; /* -1: unknown */
    unsigned psize[256];
    size_t pbytes;
    int max_dyn_smem;
    int regs;        /* registers per thread (EIATTR_REGCOUNT of .nv.info); 0: unknown */
    int max_threads; /* threads per block its launch bounds allow (EIATTR_MAX_THREADS); 0: none */
} fk_func;
static fk_func *g_funcs;

static uint64_t rd(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Read EIATTR_KPARAM_INFO (0x17) entries of .nv.info.<name>. @return 0 or -1. */
static int parse_params(const unsigned char *img, size_t size, const char *name, fk_func *f) {
    if (size < 64 || img[4] != 2 /* ELFCLASS64 */ || img[5] != 1 /* little endian */) return -1;
    uint64_t shoff = rd(img + 0x28, 8);
    unsigned shentsize = (unsigned)rd(img + 0x3a, 2), shnum = (unsigned)rd(img + 0x3c, 2),
             shstrndx = (unsigned)rd(img + 0x3e, 2);
    if (shentsize < 64 || shstrndx >= shnum || shoff > size ||
        (uint64_t)shnum * shentsize > size - shoff)
        return -1;
    const unsigned char *strh = img + shoff + (size_t)shstrndx * shentsize;
    uint64_t stroff = rd(strh + 0x18, 8), strsize = rd(strh + 0x20, 8);
    if (stroff > size || strsize > size - stroff) return -1;
    char want[160];
    snprintf(want, sizeof want, ".nv.info.%s", name);
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = img + shoff + (size_t)i * shentsize;
        uint64_t nm = rd(sh, 4), off = rd(sh + 0x18, 8), sz = rd(sh + 0x20, 8);
        if (nm >= strsize || strnlen((const char *)img + stroff + nm, strsize - nm) == strsize - nm)
            continue;
        if (strcmp((const char *)img + stroff + nm, want)) continue;
        if (off > size || sz > size - off) return -1;
        const unsigned char *p = img + off, *end = p + sz;
        int n = 0, maxord = -1;
        size_t total = 0;
        while (end - p >= 2) {
            unsigned fmt = p[0], attr = p[1];
            p += 2;
            size_t vlen = 2; /* EIFMT_NVAL/BVAL/HVAL: 2 bytes (padded); SVAL: size + data */
            if (fmt == 4) {
                if (end - p < 2) return -1;
                vlen = (size_t)rd(p, 2);
                p += 2;
            } else if (fmt < 1 || fmt > 4) {
                return -1;
            }
            if ((size_t)(end - p) < vlen) return -1;
            if (fmt == 4 && attr == 0x17 && vlen >= 12) { /* EIATTR_KPARAM_INFO */
                unsigned ord = (unsigned)rd(p + 4, 2);
                unsigned psz = (unsigned)(rd(p + 8, 4) >> 18) & 0x3fff;
                if (ord >= 256) return -1;
                f->psize[ord] = psz;
                if ((int)ord > maxord) maxord = (int)ord;
                n++;
                total += psz;
            }
            p += vlen;
        }
        if (n != maxord + 1) return -1; /* ordinals 0..n-1, each once */
        f->nparams = n;
        f->pbytes = total;
        return 0;
    }
    return -1;
}

/* The launch limits a real driver applies from the cubin: the function's register count
 * (EIATTR_REGCOUNT, 0x2f, in .nv.info: {symbol index, count}, the symbol found by name in
 * .symtab) and its launch bounds (EIATTR_MAX_THREADS, 0x05, in .nv.info.<name>: x, y, z).
 * Unknown fields stay 0 (no check). */
static void parse_limits(const unsigned char *img, size_t size, const char *name, fk_func *f) {
    if (size < 64 || img[4] != 2 || img[5] != 1) return;
    uint64_t shoff = rd(img + 0x28, 8);
    unsigned shentsize = (unsigned)rd(img + 0x3a, 2), shnum = (unsigned)rd(img + 0x3c, 2),
             shstrndx = (unsigned)rd(img + 0x3e, 2);
    if (shentsize < 64 || shstrndx >= shnum || shoff > size ||
        (uint64_t)shnum * shentsize > size - shoff)
        return;
#define SEC(i) (img + shoff + (size_t)(i) * shentsize)
    uint64_t stroff = rd(SEC(shstrndx) + 0x18, 8), strsize = rd(SEC(shstrndx) + 0x20, 8);
    if (stroff > size || strsize > size - stroff) return;
    char info_fn[160];
    snprintf(info_fn, sizeof info_fn, ".nv.info.%s", name);
    long sym = -1;
    /* the symbol's index */
    for (unsigned i = 0; i < shnum && sym < 0; i++) {
        const unsigned char *sh = SEC(i);
        if (rd(sh + 4, 4) != 2 /* SHT_SYMTAB */) continue;
        uint64_t off = rd(sh + 0x18, 8), sz = rd(sh + 0x20, 8), link = rd(sh + 0x28, 4);
        uint64_t ent = rd(sh + 0x38, 8);
        if (ent < 24 || off > size || sz > size - off || link >= shnum) continue;
        uint64_t so = rd(SEC(link) + 0x18, 8), ss = rd(SEC(link) + 0x20, 8);
        if (so > size || ss > size - so) continue;
        for (uint64_t k = 0; k < sz / ent; k++) {
            uint64_t nm = rd(img + off + k * ent, 4);
            if (nm < ss && strnlen((const char *)img + so + nm, ss - nm) < ss - nm &&
                !strcmp((const char *)img + so + nm, name)) {
                sym = (long)k;
                break;
            }
        }
    }
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = SEC(i);
        uint64_t nm = rd(sh, 4), off = rd(sh + 0x18, 8), sz = rd(sh + 0x20, 8);
        if (nm >= strsize || strnlen((const char *)img + stroff + nm, strsize - nm) == strsize - nm)
            continue;
        const char *sn = (const char *)img + stroff + nm;
        int global = !strcmp(sn, ".nv.info"), own = !strcmp(sn, info_fn);
        if ((!global && !own) || off > size || sz > size - off) continue;
        const unsigned char *p = img + off, *end = p + sz;
        while (end - p >= 2) {
            unsigned fmt = p[0], attr = p[1];
            p += 2;
            size_t vlen = 2;
            if (fmt == 4) {
                if (end - p < 2) break;
                vlen = (size_t)rd(p, 2);
                p += 2;
            } else if (fmt < 1 || fmt > 4) {
                break;
            }
            if ((size_t)(end - p) < vlen) break;
            if (global && fmt == 4 && attr == 0x2f && vlen >= 8 && sym >= 0 &&
                rd(p, 4) == (uint64_t)sym)
                f->regs = (int)rd(p + 4, 4);
            if (own && fmt == 4 && attr == 0x05 && vlen >= 12)
                f->max_threads = (int)(rd(p, 4) * rd(p + 4, 4) * rd(p + 8, 4));
            p += vlen;
        }
    }
#undef SEC
}

FK_API CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    NEED_CTX();
    if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuModuleLoadData");
    const unsigned char *img = image;
    if (memcmp(img, "\177ELF", 4)) return CUDA_ERROR_INVALID_IMAGE;
    /* the image's size (cuModuleLoadData is not told): the end of the last of the header
     * tables and sections */
    uint64_t shoff = rd(img + 0x28, 8), phoff = rd(img + 0x20, 8);
    uint64_t shent = rd(img + 0x3a, 2), shnum = rd(img + 0x3c, 2);
    uint64_t size = shoff + shent * shnum, ph = phoff + rd(img + 0x36, 2) * rd(img + 0x38, 2);
    if (ph > size) size = ph;
    for (uint64_t i = 0; shent >= 64 && i < shnum; i++) {
        const unsigned char *sh = img + shoff + i * shent;
        uint64_t end = rd(sh + 4, 4) == 8 /* SHT_NOBITS */ ? 0 : rd(sh + 0x18, 8) + rd(sh + 0x20, 8);
        if (end > size) size = end;
    }
    LOCK();
    CUresult r = unsafe_call();
    fk_obj *o = r == CUDA_SUCCESS ? obj_new(K_MODULE) : NULL;
    if (r == CUDA_SUCCESS && !o) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (o) {
        o->image = img;
        o->image_size = (size_t)size;
        o->ctx = t_cur;
        g_st.live_modules++;
        *m = (CUmodule)(void *)o;
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuModuleUnload(CUmodule m) {
    NEED_CTX();
    FAULT("cuModuleUnload");
    LOCK();
    fk_obj *o = obj_find(m, K_MODULE);
    if (o && o->ctx != t_cur) { /* cuModuleUnload acts on the current context */
        UNLOCK();
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (o) {
        for (fk_func **p = &g_funcs; *p;) {
            if ((*p)->mod == o) {
                fk_func *f = *p;
                *p = f->next;
                free(f);
            } else {
                p = &(*p)->next;
            }
        }
        obj_del(o);
        g_st.live_modules--;
    }
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_API CUresult cuModuleGetFunction(CUfunction *fn, CUmodule m, const char *name) {
    NEED_CTX();
    if (!fn || !name) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuModuleGetFunction");
    LOCK();
    CUresult r = CUDA_SUCCESS;
    fk_obj *o = obj_find(m, K_MODULE);
    fk_func *f = NULL;
    if (!o) r = CUDA_ERROR_INVALID_HANDLE;
    for (fk_func *g = g_funcs; o && g; g = g->next)
        if (g->mod == o && !strcmp(g->name, name)) f = g;
    if (o && !f) {
        /* the name must be a symbol of the image: NUL-delimited in its string tables */
        size_t nl = strlen(name);
        const unsigned char *hit = NULL;
        for (const unsigned char *p = o->image; !hit && nl < 127;) {
            const unsigned char *q =
                memmem(p, o->image_size - (size_t)(p - o->image), name, nl + 1);
            if (!q) break;
            if (q > o->image && q[-1] == '\0') hit = q;
            p = q + 1;
        }
        if (!hit) {
            r = CUDA_ERROR_NOT_FOUND;
        } else if (!(f = calloc(1, sizeof *f))) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            f->mod = o;
            snprintf(f->name, sizeof f->name, "%s", name);
            f->max_dyn_smem = 48 * 1024;
            if (parse_params(o->image, o->image_size, name, f) != 0) f->nparams = -1;
            parse_limits(o->image, o->image_size, name, f);
            f->next = g_funcs;
            g_funcs = f;
        }
    }
    if (f) *fn = (CUfunction)(void *)f;
    UNLOCK();
    return r;
}

static fk_func *func_find(CUfunction fn) {
    for (fk_func *f = g_funcs; f; f = f->next)
        if ((void *)f == (void *)fn) return f;
    return NULL;
}

FK_API CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v) {
    NEED_CTX();
    FAULT("cuFuncSetAttribute");
    LOCK();
    fk_func *f = func_find(fn);
    CUresult r = f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (f && a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || v > FK_SMEM_OPTIN) r = CUDA_ERROR_INVALID_VALUE;
        else f->max_dyn_smem = v;
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction fn, int threads,
                                                            size_t smem) {
    NEED_CTX();
    if (!n || threads <= 0 || threads > 1024) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    LOCK();
    fk_func *f = func_find(fn);
    UNLOCK();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    int by_threads = 2048 / threads, by_smem = (int)(FK_SMEM_SM / (smem + 1024));
    *n = by_threads < by_smem ? by_threads : by_smem;
    if (*n > 32) *n = 32;
    return CUDA_SUCCESS;
}

/* ---- launches ---- */
static CUresult do_launch(const char *api, CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st,
                          void **params, void **extra, int coop) {
    NEED_CTX();
    FAULT(api);
    if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 ||
        (uint64_t)bx * by * bz > 1024 || bz > 64)
        return CUDA_ERROR_INVALID_VALUE;
    if (extra) return CUDA_ERROR_NOT_SUPPORTED;
    LOCK();
    fk_func *f = func_find(fn);
    fk_obj *s = NULL;
    CUresult r = f ? stream_get(st, &s) : CUDA_ERROR_INVALID_HANDLE;
    /* a function of a module loaded in another context */
    if (r == CUDA_SUCCESS && f->mod->ctx != t_cur) r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS && smem > (unsigned)f->max_dyn_smem) r = CUDA_ERROR_INVALID_VALUE;
    /* the cubin's limits: its launch bounds, and its registers (allocated per warp in units of
     * 256) for every warp of the block within the SM's 65536 */
    {
        const uint64_t threads = (uint64_t)bx * by * bz, warps = (threads + 31) / 32;
        const uint64_t per_warp = ((uint64_t)(f ? f->regs : 0) * 32 + 255) / 256 * 256;
        if (r == CUDA_SUCCESS && f->max_threads > 0 && threads > (uint64_t)f->max_threads)
            r = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
        if (r == CUDA_SUCCESS && warps * per_warp > 65536) r = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    }
    if (r == CUDA_SUCCESS && f->nparams > 0 && !params) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && coop) {
        int by_threads = 2048 / (int)(bx * by * bz), by_smem = (int)(FK_SMEM_SM / (smem + 1024));
        int per = by_threads < by_smem ? by_threads : by_smem;
        if ((uint64_t)gx * gy * gz > (uint64_t)per * (uint64_t)g_sms)
            r = CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    if (r == CUDA_SUCCESS && s && s->cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (r != CUDA_SUCCESS) {
        UNLOCK();
        return r;
    }
    /* read every parameter as the device would (ASan catches a short argument) */
    unsigned char scratch[4096];
    size_t off = 0;
    for (int i = 0; i < f->nparams; i++) {
        size_t n = f->psize[i];
        if (off + n > sizeof scratch) break;
        memcpy(scratch + off, params[i], n);
        off += n;
    }
    g_st.grid[0] = gx, g_st.grid[1] = gy, g_st.grid[2] = gz;
    g_st.block[0] = bx, g_st.block[1] = by, g_st.block[2] = bz;
    g_st.smem = smem;
    g_st.params = f->nparams;
    g_st.params_bytes = f->pbytes;
    snprintf(g_st.func, sizeof g_st.func, "%s", f->name);
    int run = !(s && s->cap == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    if (!run) {
        s->cap_nodes++;
        g_st.captured_nodes++;
        /* the captured launch becomes a kernel node of the graph: cuGraphLaunch runs the hook
         * with the parameters as they were captured */
        fk_knode *kn = f->nparams <= 64 && f->pbytes <= FK_NODE_PARAMS
                           ? realloc(s->kn, sizeof *kn * (size_t)(s->nkn + 1))
                           : NULL;
        if (kn) {
            s->kn = kn;
            fk_knode *n = &kn[s->nkn++];
            memset(n, 0, sizeof *n);
            n->fn = fn;
            n->grid[0] = gx, n->grid[1] = gy, n->grid[2] = gz;
            n->block[0] = bx, n->block[1] = by, n->block[2] = bz;
            n->smem = smem;
            n->np = f->nparams > 0 ? f->nparams : 0;
            size_t at = 0;
            for (int i = 0; i < n->np; i++) {
                n->psize[i] = f->psize[i];
                memcpy(n->bytes + at, params[i], f->psize[i]);
                at += f->psize[i];
            }
        }
    } else {
        g_st.launches++;
        if (coop) g_st.coop_launches++;
    }
    fakecuda_launch_hook hook = g_hook;
    void *user = g_hook_user;
    char name[128];
    snprintf(name, sizeof name, "%s", f->name);
    int np = f->nparams;
    UNLOCK();
    if (run && hook) hook(name, params, np, user);
    return CUDA_SUCCESS;
}

FK_API CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, CUstream st,
                               void **params, void **extra) {
    return do_launch("cuLaunchKernel", fn, gx, gy, gz, bx, by, bz, smem, st, params, extra, 0);
}

/* cuLaunchKernelEx: a launch; the one attribute known is programmatic stream serialization */
FK_API CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction fn, void **params,
                                 void **extra) {
    if (!c || (c->numAttrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
    int pdl = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            return CUDA_ERROR_NOT_SUPPORTED;
        pdl |= c->attrs[i].value.programmaticStreamSerializationAllowed != 0;
    }
    CUresult r = do_launch("cuLaunchKernelEx", fn, c->gridDimX, c->gridDimY, c->gridDimZ,
                           c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes,
                           c->hStream, params, extra, 0);
    if (r == CUDA_SUCCESS && pdl) {
        LOCK();
        g_st.pdl_launches++;
        UNLOCK();
    }
    return r;
}

FK_API CUresult cuLaunchCooperativeKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                          CUstream st, void **params) {
    return do_launch("cuLaunchCooperativeKernel", fn, gx, gy, gz, bx, by, bz, smem, st, params,
                     NULL, 1);
}

/* ---- memory: device memory is host memory ---- */
static CUresult mem_alloc(const char *api, int kind, void **out, size_t size) {
    NEED_CTX();
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    FAULT(api);
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (size > ((size_t)1 << 40)) return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    CUresult r = unsafe_call();
    fk_obj *o = NULL;
    void *mem = NULL;
    if (r == CUDA_SUCCESS && kind == K_DEV && g_reuse_mem && size <= g_reuse_cap) {
        mem = g_reuse_mem; /* the last freed block's address, with `size` bytes now */
        g_reuse_mem = NULL;
        g_reuse_cap = 0;
        o = obj_new(kind);
        if (!o) {
            free(mem);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else if (r == CUDA_SUCCESS) {
        mem = aligned_alloc(256, (size + 255) / 256 * 256);
        o = mem ? obj_new(kind) : NULL;
        if (!o) {
            free(mem);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (o) {
        memset(mem, 0xA5, size); /* not zeroed, like the device's */
        o->mem = mem;
        o->size = size;
        if (kind == K_DEV) {
            g_st.live_dev_allocs++;
            g_st.live_dev_bytes += size;
        } else {
            g_st.live_host_allocs++;
        }
        *out = mem;
    }
    UNLOCK();
    return r;
}

static CUresult mem_free(const char *api, int kind, void *p) {
    NEED_CTX();
    FAULT(api);
    if (!p) return CUDA_SUCCESS;
    LOCK();
    CUresult r = unsafe_call();
    fk_obj *o = NULL;
    g_st.syncs++;
    for (fk_obj *x = g_objs; r == CUDA_SUCCESS && x; x = x->next)
        if (x->kind == kind && x->mem == p) o = x;
    if (r == CUDA_SUCCESS && !o) r = CUDA_ERROR_INVALID_VALUE;
    if (o) {
        if (kind == K_DEV) {
            g_st.live_dev_allocs--;
            g_st.live_dev_bytes -= o->size;
        } else {
            g_st.live_host_allocs--;
        }
        if (kind == K_DEV && g_reuse) { /* kept for the next allocation (fakecuda_set_reuse) */
            free(g_reuse_mem);
            g_reuse_mem = o->mem;
            g_reuse_cap = (o->size + 255) / 256 * 256;
        } else {
            free(o->mem);
        }
        obj_del(o);
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuMemAlloc(CUdeviceptr *p, size_t size) {
    void *m = NULL;
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = mem_alloc("cuMemAlloc", K_DEV, &m, size);
    if (r == CUDA_SUCCESS) *p = (CUdeviceptr)(uintptr_t)m;
    return r;
}
FK_API CUresult cuMemFree(CUdeviceptr p) {
    return mem_free("cuMemFree", K_DEV, (void *)(uintptr_t)p);
}
FK_API CUresult cuMemAllocHost(void **p, size_t size) {
    return mem_alloc("cuMemAllocHost", K_HOST, p, size);
}
FK_API CUresult cuMemFreeHost(void *p) { return mem_free("cuMemFreeHost", K_HOST, p); }
/* (cuMemGetInfo_v2 through cuda.h: the soak test's device-memory reading) */
FK_API CUresult cuMemGetInfo(size_t *free_b, size_t *total_b) {
    NEED_CTX();
    FAULT("cuMemGetInfo");
    if (!free_b || !total_b) return CUDA_ERROR_INVALID_VALUE;
    *total_b = (size_t)80 << 30;
    *free_b = *total_b; /* host memory stands in: no accounting */
    return CUDA_SUCCESS;
}

/* A device range for a copy or memset (under the lock). */
static CUresult dev_range(CUdeviceptr p, size_t n) {
    if (n == 0) return CUDA_SUCCESS;
    return mem_find((uintptr_t)p, n, K_DEV) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_htod(const char *api, CUdeviceptr d, const void *h, size_t n, CUstream st,
                          int async) {
    NEED_CTX();
    FAULT(api);
    if (n && !h) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    fk_obj *s = NULL;
    CUresult r = async ? stream_get(st, &s) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) r = dev_range(d, n);
    if (r == CUDA_SUCCESS && s && s->cap == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        s->cap_nodes++; /* a captured copy runs at replay; done now as well */
        g_st.captured_nodes++;
    }
    if (r == CUDA_SUCCESS && n) {
        memmove((void *)(uintptr_t)d, h, n);
        g_st.htod_copies++;
        if (!async) g_st.syncs++;
        else if (!mem_find((uintptr_t)h, n, K_HOST)) g_st.pageable_async_copies++;
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n) {
    return copy_htod("cuMemcpyHtoD", d, h, n, NULL, 0);
}
FK_API CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream st) {
    return copy_htod("cuMemcpyHtoDAsync", d, h, n, st, 1);
}

FK_API CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n) {
    NEED_CTX();
    FAULT("cuMemcpyDtoH");
    if (n && !h) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = dev_range(d, n);
    if (r == CUDA_SUCCESS && n) {
        memmove(h, (const void *)(uintptr_t)d, n);
        g_st.dtoh_copies++;
        g_st.syncs++;
        complete_all_events(); /* synchronous: waits for the legacy stream */
    }
    UNLOCK();
    return r;
}

static CUresult memset8(const char *api, CUdeviceptr d, unsigned char v, size_t n, CUstream st,
                        int async) {
    NEED_CTX();
    FAULT(api);
    LOCK();
    fk_obj *s = NULL;
    CUresult r = async ? stream_get(st, &s) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) r = dev_range(d, n);
    if (r == CUDA_SUCCESS && n) {
        memset((void *)(uintptr_t)d, v, n);
        g_st.memsets++;
        if (!async) g_st.syncs++;
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
    return memset8("cuMemsetD8", d, v, n, NULL, 0);
}
FK_API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
    return memset8("cuMemsetD8Async", d, v, n, st, 1);
}

/* ---- streams and events ---- */
FK_API CUresult cuStreamCreate(CUstream *s, unsigned flags) {
    NEED_CTX();
    if (!s || flags > CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuStreamCreate");
    LOCK();
    fk_obj *o = obj_new(K_STREAM);
    if (o) {
        o->flags = flags;
        g_st.live_streams++;
        *s = (CUstream)(void *)o;
    }
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FK_API CUresult cuStreamDestroy(CUstream s) {
    NEED_CTX();
    FAULT("cuStreamDestroy");
    LOCK();
    fk_obj *o = obj_find(s, K_STREAM);
    if (o) {
        if (o->cap != CU_STREAM_CAPTURE_STATUS_NONE && o->cap_global) g_global_captures--;
        obj_del(o);
        g_st.live_streams--;
    }
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_API CUresult cuStreamSynchronize(CUstream st) {
    NEED_CTX();
    FAULT("cuStreamSynchronize");
    LOCK();
    fk_obj *s = NULL;
    CUresult r = stream_get(st, &s);
    if (r == CUDA_SUCCESS && s && s->cap != CU_STREAM_CAPTURE_STATUS_NONE) {
        s->cap = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (r == CUDA_SUCCESS && !s) r = unsafe_call(); /* the legacy stream syncs with all */
    if (r == CUDA_SUCCESS) complete_all_events();
    g_st.syncs++;
    UNLOCK();
    return r;
}

FK_API CUresult cuEventCreate(CUevent *e, unsigned flags) {
    NEED_CTX();
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuEventCreate");
    LOCK();
    fk_obj *o = obj_new(K_EVENT);
    if (o) {
        o->flags = flags;
        g_st.live_events++;
        *e = (CUevent)(void *)o;
    }
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FK_API CUresult cuEventDestroy(CUevent e) {
    NEED_CTX();
    FAULT("cuEventDestroy");
    LOCK();
    fk_obj *o = obj_find(e, K_EVENT);
    if (o) {
        obj_del(o);
        g_st.live_events--;
    }
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_API CUresult cuEventRecord(CUevent e, CUstream st) {
    NEED_CTX();
    FAULT("cuEventRecord");
    LOCK();
    fk_obj *o = obj_find(e, K_EVENT), *s = NULL;
    CUresult r = o ? stream_get(st, &s) : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && s && s->cap == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        s->cap_nodes++;
        g_st.captured_nodes++;
    } else if (r == CUDA_SUCCESS) {
        o->recorded = 1;
        o->pending = g_events_pending;
        o->seq = ++g_event_seq;
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuEventQuery(CUevent e) {
    NEED_CTX();
    FAULT("cuEventQuery");
    LOCK();
    fk_obj *o = obj_find(e, K_EVENT);
    CUresult r = !o ? CUDA_ERROR_INVALID_HANDLE : o->pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
    UNLOCK();
    return r;
}

FK_API CUresult cuEventSynchronize(CUevent e) {
    NEED_CTX();
    FAULT("cuEventSynchronize");
    LOCK();
    fk_obj *o = obj_find(e, K_EVENT);
    if (o) o->pending = 0;
    g_st.syncs++;
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
    NEED_CTX();
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuEventElapsedTime");
    LOCK();
    fk_obj *x = obj_find(a, K_EVENT), *y = obj_find(b, K_EVENT);
    CUresult r = CUDA_SUCCESS;
    if (!x || !y || (x->flags & CU_EVENT_DISABLE_TIMING) || (y->flags & CU_EVENT_DISABLE_TIMING))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!x->recorded || !y->recorded)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (x->pending || y->pending)
        r = CUDA_ERROR_NOT_READY;
    else /* 10 us, and with a drift the later the interval, the longer (a GPU slowing down) */
        *ms = (float)(0.01 * (1.0 + (double)g_drift * (double)x->seq / 1e6));
    UNLOCK();
    return r;
}

/* cuda.h 13 maps cuEventElapsedTime to _v2; the driver exports both and src/driver.c looks up
 * the unversioned name */
#undef cuEventElapsedTime
FK_API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b);
FK_API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
    return cuEventElapsedTime_v2(ms, a, b);
}

/* ---- capture and graphs (node counts only) ---- */
FK_API CUresult cuStreamIsCapturing(CUstream st, CUstreamCaptureStatus *out) {
    NEED_CTX();
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuStreamIsCapturing");
    LOCK();
    fk_obj *s = NULL;
    CUresult r = stream_get(st, &s);
    if (r == CUDA_SUCCESS) *out = s ? s->cap : CU_STREAM_CAPTURE_STATUS_NONE;
    UNLOCK();
    return r;
}

FK_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    NEED_INIT();
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuThreadExchangeStreamCaptureMode");
    CUstreamCaptureMode old = t_mode;
    t_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

FK_API CUresult cuStreamBeginCapture(CUstream st, CUstreamCaptureMode mode) {
    NEED_CTX();
    FAULT("cuStreamBeginCapture");
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    if (is_legacy(st)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    LOCK();
    fk_obj *s = NULL;
    CUresult r = stream_get(st, &s);
    if (r == CUDA_SUCCESS && s->cap != CU_STREAM_CAPTURE_STATUS_NONE) r = CUDA_ERROR_ILLEGAL_STATE;
    if (r == CUDA_SUCCESS) {
        s->cap = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        s->cap_global = mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        s->cap_nodes = 0;
        free(s->kn); /* the kernel nodes of this capture (cuStreamEndCapture hands them over) */
        s->kn = NULL;
        s->nkn = 0;
        if (s->cap_global) g_global_captures++;
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuStreamEndCapture(CUstream st, CUgraph *g) {
    NEED_CTX();
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuStreamEndCapture");
    LOCK();
    fk_obj *s = NULL;
    CUresult r = stream_get(st, &s);
    if (r == CUDA_SUCCESS && (!s || s->cap == CU_STREAM_CAPTURE_STATUS_NONE))
        r = CUDA_ERROR_ILLEGAL_STATE;
    if (r == CUDA_SUCCESS) {
        int invalid = s->cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        if (s->cap_global) g_global_captures--;
        s->cap = CU_STREAM_CAPTURE_STATUS_NONE;
        s->cap_global = 0;
        *g = NULL;
        if (invalid) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            fk_obj *o = obj_new(K_GRAPH);
            if (!o) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                o->nodes = s->cap_nodes;
                o->kn = s->kn;
                o->nkn = s->nkn;
                s->kn = NULL;
                s->nkn = 0;
                g_st.live_graphs++;
                *g = (CUgraph)(void *)o;
            }
        }
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuGraphInstantiate(CUgraphExec *e, CUgraph g, unsigned long long flags) {
    NEED_CTX();
    (void)flags;
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuGraphInstantiate");
    LOCK();
    fk_obj *x = obj_find(g, K_GRAPH), *o = x ? obj_new(K_EXEC) : NULL;
    if (o && x->nkn) {
        o->kn = malloc(sizeof *o->kn * (size_t)x->nkn);
        if (!o->kn) {
            obj_del(o);
            UNLOCK();
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (int i = 0; i < x->nkn; i++) {
            o->kn[i] = x->kn[i];
            o->kn[i].origin = &x->kn[i];
        }
        o->nkn = x->nkn;
    }
    if (o) {
        o->nodes = x->nodes;
        g_st.live_execs++;
        *e = (CUgraphExec)(void *)o;
    }
    UNLOCK();
    return !x ? CUDA_ERROR_INVALID_HANDLE : o ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FK_API CUresult cuGraphLaunch(CUgraphExec e, CUstream st) {
    NEED_CTX();
    FAULT("cuGraphLaunch");
    LOCK();
    fk_obj *x = obj_find(e, K_EXEC), *s = NULL;
    CUresult r = x ? stream_get(st, &s) : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && s && s->cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (r != CUDA_SUCCESS) {
        UNLOCK();
        return r;
    }
    if (s && s->cap == CU_STREAM_CAPTURE_STATUS_ACTIVE) { /* recorded as a child graph */
        s->cap_nodes++;
        g_st.captured_nodes++;
        UNLOCK();
        return CUDA_SUCCESS;
    }
    g_st.graph_launches++;
    g_st.launches += x->nodes;
    /* a built graph's kernel nodes run in order, each with its parameters (a copy, so the
     * hook sees what the node holds, not what the caller's variables hold now) */
    int n = x->nkn;
    fk_knode *kn = n ? malloc(sizeof *kn * (size_t)n) : NULL;
    if (n && !kn) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (n) memcpy(kn, x->kn, sizeof *kn * (size_t)n);
    fakecuda_launch_hook hook = g_hook;
    void *user = g_hook_user;
    char (*names)[128] = n ? calloc((size_t)n, 128) : NULL;
    for (int i = 0; i < n; i++) {
        fk_func *f = func_find(kn[i].fn);
        if (f && names) snprintf(names[i], 128, "%s", f->name);
        g_st.grid[0] = kn[i].grid[0], g_st.grid[1] = kn[i].grid[1], g_st.grid[2] = kn[i].grid[2];
        g_st.block[0] = kn[i].block[0], g_st.block[1] = kn[i].block[1], g_st.block[2] = kn[i].block[2];
        g_st.smem = kn[i].smem;
        g_st.params = kn[i].np;
        if (f) snprintf(g_st.func, sizeof g_st.func, "%s", f->name);
    }
    UNLOCK();
    for (int i = 0; i < n && hook && names; i++) {
        void *pv[64];
        size_t off = 0;
        for (int j = 0; j < kn[i].np; j++) {
            pv[j] = kn[i].bytes + off;
            off += kn[i].psize[j];
        }
        hook(names[i], pv, kn[i].np, user);
    }
    free(names);
    free(kn);
    return CUDA_SUCCESS;
}

/* The kernel-node launch of p, checked as a launch is; fills n. */
static CUresult knode_fill(fk_knode *n, const CUDA_KERNEL_NODE_PARAMS *p) {
    if (!p || !p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY ||
        !p->blockDimZ || (uint64_t)p->blockDimX * p->blockDimY * p->blockDimZ > 1024 || p->extra)
        return CUDA_ERROR_INVALID_VALUE;
    fk_func *f = func_find(p->func);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (p->sharedMemBytes > (unsigned)f->max_dyn_smem) return CUDA_ERROR_INVALID_VALUE;
    if (f->nparams > 0 && !p->kernelParams) return CUDA_ERROR_INVALID_VALUE;
    if (f->nparams > 64 || f->pbytes > FK_NODE_PARAMS) return CUDA_ERROR_NOT_SUPPORTED;
    memset(n, 0, sizeof *n);
    n->fn = p->func;
    n->grid[0] = p->gridDimX, n->grid[1] = p->gridDimY, n->grid[2] = p->gridDimZ;
    n->block[0] = p->blockDimX, n->block[1] = p->blockDimY, n->block[2] = p->blockDimZ;
    n->smem = p->sharedMemBytes;
    n->np = f->nparams > 0 ? f->nparams : 0;
    size_t off = 0;
    for (int i = 0; i < n->np; i++) { /* read every parameter as the driver would */
        n->psize[i] = f->psize[i];
        memcpy(n->bytes + off, p->kernelParams[i], f->psize[i]);
        off += f->psize[i];
    }
    return CUDA_SUCCESS;
}

FK_API CUresult cuGraphCreate(CUgraph *g, unsigned flags) {
    NEED_CTX();
    if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuGraphCreate");
    LOCK();
    fk_obj *o = obj_new(K_GRAPH);
    if (o) g_st.live_graphs++;
    UNLOCK();
    if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
    *g = (CUgraph)(void *)o;
    return CUDA_SUCCESS;
}

/* Nodes run in the order they were added (a chain: what the library builds). */
FK_API CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                     size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p) {
    NEED_CTX();
    if (!node || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuGraphAddKernelNode");
    LOCK();
    fk_obj *o = obj_find(g, K_GRAPH);
    CUresult r = o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; r == CUDA_SUCCESS && i < ndeps; i++) {
        int found = 0;
        for (int j = 0; j < o->nkn; j++) found |= (void *)deps[i] == (void *)(intptr_t)(j + 1);
        if (!found) r = CUDA_ERROR_INVALID_VALUE;
    }
    fk_knode n;
    if (r == CUDA_SUCCESS) r = knode_fill(&n, p);
    if (r == CUDA_SUCCESS) {
        fk_knode *kn = realloc(o->kn, sizeof *kn * (size_t)(o->nkn + 1));
        if (!kn) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            o->kn = kn;
            kn[o->nkn++] = n;
            o->nodes++;
            *node = (CUgraphNode)(void *)(intptr_t)o->nkn; /* the node's number + 1 */
        }
    }
    UNLOCK();
    return r;
}

/* Edges between kernel nodes of g (run order is the order added, so an edge must point
 * forward); ordinary or programmatic (PDL) from the programmatic or launch-order port. */
FK_API CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                       const CUgraphEdgeData *ed, size_t n) {
    NEED_CTX();
    if (n && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
    FAULT("cuGraphAddDependencies");
    LOCK();
    fk_obj *o = obj_find(g, K_GRAPH);
    CUresult r = o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        intptr_t a = (intptr_t)(void *)from[i], b = (intptr_t)(void *)to[i];
        if (a < 1 || a > o->nkn || b < 1 || b > o->nkn || a >= b) r = CUDA_ERROR_INVALID_VALUE;
        if (ed && ed[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) {
            if (ed[i].from_port != CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC &&
                ed[i].from_port != CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER)
                r = CUDA_ERROR_INVALID_VALUE;
            else if (r == CUDA_SUCCESS)
                g_st.pdl_edges++;
        } else if (ed && (ed[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT || ed[i].from_port)) {
            r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    UNLOCK();
    return r;
}

FK_API CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node,
                                               const CUDA_KERNEL_NODE_PARAMS *p) {
    NEED_CTX();
    FAULT("cuGraphExecKernelNodeSetParams");
    LOCK();
    fk_obj *x = obj_find(e, K_EXEC);
    intptr_t i = (intptr_t)(void *)node - 1;
    CUresult r = !x ? CUDA_ERROR_INVALID_HANDLE
                    : i < 0 || i >= x->nkn ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    fk_knode n;
    if (r == CUDA_SUCCESS) r = knode_fill(&n, p);
    /* the driver refuses another function than the node's */
    if (r == CUDA_SUCCESS && n.fn != x->kn[i].fn) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        n.origin = x->kn[i].origin;
        x->kn[i] = n;
    }
    UNLOCK();
    return r;
}

static CUresult destroy_kind(const void *h, int kind, long *live) {
    LOCK();
    fk_obj *o = obj_find(h, kind);
    if (o) {
        obj_del(o);
        (*live)--;
    }
    UNLOCK();
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_API CUresult cuGraphExecDestroy(CUgraphExec e) {
    NEED_CTX();
    FAULT("cuGraphExecDestroy");
    return destroy_kind(e, K_EXEC, &g_st.live_execs);
}

FK_API CUresult cuGraphDestroy(CUgraph g) {
    NEED_CTX();
    FAULT("cuGraphDestroy");
    return destroy_kind(g, K_GRAPH, &g_st.live_graphs);
}

/* ---- tensor maps: the rules of cuda.h's cuTensorMapEncodeTiled documentation ---- */
/* Bits per element in global memory; 0: not a type. The packed types (16 values per 8 or 16
 * bytes) exist from compute capability 10.0 (the H200's driver rejects them). */
static int elem_bits(CUtensorMapDataType t) {
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 8;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 16;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 32;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 64;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: return g_cc >= 100 ? 4 : 0;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B:
    case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B: return g_cc >= 100 ? 8 : 0;
    default: return 0;
    }
}

FK_API CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                       void *addr, const cuuint64_t *dims,
                                       const cuuint64_t *strides, const cuuint32_t *box,
                                       const cuuint32_t *estr, CUtensorMapInterleave il,
                                       CUtensorMapSwizzle swz, CUtensorMapL2promotion l2,
                                       CUtensorMapFloatOOBfill oob) {
    NEED_INIT();
    FAULT("cuTensorMapEncodeTiled");
    int bits = elem_bits(type);
    int p16 = type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ||
              type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
    if (!map || ((uintptr_t)map % 64) || !bits || rank < 1 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
    if (il > CU_TENSOR_MAP_INTERLEAVE_32B || (il != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3))
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B && il != CU_TENSOR_MAP_INTERLEAVE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned align = il == CU_TENSOR_MAP_INTERLEAVE_32B || p16 ? 32 : 16;
    if (!addr || (uintptr_t)addr % align) return CUDA_ERROR_INVALID_VALUE;
    if (!dims || !box || !estr || (rank > 1 && !strides)) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < rank; i++) {
        if (dims[i] == 0 || dims[i] > (1ull << 32)) return CUDA_ERROR_INVALID_VALUE;
        if (box[i] == 0 || box[i] > 256) return CUDA_ERROR_INVALID_VALUE;
        if (estr[i] == 0 || estr[i] > 8) return CUDA_ERROR_INVALID_VALUE;
    }
    if (p16 && (dims[0] % 128 || box[0] != 128)) return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && dims[0] % 2) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i + 1 < rank; i++) {
        if (strides[i] % align || strides[i] >= (1ull << 40)) return CUDA_ERROR_INVALID_VALUE;
        /* each stride covers the dimension below it */
        uint64_t below = i == 0 ? (dims[0] * (uint64_t)bits + 7) / 8 : strides[i - 1] * dims[i];
        if (strides[i] < below) return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t inner = (uint64_t)box[0] * (uint64_t)bits / 8; /* bytes of the box's inner row */
    if (il == CU_TENSOR_MAP_INTERLEAVE_NONE && ((uint64_t)box[0] * (uint64_t)bits) % 128)
        return CUDA_ERROR_INVALID_VALUE;
    if (swz > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) return CUDA_ERROR_INVALID_VALUE;
    if (il == CU_TENSOR_MAP_INTERLEAVE_32B && swz != CU_TENSOR_MAP_SWIZZLE_32B)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
        !(swz == CU_TENSOR_MAP_SWIZZLE_NONE || swz == CU_TENSOR_MAP_SWIZZLE_128B ||
          swz == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B || swz == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B))
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B &&
        !(swz == CU_TENSOR_MAP_SWIZZLE_NONE || swz == CU_TENSOR_MAP_SWIZZLE_128B ||
          swz == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B))
        return CUDA_ERROR_INVALID_VALUE;
    if (il == CU_TENSOR_MAP_INTERLEAVE_NONE && swz != CU_TENSOR_MAP_SWIZZLE_NONE) {
        uint64_t span = swz == CU_TENSOR_MAP_SWIZZLE_32B ? 32 : swz == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
        if (inner > span) return CUDA_ERROR_INVALID_VALUE;
    }
    if (l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B) return CUDA_ERROR_INVALID_VALUE;
    if (oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) return CUDA_ERROR_INVALID_VALUE;
    _Static_assert(sizeof(fakecuda_tmap) <= sizeof(CUtensorMap), "tmap form fits 128 bytes");
    fakecuda_tmap t;
    memset(&t, 0, sizeof t);
    t.magic = FAKECUDA_TMAP_MAGIC;
    t.addr = (uint64_t)(uintptr_t)addr;
    t.type = (uint32_t)type, t.rank = rank, t.interleave = (uint32_t)il;
    t.swizzle = (uint32_t)swz, t.l2 = (uint32_t)l2, t.oob = (uint32_t)oob;
    for (unsigned i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
        t.box[i] = (uint16_t)box[i];
        t.estrides[i] = (uint8_t)estr[i];
        if (i + 1 < rank) t.strides[i] = strides[i];
    }
    memset(map, 0, sizeof *map);
    memcpy(map, &t, sizeof t);
    return CUDA_SUCCESS;
}

/* fakecuda.h: the second context destroyed and a new one created at the same handle. */
FK_API void fakecuda_recreate_second_context(void) {
    LOCK();
    CUcontext c = (CUcontext)(void *)&g_second;
    for (fk_obj **p = &g_objs; *p;) {
        fk_obj *o = *p;
        if (o->ctx != c) {
            p = &o->next;
            continue;
        }
        switch (o->kind) {
        case K_DEV:
            g_st.live_dev_allocs--;
            g_st.live_dev_bytes -= o->size;
            free(o->mem);
            break;
        case K_HOST:
            g_st.live_host_allocs--;
            free(o->mem);
            break;
        case K_STREAM:
            if (o->cap != CU_STREAM_CAPTURE_STATUS_NONE && o->cap_global) g_global_captures--;
            g_st.live_streams--;
            break;
        case K_EVENT: g_st.live_events--; break;
        case K_GRAPH: g_st.live_graphs--; break;
        case K_EXEC: g_st.live_execs--; break;
        case K_MODULE:
            g_st.live_modules--;
            for (fk_func **f = &g_funcs; *f;) {
                if ((*f)->mod == o) {
                    fk_func *d = *f;
                    *f = d->next;
                    free(d);
                } else {
                    f = &(*f)->next;
                }
            }
            break;
        default: break;
        }
        *p = o->next;
        free(o->kn);
        free(o);
    }
    g_second.id = g_next_ctx_id++;
    UNLOCK();
}
