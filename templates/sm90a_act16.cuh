% -- sm90a_act16.cuh: the "act16" strategy of the sm_90a family (rendered from
% -- sm90a_grouped.cu when STRATEGY == 1).
% --
% -- Two kernels in one module:
% --   ${KERNEL_NAME}_prep  dequantises every token row of A (value * scale, exact) to fp16 into a
% --                        workspace, with k permuted inside each 64-k block (below);
% --   ${KERNEL_NAME}       the grouped GEMM: weights (B) on wgmma's M side, decoded by the
% --                        consumer warpgroups straight into wgmma's A-fragment registers (no
% --                        shared-memory round trip), tokens on wgmma's N side, read by wgmma from
% --                        shared memory where TMA put them; C written transposed (C[token][weight]).
% -- Roles: warpgroups 0..BLOCK_M/64-1 consume, each owns 64 weight rows (one m64 wgmma) and all
% -- BLOCK_N token columns; the last warp is the producer (one thread issues the TMA tensor copies
% -- into a ring of STAGES stages, full/empty mbarriers per stage). A producer warp rather than
% -- a warpgroup: without setmaxnreg every thread gets the same share of the register file, and
% -- a small producer costs least. The wide form (CW_ROWS 128, below) has a producer warpgroup
% -- that gives its registers to the consumers with setmaxnreg.
% --
% -- k permutation. A sum over k may visit k in any order as long as both operands use the same
% -- one. Thread lane l (t = l % 4) of a consumer warp must hold, for wgmma step s (16 k) of a
% -- 64-k block, fragment registers {k 16s+2t, +1} and {k 16s+8+2t, +1} of its two rows
% -- (PTX ISA: wgmma A fragment in registers, the m16n8k16 layout per warp). Here thread t
% -- instead decodes the 16 physical k 16t..16t+15 of each row (8 contiguous packed bytes and ONE
% -- scale), and the cheapest decoder yields pairs (k_i, k_i+4) of one 32-bit word:
% --   q = 0..3: (16t+q, 16t+q+4); q = 4..7: (16t+q+4, 16t+q+8).
% -- Pair q goes to the register that wgmma reads as logical k 8q + 2t (+1): step s = q / 2,
% -- half h = q % 2. The prep kernel writes the token of physical k 16t + pair_q[e] at logical
% -- position 8q + 2t + e of its 64-k block, so both operands agree.
% -- act16p (STRATEGY 2): a persistent grid loops over the tiles; act16: one tile per CTA
% --
% -- MoE call (nvfp4jit_moe_run): the same two kernels with MoeArgs set, launched as one CUDA
% -- graph of two kernel nodes (src/moe.c). The blob is then the plan's constant one (per expert:
% -- weights and scale maps; one token map over the whole workspace at maps[3E]); tokens, token
% -- scales, C and the expert offsets are the prep kernel's parameters, read on the device. The
% -- prep kernel's CTA 0 validates every expert's offsets and writes the call's tile table into
% -- plan memory (MoeArgs.tiles: {num_tiles, next-tile counter = 0, C}, then {expert, weight
% -- tile, first row, end row} per tile, in the grouped blob's order); its other CTAs convert the
% -- token rows. The GEMM kernel's MoeArgs holds only the table's address: it reads the tile
% -- count, C and its tiles there. act16: one CTA per tile over a grid sized for the worst case
% -- (CTAs past the count exit at once); act16p: a persistent grid, each CTA's first tile its
% -- blockIdx, the next ones from the counter (a CTA takes a tile when it is ready for one, as
% -- the hardware hands out CTAs; static striding ran the decode sets 3-9 % slower than act16
% -- on the H200). Offsets
% -- are untrusted: an expert whose rows or scale rows leave the buffers is skipped and reported
% -- in MoeArgs.status; row faults (negative, decreasing, past max_rows) void the whole call.
% local PERSIST = (STRATEGY >= 2)
% -- act16sk (STRATEGY 3): act16p's loop over a static stream-K schedule (src/fam_sm90.c
% -- act16_sk_schedule): CTA c runs units first[c] .. first[c+1]-1 of the blob, each a range of
% -- stages (k-steps of BLOCK_K) of one tile, so every CTA gets the same number of stages within
% -- one and no wave runs part-empty. A tile split between CTAs: the CTA that holds its first
% -- stages (it runs them last) adds the others' fp32 partial sums in their CTA order (a fixed
% -- order: the result does not depend on timing) and stores C; each other piece is the first
% -- unit of its CTA, stored as fp32 into the CTA's slot of the workspace, then flagged.
% local SK = (STRATEGY == 3)
% local TILE_LOOP = PERSIST and "  for (int ti = blockIdx.x; ti < num_tiles; ti += gridDim.x) {"
%             or "  { const int ti = blockIdx.x; (void)num_tiles;"
% -- Consumer warpgroups: WG of CW_ROWS weight rows each. CW_ROWS 64: one m64 wgmma per k16 step;
% -- 128 ("wide", act16 at BLOCK_M 256 and BLOCK_N > 64: src/fam_sm90.c act16_wide): two m64
% -- halves per warpgroup, each its own accumulators (ACC per thread) and fragment buffer. The
% -- wide form's producer is a warpgroup that gives its registers to the consumers
% -- (setmaxnreg.dec to PRODUCER_REGS, the consumers .inc to CONSUMER_REGS; ptxas keeps
% -- setmaxnreg only when it compiles the whole program: src/compile.c's LTO path,
% -- WHOLE_PROGRAM); the narrow form's producer is one warp (every thread keeps the same share).
% local HALVES = CW_ROWS // 64
% local WG = BLOCK_M // CW_ROWS
% local ACC = BLOCK_N // 2
% local PWG = PRODUCER_REGS > 0
% if HALVES ~= 1 and (PERSIST or not PWG) then error("CW_ROWS 128: act16 with a producer warpgroup only") end
% -- 128-row scale blocks a weight tile touches (it starts at 0 or 64 inside a block; fam_sm90.c)
% local SFB_BLK = ((BLOCK_M % 128 == 0 and 0 or 64) + BLOCK_M + 127) // 128
% -- The shared-memory layout is the host's (src/fam_sm90.c act16_layout, the SMEM_* parameters);
% -- the static_asserts after the structs check it against what this kernel needs.
% local KSUB = BLOCK_K // 64            -- 64-k blocks per stage (1, 2 or 4): one scale block each
% local TOK_BYTES = SMEM_TOK_BYTES     -- one stage of tokens: KSUB boxes of BLOCK_N rows x 64 fp16 (128B-swizzled)
% local TOK_SUB = TOK_BYTES // KSUB    -- one 64-k block's token box
% local W_BYTES = SMEM_W_BYTES         -- one stage of packed weights: BLOCK_M rows x BLOCK_K/2 bytes
% local W_ROW = BLOCK_K // 2
% local SF_BYTES = SMEM_SF_BYTES       -- one stage of weight scales: KSUB x the 128-row x 64-k blocks
% local W_OFF = SMEM_W_OFF
% local SF_OFF = SMEM_SF_OFF
% local TX = TOK_BYTES + W_BYTES + SF_BYTES
% local BAR_OFF = SMEM_BAR_OFF         -- 2 x STAGES mbarriers (8 bytes each)
// nvfp4jit generated kernel: ${ARCH} act16 BLOCK_M=${BLOCK_M} BLOCK_N=${BLOCK_N} BLOCK_K=${BLOCK_K} STAGES=${STAGES}
typedef unsigned int u32;
typedef unsigned long long u64;

struct BlobHeader {          // 64 bytes (blob layout: fam_sm90.c, act16)
  int num_tiles, num_groups, prep_items, sk_ctas;   // act16sk: the CTAs of its schedule
  u64 maps_off, tiles_off, groups_off;
  u64 sk_first_off;          // act16sk: sk_ctas + 1 ints, CTA c's units first[c] .. first[c+1]-1
  u64 sk_part, sk_flags;     // act16sk: fp32 partial slots (BLOCK_M x BLOCK_N, one per CTA), flags
};
struct GroupDesc {           // 64 bytes
  u64 a, b, sfa, sfb, c, ws; // ws: this group's fp16 token rows (M x K, permuted k)
  int m, n, k, prep0;        // prep0: first prep item (16 values) of this group
};
struct __align__(64) TmaDesc { u64 opaque[16]; };  // CUtensorMap; per group: tokens, weights, weight scales
struct Tile { int group, tx, ty, pad; };           // tx: weight tile, ty: token tile
// act16sk: its blob's tiles are units: stages s0 .. s1-1 of a tile; writer: a piece that is
// not the tile's first (its CTA's first unit), stored to the CTA's partial slot; nfix: the
// tile's first piece, which adds the partials of the nfix CTAs after its own
struct Unit { int group, tx, ty, s0, s1, nfix, writer, pad; };
struct MoeArgs {             // 64 bytes (src/family.h nj_moe_args); all 0: the grouped call
  u64 a, sfa, c;             // tokens [max_rows, K/2], token scales, C [max_rows, N] fp16
  const int *offsets;        // expert e owns rows offsets[e] .. offsets[e+1]-1 (prep kernel only)
  const int *sf_offsets;     // expert e's scales start at scale row sf_offsets[e] (128 | it)
  int *status;               // {fault bits, lowest faulty expert}: raised here, cleared by the host
  int max_rows, sf_rows;     // rows of A, C and the workspace; rows of the token-scale buffer
  int4 *tiles;               // the call's tile table (plan memory): written by prep, read by the GEMM
};
// The prep kernel's third parameter (src/family.h nj_prep_tab), __grid_constant__: for a grouped
// call of up to ${PREP_TAB_GROUPS} groups, each group's fields the prep needs, so its first loads
// are the tokens (the blob's header, then its group descriptors, were two dependent memory round
// trips before them); num_groups 0: read the blob (more groups, or a MoE call).
struct PrepGroup { const unsigned char *a, *sfa; unsigned char *ws; int k, prep0; };
struct PrepTab { int num_groups, items, pad0, pad1; PrepGroup g[${PREP_TAB_GROUPS}]; };
% local TILE_OF = SMEM_TILE_OF          -- act16p: the tile of each stage (an int each)
% local MOE_OFF = SMEM_MOE_OFF          -- the end of the layout

