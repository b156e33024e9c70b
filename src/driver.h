/* driver.h - the CUDA driver API, loaded with dlopen("libcuda.so.1") on first use so that
 * everything that does not launch works on a machine without a driver. Only the types and
 * entry points the library uses are declared (from cuda.h of the toolkit it is built with). */
#ifndef NJ_DRIVER_H
#define NJ_DRIVER_H

#include <cuda.h>

#include "common.h"

typedef struct drv_api {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxGetId)(CUcontext, unsigned long long *);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
    CUresult (*cuMemAllocHost)(void **, size_t);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode *);
    /* graphs: the MoE call's two-kernel graph (src/moe.c), the tests and the bench command */
    CUresult (*cuGraphCreate)(CUgraph *, unsigned);
    CUresult (*cuGraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                     const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                               const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*cuGraphAddDependencies)(CUgraph, const CUgraphNode *, const CUgraphNode *,
                                       const CUgraphEdgeData *, size_t);
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                       const cuuint64_t *, const cuuint64_t *,
                                       const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle,
                                       CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
} drv_api;

/* Load the driver (once per process) and make sure a context is current: the caller's, or
 * device 0's primary context. Fills ctx->device_cc / device_sms. @return the API table or
 * NULL with NVFP4JIT_ERR_NO_DRIVER / NVFP4JIT_ERR_NO_DEVICE recorded on ctx. */
const drv_api *drv_get(nvfp4jit_ctx *ctx, nvfp4jit_status *status);

/* The device a launch would use (the current context's, else device 0), without creating or
 * changing any context and without touching a nvfp4jit_ctx: its compute capability
 * (major*10+minor) and SM count. @return 0, or -1 without a driver or device. */
int drv_device_query(int *cc, int *sms);

/* Only load the driver library (no context). @return NULL if libcuda.so.1 is not there. */
const drv_api *drv_load(void);

/* The address of another entry point of the loaded driver, by its symbol name (for the
 * extension API: tools that launch work of their own use the library's driver).
 * @return NULL before drv_load succeeded or when there is no such symbol. */
void *drv_proc(const char *name);

/* A CUDA context as the library remembers it: its handle and its unique ID (cuCtxGetId). A
 * handle may be handed out again to a context created after the first was destroyed; the ID
 * is never reused within the process, so (handle, ID) tells a live context from a dead one. */
typedef struct drv_ctx {
    CUcontext h;
    unsigned long long id;
} drv_ctx;

/* The current context (h NULL and id 0 when none is current or the driver fails). */
drv_ctx drv_ctx_current(const drv_api *api);

/* The current context into *out, or {NULL, 0} with the driver's error (CUDA_ERROR_INVALID_CONTEXT
 * when none is current), for a message that names what failed. */
CUresult drv_ctx_get(const drv_api *api, drv_ctx *out);

/* 1 when a and b are the same context (same handle and ID), else 0. */
static inline int drv_ctx_same(drv_ctx a, drv_ctx b) { return a.h == b.h && a.id == b.id; }

/* 1 when the context remembered in c still exists (its handle names a context with its ID),
 * 0 when it was destroyed (the handle is dead or names a newer context). */
int drv_ctx_alive(const drv_api *api, drv_ctx c);

/* Record a failed driver call on ctx: "what: CUDA_ERROR_NAME (string)". @return ERR_CUDA. */
nvfp4jit_status drv_fail(nvfp4jit_ctx *ctx, CUresult r, const char *what);

#define DRV_CHECK(ctx, api, call, what)                                                       \
    do {                                                                                     \
        CUresult drv_r_ = (api)->call;                                                       \
        if (drv_r_ != CUDA_SUCCESS) return drv_fail((ctx), drv_r_, (what));                   \
    } while (0)

/* Test hook: when set (non-zero), drv_load() behaves as if libcuda.so.1 were missing. */
extern int drv_test_force_missing;

#endif
