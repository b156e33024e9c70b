/* driver.c - the CUDA driver, loaded on first use.
 * NOTE: libcuda.so.1 is the driver's stable soname; the toolkit's libcuda.so is a link-time
 * stub that must never be loaded at run time. */
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drv_test_force_missing;

static drv_api g_api;
static void *g_handle; /* the driver library, for drv_proc */
static int g_loaded;   /* 0 not tried, 1 ok, -1 failed */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

const drv_api *drv_load(void) {
    if (drv_test_force_missing) return NULL;
    pthread_mutex_lock(&g_lock);
    if (g_loaded == 0) {
        /* NVFP4JIT_CUDA_DRIVER: another driver library (the tests' fake, tests/fakecuda);
         * ignored in set-user-ID/set-group-ID processes (secure_getenv).
         * NOTE: the one environment variable not read at context creation (src/context.c):
         * the driver table is process-wide (one dlopen for every context, as libcuda itself
         * is one per process), so it is read once, here, by the first load. */
        const char *path = secure_getenv("NVFP4JIT_CUDA_DRIVER");
        if (!path || !*path) path = "libcuda.so.1";
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        int ok = h != NULL;
#define LOAD(field, sym)                                                                     \
    if (ok) {                                                                                \
        *(void **)(&g_api.field) = dlsym(h, sym);                                            \
        if (!g_api.field) ok = 0;                                                            \
    }
        LOAD(cuInit, "cuInit");
        LOAD(cuGetErrorName, "cuGetErrorName");
        LOAD(cuGetErrorString, "cuGetErrorString");
        LOAD(cuDriverGetVersion, "cuDriverGetVersion");
        LOAD(cuDeviceGetCount, "cuDeviceGetCount");
        LOAD(cuDeviceGet, "cuDeviceGet");
        LOAD(cuDeviceGetAttribute, "cuDeviceGetAttribute");
        LOAD(cuDeviceGetName, "cuDeviceGetName");
        LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
        LOAD(cuCtxGetCurrent, "cuCtxGetCurrent");
        LOAD(cuCtxGetId, "cuCtxGetId");
        LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
        LOAD(cuCtxGetDevice, "cuCtxGetDevice");
        LOAD(cuCtxSynchronize, "cuCtxSynchronize");
        LOAD(cuModuleLoadData, "cuModuleLoadData");
        LOAD(cuModuleUnload, "cuModuleUnload");
        LOAD(cuModuleGetFunction, "cuModuleGetFunction");
        LOAD(cuFuncSetAttribute, "cuFuncSetAttribute");
        LOAD(cuLaunchKernel, "cuLaunchKernel");
        LOAD(cuMemAlloc, "cuMemAlloc_v2");
        LOAD(cuMemFree, "cuMemFree_v2");
        LOAD(cuMemGetInfo, "cuMemGetInfo_v2");
        LOAD(cuMemAllocHost, "cuMemAllocHost_v2");
        LOAD(cuMemFreeHost, "cuMemFreeHost");
        LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
        LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
        LOAD(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
        LOAD(cuMemsetD8, "cuMemsetD8_v2");
        LOAD(cuMemsetD8Async, "cuMemsetD8Async");
        LOAD(cuStreamCreate, "cuStreamCreate");
        LOAD(cuStreamDestroy, "cuStreamDestroy_v2");
        LOAD(cuStreamSynchronize, "cuStreamSynchronize");
        LOAD(cuEventCreate, "cuEventCreate");
        LOAD(cuEventDestroy, "cuEventDestroy_v2");
        LOAD(cuEventRecord, "cuEventRecord");
        LOAD(cuEventSynchronize, "cuEventSynchronize");
        LOAD(cuEventElapsedTime, "cuEventElapsedTime");
        LOAD(cuEventQuery, "cuEventQuery");
        LOAD(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        LOAD(cuStreamIsCapturing, "cuStreamIsCapturing");
        LOAD(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
        LOAD(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
        LOAD(cuStreamEndCapture, "cuStreamEndCapture");
        LOAD(cuGraphCreate, "cuGraphCreate");
        LOAD(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2");
        LOAD(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
        LOAD(cuGraphAddDependencies, "cuGraphAddDependencies_v2");
        LOAD(cuLaunchKernelEx, "cuLaunchKernelEx");
        LOAD(cuGraphInstantiate, "cuGraphInstantiateWithFlags");
        LOAD(cuGraphLaunch, "cuGraphLaunch");
        LOAD(cuGraphExecDestroy, "cuGraphExecDestroy");
        LOAD(cuGraphDestroy, "cuGraphDestroy");
        LOAD(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
#undef LOAD
        if (ok && g_api.cuInit(0) != CUDA_SUCCESS) ok = 0;
        if (!ok && h) dlclose(h); /* a library without every entry point, or cuInit failed */
        if (ok) g_handle = h;
        g_loaded = ok ? 1 : -1;
    }
    pthread_mutex_unlock(&g_lock);
    return g_loaded == 1 ? &g_api : NULL;
}

void *drv_proc(const char *name) {
    pthread_mutex_lock(&g_lock);
    void *h = g_loaded == 1 ? g_handle : NULL;
    pthread_mutex_unlock(&g_lock);
    return h && name ? dlsym(h, name) : NULL;
}

CUresult drv_ctx_get(const drv_api *api, drv_ctx *out) {
    drv_ctx c = {NULL, 0};
    *out = c;
    if (!api) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = api->cuCtxGetCurrent(&c.h);
    if (r == CUDA_SUCCESS && !c.h) r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS) r = api->cuCtxGetId(c.h, &c.id);
    if (r == CUDA_SUCCESS) *out = c;
    return r;
}

drv_ctx drv_ctx_current(const drv_api *api) {
    drv_ctx c;
    drv_ctx_get(api, &c);
    return c;
}

int drv_ctx_alive(const drv_api *api, drv_ctx c) {
    unsigned long long id = 0;
    return api && c.h && api->cuCtxGetId(c.h, &id) == CUDA_SUCCESS && id == c.id;
}

nvfp4jit_status drv_fail(nvfp4jit_ctx *ctx, CUresult r, const char *what) {
    const char *name = NULL, *str = NULL;
    if (g_loaded == 1) {
        g_api.cuGetErrorName(r, &name);
        g_api.cuGetErrorString(r, &str);
    }
    return nj_fail(ctx, NVFP4JIT_ERR_CUDA, "%s: %s (%s)", what, name ? name : "CUDA_ERROR_?",
                   str ? str : "no description");
}

const drv_api *drv_get(nvfp4jit_ctx *ctx, nvfp4jit_status *status) {
    const drv_api *api = drv_load();
    if (!api) {
        *status = nj_fail(ctx, NVFP4JIT_ERR_NO_DRIVER,
                          "the CUDA driver (libcuda.so.1) could not be loaded or initialised");
        return NULL;
    }
    CUcontext cur = NULL;
    if (api->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur) {
        int count = 0;
        if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
            *status = nj_fail(ctx, NVFP4JIT_ERR_NO_DEVICE, "no CUDA device");
            return NULL;
        }
        CUdevice d;
        CUresult r = api->cuDeviceGet(&d, 0);
        if (r == CUDA_SUCCESS) r = api->cuDevicePrimaryCtxRetain(&cur, d);
        if (r == CUDA_SUCCESS) r = api->cuCtxSetCurrent(cur);
        if (r != CUDA_SUCCESS) {
            drv_fail(ctx, r, "making device 0's primary context current");
            *status = NVFP4JIT_ERR_NO_DEVICE;
            return NULL;
        }
    }
    CUdevice dev;
    CUresult r = api->cuCtxGetDevice(&dev);
    int ma = 0, mi = 0, sms = 0;
    if (r == CUDA_SUCCESS)
        r = api->cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == CUDA_SUCCESS)
        r = api->cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (r == CUDA_SUCCESS)
        r = api->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (r != CUDA_SUCCESS) {
        drv_fail(ctx, r, "reading device attributes");
        *status = NVFP4JIT_ERR_NO_DEVICE;
        return NULL;
    }
    if (ctx) {
        ctx->device_cc = ma * 10 + mi;
        ctx->device_sms = sms;
        ctx->cu_ready = 1;
    }
    *status = NVFP4JIT_OK;
    return api;
}

int drv_device_query(int *cc, int *sms) {
    *cc = *sms = 0;
    const drv_api *api = drv_load();
    if (!api) return -1;
    CUcontext cur = NULL;
    CUdevice dev;
    if (api->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) {
        if (api->cuCtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
    } else {
        int count = 0;
        if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) return -1;
        if (api->cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return -1;
    }
    int ma = 0, mi = 0, n = 0;
    if (api->cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
            CUDA_SUCCESS ||
        api->cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
            CUDA_SUCCESS ||
        api->cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) !=
            CUDA_SUCCESS)
        return -1;
    *cc = ma * 10 + mi;
    *sms = n;
    return 0;
}