// offsetof for the static_asserts below: NVRTC has no <cstddef>; __INTADDR__ is its front
// end's (EDG) constant address-of-member; host compilers (the tests' emulator) have the builtin.
#ifdef __CUDACC_RTC__
#define NJ_OFFSETOF(T, f) __INTADDR__(&(((T *)0)->f))
#else
#define NJ_OFFSETOF(T, f) __builtin_offsetof(T, f)
#endif
// The host's half of the contract (src/fam_sm90.c, src/family.h), passed in as parameters: a
// drift between its structs or its shared-memory layout and what this kernel reads fails to
// compile here.
static_assert(sizeof(BlobHeader) == ${BLOB_HDR_BYTES} && NJ_OFFSETOF(BlobHeader, maps_off) == ${BLOB_HDR_MAPS_OFF},
              "blob header: src/fam_sm90.c act16_hdr");
static_assert(sizeof(GroupDesc) == ${BLOB_GROUP_BYTES} && NJ_OFFSETOF(GroupDesc, ws) == ${BLOB_GROUP_WS} &&
              NJ_OFFSETOF(GroupDesc, m) == ${BLOB_GROUP_M}, "group descriptor: src/fam_sm90.c act16_group");
static_assert(sizeof(TmaDesc) == ${BLOB_MAP_BYTES}, "tensor map: CUtensorMap");
static_assert(sizeof(Tile) == ${BLOB_TILE_BYTES}, "tile: src/fam_sm90.c blob_tile");
static_assert(sizeof(Unit) == ${BLOB_UNIT_BYTES} && NJ_OFFSETOF(BlobHeader, sk_flags) == ${BLOB_HDR_SK_FLAGS},
              "act16sk unit and header: src/fam_sm90.c blob_unit, act16_hdr");
static_assert(sizeof(MoeArgs) == ${MOE_ARGS_BYTES}, "MoeArgs: src/family.h nj_moe_args");
static_assert(sizeof(PrepTab) == ${PREP_TAB_BYTES} && sizeof(PrepGroup) == 32 && ${PREP_TAB_GROUPS} <= 32,
              "PrepTab: src/family.h nj_prep_tab (one group per lane)");
static_assert(${KSUB} * 64 == ${BLOCK_K} && ${TOK_SUB} == ${BLOCK_N} * 64 * 2 && ${TOK_SUB} % 1024 == 0 &&
              ${TOK_BYTES} == ${KSUB} * ${TOK_SUB},
              "a token stage is KSUB TMA boxes of BLOCK_N rows x 64 halves, in whole 1024-byte swizzle atoms");
static_assert(${W_BYTES} == ${BLOCK_M} * ${W_ROW}, "a weight stage: BLOCK_M rows x BLOCK_K e2m1 (the TMA box)");
static_assert(${SF_BYTES} == ${KSUB} * ${SFB_BLK} * 512,
              "a scale stage: per 128-row block a weight tile touches, its KSUB 512-byte k blocks");
static_assert(${W_OFF} == ${STAGES} * ${TOK_BYTES} && ${SF_OFF} == ${W_OFF} + ${STAGES} * ${W_BYTES} &&
              ${BAR_OFF} == ${SF_OFF} + ${STAGES} * ${SF_BYTES} && ${BAR_OFF} % 8 == 0,
              "rings in order (tokens, weights, scales), then 8-byte aligned mbarriers");
static_assert(${TILE_OF} == ${BAR_OFF} + 16 * ${STAGES} && ${MOE_OFF} == ${TILE_OF} + 4 * ${STAGES},
              "the stages' tile words follow the 2 x STAGES mbarriers");
static_assert(${MOE_OFF} + 1023 <= ${DYN_SMEM},
              "the layout and its 1024-byte alignment slack fit the launch's shared memory");

