% -- sm100a_grouped.cu: NVFP4 block-scaled grouped GEMM for Blackwell (sm_100a), grown from
% -- the seed kernel (shared/seed/submission_407526.py.txt). COMPILED AND INSPECTED ONLY: no
% -- Blackwell GPU was available, this kernel has never run.
% --
% -- 6 warps: 4 epilogue warps (128 threads, one accumulator row each), 1 TMA producer,
% -- 1 MMA issuer. A/B tiles by 2-D TMA (4-bit elements, swizzled K-major), scale tiles by
% -- 1-D bulk copies (one 128-row x 64-k block of the blocked layout is 512 contiguous bytes),
% -- tcgen05.cp of the scales into tensor memory, tcgen05.mma kind::mxf4nvf4 block16
% -- (MMA_K = 64), fp32 accumulators in tensor memory, tcgen05.ld and fp16 stores.
% -- Differences from the seed: BLOCK_N / BLOCK_K / STAGES are parameters; the group table,
% -- tensor maps and tile list are sized by the host (any number of groups); the last k-tile
% -- may be partial (K % 64 == 0 only): it issues only the 64-k MMA steps and scale copies that
% -- exist, so no scale byte past the blocked buffer is read; stores are masked on N too.
% local SUB = BLOCK_K // 64              -- MMA_K steps per k-tile
% local ROW_BYTES = BLOCK_K // 2         -- bytes of one tile row (4-bit elements)
% local SW = ROW_BYTES                   -- swizzle span = row bytes (128B or 64B)
% -- The shared-memory layout and the tensor-memory allocation are the host's (src/fam_sm100.c
% -- sm100_layout, tmem_cols: the SMEM_* and TMEM_COLS parameters); the static_asserts after
% -- the structs check them against what this kernel needs.
% local A_SIZE = SMEM_A_BYTES
% local B_SIZE = SMEM_B_BYTES
% local SF_SIZE = SMEM_SF_BYTES          -- SUB blocks of 512 bytes
% local STAGE = A_SIZE + B_SIZE + 2 * SF_SIZE
% local SFA_TMEM = BLOCK_N               -- tensor-memory columns: accumulator first
% local SFB_TMEM = SFA_TMEM + 4 * SUB
% -- tcgen05 shared-memory descriptor layout type (PTX ISA "Shared memory descriptor",
% -- bits 61-63): 2 = 128-byte swizzle, 4 = 64-byte swizzle
% local LAYOUT = (SW == 128) and 2 or 4
// nvfp4jit generated kernel: ${ARCH} BLOCK_M=${BLOCK_M} BLOCK_N=${BLOCK_N} BLOCK_K=${BLOCK_K} STAGES=${STAGES}
// (sm_100a: compiled and inspected only, never run)
typedef unsigned int u32;
typedef unsigned long long u64;

struct GroupDesc {            // 32 bytes (blob layout: fam_sm100.c)
  u64 c, sfa, sfb;
  int m, n;
};
struct BlobHeader {           // 64 bytes
  int num_tiles, num_groups, k, pad;   // k: the MoE blob's K (0 in a grouped blob)
  u64 maps_off, tiles_off, groups_off, pad2[3];
};
struct __align__(64) TmaDesc { u64 opaque[16]; };   // CUtensorMap: 128 bytes, 64-byte aligned
struct Tile { int group, off_m, off_n, k; };
struct MoeArgs {             // 64 bytes (src/family.h nj_moe_args): the per-call data of a MoE run
  u64 a, sfa, c;             // tokens [max_rows, K/2] (read through the A map), token scales, C fp16
  const int *offsets;        // expert e owns rows offsets[e] .. offsets[e+1]-1
  const int *sf_offsets;     // expert e's scales start at scale row sf_offsets[e] (128 | it)
  int *status;               // {fault bits, lowest faulty expert}: raised here, cleared by the host
  int max_rows, sf_rows;     // rows of A and C; rows of the token-scale buffer
  u64 unused;                // (the sm_90a kernels' tile table)
};

