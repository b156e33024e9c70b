// tma_stream.cu: what the act16 decode tiles' copy pipeline can deliver, without the kernel.
// A probe for issue 13 part 3 (kernel-friendly weight layout), not part of the library.
//
// One CTA per tile, as act16: a producer thread fills a ring of STAGES stages (full/empty
// mbarriers), 8 consumer warps wait for each stage, spin DELAY clocks (the decode and wgmma they
// would do), and release it. Per stage, like 128x24x256 on decode64-up (K = 7168, N = 4096 per
// expert, 44 experts with tokens):
//   weights  "raw": one 2D TMA box of 128 rows x 128 bytes from the row-major [N][K/2] array
//                   (rows 3584 bytes apart), as the kernel reads it today;
//            "packed": one 1D bulk copy of the same 16 KB, contiguous (a tile-major layout);
//   scales   "raw": 4 boxes of 512 bytes (one per 64-k block); "packed": one 2 KB bulk copy;
//   tokens   4 boxes of TOKN rows x 128 bytes (128B swizzle) from a 7 MB fp16 array (L2-resident),
//            or none (tok=0).
// Prints the time of the grid and the weight+scale bytes per second from DRAM.
// Build: nvcc -O2 -arch=sm_90a -o tma_stream tma_stream.cu -lcuda
// Run:   ./tma_stream MODE(raw|packed|read) STAGES CTAS_PER_SM TOKN DELAY [ITERS]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned int u32;
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

enum { ROWS = 128, ROWB = 128, PITCH = 3584, NK = PITCH / ROWB, WST = ROWS * ROWB, SFST = 2048,
       KTOK = 7168 };

struct Args {
  CUtensorMap wmap, smap, tmap;
  const unsigned char *w, *sf;
  int packed, stages, tokn, tok_bytes, delay, tiles_per_expert, ntok_rows;
};

__device__ __forceinline__ u32 sa(const void *p) { return (u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void wait(u32 b, u32 ph) {
  asm volatile("{\n.reg .pred P;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n@!P bra W;\n}"
               :: "r"(b), "r"(ph) : "memory");
}

__global__ void __launch_bounds__(288) probe(const __grid_constant__ Args a) {
  extern __shared__ __align__(16) unsigned char raw[];
  unsigned char *sm = raw + ((1024u - (sa(raw) & 1023u)) & 1023u);
  const int S = a.stages, stage = WST + SFST + a.tok_bytes;
  const u32 full0 = sa(sm + S * stage), empty0 = full0 + 8 * S;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; s++) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(full0 + 8 * s));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 8;" :: "r"(empty0 + 8 * s));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int tile = blockIdx.x, expert = tile / a.tiles_per_expert;
  const int x0 = tile * ROWS;                          // weight row
  const int y0 = (expert * 24) % (a.ntok_rows - 24);   // token rows of the expert
  if (threadIdx.x == 256) {
    for (int kt = 0; kt < NK; kt++) {
      const int slot = kt % S;
      if (kt >= S) wait(empty0 + 8 * slot, (kt / S - 1) & 1);
      const u32 full = full0 + 8 * slot, dst = sa(sm + slot * stage);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(full),
                   "r"(stage) : "memory");
      if (a.packed) {
        const unsigned char *src = a.w + ((size_t)tile * NK + kt) * WST;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(dst), "l"(src), "r"(WST), "r"(full) : "memory");
        const unsigned char *ssrc = a.sf + ((size_t)tile * NK + kt) * SFST;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(dst + WST), "l"(ssrc), "r"(SFST), "r"(full) : "memory");
      } else {
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(dst), "l"(&a.wmap), "r"(kt * ROWB), "r"(x0), "r"(full) : "memory");
        for (int j = 0; j < 4; j++)
          asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                       :: "r"(dst + WST + 512 * j), "l"(&a.smap), "r"(0), "r"(tile * NK * 4 + kt * 4 + j), "r"(full) : "memory");
      }
      for (int j = 0; j < 4 && a.tokn; j++)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(dst + WST + SFST + j * a.tokn * 128), "l"(&a.tmap), "r"((kt * 4 + j) * 64),
                        "r"(y0), "r"(full) : "memory");
    }
  } else if (threadIdx.x < 256) {
    const int lane = threadIdx.x % 32;
    u32 acc = 0;
    for (int kt = 0; kt < NK; kt++) {
      const int slot = kt % S;
      wait(full0 + 8 * slot, (kt / S) & 1);
      acc += *(volatile u32 *)(sm + slot * stage + threadIdx.x * 4);
      const long long t0 = clock64();
      while (clock64() - t0 < a.delay) { }
      __syncwarp();
      if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(empty0 + 8 * slot) : "memory");
    }
    if (acc == 0x12345678u) printf("x");
  }
}