static __device__ __forceinline__ u32 smem_u32(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ u32 e4m3x2_to_f16x2(u32 two_bytes) {
  u32 r;
  asm("{ .reg .b16 t; cvt.u16.u32 t, %1; cvt.rn.f16x2.e4m3x2 %0, t; }" : "=r"(r) : "r"(two_bytes));
  return r;
}
static __device__ __forceinline__ u32 hmul2(u32 a, u32 b) {
  u32 r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
// 8 e2m1 codes (one 32-bit word, code i at bits 4i..4i+3) times one f16x2 scale -> 4 f16x2:
// o[i] = (code i, code i+4) * scale * 2^-14. Placing a code's 3 value bits at fp16 bits 9..11
// and its sign at bit 15 gives the fp16 e2m1 * 2^-14 exactly (exponent field e1e0, mantissa m);
// times an e4m3 scale the product is exact in fp16 (DESIGN.md "Numerics": at most 6
// significant bits, a multiple of 2^-24 inside fp16's range).
// 11 integer instructions per word (was 15): the sign sits 3 bits above a code's value bits and
// must land 6 above, so one bitwise select per nibble parity moves every sign of that parity at
// once, and each pair is then one shift and one mask (bits outside 0x8E008E00 of the selects
// are don't-care):
//   v: per byte, bits 0..2 = the even code's value (w), bit 6 = its sign (w << 3);
//      pair (0,4) = (v << 9) & M, pair (2,6) = (v << 1) & M
//   u: per byte, bits 1..3 = the odd code's value (w >> 3), bit 7 = its sign (w);
//      pair (1,5) = (u << 8) & M, pair (3,7) = u & M
// (a & m) | (c & ~m) in one LOP3 with m as its immediate (written as (a & m) | (c & ~m), ptxas
// emits two LOP3s with the masks m and ~m as two immediates)
template <u32 m> static __device__ __forceinline__ u32 sel_bits(u32 a, u32 c) {
  u32 r;
  asm("lop3.b32 %0, %1, %2, %3, 0xE2;" : "=r"(r) : "r"(a), "n"(m), "r"(c));
  return r;
}
static __device__ __forceinline__ void dec8(u32 w, u32 s2, u32 *o) {
  const u32 M = 0x8E008E00u;
  const u32 v = sel_bits<0x07070707u>(w, w << 3);
  const u32 u = sel_bits<0x0E0E0E0Eu>(w >> 3, w);
  o[0] = hmul2((v << 9) & M, s2);
  o[1] = hmul2((u << 8) & M, s2);
  o[2] = hmul2((v << 1) & M, s2);
  o[3] = hmul2(u & M, s2);
}
static __device__ __forceinline__ u32 scale_f16x2(u32 sb) { return e4m3x2_to_f16x2(sb | (sb << 8)); }

// Expert e of a MoE call (offsets and scale offsets as the caller wrote them): its row
// count, or minus the fault bits (1: offsets negative or decreasing, 2: rows past max_rows, 4: scale
// offset not a multiple of 128 or scale rows past sf_rows) when it must be skipped.
static __device__ __forceinline__ int moe_expert(const MoeArgs &p, const int *offs,
                                                 const int *sofs, int e) {
  const int a = offs[e], b = offs[e + 1], s = sofs[e];
  if (a < 0 || b < a) return -1;
  if (b > p.max_rows) return -2;
  if (b > a && (s < 0 || (s & 127) || s > p.sf_rows - ((b - a + 127) & ~127))) return -4;
  return b - a;   // (an empty expert's scale offset is never read, so never checked)
}
static __device__ __forceinline__ void moe_fault(const MoeArgs &p, int e, int bits) {
  atomicOr(p.status, bits);
  atomicMin(p.status + 1, e);
}

// ---- prep: PREP_U items (token row, 16-k group) per thread ----
// Item j of row m: the 4 threads of a 64-k block (j % 4 = t) write its 128 fp16 bytes together.
// Those bytes are pairs q = 0..7 of the block's 4 items t' (layout at the top: pair q of item t'
// -> logical k 8q + 2t' (+1), byte 16q + 4t'), so bytes 16q..16q+15 are pair q of items 0..3.
// Thread t writes pairs t (bytes 16t..) and t + 4 (bytes 64 + 16t..): each of its two 16-byte
// stores fills, with the other 3 threads, 64 contiguous bytes (whole sectors, one store
// instruction of a warp writes 8 blocks x 64 B). Pair t is codes (t, t + 4) of an item, nibbles
// t and t + 4 of its first 32-bit word; pair t + 4 codes (8 + t, 12 + t), of its second word:
// each thread reads the block's 32 packed bytes (two 16-byte loads, shared by its 4 threads)
// and the 4 items' scales (4 consecutive bytes of the blocked layout).
// A thread takes PREP_U items 256 apart (one CTA: PREP_CTA_ITEMS consecutive items) and issues
// every load before its first store, so PREP_U blocks are in flight per thread (registers:
// __launch_bounds__ below asks for 4 CTAs of 256 threads per SM). (Before: one
// item per thread and 32-byte stores split over two half sectors; the prep ran at about
// 1 TB/s on prefill8-up, bench/RESULTS.md.)
% local PREP_U = PREP_CTA_ITEMS // 256
struct PrepPtr { const uint4 *src; const u32 *sf; uint4 *dst; };
struct PrepIn { uint4 lo, hi; u32 sb4; };
static __device__ __forceinline__ PrepPtr prep_ptr(const unsigned char *a, const unsigned char *sfa,
                                                   unsigned char *ws, int m, int j, int K) {
  const int j0 = j & ~3;
  PrepPtr q;
  q.src = (const uint4 *)(a + (long long)m * (K / 2) + j0 * 8);   // 16-byte aligned: K % 64 == 0
  q.sf = (const u32 *)(sfa + ((long long)(m / 128) * (K / 64) + j0 / 4) * 512 + (m % 32) * 16 +
                       ((m % 128) / 32) * 4);
  q.dst = (uint4 *)(ws + ((long long)m * K + j0 * 16) * 2) + (j & 3);
  return q;
}
static __device__ __forceinline__ void prep_load(const PrepPtr &q, PrepIn &in) {
  in.lo = q.src[0];   // words 0, 1 of items 0, 1
  in.hi = q.src[1];   // words 0, 1 of items 2, 3
  in.sb4 = *q.sf;
}
static __device__ __forceinline__ void prep_store(const PrepPtr &q, const PrepIn &in, int t) {
  const u32 w0[4] = {in.lo.x, in.lo.z, in.hi.x, in.hi.z}, w1[4] = {in.lo.y, in.lo.w, in.hi.y, in.hi.w};
  u32 o[8];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const u32 s2 = scale_f16x2((in.sb4 >> (8 * i)) & 0xFFu), v0 = w0[i] >> (4 * t), v1 = w1[i] >> (4 * t);
    o[i] = hmul2(((v0 << 9) & 0x0E000E00u) | ((v0 << 12) & 0x80008000u), s2);      // pair t
    o[4 + i] = hmul2(((v1 << 9) & 0x0E000E00u) | ((v1 << 12) & 0x80008000u), s2);  // pair t + 4
  }
  q.dst[0] = uint4{o[0], o[1], o[2], o[3]};
  q.dst[4] = uint4{o[4], o[5], o[6], o[7]};
}
// Items local0 + 256u (u < cnt <= PREP_U) of one group (row 0 at a, sfa, ws; items counted
// from its row 0): every load issued before the first store.
static __device__ __forceinline__ void prep_run(const unsigned char *a, const unsigned char *sfa,
                                                unsigned char *ws, int K, int local0, int cnt, int t) {
  const int per_row = K / 16;
  PrepIn in[${PREP_U}];
#pragma unroll
  for (int u = 0; u < ${PREP_U}; u++) {
    const int l = local0 + 256 * u, m = l / per_row;
    if (u < cnt) prep_load(prep_ptr(a, sfa, ws, m, l - m * per_row, K), in[u]);
  }
#pragma unroll
  for (int u = 0; u < ${PREP_U}; u++) {
    const int l = local0 + 256 * u, m = l / per_row;
    if (u < cnt) prep_store(prep_ptr(a, sfa, ws, m, l - m * per_row, K), in[u], t);
  }
}
// The last group whose first item is <= item (empty groups share their successor's prep0).
static __device__ __forceinline__ int prep_group(const GroupDesc *groups, int n, int item) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (groups[mid].prep0 <= item) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// ---- MoE: the prep kernel's CTA 0 writes the call's tile table ----
// Counts and faults of every expert (each faulty expert reported), then a block-wide scan of
// the experts' tile counts in rounds of 256 and each expert's entries, weight tile outer as in
// the grouped blob. Monotone offsets inside [0, max_rows] bound the count by the table's size,
// tiles_x * (ceil(max_rows / BLOCK_N) + E) (src/moe.c allocates that many); entries past it
// are dropped all the same (offsets changed under the call by another writer).
static __device__ __forceinline__ void moe_tiles(const GroupDesc *groups, int E, const MoeArgs &p) {
  __shared__ int warp_sum[8], s_first[256], s_ty[256], s_r0[256], s_cnt[256];
  const int tid = threadIdx.x, lane = tid % 32, w = tid / 32;
  int row_fault = 0;
  for (int e = tid; e < E; e += 256) {
    const int cnt = moe_expert(p, p.offsets, p.sf_offsets, e);
    if (cnt < 0) {
      moe_fault(p, e, -cnt);
      row_fault |= cnt == -1 || cnt == -2;
    }
  }
  const int bad = __syncthreads_or(row_fault);
  const int tiles_x = (groups[0].n + ${BLOCK_M - 1}) / ${BLOCK_M};
  const long long cap = (long long)tiles_x * ((p.max_rows + ${BLOCK_N - 1}) / ${BLOCK_N} + E);
  long long done = 0;
  for (int b = 0; !bad && b < E; b += 256) {
    const int e = b + tid;
    const int cnt = e < E ? moe_expert(p, p.offsets, p.sf_offsets, e) : 0;
    const int ty_n = cnt > 0 ? (cnt + ${BLOCK_N - 1}) / ${BLOCK_N} : 0, n = tiles_x * ty_n;
    int x = n;   // inclusive scan over the warp, then over the warps
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int y = __shfl_up_sync(0xFFFFFFFFu, x, d);
      if (lane >= d) x += y;
    }
    if (lane == 31) warp_sum[w] = x;
    __syncthreads();
    long long first = done + x - n, total = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      if (i < w) first += warp_sum[i];
      total += warp_sum[i];
    }
    __syncthreads();   // (warp_sum is reused by the next round)
    // The round's entries: one (expert, weight tile) pair at a time per thread, pairs of all
    // 256 experts spread over all threads (one thread per expert wrote hundreds of entries
    // alone: 2.6 us of CTA 0 on the 2-expert bench3; one warp per expert left 6 warps idle on
    // 64 experts). first <= cap < 2^30 (src/moe.c): an int.
    const int ok = n > 0 && first + n <= cap;
    s_first[tid] = ok ? (int)first : -1;
    s_ty[tid] = ty_n;
    s_r0[tid] = ok ? p.offsets[e] : 0;
    s_cnt[tid] = cnt;
    __syncthreads();
    const int pairs = min(256, E - b) * tiles_x;
    int el = tid / tiles_x, tx = tid - el * tiles_x;
    for (int pi = tid; pi < pairs; pi += 256) {
      const int f = s_first[el];
      if (f >= 0) {
        const int ty_i = s_ty[el], r0_i = s_r0[el], end_i = r0_i + s_cnt[el];
        int4 *dst = p.tiles + 1 + f + tx * ty_i;
        for (int ty = 0; ty < ty_i; ty++) dst[ty] = int4{b + el, tx, r0_i + ty * ${BLOCK_N}, end_i};
      }
      for (tx += 256; tx >= tiles_x; tx -= tiles_x) el++;   // the pair 256 further on
    }
    __syncthreads();   // (the s_ arrays are reused by the next round)
    done += total;
  }
  if (tid == 0) {
    p.tiles[0] = int4{bad ? 0 : (int)min(done, cap), 0, (int)(unsigned)p.c, (int)(unsigned)(p.c >> 32)};
  }
}

// ---- MoE: the prep kernel's other CTAs convert the token rows (PREP_CTA_ITEMS consecutive
// items per CTA and step of a grid-stride loop over the rows up to the last offset; a row's
// expert by a binary search of the offsets, done again only when an item leaves the last
// expert's rows, so about once per thread) ----
% local MOE_SMEM_OFFS = 1024   -- experts whose offsets a prep CTA copies to shared memory
static __device__ __forceinline__ void moe_prep(const GroupDesc *groups, int E, const MoeArgs &p) {
  // up to ${MOE_SMEM_OFFS} experts: the offsets in shared memory (one coalesced read per CTA
  // instead of a chain of dependent global reads per search)
  __shared__ int s_off[${MOE_SMEM_OFFS + 1}];
  const int *offs = p.offsets;
  if (E <= ${MOE_SMEM_OFFS}) {
    for (int i = threadIdx.x; i <= E; i += 256) s_off[i] = p.offsets[i];
    __syncthreads();
    offs = s_off;
  }
  const int K = groups[0].k, per_row = K / 16, t = threadIdx.x & 3;
  const int rows = max(0, min(offs[E], p.max_rows)), items = rows * per_row;
  unsigned char *ws = (unsigned char *)groups[0].ws;
  for (long long chunk = (long long)(blockIdx.x - 1) * ${PREP_CTA_ITEMS}; chunk < items;
       chunk += (long long)(gridDim.x - 1) * ${PREP_CTA_ITEMS}) {
    for (int u = 0; u < ${PREP_U};) {   // once per chunk unless its items span experts
      const long long it = chunk + threadIdx.x + 256 * u;
      if (it >= items) break;
      const int item = (int)it, r = item / per_row;
      int lo = 0, hi = E - 1;   // the last expert whose first row is <= r
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (offs[mid] <= r) lo = mid; else hi = mid - 1;
      }
      const int cnt = moe_expert(p, offs, p.sf_offsets, lo), r0 = offs[lo];
      if (cnt <= 0 || r < r0 || r >= r0 + cnt) {   // no expert owns it (or a faulty one)
        u++;
        continue;
      }
      const int end = min(items, (r0 + cnt) * per_row), n = min(${PREP_U} - u, (end - item + 255) / 256);
      prep_run((const unsigned char *)p.a + (long long)r0 * (K / 2),
               (const unsigned char *)p.sfa + (long long)p.sf_offsets[lo] * (K / 16),
               ws + (long long)r0 * K * 2, K, item - r0 * per_row, n, t);
      u += n;
    }
  }
}

