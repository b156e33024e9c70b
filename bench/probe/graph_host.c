/* graph_host.c - host microseconds per call of three ways to launch two dependent kernels
 * (src/moe.c's choice for the MoE path): two cuLaunchKernel, one cuGraphLaunch of a two-node
 * graph, and cuGraphExecKernelNodeSetParams on the first node + cuGraphLaunch. Each kernel
 * takes (u64, 64-byte struct) parameters as the act16 kernels do. Built and run by
 * bench/h200.sh probe. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k1(.param .u64 p0, .param .align 8 .b8 p1[64]) { ret; }\n"
    ".visible .entry k2(.param .u64 p0, .param .align 8 .b8 p1[64]) { ret; }\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s: %d\n", #x, (int)r_); return 1; } } while (0)

int main(void) {
    CUdevice d; CUcontext c; CUmodule m; CUfunction f1, f2; CUstream s;
    CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
    CK(cuModuleLoadData(&m, ptx));
    CK(cuModuleGetFunction(&f1, m, "k1")); CK(cuModuleGetFunction(&f2, m, "k2"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned long long blob = 0; unsigned char args[64]; memset(args, 0, 64);
    void *pa[] = {&blob, args};
    CUgraph g; CUgraphExec ge; CUgraphNode n1, n2;
    CK(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS kp; memset(&kp, 0, sizeof kp);
    kp.func = f1; kp.gridDimX = 300; kp.gridDimY = kp.gridDimZ = 1; kp.blockDimX = 256;
    kp.blockDimY = kp.blockDimZ = 1; kp.kernelParams = pa;
    CK(cuGraphAddKernelNode(&n1, g, NULL, 0, &kp));
    kp.func = f2; kp.gridDimX = 2848; kp.blockDimX = 160; kp.sharedMemBytes = 0;
    CK(cuGraphAddKernelNode(&n2, g, &n1, 1, &kp));
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    /* bursts of B calls, the host clock around each burst only, the stream drained between
     * bursts (so a full launch queue never blocks the host) */
    const int B = 16, R = 200;
    for (int round = 0; round < 3; round++) {
        double t[4] = {0, 0, 0, 0};
        for (int r = 0; r < R; r++) {
            for (int way = 0; way < 4; way++) {
                double t0 = now_us();
                for (int i = 0; i < B; i++) {
                    args[0] = (unsigned char)(r * B + i);
                    if (way == 0) {
                        CK(cuLaunchKernel(f1, 300, 1, 1, 256, 1, 1, 0, s, pa, NULL));
                        CK(cuLaunchKernel(f2, 2848, 1, 1, 160, 1, 1, 0, s, pa, NULL));
                    } else if (way == 1) {
                        CK(cuGraphLaunch(ge, s));
                    } else if (way == 2) {
                        kp.func = f1; kp.gridDimX = 300; kp.blockDimX = 256;
                        CK(cuGraphExecKernelNodeSetParams(ge, n1, &kp));
                        CK(cuGraphLaunch(ge, s));
                    } else {
                        CK(cuLaunchKernel(f1, 300, 1, 1, 256, 1, 1, 0, s, pa, NULL));
                    }
                }
                t[way] += now_us() - t0;
                CK(cuStreamSynchronize(s));
            }
        }
        printf("round %d host us/call (bursts of %d): two cuLaunchKernel %.2f | cuGraphLaunch "
               "(2 nodes) %.2f | SetParams + cuGraphLaunch %.2f | one cuLaunchKernel %.2f\n",
               round, B, t[0] / (R * B), t[1] / (R * B), t[2] / (R * B), t[3] / (R * B));
    }
    return 0;
}
