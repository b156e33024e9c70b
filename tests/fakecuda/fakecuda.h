/* fakecuda.h - control interface of the fake CUDA driver (tests/fakecuda/fakecuda.c), a
 * libcuda.so.1 stand-in for CPU tests. The library loads it instead of the real driver when
 * NVFP4JIT_CUDA_DRIVER names it; a test reaches these functions with
 * dlopen(path, RTLD_NOLOAD) + dlsym (the test binary does not link the fake).
 *
 * The fake: one device (compute capability $FAKECUDA_CC, default 90; $FAKECUDA_SMS SMs,
 * default 132; $FAKECUDA_DEVICES=0: no device; $FAKECUDA_DRIFT: fakecuda_set_drift), device
 * memory is host memory (a CUdeviceptr is a host address; copies and memsets check that the
 * range lies inside one live allocation), modules must be ELF images and know their functions
 * by name, launches check
 * their arguments (grid, block, shared memory against the function's attribute, the
 * parameter sizes read from the cubin's .nv.info) and do nothing else (a hook may act),
 * stream capture and graphs count their nodes (a graph built with cuGraphAddKernelNode keeps its
 * kernel nodes' launches and parameter bytes: cuGraphLaunch runs the hook on each, in the order
 * added; cuGraphExecKernelNodeSetParams replaces an instantiated node's), tensor maps are validated as cuda.h documents
 * and encoded into a readable 128-byte form (fakecuda_tmap).
 *
 * Fault injection: $FAKECUDA_FAIL (read at cuInit) or fakecuda_fail(), a comma-separated
 * list of "name:N" (the N-th call of name from now fails, once), "name:N+" (the N-th and
 * every later call fails) or "name:N:code" / "name:N+:code" (that CUresult). name is the API
 * name without _v2 (cuMemAlloc, cuModuleLoadData, cuLaunchKernel, cuTensorMapEncodeTiled,
 * ...). Default codes: cuMemAlloc/cuMemAllocHost CUDA_ERROR_OUT_OF_MEMORY, cuModuleLoadData
 * CUDA_ERROR_INVALID_IMAGE, cuLaunchKernel/cuLaunchCooperativeKernel
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, cuTensorMapEncodeTiled CUDA_ERROR_INVALID_VALUE, others
 * CUDA_ERROR_UNKNOWN. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

typedef struct fakecuda_stats {
    long launches;        /* executed kernel launches (eager, cooperative, graph replays) */
    long coop_launches;   /* of them cooperative */
    long captured_nodes;  /* launches/copies recorded into graphs by captures */
    long graph_launches;  /* cuGraphLaunch calls */
    long pdl_edges;       /* programmatic edges added to built graphs */
    long pdl_launches;    /* cuLaunchKernelEx calls with programmatic stream serialization */
    unsigned grid[3], block[3], smem; /* of the last launch (eager or captured) */
    int params;           /* parameters of the last launch's function (-1: unknown) */
    size_t params_bytes;  /* their total size */
    char func[128];       /* name of the last launch's function */
    long live_dev_allocs, live_host_allocs, live_streams, live_events, live_modules,
        live_graphs, live_execs;
    size_t live_dev_bytes;
    long htod_copies, dtoh_copies, memsets;
    long syncs;                 /* calls that wait for the device: cuCtxSynchronize,
                                   cuStreamSynchronize, cuEventSynchronize, the synchronous
                                   copies and memsets, memory frees */
    long pageable_async_copies; /* cuMemcpyHtoDAsync from memory not of cuMemAllocHost (the
                                   real driver stages it, synchronously) */
} fakecuda_stats;

/* The 128-byte form cuTensorMapEncodeTiled writes. */
typedef struct fakecuda_tmap {
    uint64_t magic; /* FAKECUDA_TMAP_MAGIC */
    uint64_t addr;
    uint32_t type, rank, interleave, swizzle, l2, oob;
    uint64_t dims[5];
    uint64_t strides[4];
    uint16_t box[5];
    uint8_t estrides[5];
    uint8_t pad[1];
} fakecuda_tmap;
#define FAKECUDA_TMAP_MAGIC 0x50414d544b414646ull /* "FFAKTMAP" */

typedef void (*fakecuda_launch_hook)(const char *func, void **params, int nparams,
                                     void *user);

/* Exported by the fake (look up with dlsym). */
void fakecuda_get_stats(fakecuda_stats *out);
long fakecuda_calls(const char *name); /* calls of an API function so far */
int fakecuda_fail(const char *spec);   /* add fault specs; NULL or "" clears all. -1: bad spec */
void fakecuda_set_launch_hook(fakecuda_launch_hook hook, void *user);
/* 1: a recorded event stays "not ready" for cuEventQuery until it is synchronised (directly,
 * or by cuStreamSynchronize / cuCtxSynchronize). */
void fakecuda_set_events_pending(int on);
/* The device's SM count from now on (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT and the
 * co-residency limit); $FAKECUDA_SMS (read at cuInit, default 132) sets it first. */
void fakecuda_set_sms(int sms);
/* Timing drift from now on: cuEventElapsedTime reports 10 us for any interval, times
 * (1 + ppm * n / 1e6) with n the number of eager cuEventRecord calls up to the interval's
 * start event, i.e. a GPU that slows down steadily (as one under its power cap does during a
 * long run). 0 (the default; $FAKECUDA_DRIFT, read at cuInit): no drift. */
void fakecuda_set_drift(int ppm);
/* The compute capability the device reports from now on (FAKECUDA_CC sets it at cuInit): an
 * in-process test of the sm_100a paths sets 100 and puts 90 back. */
void fakecuda_set_cc(int cc);
/* 1: the device memory of the last cuMemFree is kept, and the next cuMemAlloc of at most its
 * size returns that address again (a real allocator may hand a freed address out again, with
 * fewer bytes behind it); 0 (the default): off, the kept block is released. */
void fakecuda_set_reuse(int on);
/* A second context handle (besides the primary one of cuDevicePrimaryCtxRetain) that
 * cuCtxSetCurrent accepts, on the same device; only fakecuda_recreate_second_context destroys
 * it (and makes a new one at the same handle). A module belongs to the
 * context current at its cuModuleLoadData: cuModuleUnload of it fails with
 * CUDA_ERROR_INVALID_CONTEXT unless that context is current, and so does an eager launch of
 * one of its functions (live_modules counts the modules of every context). */
struct CUctx_st;
void fakecuda_second_context(struct CUctx_st **out); /* a CUcontext * (cuda.h) */
/* The second context destroyed and a new one created at the same handle (a real driver may
 * hand a destroyed context's handle out again): the objects made while the old one was
 * current (memory, streams, events, graphs, modules and their functions) are gone, and
 * cuCtxGetId reports a new ID for the handle. Every context has an ID (cuCtxGetId). */
void fakecuda_recreate_second_context(void);

#endif