// (256, 3): three prep CTAs per SM, 79 registers; unrestricted ptxas gives the warp lookup below
// 96 (two per SM), which cost prefill16-big's 602 MB prep 13 % (bench/RESULTS.md, 2026-12-06)
extern "C" __global__ void __launch_bounds__(256, 3)
${KERNEL_NAME}_prep(const unsigned char *__restrict__ blob, const MoeArgs moe,
                   const __grid_constant__ PrepTab tab) {
  const BlobHeader *hdr = (const BlobHeader *)blob;
  // (read where needed: the grouped call's lookup from tab reads no blob field at all)
  auto blob_groups = [&]() { return (const GroupDesc *)(blob + hdr->groups_off); };
  if (moe.offsets) {
    const GroupDesc *groups = blob_groups();
    if (blockIdx.x == 0) moe_tiles(groups, hdr->num_groups, moe);
    else moe_prep(groups, hdr->num_groups, moe);
    // (PTX ISA griddepcontrol) the GEMM, launched as this kernel's programmatic dependent
    // (src/moe.c), may start once every CTA got here or exited: its CTAs set up while the
    // last ones finish, and wait (griddepcontrol.wait) for this grid's completion and
    // memory before reading the table or the tokens. Without such a launch: no effect.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    return;
  }
  // the grouped call: PREP_CTA_ITEMS consecutive items per CTA, PREP_U per thread, 256 apart.
  // The GEMM is this kernel's programmatic dependent here too (src/dispatch.c launch): it may
  // launch once every prep CTA has started (this instruction, first), so its CTAs set up on
  // the SMs the prep's last wave leaves free, and its producer waits (griddepcontrol.wait) for
  // this grid's completion and memory before its first copy. Without such a launch: no effect.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
% if SK then
  // act16sk: the split tiles' flags start at 0 in every call (the GEMM sets them only after
  // its producer's griddepcontrol.wait, i.e. after this grid completed)
  if (blockIdx.x == 0) {
    int *flags = (int *)hdr->sk_flags;
    for (int i = threadIdx.x; i < hdr->sk_ctas; i += 256) flags[i] = 0;
  }
% end
  const int t = threadIdx.x & 3;
  const int base = blockIdx.x * ${PREP_CTA_ITEMS} + threadIdx.x;   // int: src/fam_sm90.c ACT16_MAX_ITEMS
  if (tab.num_groups > 0) {
    // Up to ${PREP_TAB_GROUPS} groups, from the parameter: lane g of each warp takes group g's
    // fields (constant memory, no dependent global load: the prep's latency chain is what a
    // one-wave set waits for before its first token copy, bench/RESULTS.md), and each thread
    // takes its items' groups from the lanes by shuffles. Every lane runs every shuffle (the
    // loops are unrolled, memory operations predicated); no shared memory, no block barrier
    // (a table in shared memory behind __syncthreads cost bench3 8 %).
    const int items = tab.items, ng = tab.num_groups, lane = threadIdx.x & 31;
    const unsigned char *ga = nullptr, *gsf = nullptr;
    unsigned char *gws = nullptr;
    int gk = 64, gp = 0x7FFFFFFF;
    if (lane < ng) {
      const PrepGroup &d = tab.g[lane];
      ga = d.a; gsf = d.sfa; gws = d.ws; gk = d.k; gp = d.prep0;
    }
    int gi[${PREP_U}];
#pragma unroll
    for (int u = 0; u < ${PREP_U}; u++) {   // the last group whose first item is <= item (as prep_group)
      const int item = base + 256 * u;
      gi[u] = 0;
      for (int l = 1; l < ng; l++)
        if (__shfl_sync(0xFFFFFFFFu, gp, l) <= item) gi[u] = l;
    }
    auto ptr_of = [&](int u) -> PrepPtr {
      const int item = base + 256 * u;
      const unsigned char *a = (const unsigned char *)__shfl_sync(0xFFFFFFFFu, (unsigned long long)ga, gi[u]);
      const unsigned char *sfa = (const unsigned char *)__shfl_sync(0xFFFFFFFFu, (unsigned long long)gsf, gi[u]);
      unsigned char *ws = (unsigned char *)__shfl_sync(0xFFFFFFFFu, (unsigned long long)gws, gi[u]);
      const int K = __shfl_sync(0xFFFFFFFFu, gk, gi[u]), l = item - __shfl_sync(0xFFFFFFFFu, gp, gi[u]);
      const int per_row = K / 16, m = l / per_row;
      return prep_ptr(a, sfa, ws, m, l - m * per_row, K);
    };
    PrepIn in[${PREP_U}];
#pragma unroll
    for (int u = 0; u < ${PREP_U}; u++) {
      const PrepPtr q = ptr_of(u);
      if (base + 256 * u < items) prep_load(q, in[u]);
    }
#pragma unroll
    for (int u = 0; u < ${PREP_U}; u++) {
      const PrepPtr q = ptr_of(u);
      if (base + 256 * u < items) prep_store(q, in[u], t);
    }
    return;
  }
  const int items = hdr->prep_items, ng = hdr->num_groups;
  const GroupDesc *groups = blob_groups();
  for (int u = 0; u < ${PREP_U};) {   // once unless the thread's items span groups
    const int item = base + 256 * u;
    if (item >= items) break;
    const GroupDesc &g = groups[prep_group(groups, ng, item)];
    const int end = min(items, g.prep0 + g.m * (g.k / 16)), n = min(${PREP_U} - u, (end - item + 255) / 256);
    prep_run((const unsigned char *)g.a, (const unsigned char *)g.sfa, (unsigned char *)g.ws, g.k,
             item - g.prep0, n, t);
    u += n;
  }
}