// Expert e of a MoE call: its first row *r0 and first scale row *s0, and its row count; or
// minus the fault bits (1: offsets negative or decreasing, 2: rows past max_rows, 4: scale
// offset not a multiple of 128 or scale rows past sf_rows) when it must be skipped. The same
// rules and bits as the sm_90a MoE kernel (templates/sm90a_act16.cuh moe_expert).
static __device__ __forceinline__ int moe_expert(const MoeArgs &p, int e, int *r0, int *s0) {
  const int a = p.offsets[e], b = p.offsets[e + 1], s = p.sf_offsets[e];
  *r0 = a;
  *s0 = s;
  if (a < 0 || b < a) return -1;
  if (b > p.max_rows) return -2;
  if (b > a && (s < 0 || (s & 127) || s > p.sf_rows - ((b - a + 127) & ~127))) return -4;
  return b - a;   // (an empty expert's scale offset is never read, so never checked)
}
static __device__ __forceinline__ void moe_fault(const MoeArgs &p, int e, int bits) {
  atomicOr(p.status, bits);
  atomicMin(p.status + 1, e);
}

// offsetof for the static_asserts below: NVRTC has no <cstddef>; __INTADDR__ is its front
// end's (EDG) constant address-of-member; host compilers (the tests' emulator) have the builtin.
#ifdef __CUDACC_RTC__
#define NJ_OFFSETOF(T, f) __INTADDR__(&(((T *)0)->f))
#else
#define NJ_OFFSETOF(T, f) __builtin_offsetof(T, f)
#endif
// The host's half of the contract (src/fam_sm100.c), passed in as parameters: a drift between
// its structs, its shared-memory layout or its tensor-memory allocation and what this kernel
// uses fails to compile here.
static_assert(sizeof(BlobHeader) == ${BLOB_HDR_BYTES} && NJ_OFFSETOF(BlobHeader, maps_off) == ${BLOB_HDR_MAPS_OFF},
              "blob header: src/fam_sm100.c sm100_hdr");
static_assert(sizeof(GroupDesc) == ${BLOB_GROUP_BYTES} && NJ_OFFSETOF(GroupDesc, m) == ${BLOB_GROUP_M},
              "group descriptor: src/fam_sm100.c sm100_group");
static_assert(sizeof(TmaDesc) == ${BLOB_MAP_BYTES}, "tensor map: CUtensorMap");
static_assert(sizeof(Tile) == ${BLOB_TILE_BYTES}, "tile: src/fam_sm100.c sm100_tile");
static_assert(${A_SIZE} == ${BLOCK_M} * ${ROW_BYTES} && ${B_SIZE} == ${BLOCK_N} * ${ROW_BYTES},
              "A and B stages: the TMA boxes of BLOCK_M and BLOCK_N rows of BLOCK_K e2m1");
static_assert(${SF_SIZE} == ${SUB} * 512, "a scale stage: one 512-byte block (128 rows x 64 k) per MMA_K step");
static_assert(${STAGE} % 1024 == 0 && ${A_SIZE} % 1024 == 0 && ${B_SIZE} % 1024 == 0,
              "stages and tiles on 1024-byte boundaries (the swizzle atom)");
static_assert(${STAGES} * ${STAGE} + 1023 <= ${DYN_SMEM},
              "the stages and their 1024-byte alignment slack fit the launch's shared memory");
static_assert(${TMEM_COLS} >= ${SFB_TMEM + 4 * SUB} && ${TMEM_COLS} >= 32 && ${TMEM_COLS} <= 512 &&
              (${TMEM_COLS} & (${TMEM_COLS} - 1)) == 0,
              "tensor memory: a power of two >= 32 columns holding the accumulator, SFA and SFB");

// L2 cache hints (PTX ISA "createpolicy" encodings used by the seed)
constexpr u64 EVICT_FIRST = 0x12F0000000000000ULL;
constexpr u64 EVICT_LAST  = 0x14F0000000000000ULL;