// the ceiling: plain 16-byte loads over the same weights and scales, grid-stride
__global__ void __launch_bounds__(512) readall(const uint4 *p, size_t n, u32 *out) {
  u32 acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = __ldcs(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *out = acc;
}

static void encode(CUtensorMap *m, CUtensorMapDataType t, void *p, u64 inner, u64 rows, u64 pitch,
                   u32 bi, u32 br, CUtensorMapSwizzle sw) {
  cuuint64_t dims[2] = {inner, rows}, str[1] = {pitch};
  cuuint32_t box[2] = {bi, br}, es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(m, t, 2, p, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { fprintf(stderr, "encode %d\n", (int)r); exit(1); }
}

int main(int argc, char **argv) {
  if (argc < 6) { fprintf(stderr, "usage: %s raw|packed|read STAGES CTAS_PER_SM TOKN DELAY [ITERS]\n", argv[0]); return 2; }
  Args a;
  memset(&a, 0, sizeof a);
  a.packed = !strcmp(argv[1], "packed");
  a.stages = atoi(argv[2]);
  const int ctas = atoi(argv[3]);
  a.tokn = atoi(argv[4]);
  a.delay = atoi(argv[5]);
  const int iters = argc > 6 ? atoi(argv[6]) : 10;
  const int experts = 44, n = 4096;
  a.tiles_per_expert = n / ROWS;
  a.tok_bytes = 4 * a.tokn * 128;
  a.ntok_rows = 512;
  const size_t wbytes = (size_t)experts * n * PITCH, sfbytes = wbytes / 8;
  unsigned char *w, *sf, *tok, *flush;
  CK(cudaMalloc(&w, wbytes + sfbytes));   // (read mode reads both as one array)
  sf = w + wbytes;
  CK(cudaMalloc(&tok, (size_t)a.ntok_rows * KTOK * 2));
  CK(cudaMalloc(&flush, 256u << 20));
  CK(cudaMemset(w, 1, wbytes));
  CK(cudaMemset(sf, 1, sfbytes));
  CK(cudaMemset(tok, 0, (size_t)a.ntok_rows * KTOK * 2));
  a.w = w; a.sf = sf;
  encode(&a.wmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, w, PITCH, (u64)experts * n, PITCH, ROWB, ROWS,
         CU_TENSOR_MAP_SWIZZLE_NONE);
  encode(&a.smap, CU_TENSOR_MAP_DATA_TYPE_UINT32, sf, 128, sfbytes / 512, 512, 128, 1,
         CU_TENSOR_MAP_SWIZZLE_NONE);
  if (a.tokn)
    encode(&a.tmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, tok, KTOK, a.ntok_rows, KTOK * 2, 64, a.tokn,
           CU_TENSOR_MAP_SWIZZLE_128B);
  const int stage = WST + SFST + a.tok_bytes;
  int smem = a.stages * (stage + 16) + 1024;
  const int per_sm = 227 * 1024 / ctas - 1024;   // shared memory that leaves room for CTAS per SM only
  if (smem > per_sm) { fprintf(stderr, "%d stages do not fit %d CTAs per SM\n", a.stages, ctas); return 2; }
  smem = per_sm;
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int grid = experts * a.tiles_per_expert;
  const int is_read = !strcmp(argv[1], "read");
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f, sum = 0;
  for (int i = 0; i < iters + 2; i++) {
    CK(cudaMemsetAsync(flush, i, 256u << 20));
    CK(cudaEventRecord(e0));
    if (is_read) readall<<<132 * 4, 512>>>((const uint4 *)w, (wbytes + sfbytes) / 16, (u32 *)flush);
    else probe<<<grid, 288, smem>>>(a);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 2) { sum += ms; if (ms < best) best = ms; }
  }
  const double us = 1000.0 * sum / iters, dram = (double)(wbytes + sfbytes);
  printf("%-6s stages %d ctas/SM %d tokn %2d delay %4d: %7.1f us (best %7.1f), %.2f TB/s weights+scales\n",
         argv[1], a.stages, ctas, a.tokn, a.delay, us, 1000.0 * best, dram / us * 1e-6);
  return 0;
}