// ---- mbarrier, TMA (PTX ISA "mbarrier", "cp.async.bulk", "cp.async.bulk.tensor") ----
static __device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count));
}
static __device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  // the label is local to the braces, so every inlined copy may use the same name
  asm volatile("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
               "@!P1 bra.uni LAB_WAIT;\n\t}" :: "r"(bar), "r"(parity) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
static __device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// an L2 prefetch of one box (PTX ISA "cp.async.bulk.prefetch.tensor"): no shared memory, no
// mbarrier, no completion to wait for
static __device__ __forceinline__ void tma_prefetch_2d(const void *map, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
               :: "l"(map), "r"(c0), "r"(c1) : "memory");
}
// the weight scales' box (src/fam_sm90.c act16_sf_map): {128 u32, KSUB k blocks, SFB_BLK row blocks}
static __device__ __forceinline__ void tma_3d(u32 dst, const void *map, int c0, int c1, int c2, u32 bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
static __device__ __forceinline__ void tma_prefetch_3d(const void *map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];"
               :: "l"(map), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
static __device__ __forceinline__ void tma_2d(u32 dst, const void *map, int c0, int c1, u32 bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

// ---- wgmma (PTX ISA "wgmma.mma_async"): D(64 x ${BLOCK_N}, f32) += A(64 x 16, f16, registers)
// * B(16 x ${BLOCK_N}, f16, shared memory, K-major, 128-byte swizzle) ----
// The wgmma descriptor (PTX ISA "Matrix Descriptor Format") of a shared-memory address, whole
// (start field, leading byte offset 1, stride 1024 B, 128-byte swizzle); a k-step's is its
// stage's plus the step's byte offset / 16 (shared::cta addresses are below 2^18, so the start
// field never carries into the next field): one 64-bit add (UIADD3.64) per wgmma, of a
// constant where the ring's slot is one. Before: the start field and the high word were built
// per wgmma (7 instructions each with the address mask, then 3 uniform ones: UIADD3, UMOV,
// UMOV).
static __device__ __forceinline__ u64 desc_of(u32 saddr) {
  return ((u64)1 << 62) | ((u64)(1024 >> 4) << 32) | (u64)((saddr >> 4) | (1u << 16));
}
static __device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}
static __device__ __forceinline__ void wgmma_rs(float *d, const u32 *a, u64 db) {
% local outs, cons = {}, {}
% for i = 0, ACC - 1 do outs[#outs + 1] = "%" .. i; cons[#cons + 1] = '"+f"(d[' .. i .. '])' end
  asm volatile(
    "{\n.reg .pred p;\nsetp.ne.b32 p, %${ACC + 5}, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n${BLOCK_N}k16.f32.f16.f16 "
    "{${table.concat(outs, ", ")}}, {%${ACC}, %${ACC + 1}, %${ACC + 2}, %${ACC + 3}}, %${ACC + 4}, p, 1, 1, 0;\n}\n"
    : ${table.concat(cons, ", ")}
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
static __device__ __forceinline__ void fence_acc(float *d) {
#pragma unroll
  for (int i = 0; i < ${ACC * HALVES}; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}
static __device__ __forceinline__ void fence_regs(u32 *r) {
#pragma unroll
  for (int i = 0; i < 16; i++) asm volatile("" : "+r"(r[i]) :: "memory");
}
static __device__ __forceinline__ u32 f32x2_to_f16x2(float a, float b) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b));
  return r;
}

struct TileInfo { int group, tx, ty, row0, m, tok_map; unsigned short *c;
% if SK then
  int s0, s1, nfix, writer;
% end
};

// MIN_CTAS: the CTAs per SM the host's occupancy model counts on (src/fam_sm90.c
// sm90_ctas_per_sm); ptxas fits the registers to it
extern "C" __global__ void __launch_bounds__(${THREADS}, ${MIN_CTAS})
${KERNEL_NAME}(const unsigned char *__restrict__ blob, const MoeArgs moe) {
  // Everything lives in dynamic shared memory, aligned here to 1024 bytes (TMA's 128-byte
  // swizzle repeats every 1024 bytes and takes its pattern from the address). The declaration
  // promises only 16: a larger promise lets the compiler fold the alignment step away, and
  // the real base is not 1024-aligned when the kernel has static shared memory.
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char *smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  const BlobHeader *hdr = (const BlobHeader *)blob;
  const GroupDesc *groups = (const GroupDesc *)(blob + hdr->groups_off);
  const TmaDesc *maps = (const TmaDesc *)(blob + hdr->maps_off);
  const Tile *tiles = (const Tile *)(blob + hdr->tiles_off);
  int num_tiles = hdr->num_tiles;
  const int E = hdr->num_groups;
  // MoE: the tile table the prep kernel wrote for this call: the tile count and C in its
  // first entry; the grid is the worst case's, so CTAs past the count have nothing to do
  int4 *moe_tab = moe.tiles;
  unsigned short *moe_c = nullptr;
  if (moe_tab) {
    asm volatile("griddepcontrol.wait;" ::: "memory");   // the prep grid: done, its writes visible
    const int4 h = moe_tab[0];
    num_tiles = h.x;
    moe_c = (unsigned short *)(((u64)(unsigned)h.w << 32) | (unsigned)h.z);
% if not PERSIST then
    if ((int)blockIdx.x >= num_tiles) return;
% end
  }
% -- (wg == WG: the producer warp; the wide form's producer warpgroup)
  const int tid = threadIdx.x, wg = tid / 128;   // wg == ${WG}: the producer warp
  const u32 full0 = smem_u32(smem + ${BAR_OFF}), empty0 = full0 + ${8 * STAGES};
  if (tid == 0) {
    for (int s = 0; s < ${STAGES}; s++) {
      mbar_init(full0 + 8 * s, 1);                // the producer's arrive.expect_tx
      mbar_init(empty0 + 8 * s, ${4 * WG});       // one arrive per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // The tile's group (MoE: expert), weight and token tile, its first token row in the token
  // map, its token count and C.
  auto tile_at = [&](int ti) -> TileInfo {
    TileInfo r;
    if (!moe_tab) {
% if SK then
      const Unit t = ((const Unit *)tiles)[ti];
      r.s0 = t.s0; r.s1 = t.s1; r.nfix = t.nfix; r.writer = t.writer;
% else
      const Tile t = tiles[ti];
% end
      r.group = t.group; r.tx = t.tx; r.ty = t.ty; r.row0 = 0; r.tok_map = ${BLOB_GROUP_MAPS} * t.group;
      r.m = groups[t.group].m;
      r.c = (unsigned short *)groups[t.group].c;
      return r;
    }
    const int4 t = moe_tab[1 + ti];   // {expert, weight tile, first row, end row}
    r.group = t.x; r.tx = t.y; r.ty = 0; r.row0 = t.z; r.tok_map = ${BLOB_GROUP_MAPS} * E;
    r.m = t.w - t.z;
    r.c = moe_c + (long long)t.z * groups[t.x].n;
% if SK then
    r.s0 = 0; r.s1 = 0; r.nfix = 0; r.writer = 0;   // (act16sk has no MoE entry: src/moe.c)
% end
    return r;
  };

  if (wg == ${WG}) {
    // ---- producer ----
% if PWG then
    // the whole producer warpgroup gives its registers back (PTX ISA "setmaxnreg": every warp
    // of the warpgroup executes it); one thread then issues the copies
    asm volatile("setmaxnreg.dec.sync.aligned.u32 ${PRODUCER_REGS};\n" ::: "memory");
% end
    if (tid == ${WG * 128}) {
      const u32 base = smem_u32(smem);
      int it = 0;
      // the grouped call: the prep grid (this kernel's programmatic primary) done and its
      // tokens visible before the first copy; the consumers read only what this thread's
      // copies bring (MoE: waited above, by every thread). Before the wait, what does not
      // depend on the prep: the first tile's blob entries (written before the prep's launch),
      // its tensor maps, and an L2 prefetch of the weight and scale boxes of its first ring
      // round, so that those copies find L2 when the wait ends (the token boxes come from
      // the prep). Prefetches only: no shared memory or mbarrier is touched before the wait.
% if SK then
      const int *sk_first = (const int *)(blob + hdr->sk_first_off);
      const int u_first = sk_first[blockIdx.x], u_end = sk_first[blockIdx.x + 1];
% end
      if (!moe_tab) {
% if SK then
        if (u_first < u_end) {
          const TileInfo tile = tile_at(u_first);
          const int kt0 = tile.s0, kt_end = min(tile.s1, tile.s0 + ${STAGES});
% else
        if ((int)blockIdx.x < num_tiles) {
          const TileInfo tile = tile_at(blockIdx.x);
% end
          const GroupDesc &g = groups[tile.group];
          const int nk = g.k / 64, x0 = tile.tx * ${BLOCK_M};
          const TmaDesc *w_map = &maps[${BLOB_GROUP_MAPS} * tile.group + 1];
          const TmaDesc *sf_map = &maps[${BLOB_GROUP_MAPS} * tile.group + 2];
          asm volatile("prefetch.tensormap [%0];" :: "l"(&maps[tile.tok_map]) : "memory");
          asm volatile("prefetch.tensormap [%0];" :: "l"(w_map) : "memory");
          asm volatile("prefetch.tensormap [%0];" :: "l"(sf_map) : "memory");
% if not SK then
          const int kt0 = 0, kt_end = min((nk + ${KSUB - 1}) / ${KSUB}, ${STAGES});
% end
          for (int kt = kt0; kt < kt_end; kt++) {
            tma_prefetch_2d(w_map, kt * ${W_ROW}, x0);
            tma_prefetch_3d(sf_map, 0, kt * ${KSUB}, x0 / 128);
          }
        }
        asm volatile("griddepcontrol.wait;" ::: "memory");
      }
% if PERSIST then
      // act16p: the producer picks the tiles and tells the consumers through TILE_OF[slot] of
      // each tile's first stage (written before the stage's arrive, which releases it to the
      // consumers' wait); -1 after the last tile ends them.
      int *tile_of = (int *)(smem + ${TILE_OF});
% if RING_UNROLL == 1 then
      // The consumers' unrolled ring starts each tile at slot 0: the rest of the round before a
      // tile (and before the end marker) is padding, stages that carry nothing (an arrive
      // without bytes; the consumers wait for each and release it)
      auto pad_ring = [&]() {
        for (; it % ${STAGES} != 0; it++) {
          const int slot = it % ${STAGES};
          if (it >= ${STAGES}) mbar_wait(empty0 + 8 * slot, ((it / ${STAGES}) - 1) & 1);
          mbar_arrive(full0 + 8 * slot);
        }
      };
% end
% if SK then
      int ti = u_first;
      while (ti < u_end) {
        const int next = ti + 1;
% else
      int ti = blockIdx.x;
      while (ti < num_tiles) {
        const int next = moe_tab ? (int)gridDim.x + atomicAdd((int *)&moe_tab[0].y, 1) : ti + (int)gridDim.x;
% end
% else
${TILE_LOOP}
% end
% if PERSIST and RING_UNROLL == 1 then
        pad_ring();
% end
        const TileInfo tile = tile_at(ti);
        const GroupDesc &g = groups[tile.group];
        const int nk = g.k / 64;                  // K % 64 == 0 and K >= 64
        const int x0 = tile.tx * ${BLOCK_M}, y0 = tile.row0 + tile.ty * ${BLOCK_N};
        const TmaDesc *tok_map = &maps[tile.tok_map], *w_map = &maps[${BLOB_GROUP_MAPS} * tile.group + 1];
        const TmaDesc *sf_map = &maps[${BLOB_GROUP_MAPS} * tile.group + 2];
        asm volatile("prefetch.tensormap [%0];" :: "l"(tok_map) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(w_map) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(sf_map) : "memory");
        // (No fence.proxy.tensormap::generic.acquire of the maps, which a host copy wrote
        // before the launch: three per tile cost decode64-up 377 -> 505 us on the H200, one
        // tile per CTA. Open question in the closing notes of 2026-12-03: __grid_constant__
        // maps or one acquire per CTA.)
        // a stage: KSUB 64-k blocks; a last stage with fewer (nk % KSUB) repeats token block
        // nk - 1 in the missing places (the consumers skip them); the weight and scale boxes'
        // parts past K are zero-filled; the stage's byte count is the same
% if SK then
        const int kt0 = tile.s0, kt1 = tile.s1;   // this unit's stages of the tile
% else
        const int kt0 = 0, kt1 = (nk + ${KSUB - 1}) / ${KSUB};
% end
        for (int kt = kt0; kt < kt1; kt++, it++) {
          const int slot = it % ${STAGES};
          if (it >= ${STAGES}) mbar_wait(empty0 + 8 * slot, ((it / ${STAGES}) - 1) & 1);
          const u32 full = full0 + 8 * slot;
% if PERSIST then
          if (kt == kt0) tile_of[slot] = ti;
% end
          mbar_expect_tx(full, ${TX});
% for j = 0, KSUB - 1 do
%   local KB = KSUB == 1 and "kt" or ("min(kt * " .. KSUB .. " + " .. j .. ", nk - 1)")
          tma_2d(base + slot * ${TOK_BYTES} + ${j * TOK_SUB}, tok_map, ${KB} * 64, y0, full);
% end
          // (BLOCK_K 128, odd nk: the box's second half lies past K, zero-filled)
          tma_2d(base + ${W_OFF} + slot * ${W_BYTES}, w_map, kt * ${W_ROW}, x0, full);
          // the stage's scales, one box: [row block b][k block j] of 512 bytes (blocks past nk
          // or past the last row block are zero-filled and never read)
          tma_3d(base + ${SF_OFF} + slot * ${SF_BYTES}, sf_map, 0, kt * ${KSUB}, x0 / 128, full);
        }
% if PERSIST then
        ti = next;
      }
% if RING_UNROLL == 1 then
      pad_ring();
% end
      const int slot = it % ${STAGES};   // the end: a stage that carries no tile
      if (it >= ${STAGES}) mbar_wait(empty0 + 8 * slot, ((it / ${STAGES}) - 1) & 1);
      tile_of[slot] = -1;
      mbar_arrive(full0 + 8 * slot);
% else
      }
% end
    }
    return;
  }

  // ---- consumers ----
% if PWG then
  // the registers the producer warpgroup gave back (it ran setmaxnreg.dec; .inc waits for them)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 ${CONSUMER_REGS};\n" ::: "memory");
% end
  const int cw = wg, warp = (tid % 128) / 32, lane = tid % 32, t = lane % 4;
% -- (the wide form: and 64 rows further for the second half)
  const int lr0 = cw * ${CW_ROWS} + warp * 16 + lane / 4;   // local weight rows lr0 and lr0 + 8
  const u32 woff0 = lr0 * ${W_ROW} + t * 8, woff1 = woff0 + 8 * ${W_ROW};
  u32 afr0[16], afr1[16];   // fragment registers of even and odd k-tiles
  // The ring position of the next stage, carried across tiles and advanced by a compare (no
  // division by STAGES per k-step).
  int slot = 0, prev_slot = 0;
  u32 phase = 0;
  const u32 tok0 = smem_u32(smem);                 // the token ring starts the layout
  const u64 tok_desc = desc_of(tok0);
% if PERSIST then
  const int *tile_of = (const int *)(smem + ${TILE_OF});
  for (;;) {
% if RING_UNROLL == 1 then
  while (slot != 0) {   // the producer's padding up to slot 0 (see pad_ring)
    mbar_wait(full0 + 8 * slot, phase);
    __syncwarp();
    if (lane == 0) mbar_arrive(empty0 + 8 * slot);
    if (++slot == ${STAGES}) {
      slot = 0;
      phase ^= 1;
    }
  }
% end
  mbar_wait(full0 + 8 * slot, phase);   // the tile's first stage
  // lane 0 reads the stage's tile word and shares it: the lane that releases the stage (its
  // arrive on the empty barrier) is the one that read it, so compute-sanitizer's racecheck sees
  // the read ordered before the producer's next write (with every lane reading, it reported a
  // WAR hazard per lane against the end marker, although __syncwarp orders them)
  // (shared by redux.sync, whose result is a uniform register like nk's below; a shuffle
  // did the same job: the R2UR moves left in act16p's SASS are the producer's TMA operands)
  int ti = 0x7FFFFFFF;
  if (lane == 0) ti = *(volatile const int *)&tile_of[slot];   // (volatile: no lane speculates it)
  ti = __reduce_min_sync(0xFFFFFFFFu, ti);
  if (ti < 0) break;
% else
${TILE_LOOP}
% end
  // (only what the k-loop needs stays live through it; the epilogue reads the tile again:
  // act16p's unrolled ring needed more than the 96 registers of two CTAs per SM otherwise)
  int nk, x0;
  {
    const TileInfo tile = tile_at(ti);
    x0 = tile.tx * ${BLOCK_M};
  // K from the blob is the same in every lane, but ptxas cannot know it: the k-loop would be
  // divergent to it and the ring slot a per-lane value, so every wgmma descriptor was built in
  // vector registers and moved into uniform ones (R2UR, 2 per wgmma). redux.sync's result is
  // a uniform register: 429 -> 404 SASS instructions per 256-k stage (128x24x256), decode64-up
  // 257.7 -> 245.7 us on the H200 (bench/RESULTS.md).
% if SK then
    // the unit's 64-k blocks: those of its stages s0 .. s1-1 (the tile's last stage may hold
    // fewer than KSUB); uniform like nk
    nk = (int)__reduce_min_sync(0xFFFFFFFFu, (unsigned)(min(tile.s1 * ${KSUB}, groups[tile.group].k / 64) -
                                                         tile.s0 * ${KSUB}));
% else
    nk = (int)__reduce_min_sync(0xFFFFFFFFu, (unsigned)(groups[tile.group].k / 64));
% end
  }
% if HALVES == 1 then
  u32 soff[2];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    const int gr = x0 + lr0 + 8 * i, r = gr % 128;
% else
  u32 soff[4];   // rows lr0 + 8 i + 64 h at [2 h + i]
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const int gr = x0 + lr0 + 8 * (i % 2) + 64 * (i / 2), r = gr % 128;
% end
    soff[i] = (gr / 128 - x0 / 128) * ${KSUB * 512} + (r % 32) * 16 + (r / 32) * 4 + t;
  }
% -- (the wide form's half h at acc + h * ACC)
  float acc[${ACC * HALVES}];
#pragma unroll
  for (int i = 0; i < ${ACC * HALVES}; i++) acc[i] = 0.f;

  // One 64-k block j of the current stage: decode this thread's weights into fragment
  // registers, four wgmma steps, then wait for the previous block's wgmma group.
  // (sl: the stage's ring slot; a constant where the ring is unrolled)
% if HALVES == 1 then
  auto block_at = [&](int sl, int j, u32 *afr, bool reg_slot) {
    const unsigned char *w = smem + ${W_OFF} + sl * ${W_BYTES} + j * 32;
    const unsigned char *sf = smem + ${SF_OFF} + sl * ${SF_BYTES} + j * 512;
    const uint2 q0 = *(const uint2 *)(w + woff0), q1 = *(const uint2 *)(w + woff1);
    const u32 s0 = scale_f16x2(sf[soff[0]]), s1 = scale_f16x2(sf[soff[1]]);
    u32 p0[8], p1[8];
    dec8(q0.x, s0, p0); dec8(q0.y, s0, p0 + 4);
    dec8(q1.x, s1, p1); dec8(q1.y, s1, p1 + 4);
    // pair q of row i -> step q/2, register 2*(q%2) + i (a0: row, k 2t; a1: row+8, k 2t;
    // a2: row, k 2t+8; a3: row+8, k 2t+8)
#pragma unroll
    for (int qq = 0; qq < 8; qq++) {
      afr[4 * (qq / 2) + 2 * (qq % 2)] = p0[qq];
      afr[4 * (qq / 2) + 2 * (qq % 2) + 1] = p1[qq];
    }
    fence_regs(afr);
    fence_acc(acc);
    wgmma_fence();
    // a constant slot: the ring's descriptor plus a constant; a slot in a register: built from
    // the stage's address (tests/lint_ptx.c traces the address; ptxas builds either in uniform
    // registers)
    const u64 tok = reg_slot ? desc_of(tok0 + sl * ${TOK_BYTES} + j * ${TOK_SUB})
                             : tok_desc + (u32)(sl * ${TOK_BYTES // 16} + j * ${TOK_SUB // 16});
#pragma unroll
    for (int s = 0; s < 4; s++) wgmma_rs(acc, afr + 4 * s, tok + 2 * s);   // 32 bytes per step
    wgmma_commit();
    fence_acc(acc);
    wgmma_wait<1>();
    fence_regs(afr);
  };
% else
  // Wide (two halves): half h of the block decodes into fragment buffer h and commits its own
  // wgmma group; the wait after it leaves only that group in flight, so the other buffer
  // (read by the other half's previous group) is free when it is decoded into next. afr is
  // then unused (each call uses both buffers).
  auto block_at = [&](int sl, int j, u32 *afr, bool reg_slot) {
    const unsigned char *w = smem + ${W_OFF} + sl * ${W_BYTES} + j * 32;
    const unsigned char *sf = smem + ${SF_OFF} + sl * ${SF_BYTES} + j * 512;
    // a constant slot: the ring's descriptor plus a constant; a slot in a register: built from
    // the stage's address (tests/lint_ptx.c traces the address; ptxas builds either in uniform
    // registers)
    const u64 tok = reg_slot ? desc_of(tok0 + sl * ${TOK_BYTES} + j * ${TOK_SUB})
                             : tok_desc + (u32)(sl * ${TOK_BYTES // 16} + j * ${TOK_SUB // 16});
    (void)afr;
% for h = 0, 1 do
%   local FR = h == 0 and "afr0" or "afr1"
    {
    const uint2 q0 = *(const uint2 *)(w + woff0 + ${h * 64 * W_ROW}), q1 = *(const uint2 *)(w + woff1 + ${h * 64 * W_ROW});
    const u32 s0 = scale_f16x2(sf[soff[${2 * h}]]), s1 = scale_f16x2(sf[soff[${2 * h + 1}]]);
    u32 p0[8], p1[8];
    dec8(q0.x, s0, p0); dec8(q0.y, s0, p0 + 4);
    dec8(q1.x, s1, p1); dec8(q1.y, s1, p1 + 4);
    // pair q of row i -> step q/2, register 2*(q%2) + i (a0: row, k 2t; a1: row+8, k 2t;
    // a2: row, k 2t+8; a3: row+8, k 2t+8)
#pragma unroll
    for (int qq = 0; qq < 8; qq++) {
      ${FR}[4 * (qq / 2) + 2 * (qq % 2)] = p0[qq];
      ${FR}[4 * (qq / 2) + 2 * (qq % 2) + 1] = p1[qq];
    }
    fence_regs(${FR});
    fence_acc(acc);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; s++) wgmma_rs(acc + ${h * ACC}, ${FR} + 4 * s, tok + 2 * s);   // 32 bytes per step
    wgmma_commit();
    fence_acc(acc);
    wgmma_wait<1>();
    fence_regs(${FR});
    }
% end
  };
% end
  // Lane 0 releases the previous stage for its warp once the wait in the block after it
  // completed that stage's last wgmma group: the warp's reads of that stage (its tile_of word
  // among them) are ordered before the arrive (racecheck flagged the act16p end marker's
  // write against lanes' reads of tile_of without the __syncwarp)
  auto release_at = [&](int sl) {
    __syncwarp();
    if (lane == 0) mbar_arrive(empty0 + 8 * sl);
  };
  auto block = [&](int j, u32 *afr) { block_at(slot, j, afr, true); };
  auto release_prev = [&]() { release_at(prev_slot); };
  auto next_slot = [&]() {
    prev_slot = slot;
    if (++slot == ${STAGES}) {
      slot = 0;
      phase ^= 1;
    }
  };
% if KSUB == 1 then
  // one block per stage; the fragment buffers alternate between stages
  int kt = 0;
% if RING_UNROLL == 1 then
  // RING_UNROLL: whole rounds of R stages (STAGES, or twice that when odd, so that each
  // position's fragment buffer is fixed too) with constant slots, then the loop below
%   local R = STAGES % 2 == 0 and STAGES or 2 * STAGES
  const int rounds = nk / ${R};
  for (int r = 0; r < rounds; r++) {
%   for q = 0, R - 1 do
%     local sl = q % STAGES
    mbar_wait(full0 + ${8 * sl}, phase);
    block_at(${sl}, 0, ${q % 2 == 0 and "afr0" or "afr1"}, false);
%     if q == 0 then
    if (r > 0) release_at(${STAGES - 1});
%     else
    release_at(${(q - 1) % STAGES});
%     end
%     if sl == STAGES - 1 then
    phase ^= 1;
%     end
%   end
  }
  if (rounds > 0) prev_slot = ${STAGES - 1};
  kt = rounds * ${R};
  if (kt < nk)
% end
  for (;;) {
    mbar_wait(full0 + 8 * slot, phase);
    block(0, afr0);
    if (kt > 0) release_prev();
    next_slot();
    if (++kt == nk) break;
    mbar_wait(full0 + 8 * slot, phase);
    block(0, afr1);
    release_prev();
    next_slot();
    if (++kt == nk) break;
  }
% else
  // KSUB blocks per stage, fragment buffers 0, 1, 0, 1; a last stage with fewer blocks
  // (nk % KSUB) comes after the loop, one straight-line branch per count (a conditional block
  // inside the loop made ptxas serialise every wgmma, C7513: on the path that skips it, the
  // next block would write a buffer under a wgmma still reading it)
  int st0 = 0;   // the first stage of the loop with the slot in a register
  // one stage with the slot in a register: KSUB blocks, fragment buffers 0, 1, 0, 1
  auto reg_stage = [&](int st) {
    mbar_wait(full0 + 8 * slot, phase);
    block(0, afr0);
    if (st > 0) release_prev();
% for j = 1, KSUB - 1 do
    block(${j}, ${j % 2 == 0 and "afr0" or "afr1"});
% end
    next_slot();
  };
% if RING_UNROLL == 1 then
  // RING_UNROLL: whole rounds of STAGES stages, each stage's slot a constant, so
  // shared-memory offsets and wgmma descriptors fold into immediates: 404 -> ~352 SASS
  // instructions per 256-k stage (128x24x256:s4). The last nst % STAGES stages run in the
  // loop below. ptxas serialises the wgmma pipeline of some variants in this form
  // (C7511/C7512: 54 of the 231 act16 variants with BLOCK_K > 64 on NVRTC 13.0; every other
  // arrangement of the partial round tried did no better) and spills 7 (128x32x128,
  // 256x8x256): src/fam_sm90.c's ring_fallback lists them, and src/jit.c compiles the
  // RING_UNROLL=0 render for any other that degrades.
  // (every tile starts at slot 0: act16's CTA runs one, act16p pads the ring to it)
  const int rounds = nk / ${KSUB * STAGES};
  for (int r = 0; r < rounds; r++) {
%   for s = 0, STAGES - 1 do
    mbar_wait(full0 + ${8 * s}, phase);
    block_at(${s}, 0, afr0, false);
%     if s == 0 then
    if (r > 0) release_at(${STAGES - 1});
%     else
    release_at(${s - 1});
%     end
%     for j = 1, KSUB - 1 do
    block_at(${s}, ${j}, ${j % 2 == 0 and "afr0" or "afr1"}, false);
%     end
%   end
    phase ^= 1;
  }
  if (rounds > 0) prev_slot = ${STAGES - 1};
  st0 = rounds * ${STAGES};
% end
  for (int st = st0; st < nk / ${KSUB}; st++) reg_stage(st);
% for rem = 1, KSUB - 1 do
%   local OPEN = rem == 1 and "if" or "\125 else if"   -- (\125: a closing brace)
  ${OPEN} (nk % ${KSUB} == ${rem}) {
    mbar_wait(full0 + 8 * slot, phase);
    block(0, afr0);
    if (nk > ${KSUB}) release_prev();
%   for j = 1, rem - 1 do
    block(${j}, ${j % 2 == 0 and "afr0" or "afr1"});
%   end
    next_slot();
% end
  }
% end
  wgmma_wait<0>();
  fence_acc(acc);
  fence_regs(afr0);
  fence_regs(afr1);
  __syncwarp();
  if (lane == 0) mbar_arrive(empty0 + 8 * prev_slot);  // the tile's last stage

  // ---- epilogue: fragment rows are weights (N of C), columns tokens (M of C); C[tok][w].
  // Both operands carried 2^-14: C = acc * 2^28, exact in fp32.
  const TileInfo tile = tile_at(ti);
% if SK then
  {
    // act16sk's split tiles: slots of BLOCK_M x BLOCK_N floats, thread-major in float4s (each
    // warp's store or load covers 512 contiguous bytes); flag c set (release, gpu scope) once
    // CTA c's slot is complete, read with acquire by the tile's first piece; the prep kernel
    // zeroes the flags before every call
    float4 *part = (float4 *)hdr->sk_part;
    int *flags = (int *)hdr->sk_flags;
    const int ct = tid;   // 0 .. ${WG * 128 - 1}: consumer threads only below
    if (tile.writer) {
      float4 *dst = part + (long long)blockIdx.x * ${BLOCK_M * BLOCK_N // 4} + ct;
#pragma unroll
      for (int i = 0; i < ${ACC // 4}; i++)
        __stcg(dst + i * ${WG * 128}, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
      asm volatile("bar.sync 1, ${WG * 128};" ::: "memory");   // every consumer's stores, then the flag
      if (ct == 0) {
        __threadfence();
        asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(flags + blockIdx.x), "r"(1) : "memory");
      }
      continue;   // the next unit
    }
    if (tile.nfix > 0) {   // the later pieces: their flags, then their slots added in CTA order
      if (ct == 0) {
        for (int f = 1; f <= tile.nfix; f++) {
          int ready = 0;
          for (;;) {
            asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(ready) : "l"(flags + blockIdx.x + f) : "memory");
            if (ready) break;
            __nanosleep(64);
          }
        }
      }
      asm volatile("bar.sync 1, ${WG * 128};" ::: "memory");
      const float4 *src = part + (long long)(blockIdx.x + 1) * ${BLOCK_M * BLOCK_N // 4} + ct;
% local SLOT = BLOCK_M * BLOCK_N * 4
% if RING_UNROLL == 1 and 2 * SLOT <= SF_OFF then
      // (the unrolled ring only: with the ring in a register this form spilled 192x64x128, the
      // loads below did not)
      // the pieces through shared memory, each thread its own float4s (no thread reads another's):
      // the ring's data is idle here (a split tile's first piece is its CTA's last unit, and
      // every consumer's wgmmas completed before the bar.sync above); cp.async holds no
      // registers while in flight, so the fix-up adds none beside the accumulators (4 float4
      // loads in registers made 128x128x128's unrolled ring spill). Pieces alternate between
      // two buffers, so a piece's copies never overwrite what the previous one's loads read.
      const u32 fx = smem_u32(smem) + ct * 16;
      for (int f = 0; f < tile.nfix; f++) {
        const u32 buf = fx + (f & 1) * ${SLOT};
#pragma unroll
        for (int i = 0; i < ${ACC // 4}; i++)
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                       :: "r"(buf + i * ${WG * 128 * 16}), "l"(src + (long long)f * ${BLOCK_M * BLOCK_N // 4} + i * ${WG * 128}) : "memory");
        asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
        for (int i = 0; i < ${ACC // 4}; i++) {
          float4 q;
          asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(q.x), "=f"(q.y), "=f"(q.z), "=f"(q.w)
                       : "r"(buf + i * ${WG * 128 * 16}) : "memory");
          acc[4 * i] += q.x; acc[4 * i + 1] += q.y; acc[4 * i + 2] += q.z; acc[4 * i + 3] += q.w;
        }
      }
% else
      // per float4 of the fragment, the pieces in order (acc + p1 + p2 ...: a fixed order);
      // 4 float4 loads in flight per piece (16 registers beside the accumulators: a loop over
      // the pieces around all of them spilled; one load at a time cost an L2 round trip per
      // float4, bench3's ncu: long-scoreboard stalls 4.1 against act16's 1.3 per instruction)
#pragma unroll
      for (int i0 = 0; i0 < ${ACC // 4}; i0 += 4) {
        for (int f = 0; f < tile.nfix; f++) {
          float4 q[4];
#pragma unroll
          for (int j = 0; j < 4; j++)
            if (i0 + j < ${ACC // 4})
              q[j] = __ldcg(src + (long long)f * ${BLOCK_M * BLOCK_N // 4} + (i0 + j) * ${WG * 128});
#pragma unroll
          for (int j = 0; j < 4; j++)
            if (i0 + j < ${ACC // 4}) {
              const int i = i0 + j;
              acc[4 * i] += q[j].x; acc[4 * i + 1] += q[j].y; acc[4 * i + 2] += q[j].z; acc[4 * i + 3] += q[j].w;
            }
        }
      }
% end
    }
  }
% end
  const int N = groups[tile.group].n, M = tile.m, y0 = tile.ty * ${BLOCK_N};
  unsigned short *C = tile.c;
  const float S = 268435456.0f;
% -- C staged through shared memory where the ring is idle (one tile per CTA: every stage was
% -- consumed) and the staged tile fits below the mbarriers: BLOCK_N token rows of BLOCK_M
% -- halves, the pitch padded by 16 bytes so that the 8 rows of an stmatrix and the 8 chunks
% -- of a quarter-warp's 16-byte load fall in distinct banks.
% local C_PITCH = 2 * BLOCK_M + 16
% local C_STAGE = not PERSIST and BLOCK_N * C_PITCH <= BAR_OFF
% if C_STAGE then
  {
    // Every consumer warpgroup's wgmmas are complete (each waited for its own above), so the
    // ring may be overwritten; the producer's copies all landed (every stage was waited for).
    asm volatile("bar.sync 1, ${WG * 128};" ::: "memory");
    // stmatrix .trans: matrix q of an .x4 is rows (lanes) 8q .. 8q + 7's addresses; a fragment
    // 8x8 (8 weight rows x 8 tokens, thread lane: row lane / 4, tokens 2t, 2t + 1) lands
    // transposed: shared row = token, 8 consecutive weights (16 bytes). Matrices: (j, h = 0),
    // (j, h = 1), (j + 1, 0), (j + 1, 1) for token block j and weight half h.
    const u32 cs = smem_u32(smem);
% -- (the wide form: each half's fragment, 64 weight rows further)
% for h = 0, HALVES - 1 do
%   local ACCV = HALVES == 1 and "acc" or "acc_h"
%   if HALVES == 1 then
    const u32 sa = cs + ((lane & 7) + 8 * (lane >> 4)) * ${C_PITCH} + (cw * 64 + warp * 16 + 8 * ((lane >> 3) & 1)) * 2;
%   else
  {
    const float *acc_h = acc + ${h * ACC};
    const u32 sa = cs + ((lane & 7) + 8 * (lane >> 4)) * ${C_PITCH} +
                   (cw * ${CW_ROWS} + ${h * 64} + warp * 16 + 8 * ((lane >> 3) & 1)) * 2;
%   end
#pragma unroll
    for (int j = 0; j + 1 < ${BLOCK_N // 8}; j += 2) {
      const u32 r0 = f32x2_to_f16x2(${ACCV}[4 * j] * S, ${ACCV}[4 * j + 1] * S);
      const u32 r1 = f32x2_to_f16x2(${ACCV}[4 * j + 2] * S, ${ACCV}[4 * j + 3] * S);
      const u32 r2 = f32x2_to_f16x2(${ACCV}[4 * j + 4] * S, ${ACCV}[4 * j + 5] * S);
      const u32 r3 = f32x2_to_f16x2(${ACCV}[4 * j + 6] * S, ${ACCV}[4 * j + 7] * S);
      asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                   :: "r"(sa + j * ${8 * C_PITCH}), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
    }
% if (BLOCK_N // 8) % 2 == 1 then
    {
      const int j = ${BLOCK_N // 8 - 1};   // the last token block: .x2 (lanes 0 .. 15's addresses)
      const u32 r0 = f32x2_to_f16x2(${ACCV}[4 * j] * S, ${ACCV}[4 * j + 1] * S);
      const u32 r1 = f32x2_to_f16x2(${ACCV}[4 * j + 2] * S, ${ACCV}[4 * j + 3] * S);
      asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};"
                   :: "r"(sa + j * ${8 * C_PITCH}), "r"(r0), "r"(r1) : "memory");
    }
% end
%   if HALVES > 1 then
  }
%   end
% end
    asm volatile("bar.sync 1, ${WG * 128};" ::: "memory");
    // C rows are 16-byte aligned (N % 8 == 0, C aligned to 16): each thread copies 16-byte
    // chunks, a warp 512 contiguous bytes of shared memory, whole 16-byte pieces of C rows
    // (N % 8 == 0: a chunk is wholly inside or wholly past N)
% local CHUNKS = BLOCK_N * BLOCK_M // 8
#pragma unroll
    for (int q = 0; q < ${(CHUNKS + WG * 128 - 1) // (WG * 128)}; q++) {
      const int i = tid + q * ${WG * 128};
      const int r = i / ${BLOCK_M // 8}, ch = i % ${BLOCK_M // 8};
      if (${CHUNKS % (WG * 128) == 0 and "true" or ("i < " .. CHUNKS)} && y0 + r < M && x0 + 8 * ch < N) {
        u32 a, b, c, d;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                     : "r"(cs + r * ${C_PITCH} + ch * 16) : "memory");
        asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
                     :: "l"(C + (long long)(y0 + r) * N + x0 + 8 * ch), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
      }
    }
  }
% else
% if HALVES ~= 1 then error("the wide form stores C through shared memory (src/fam_sm90.c act16_wide_staged)") end
  const int wr = x0 + cw * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < ${BLOCK_N // 8}; j++) {
    const int tc = y0 + 8 * j + 2 * t;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int x = wr + 8 * h;
      const u32 v = f32x2_to_f16x2(acc[4 * j + 2 * h] * S, acc[4 * j + 2 * h + 1] * S);
      if (x < N) {
        if (tc < M) C[(long long)tc * N + x] = (unsigned short)(v & 0xFFFF);
        if (tc + 1 < M) C[(long long)(tc + 1) * N + x] = (unsigned short)(v >> 16);
      }
    }
  }
% end
  }  // tiles
}