// Matrix-descriptor address fields hold (address & 0x3FFFF) >> 4 (PTX ISA tcgen05
// "Shared memory descriptor": 14-bit fields in units of 16 bytes).
__device__ inline constexpr u64 desc_encode(u64 x) { return (x & 0x3FFFFULL) >> 4ULL; }

% if EMU == 1 then
// Emulation mode (EMU=1, tests only): the same helpers call the CPU emulator of the sm_100a
// data path (tests/emu.c, through tests/emu_prelude.h) instead of inline PTX, one call per
// PTX instruction with the same operands.
__device__ __forceinline__ u32 elect_sync() { return emu_elect_sync(); }
__device__ __forceinline__ void mbarrier_init(int mbar_addr, int count) { emu_mbarrier_init(mbar_addr, count); }
__device__ __forceinline__ void mbarrier_wait(int mbar_addr, int phase) { emu_mbarrier_try_wait_parity_loop(mbar_addr, phase); }
__device__ __forceinline__ void bulk_g2s(int dst, const void *src, int size, int mbar_addr, u64 policy) {
  emu_cp_async_bulk_g2s(dst, src, size, mbar_addr, policy);
}
__device__ __forceinline__ void tma_2d_g2s(int dst, const void *tmap, int x, int y, int mbar_addr, u64 policy) {
  emu_cp_async_bulk_tensor_2d_g2s(dst, tmap, x, y, mbar_addr, policy);
}
__device__ __forceinline__ void tcgen05_cp_nvfp4(int taddr, u64 s_desc) { emu_tcgen05_cp_32x128b_warpx4(taddr, s_desc); }
__device__ __forceinline__ void tcgen05_mma_nvfp4(int d_tmem, u64 a_desc, u64 b_desc, u32 i_desc,
                                                  int sfa_tmem, int sfb_tmem, int enable_input_d) {
  emu_tcgen05_mma_mxf4nvf4_block16(d_tmem, a_desc, b_desc, i_desc, sfa_tmem, sfb_tmem, enable_input_d != 0);
}
__device__ __forceinline__ void tmem_ld(float *t, int row, int col) {
  emu_tcgen05_ld_16x256b(t, ${BLOCK_N // 8}, (row << 16) | col);
}
__device__ __forceinline__ u32 f32x2_to_f16x2(float a, float b) { return emu_cvt_rn_f16x2_f32(b, a); }
__device__ __forceinline__ void mbarrier_arrive_expect_tx(int mbar_addr, int bytes) { emu_mbarrier_arrive_expect_tx(mbar_addr, bytes); }
__device__ __forceinline__ void fence_mbarrier_init() { emu_fence_mbarrier_init(); }
__device__ __forceinline__ void tcgen05_alloc(int dst_addr) { emu_tcgen05_alloc(dst_addr, ${TMEM_COLS}); }
__device__ __forceinline__ void tcgen05_relinquish() { emu_tcgen05_relinquish_alloc_permit(); }
__device__ __forceinline__ void tcgen05_dealloc(int taddr) { emu_tcgen05_dealloc(taddr, ${TMEM_COLS}); }
__device__ __forceinline__ void tcgen05_fence_before() { emu_tcgen05_fence_before_thread_sync(); }
__device__ __forceinline__ void tcgen05_fence_after() { emu_tcgen05_fence_after_thread_sync(); }
__device__ __forceinline__ void tcgen05_commit(int mbar_addr) { emu_tcgen05_commit(mbar_addr); }
__device__ __forceinline__ void tcgen05_wait_ld() { emu_tcgen05_wait_ld(); }
% else
__device__ __forceinline__ u32 elect_sync() {
  u32 pred = 0;
  asm volatile("{\n\t.reg .pred %%px;\n\telect.sync _|%%px, %1;\n\t@%%px mov.s32 %0, 1;\n\t}"
               : "+r"(pred) : "r"(0xFFFFFFFF));
  return pred;
}
__device__ __forceinline__ void mbarrier_init(int mbar_addr, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(mbar_addr), "r"(count));
}
__device__ __forceinline__ void mbarrier_wait(int mbar_addr, int phase) {
  u32 ticks = 0x989680;  // suspend-time hint for try_wait (PTX ISA "mbarrier.try_wait")
  asm volatile("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\t"
               "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 P1, [%0], %1, %2;\n\t"
               "@!P1 bra.uni LAB_WAIT;\n\t}" :: "r"(mbar_addr), "r"(phase), "r"(ticks));
}
__device__ __forceinline__ void bulk_g2s(int dst, const void *src, int size, int mbar_addr, u64 policy) {
  asm volatile("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
               :: "r"(dst), "l"(src), "r"(size), "r"(mbar_addr), "l"(policy));
}
__device__ __forceinline__ void tma_2d_g2s(int dst, const void *tmap, int x, int y, int mbar_addr, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes.cta_group::1.L2::cache_hint "
               "[%0], [%1, {%2, %3}], [%4], %5;"
               :: "r"(dst), "l"(tmap), "r"(x), "r"(y), "r"(mbar_addr), "l"(policy) : "memory");
}
__device__ __forceinline__ void tcgen05_cp_nvfp4(int taddr, u64 s_desc) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" :: "r"(taddr), "l"(s_desc));
}
__device__ __forceinline__ void tcgen05_mma_nvfp4(int d_tmem, u64 a_desc, u64 b_desc, u32 i_desc,
                                                  int sfa_tmem, int sfb_tmem, int enable_input_d) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
               "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%0], %1, %2, %3, [%4], [%5], p;\n\t}"
               :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(i_desc), "r"(sfa_tmem), "r"(sfb_tmem), "r"(enable_input_d));
}
// 16 lanes x 256 bits, repeated ${BLOCK_N // 8} times: ${BLOCK_N // 2} fp32 registers per thread
// (PTX ISA "tcgen05.ld" shape .16x256b): regs 4i..4i+1 row lane/4, regs 4i+2..4i+3 row lane/4+8,
// columns 8i + 2*(lane%4) + {0,1}.
__device__ __forceinline__ void tmem_ld(float *t, int row, int col) {
  const int addr = (row << 16) | col;
% local outs, cons = {}, {}
% for i = 0, BLOCK_N // 2 - 1 do outs[#outs + 1] = "%" .. i; cons[#cons + 1] = '"=f"(t[' .. i .. '])' end
  asm volatile("tcgen05.ld.sync.aligned.16x256b.x${BLOCK_N // 8}.b32 {${table.concat(outs, ", ")}}, [%${BLOCK_N // 2}];"
               : ${table.concat(cons, ", ")} : "r"(addr));
}
__device__ __forceinline__ u32 f32x2_to_f16x2(float a, float b) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b));
  return r;
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(int mbar_addr, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
               :: "r"(mbar_addr), "r"(bytes) : "memory");
}
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;");
}
__device__ __forceinline__ void tcgen05_alloc(int dst_addr) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], ${TMEM_COLS};" :: "r"(dst_addr));
}
__device__ __forceinline__ void tcgen05_relinquish() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
}
__device__ __forceinline__ void tcgen05_dealloc(int taddr) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, ${TMEM_COLS};" :: "r"(taddr));
}
__device__ __forceinline__ void tcgen05_fence_before() { asm volatile("tcgen05.fence::before_thread_sync;"); }
__device__ __forceinline__ void tcgen05_fence_after() { asm volatile("tcgen05.fence::after_thread_sync;"); }
__device__ __forceinline__ void tcgen05_commit(int mbar_addr) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
               :: "r"(mbar_addr) : "memory");
}
__device__ __forceinline__ void tcgen05_wait_ld() { asm volatile("tcgen05.wait::ld.sync.aligned;"); }
% end

