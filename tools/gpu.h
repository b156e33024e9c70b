/* gpu.h - device-side helpers of the tool (demo, bench): the device, random NVFP4 data in
 * device buffers, event timing, CPU dequantisation to fp16/bf16. Uses the driver the library
 * loaded (nvfp4jit_ext_cuda_init: libcuda is dlopen'ed, the primary context of device 0 is
 * current), through a table of the entry points the tool calls. */
#ifndef NJ_TOOL_GPU_H
#define NJ_TOOL_GPU_H

#include <cuda.h>

#include "tool.h"

/* The driver entry points the tool calls, resolved by nvfp4jit_ext_cuda_proc (their versioned
 * symbol names: tools/gpu.c). */
typedef struct tool_cuda {
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
    /* bench --moe's driver floor: an empty kernel's launches */
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuGraphCreate)(CUgraph *, unsigned);
    CUresult (*cuGraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                     const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                               const CUDA_KERNEL_NODE_PARAMS *);
} tool_cuda;

typedef struct tool_dev {
    nvfp4jit_ctx *ctx;
    const tool_cuda *api;
    CUstream stream;
    int cc; /* compute capability, major*10+minor */
} tool_dev;

/* Compute capability of the device, or 0 when there is no driver or device (why says which).
 * Loads nothing else. */
int tool_device_cc(nvfp4jit_ctx *ctx, char *why, size_t why_n);
/* The arch whose kernels run on a device of capability cc (90 -> sm_90a, 100 -> sm_100a).
 * @return 0 and *arch, -1 if none. */
int tool_arch_for_cc(int cc, nvfp4jit_arch *arch);

/* Load the driver, make the context current, create a stream. @return 0, or 1 after a
 * message. */
int tool_dev_open(const char *cmd, nvfp4jit_ctx *ctx, tool_dev *d);
void tool_dev_close(tool_dev *d);
/* Report a failed driver call ("cmd: what: CUDA_ERROR_X (string)"). @return 1. */
int tool_cu_fail(const char *cmd, const tool_dev *d, CUresult r, const char *what);

/* Random NVFP4 operands of one problem set in device memory, with host copies. */
typedef struct tool_data {
    size_t n;
    nvfp4jit_group *g;          /* shapes and device pointers (0 for M = 0 groups) */
    uint8_t **a, **b, **sfa, **sfb; /* host copies per group (NULL for M = 0 groups) */
    int *max_exp;               /* the scale cap used per group */
} tool_data;

/* Allocate, fill (nvfp4jit_ext_ref_fill_packed over all 16 codes, nvfp4jit_ext_ref_fill_scales with
 * tool_scale_max_exp(K)) and upload every group; C is allocated but not written.
 * @return 0, or 1 after a message (everything is freed). */
int tool_data_create(const char *cmd, tool_dev *d, const nvfp4jit_ext_set *s, uint64_t seed,
                     tool_data *out);
void tool_data_free(tool_dev *d, tool_data *t);

/* Enqueue one unit of work on the device's stream. @return 0 or non-zero after a message. */
typedef int (*tool_work_fn)(void *user);

/* Time fn: `warmup` untimed runs, then `iters` runs each between two events on d->stream.
 * When flush is non-zero, flush_bytes of it are overwritten with cuMemsetD8Async before each
 * run, outside the events, so every run starts with a cold L2. Median and minimum in us.
 * @return 0, or 1 after a message. */
int tool_time(const char *cmd, tool_dev *d, tool_work_fn fn, void *user, int warmup, int iters,
              CUdeviceptr flush, size_t flush_bytes, double *median_us, double *min_us);

/* tool_time of n works at once, in turn: in rounds, each work runs a block of its own (after
 * a flush each launch, between its own events): for n > 1 a lead launch, which follows the
 * previous work's block, then TOOL_BLOCK timed launches; iters rounded up to whole rounds, the
 * works' order reversed every other round, the stream synchronised after each round. So a
 * drift of the clocks (the power cap during a long run: bench/RESULTS.md 2026-12-06) or the
 * temperature during the measurement reaches every work alike, and each work's timed launches
 * follow its own, as when it is timed alone (after another work's launches the first one was
 * 3-4 us slower on bench3/bench4, an H100: the lead). median_us[f] (and min_us[f] unless NULL)
 * per work over its timed launches; lead_us[f] unless NULL: the median of its leads (-1 for
 * n = 1, which has none). */
#define TOOL_BLOCK 5
int tool_time_each(const char *cmd, tool_dev *d, int n, const tool_work_fn *fn, void *const *user,
                   int warmup, int iters, CUdeviceptr flush, size_t flush_bytes, double *median_us,
                   double *min_us, double *lead_us);

/* Dequantise a packed operand (rows x K, blocked scales) to row-major fp16 (bf16 = 0) or
 * bf16 (bf16 = 1) bits, with `threads` threads. Exact: every e2m1*e4m3 value is
 * representable in both. */
void tool_dequant(const uint8_t *packed, const uint8_t *sf, int64_t rows, int64_t k, int bf16,
                  uint16_t *out, int threads);

#endif