% -- Two entries from one body: MOE = false is the grouped call (the blob's tile list);
% -- MOE = true is the MoE entry ${KERNEL_NAME}_moe (nvfp4jit_moe_run): the blob is the plan's
% -- constant one (per expert: the weight map and scale pointer), the tokens, token scales, C
% -- and the expert offsets are kernel parameters (MoeArgs) and the token map (over the whole
% -- [max_rows, K] token tensor) a __grid_constant__ one. The grid is sized by the host for
% -- the worst case (N tiles x (max_rows / 128 + one partial tile per expert)); every CTA
% -- validates the offsets, counts each expert's 128-row token tiles and finds its own tile
% -- by a prefix sum (no per-call host work, no table in memory); CTAs past the last tile
% -- exit before they allocate anything. Offsets are untrusted: row faults (negative,
% -- decreasing or past max_rows) void the call, a scale-offset fault skips its expert; CTA 0
% -- reports both in MoeArgs.status (the sm_90a rules and bits).
% for MOE_I = 1, 0, -1 do   -- the MoE entry first (ptxas logs the last entry first; the resources
% --                               are read from the grouped entry's own section of the log, src/compile.c)
% local MOE = MOE_I == 1
% if not MOE then
extern "C" __global__ void __launch_bounds__(${THREADS})
${KERNEL_NAME}(const unsigned char *__restrict__ blob) {
% elseif EMU == 1 then
extern "C" __global__ void ${KERNEL_NAME}_moe(const unsigned char *__restrict__ blob, const MoeArgs *moe_p,
                                               const TmaDesc *amap) {
  const MoeArgs moe = *moe_p;   // (by value on the GPU; by pointer through the emulator's call)
% else
extern "C" __global__ void __launch_bounds__(${THREADS})
${KERNEL_NAME}_moe(const unsigned char *__restrict__ blob, const MoeArgs moe,
                   const __grid_constant__ TmaDesc amap_param) {
  const TmaDesc *amap = &amap_param;
% end
  const BlobHeader *hdr = (const BlobHeader *)blob;
  const GroupDesc *groups = (const GroupDesc *)(blob + hdr->groups_off);
  const TmaDesc *maps = (const TmaDesc *)(blob + hdr->maps_off);
  const int tid = threadIdx.x, warp_id = tid / 32, lane_id = tid % 32;
  constexpr int NUM_WARPS = ${BLOCK_M // 32 + 2};
% if not MOE then
  const Tile t4 = ((const Tile *)(blob + hdr->tiles_off))[blockIdx.x];
  const int group = t4.group, off_m = t4.off_m, off_n = t4.off_n, K = t4.k;
  const GroupDesc g = groups[group];
  const int M = g.m, N = g.n;
% end

  // The tiles need 1024-byte aligned shared addresses (TMA's 128-byte swizzle repeats every
  // 1024 bytes and takes its pattern from address bits 4-9; the UMMA descriptors assume the
  // same atoms). With NVRTC + nvJitLink the static section below (mbars, tmem_base_slot)
  // comes FIRST and the dynamic base is only 16-byte aligned (0x430-0x490 in these cubins),
  // whatever __align__ says: round up at run time (the host reserves 1024 bytes of slack).
  // The declaration promises only 16: a larger promise lets the compiler fold the round-up.
% if EMU == 1 then
  char *const smem_ptr = emu_dynamic_shared();   // after the static section, as in the cubin
% else
  extern __shared__ __align__(16) char smem_ptr[];
% end
  const int smem_raw = (int)__cvta_generic_to_shared(smem_ptr);
  const int smem = (smem_raw + 1023) & ~1023;
% if EMU == 1 then
  // the static shared variables live in the emulated static section (same order, alignment)
  long long (&mbars)[${STAGES * 2 + 1}] = *(long long (*)[${STAGES * 2 + 1}])emu_static_shared(${(STAGES * 2 + 1) * 8}, 8);
  int &tmem_base_slot = *(int *)emu_static_shared(4, 4);
% if MOE then
  int (&moe_scan)[${THREADS}] = *(int (*)[${THREADS}])emu_static_shared(${THREADS * 4}, 4);
  int (&moe_pick)[4] = *(int (*)[4])emu_static_shared(16, 4);
% end
% else
  __shared__ long long mbars[${STAGES * 2 + 1}];
  __shared__ int tmem_base_slot;
% if MOE then
  __shared__ int moe_scan[${THREADS}];   // token tiles of each thread's experts, then their prefix
  __shared__ int moe_pick[4];            // {void, this CTA's expert, its token tile, all tiles}
% end
% end
% if MOE then

  // ---- MoE tile schedule (every CTA, before anything is allocated) ----
  // The weight tile nt is the fast index: CTAs side by side share a token tile. Thread t
  // owns the experts [t * chunk, (t + 1) * chunk).
  const int E = hdr->num_groups, K = hdr->k;
  const int N = groups[0].n;
  const int tiles_n = (N + ${BLOCK_N - 1}) / ${BLOCK_N};
  const int mt = blockIdx.x / tiles_n, nt = blockIdx.x % tiles_n;
  const int chunk = (E + ${THREADS - 1}) / ${THREADS};
  const int e_lo = min(E, tid * chunk), e_hi = min(E, e_lo + chunk);
  if (tid == 0) { moe_pick[0] = 0; moe_pick[1] = -1; moe_pick[2] = 0; }
  __syncthreads();
  {
    int tiles = 0, row_fault = 0;
    for (int e = e_lo; e < e_hi; e++) {
      int r0, s0;
      const int cnt = moe_expert(moe, e, &r0, &s0);
      if (cnt < 0 && blockIdx.x == 0) moe_fault(moe, e, -cnt);
      row_fault |= cnt == -1 || cnt == -2;
      if (cnt > 0) tiles += (cnt + 127) / 128;
    }
    // a chunk without row faults is monotone inside [0, max_rows]: at most max_rows / 128 +
    // chunk tiles, so the sum over 192 chunks stays inside int; with a fault the call is void
    moe_scan[tid] = row_fault ? 0 : tiles;
    if (row_fault) moe_pick[0] = 1;
  }
  __syncthreads();
  if (tid == 0) {   // exclusive prefix sum over the threads
    int sum = 0;
    for (int t = 0; t < ${THREADS}; t++) {
      const int x = moe_scan[t];
      moe_scan[t] = sum;
      sum += x;
    }
    moe_pick[3] = sum;
  }
  __syncthreads();
  if (!moe_pick[0] && mt < moe_pick[3] && mt >= moe_scan[tid] &&
      (tid == ${THREADS - 1} || mt < moe_scan[tid + 1])) {
    int first = moe_scan[tid];   // the thread whose experts hold token tile mt finds it
    for (int e = e_lo; e < e_hi; e++) {
      int r0, s0;
      const int cnt = moe_expert(moe, e, &r0, &s0);
      const int t = cnt > 0 ? (cnt + 127) / 128 : 0;
      if (mt < first + t) {
        moe_pick[1] = e;
        moe_pick[2] = mt - first;
        break;
      }
      first += t;
    }
  }
  __syncthreads();
  if (moe_pick[0] || moe_pick[1] < 0) return;   // void call, or no tile for this CTA
  const int group = moe_pick[1], off_m = moe_pick[2] * ${BLOCK_M}, off_n = nt * ${BLOCK_N};
  int moe_r0, moe_s0;
  const int M = moe_expert(moe, group, &moe_r0, &moe_s0);   // > 0: it has tiles
  const GroupDesc g = groups[group];
% end
  const int tma_mbar = (int)__cvta_generic_to_shared(mbars);
  const int mma_mbar = tma_mbar + ${STAGES} * 8;
  const int done_mbar = mma_mbar + ${STAGES} * 8;

  if (warp_id == 0 && elect_sync()) {
    for (int i = 0; i < ${STAGES * 2 + 1}; i++) mbarrier_init(tma_mbar + i * 8, 1);
    fence_mbarrier_init();
  } else if (warp_id == 1) {
    // tensor-memory allocation: a power of two >= 32 columns (PTX ISA "tcgen05.alloc")
    tcgen05_alloc((int)__cvta_generic_to_shared(&tmem_base_slot));
    tcgen05_relinquish();
  }
  tcgen05_fence_before();
  __syncthreads();
  tcgen05_fence_after();
  const int tmem = tmem_base_slot;        // accumulator at column 0 of the allocation

  const TmaDesc *B_tmap = maps + ${BLOB_GROUP_MAPS} * group + 1;
  const int num_iters = (K + ${BLOCK_K - 1}) / ${BLOCK_K};
  const int k_blocks = K / 64;            // 512-byte scale blocks per 128 rows
% if MOE then
  // the expert's rows: row moe_r0 of the token map and of C, scale row moe_s0 (128 | it)
  const TmaDesc *A_tmap = amap;
  const int a_row0 = moe_r0;
  unsigned short *C = (unsigned short *)moe.c + (long long)moe_r0 * N;
  const char *SFA_group = (const char *)moe.sfa + (long long)(moe_s0 / 128) * k_blocks * 512;
% else
  const TmaDesc *A_tmap = maps + ${BLOB_GROUP_MAPS} * group;
  const int a_row0 = 0;
  unsigned short *C = (unsigned short *)g.c;
  const char *SFA_group = (const char *)g.sfa;
% end
  const u64 cache_A = M > N ? EVICT_FIRST : EVICT_LAST;
  const u64 cache_B = M > N ? EVICT_LAST : EVICT_FIRST;
  // the 128-row scale block holds BLOCK_N-row tiles side by side: this tile's rows start at
  // lane group (off_n % 128) / 32 of the copied block (the seed's (tn & 1) * BLOCK_N/32).
  const int sfb_lane = (off_n % 128) / 32;

  if (warp_id == NUM_WARPS - 2 && elect_sync()) {
    // ---- TMA producer ----
    const char *SFA_base = SFA_group + (long long)(off_m / 128) * k_blocks * 512;
    const char *SFB_base = (const char *)g.sfb + (long long)(off_n / 128) * k_blocks * 512;
    for (int it = 0; it < num_iters; it++) {
      const int stage = it % ${STAGES};
      if (it >= ${STAGES}) mbarrier_wait(mma_mbar + stage * 8, (it / ${STAGES} - 1) % 2);
      const int mbar = tma_mbar + stage * 8;
      const int A_s = smem + stage * ${STAGE}, B_s = A_s + ${A_SIZE};
      const int SFA_s = B_s + ${B_SIZE}, SFB_s = SFA_s + ${SF_SIZE};
      const int kb = it * ${SUB};
      const int nsub = min(${SUB}, k_blocks - kb);   // 64-k steps that exist in this k-tile
      tma_2d_g2s(A_s, A_tmap, it * ${BLOCK_K}, a_row0 + off_m, mbar, cache_A);
      tma_2d_g2s(B_s, B_tmap, it * ${BLOCK_K}, off_n, mbar, cache_B);
      bulk_g2s(SFA_s, SFA_base + kb * 512, nsub * 512, mbar, cache_A);
      bulk_g2s(SFB_s, SFB_base + kb * 512, nsub * 512, mbar, cache_B);
      // TMA boxes count in full (out-of-bounds elements are zero-filled but still arrive)
      mbarrier_arrive_expect_tx(mbar, ${A_SIZE + B_SIZE} + 2 * nsub * 512);
    }
  } else if (warp_id == NUM_WARPS - 1 && elect_sync()) {
    // ---- MMA issuer ----
    // Instruction descriptor, kind::mxf4nvf4 (PTX ISA "Instruction descriptor" for
    // .kind::mxf4nvf4, the seed's encoding): bits 7-9 A type = E2M1 (1), bits 10-12 B type
    // = E2M1 (1), bits 17-22 N >> 3, bits 27-28 M >> 7; K-major A and B, scale type UE4M3.
    constexpr u32 i_desc = (1U << 7U) | (1U << 10U) | ((u32)${BLOCK_N} >> 3U << 17U) | ((u32)${BLOCK_M} >> 7U << 27U);
    for (int it = 0; it < num_iters; it++) {
      const int stage = it % ${STAGES};
      mbarrier_wait(tma_mbar + stage * 8, (it / ${STAGES}) % 2);
      tcgen05_fence_after();
      const int A_s = smem + stage * ${STAGE}, B_s = A_s + ${A_SIZE};
      const int SFA_s = B_s + ${B_SIZE}, SFB_s = SFA_s + ${SF_SIZE};
      const int nsub = min(${SUB}, k_blocks - it * ${SUB});
      // A/B descriptors: start address, stride byte offset = 8 rows x ${SW} B, bit 46 =
      // descriptor version 1 (sm_100), layout type ${LAYOUT} (bits 61-63)
      auto desc_ab = [](int addr) -> u64 {
        return desc_encode(addr) | (desc_encode(8 * ${SW}) << 32ULL) | (1ULL << 46ULL) | ((u64)${LAYOUT} << 61ULL);
      };
      // scale descriptors: 128 rows x 16 B per 512-byte block, stride 8 rows x 16 B, no swizzle
      auto desc_sf = [](int addr) -> u64 {
        return desc_encode(addr) | (desc_encode(8 * 16) << 32ULL) | (1ULL << 46ULL);
      };
      // A full k-tile (all but a partial last one) runs with the constant trip count ${SUB}, so
      // its scale copies and MMAs are straight-line code as in the seed; the run-time loop of
      // the partial last k-tile cost about 15 uniform instructions per MMA (review 2026-12-03).
      auto issue = [&](const int n) {
#pragma unroll
        for (int k = 0; k < n; k++) {
          tcgen05_cp_nvfp4(tmem + ${SFA_TMEM} + k * 4, desc_sf(SFA_s + k * 512));
          tcgen05_cp_nvfp4(tmem + ${SFB_TMEM} + k * 4, desc_sf(SFB_s + k * 512));
        }
#pragma unroll
        for (int k = 0; k < n; k++) {
          // one MMA_K = 64 step is 32 bytes along the swizzled K-major row
          tcgen05_mma_nvfp4(tmem, desc_ab(A_s + k * 32), desc_ab(B_s + k * 32), i_desc,
                            tmem + ${SFA_TMEM} + k * 4, tmem + ${SFB_TMEM} + sfb_lane + k * 4,
                            (it > 0 || k > 0) ? 1 : 0);
        }
      };
      if (nsub == ${SUB}) issue(${SUB});
      else issue(nsub);
      tcgen05_commit(mma_mbar + stage * 8);
    }
    tcgen05_commit(done_mbar);
  } else if (tid < ${BLOCK_M}) {
    // ---- epilogue: warp w reads accumulator lanes 32w..32w+31 ----
    mbarrier_wait(done_mbar, 0);
    tcgen05_fence_after();
    const bool full_tile = off_m + ${BLOCK_M} <= M && off_n + ${BLOCK_N} <= N;
    for (int m0 = 0; m0 < 2; m0++) {
      float t[${BLOCK_N // 2}];
      tmem_ld(t, warp_id * 32 + m0 * 16, tmem & 0xFFFF);
      tcgen05_wait_ld();
      const int row = off_m + warp_id * 32 + m0 * 16 + lane_id / 4;
#pragma unroll
      for (int i = 0; i < ${BLOCK_N // 8}; i++) {
        const int col = off_n + i * 8 + (lane_id % 4) * 2;   // N % 8 == 0: col < N => col+1 < N
        const u32 v0 = f32x2_to_f16x2(t[i * 4 + 0], t[i * 4 + 1]);
        const u32 v1 = f32x2_to_f16x2(t[i * 4 + 2], t[i * 4 + 3]);
        if (full_tile) {
          *(u32 *)(C + (long long)row * N + col) = v0;
          *(u32 *)(C + (long long)(row + 8) * N + col) = v1;
        } else if (col < N) {
          if (row < M) *(u32 *)(C + (long long)row * N + col) = v0;
          if (row + 8 < M) *(u32 *)(C + (long long)(row + 8) * N + col) = v1;
        }
      }
    }
  }
  tcgen05_fence_before();
  __syncthreads();
  if (warp_id == 1) {
    tcgen05_fence_after();
    tcgen05_dealloc(tmem);
  }
}
% end
