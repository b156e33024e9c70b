% if STRATEGY >= 1 then include("sm90a_act16.cuh") return end  -- act16, act16p: their own kernels
% -- sm90a_grouped.cu: NVFP4 block-scaled grouped GEMM for Hopper (sm_90a).
% -- Hopper has no fp4 tensor cores, so every value*scale is dequantised EXACTLY to fp16
% -- (see DESIGN.md "Numerics") into shared memory in wgmma's 128-byte-swizzled K-major
% -- layout, and wgmma m64nNk16 (f16 in, f32 accumulate) multiplies.
% --
% -- Roles: X is the operand on wgmma's M side, Y on its N side. SWAP_AB = 0: X = A (tokens),
% -- Y = B (weights), C[x][y]. SWAP_AB = 1: X = B (weights), Y = A (tokens), C[y][x]: for
% -- small M the token count becomes wgmma's N (8..256 in steps of 8).
% --
% -- Pipeline per CTA (one output tile per CTA, from a host-built tile list):
% --   packed X/Y rows and their 512-byte scale blocks -> cp.async ring of STAGES stages
% --   -> all threads decode one k-tile into one of two fp16 buffers
% --   -> wgmma on that buffer runs while the next k-tile is decoded into the other.
% local WG = BLOCK_M // 64            -- warpgroups; warpgroup w owns X rows 64w..64w+63
% local KSUB = BLOCK_K // 64          -- 64-wide k sub-blocks (one swizzle atom, one scale block)
% local function sf_blocks(rows)      -- 128-row scale blocks a tile of `rows` rows can touch
%   if rows % 128 == 0 or 128 % rows == 0 then return (rows + 127) // 128 end
%   return (rows + 127) // 128 + 1
% end
% local SFX_BLK, SFY_BLK = sf_blocks(BLOCK_M), sf_blocks(BLOCK_N)
% -- The shared-memory layout is the host's (src/fam_sm90.c dual_layout, the SMEM_* parameters);
% -- the static_asserts after the structs check it against what this kernel needs.
% local RAW_X = SMEM_RAW_X            -- one stage of packed X rows
% local RAW_Y = SMEM_RAW_Y
% local RAW_SF = SMEM_RAW_SF          -- and of their 512-byte scale blocks
% local RAW_STAGE = RAW_X + RAW_Y + RAW_SF
% local F_X = SMEM_F_X                -- fp16 bytes of one X buffer
% local F_Y = SMEM_F_Y
% local F_STAGE = F_X + F_Y
% local ACC = BLOCK_N // 2            -- f32 accumulators per thread (m64nNk16: N/2)
// nvfp4jit generated kernel: ${ARCH} BLOCK_M=${BLOCK_M} BLOCK_N=${BLOCK_N} BLOCK_K=${BLOCK_K} STAGES=${STAGES} SWAP_AB=${SWAP_AB}
typedef unsigned int u32;
typedef unsigned long long u64;

struct GroupDesc {          // 64 bytes, filled by fam_sm90.c (blob layout v1)
  u64 a, b, sfa, sfb, c;
  int m, n, k, pad[3];
};
struct BlobHeader {         // 16 bytes; then GroupDesc[num_groups]; then int4 tiles[num_tiles]
  int num_tiles, num_groups, pad0, pad1;
};
struct Tile { int group, tx, ty, pad; };

// offsetof for the static_asserts below: NVRTC has no <cstddef>; __INTADDR__ is its front
// end's (EDG) constant address-of-member; host compilers (the tests' emulator) have the builtin.
#ifdef __CUDACC_RTC__
#define NJ_OFFSETOF(T, f) __INTADDR__(&(((T *)0)->f))
#else
#define NJ_OFFSETOF(T, f) __builtin_offsetof(T, f)
#endif
// The host's half of the contract (src/fam_sm90.c), passed in as parameters: a drift between
// its structs or its shared-memory layout and what this kernel reads fails to compile here.
static_assert(sizeof(BlobHeader) == ${BLOB_HDR_BYTES}, "blob header: src/fam_sm90.c dual_hdr");
static_assert(sizeof(GroupDesc) == ${BLOB_GROUP_BYTES} && NJ_OFFSETOF(GroupDesc, m) == ${BLOB_GROUP_M},
              "group descriptor: src/fam_sm90.c dual_group");
static_assert(sizeof(Tile) == ${BLOB_TILE_BYTES}, "tile: src/fam_sm90.c blob_tile");
static_assert(${F_X} == ${BLOCK_M} * ${BLOCK_K} * 2 && ${F_Y} == ${BLOCK_N} * ${BLOCK_K} * 2,
              "fp16 buffers: BLOCK_M and BLOCK_N rows of BLOCK_K halves");
static_assert(${RAW_X} == ${BLOCK_M} * ${BLOCK_K} / 2 && ${RAW_Y} == ${BLOCK_N} * ${BLOCK_K} / 2,
              "packed stages: rows of BLOCK_K / 2 bytes");
static_assert(${RAW_SF} == ${SFX_BLK + SFY_BLK} * ${KSUB} * 512,
              "scale stages: one 512-byte block per 128 rows a tile touches and per 64 k");
static_assert(${SMEM_RAW_OFF} == 2 * ${F_STAGE}, "the ring follows the two fp16 buffers");
static_assert(${SMEM_RAW_OFF} + ${STAGES} * ${RAW_STAGE} + 1023 <= ${DYN_SMEM},
              "the layout and its 1024-byte alignment slack fit the launch's shared memory");

static __device__ __forceinline__ u32 smem_u32(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}

// cp.async.cg: 16 bytes global -> shared through L2 only; src_size 0 zero-fills (PTX ISA
// "cp.async": bytes past src-size are written as zeros).
static __device__ __forceinline__ void cp_async16(u32 dst, const void *src, u32 src_size) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(src_size) : "memory");
}
static __device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

// Two e4m3 bytes -> f16x2 (exact: e4m3 fits fp16). PTX ISA "cvt": .e4m3x2 -> .f16x2, sm_89+.
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

// One packed byte (two e2m1 codes) -> f16x2 whose values are e2m1 * 2^-14.
// e2m1 is s.e1e0.m with exponent bias 1; placing e1e0m at fp16 bits 11..9 and s at bit 15
// gives the fp16 with exponent field e1e0 and mantissa m00..0, i.e. the same value times
// 2^(1-15) (normal and subnormal alike). t = b*(2^9 + 2^21) puts a copy of the byte at bits
// 9..16 (low nibble: value bits at 9..11, sign at 12) and one at bits 21..28 (high nibble:
// value at 25..27, sign at 28); the two copies do not overlap, so the product is their OR.
static __device__ __forceinline__ u32 e2m1x2_to_f16x2_scaled(u32 byte) {
  u32 t = byte * 0x00200200u;
  return (t & 0x0E000E00u) | ((t << 3) & 0x80008000u);
}

// 16 e2m1 codes (8 bytes) times one scale -> 8 f16x2 words, exact (see DESIGN.md: the product
// has <= 6 significant bits and, with the 2^-14 factor, lies in [2^-24, 0.17], a multiple of
// 2^-24: representable in fp16 including its subnormals, so mul.rn does not round).
static __device__ __forceinline__ void decode16(u32 lo, u32 hi, u32 s2, u32 *out) {
#pragma unroll
  for (int j = 0; j < 4; j++) out[j] = hmul2(e2m1x2_to_f16x2_scaled(__byte_perm(lo, 0, 0x4440 + j)), s2);
#pragma unroll
  for (int j = 0; j < 4; j++) out[4 + j] = hmul2(e2m1x2_to_f16x2_scaled(__byte_perm(hi, 0, 0x4440 + j)), s2);
}

// wgmma shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format" for wgmma):
// bits 0-13 start address >> 4; 16-29 leading-dimension byte offset >> 4 (unused for
// swizzled K-major layouts whose K extent fits the swizzle atom: 1); 32-45 stride byte offset
// >> 4 = 1024 B (8 rows of 128 B between core-matrix groups); 62-63 layout 1 = 128B swizzle.
static __device__ __forceinline__ u64 make_desc(u32 saddr) {
  return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(1024 >> 4) << 32) | ((u64)1 << 62);
}

static __device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}

// D(64 x ${BLOCK_N}, f32) += A(64 x 16, f16, smem) * B(16 x ${BLOCK_N}, f16, smem), both K-major
// (imm-trans-a = imm-trans-b = 0), scale-a = scale-b = 1, scale-d predicate true (accumulate).
static __device__ __forceinline__ void wgmma_m64k16(float *d, u64 da, u64 db) {
% local outs = {}
% for i = 0, ACC - 1 do outs[#outs + 1] = "%" .. i end
% local cons = {}
% for i = 0, ACC - 1 do cons[#cons + 1] = '"+f"(d[' .. i .. '])' end
  asm volatile(
    "{\n.reg .pred p;\nsetp.ne.b32 p, %${ACC + 2}, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n${BLOCK_N}k16.f32.f16.f16 "
    "{${table.concat(outs, ", ")}}, %${ACC}, %${ACC + 1}, p, 1, 1, 0, 0;\n}\n"
    : ${table.concat(cons, ", ")}
    : "l"(da), "l"(db), "r"(1));
}

// Keeps the compiler from moving accumulator reads or writes across a wgmma stage boundary.
static __device__ __forceinline__ void fence_acc(float *d) {
#pragma unroll
  for (int i = 0; i < ${ACC}; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}

static __device__ __forceinline__ u32 f32x2_to_f16x2(float a, float b) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b));
  return r;
}

extern "C" __global__ void __launch_bounds__(${THREADS}, 1)
${KERNEL_NAME}(const unsigned char *__restrict__ blob) {
  extern __shared__ __align__(16) unsigned char smem_raw[];   // promise 16 only: see below
  // 1024-byte alignment for the 128B-swizzle atoms (PTX ISA: swizzled layouts repeat every
  // 1024 bytes and the pattern is taken from address bits 4-6 and 7-9). A promise of 1024 in
  // the declaration would let the compiler fold this round-up away; this kernel has no static
  // shared memory today, but the base is only as aligned as the static section before it.
  // (pointer arithmetic on smem_raw, not an integer round trip, so the compiler keeps the
  // shared address space and emits LDS/STS instead of generic loads and stores)
  unsigned char *smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *fbuf = smem;                           // 2 x ${F_STAGE} bytes of fp16 tiles
  unsigned char *raw = smem + 2 * ${F_STAGE};           // ${STAGES} x ${RAW_STAGE} packed bytes

  const BlobHeader *hdr = (const BlobHeader *)blob;
  const GroupDesc *groups = (const GroupDesc *)(blob + ${BLOB_HDR_BYTES});
  const Tile tile = ((const Tile *)(blob + ${BLOB_HDR_BYTES} + ${BLOB_GROUP_BYTES} * (long long)hdr->num_groups))[blockIdx.x];
  const GroupDesc g = groups[tile.group];
  const int tid = threadIdx.x;
  const int K = g.k;
% if SWAP_AB == 1 then
  const unsigned char *X = (const unsigned char *)g.b;   // weights: N rows
  const unsigned char *Y = (const unsigned char *)g.a;   // tokens: M rows
  const unsigned char *SFX = (const unsigned char *)g.sfb;
  const unsigned char *SFY = (const unsigned char *)g.sfa;
  const int rows_x = g.n, rows_y = g.m;
% else
  const unsigned char *X = (const unsigned char *)g.a;
  const unsigned char *Y = (const unsigned char *)g.b;
  const unsigned char *SFX = (const unsigned char *)g.sfa;
  const unsigned char *SFY = (const unsigned char *)g.sfb;
  const int rows_x = g.m, rows_y = g.n;
% end
  const int x0 = tile.tx * ${BLOCK_M}, y0 = tile.ty * ${BLOCK_N};
  const int row_bytes = K / 2;
  const int sf_chunks = K / 64;                          // 512-byte blocks per 128 rows (K % 64 == 0)
  const int nk = (K + ${BLOCK_K - 1}) / ${BLOCK_K};
  const int bx0 = x0 / 128, by0 = y0 / 128;              // first 128-row scale block of the tile
  const int nbx = (rows_x + 127) / 128, nby = (rows_y + 127) / 128;

  // Every thread copies and decodes the same rows in every k-tile, so all addressing is
  // computed once here and each k-tile only adds its offset (the loop is instruction-bound).
% local CH = (BLOCK_M + BLOCK_N) * (BLOCK_K // 32)      -- 16-byte packed chunks per k-tile
% local NL = (CH + THREADS - 1) // THREADS
% local SC = (SFX_BLK + SFY_BLK) * KSUB * 32          -- 16-byte scale chunks per k-tile
% local NS = (SC + THREADS - 1) // THREADS
% local DI = (BLOCK_M + BLOCK_N) * (BLOCK_K // 16)     -- decode items per k-tile
% local ND = (DI + THREADS - 1) // THREADS
  const unsigned char *l_src[${NL}];
  u32 l_dst[${NL}], l_byte[${NL}];
  bool l_ok[${NL}];
#pragma unroll
  for (int j = 0; j < ${NL}; j++) {
    const int i = tid + j * ${THREADS};
    const int r = i / ${BLOCK_K // 32}, c = i % ${BLOCK_K // 32};
    const bool is_x = r < ${BLOCK_M};
    const int lr = is_x ? r : r - ${BLOCK_M};
    const int gr = (is_x ? x0 : y0) + lr;
    l_ok[j] = i < ${CH} && gr < (is_x ? rows_x : rows_y);
    l_src[j] = l_ok[j] ? (is_x ? X : Y) + (long long)gr * row_bytes + c * 16 : X;
    l_dst[j] = (is_x ? 0 : ${RAW_X}) + lr * ${BLOCK_K // 2} + c * 16;
    l_byte[j] = c * 16;
  }
  const unsigned char *s_src[${NS}];
  u32 s_dst[${NS}], s_kc[${NS}];
  bool s_ok[${NS}];
#pragma unroll
  for (int j = 0; j < ${NS}; j++) {
    const int i = tid + j * ${THREADS};
    const int part = i % 32, blk = (i / 32) % ${SFX_BLK + SFY_BLK}, ks = i / (32 * ${SFX_BLK + SFY_BLK});
    const bool is_x = blk < ${SFX_BLK};
    const int b = is_x ? bx0 + blk : by0 + blk - ${SFX_BLK};
    s_ok[j] = i < ${SC} && b < (is_x ? nbx : nby);
    s_src[j] = s_ok[j] ? (is_x ? SFX : SFY) + (long long)b * sf_chunks * 512 + part * 16 : SFX;
    s_dst[j] = ${RAW_X + RAW_Y} + (ks * ${SFX_BLK + SFY_BLK} + blk) * 512 + part * 16;
    s_kc[j] = ks;
  }
  // decode items (row, 16-k group): raw offset, scale offset, two swizzled 16-byte chunks
  u32 d_raw[${ND}], d_sf[${ND}], d_o0[${ND}], d_o1[${ND}];
#pragma unroll
  for (int j = 0; j < ${ND}; j++) {
    const int i = tid + j * ${THREADS};
    const int r = i / ${BLOCK_K // 16}, gi = i % ${BLOCK_K // 16};
    const int ks = gi / 4, jj = gi % 4;                // 64-k slab, scale column within it
    const bool is_x = r < ${BLOCK_M};
    const int lr = is_x ? r : r - ${BLOCK_M};
    const int grow = (is_x ? x0 : y0) + lr;
    const int blk = is_x ? (grow / 128 - bx0) : (${SFX_BLK} + grow / 128 - by0);
    d_raw[j] = (is_x ? 0 : ${RAW_X}) + lr * ${BLOCK_K // 2} + gi * 8;
    d_sf[j] = ${RAW_X + RAW_Y} + (ks * ${SFX_BLK + SFY_BLK} + blk) * 512 + (grow % 32) * 16 + ((grow % 128) / 32) * 4 + jj;
    // 128B swizzle (PTX ISA "Shared Memory Matrix Layout"): row lr of a 64-k slab at lr*128,
    // 16-byte chunk c at (c ^ (lr % 8)) * 16
    const u32 base = (is_x ? ks * ${BLOCK_M * 128} : ${F_X} + ks * ${BLOCK_N * 128}) + lr * 128;
    d_o0[j] = base + (((2 * jj) ^ (lr % 8)) * 16);
    d_o1[j] = base + (((2 * jj + 1) ^ (lr % 8)) * 16);
  }

  // ---- producer part: every thread issues its share of one k-tile's cp.async copies ----
  auto load_stage = [&](int kt, int slot) {
    const u32 st = smem_u32(raw + slot * ${RAW_STAGE});
    const u32 kb0 = kt * ${BLOCK_K // 2};                // first packed byte of this k-tile
#pragma unroll
    for (int j = 0; j < ${NL}; j++) {
%   if CH % THREADS ~= 0 then
      if (tid + j * ${THREADS} >= ${CH}) break;
%   end
      const bool ok = l_ok[j] && kb0 + l_byte[j] < (u32)row_bytes;
      cp_async16(st + l_dst[j], ok ? l_src[j] + kb0 : l_src[j], ok ? 16 : 0);
    }
    // scale blocks: the blocked layout keeps one 128-row x 64-k block contiguous at
    // ((r/128) * (K/64) + k/64) * 512 (DESIGN.md, data contract).
#pragma unroll
    for (int j = 0; j < ${NS}; j++) {
%   if SC % THREADS ~= 0 then
      if (tid + j * ${THREADS} >= ${SC}) break;
%   end
      const u32 kc = kt * ${KSUB} + s_kc[j];
      const bool ok = s_ok[j] && kc < (u32)sf_chunks;
      cp_async16(st + s_dst[j], ok ? s_src[j] + kc * 512 : s_src[j], ok ? 16 : 0);
    }
  };

  // ---- decode one k-tile from a raw slot into fp16 buffer `fb` ----
  auto decode_stage = [&](int slot, int fb) {
    const unsigned char *st = raw + slot * ${RAW_STAGE};
    unsigned char *f = fbuf + fb * ${F_STAGE};
#pragma unroll
    for (int j = 0; j < ${ND}; j++) {
%   if DI % THREADS ~= 0 then
      if (tid + j * ${THREADS} >= ${DI}) break;
%   end
      const uint2 q = *(const uint2 *)(st + d_raw[j]);
      const u32 sb = st[d_sf[j]];
      const u32 s2 = e4m3x2_to_f16x2(sb | (sb << 8));
      u32 h[8];
      decode16(q.x, q.y, s2, h);
      *(uint4 *)(f + d_o0[j]) = make_uint4(h[0], h[1], h[2], h[3]);
      *(uint4 *)(f + d_o1[j]) = make_uint4(h[4], h[5], h[6], h[7]);
    }
    // generic-proxy writes must be made visible to the async proxy (wgmma reads).
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  };

  const int wg = tid / 128;
  float acc[${ACC}];
#pragma unroll
  for (int i = 0; i < ${ACC}; i++) acc[i] = 0.f;

  // prologue: raw tiles 0..STAGES-1 in flight (one commit group each, empty ones too)
#pragma unroll
  for (int s = 0; s < ${STAGES}; s++) {
    if (s < nk) load_stage(s, s);
    cp_async_commit();
  }
  cp_async_wait<${STAGES - 1}>();
  __syncthreads();
  decode_stage(0, 0);
  __syncthreads();

  // K >= 64, so nk >= 1: a do-while keeps every path through the loop a complete wgmma
  // pipeline stage (ptxas serialises wgmma when a path may touch the accumulators while one
  // is in flight: warning C7514).
  int kt = 0;
  do {
    const int fb = kt & 1;
    const u32 fx = smem_u32(fbuf + fb * ${F_STAGE}) + wg * 64 * 128;
    const u32 fy = smem_u32(fbuf + fb * ${F_STAGE} + ${F_X});
    fence_acc(acc);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < ${KSUB}; ks++) {
#pragma unroll
      for (int k16 = 0; k16 < 4; k16++) {
        // advancing the start address by 32 B selects the next 16 k inside the swizzle atom
        wgmma_m64k16(acc, make_desc(fx + ks * ${BLOCK_M * 128} + k16 * 32),
                     make_desc(fy + ks * ${BLOCK_N * 128} + k16 * 32));
      }
    }
    wgmma_commit();
    fence_acc(acc);
    wgmma_wait<1>();                   // wgmma(kt-1), the last reader of buffer fb^1, is done
    if (kt + 1 < nk) {
      cp_async_wait<${STAGES - 2}>();  // raw tile kt+1 has landed (this thread's copies)
      __syncthreads();                 // ... everyone's; and every warpgroup passed its wait
      if (kt + ${STAGES} < nk) load_stage(kt + ${STAGES}, kt % ${STAGES});  // slot of raw kt, decoded already
      cp_async_commit();
      decode_stage((kt + 1) % ${STAGES}, fb ^ 1);
      __syncthreads();
    }
    kt++;
  } while (kt < nk);
  wgmma_wait<0>();
  fence_acc(acc);

  // ---- epilogue: accumulator fragment of m64nNk16 (PTX ISA "wgmma D matrix fragment"):
  // thread lane l of warp w%4: rows 16*(w%4) + l/4 (+8), columns 8*j + 2*(l%4) (+1).
  // Both operands carried a 2^-14 factor: C = acc * 2^28, exact in fp32.
  const int warp = (tid % 128) / 32, lane = tid % 32;
  const int xr = x0 + wg * 64 + warp * 16 + lane / 4;
  unsigned short *C = (unsigned short *)g.c;
  const float S = 268435456.0f;  // 2^28
#pragma unroll
  for (int j = 0; j < ${BLOCK_N // 8}; j++) {
    const int yc = y0 + 8 * j + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int x = xr + 8 * h;
      const u32 v = f32x2_to_f16x2(acc[4 * j + 2 * h] * S, acc[4 * j + 2 * h + 1] * S);
% if SWAP_AB == 1 then
      // x indexes N (weights), y indexes M (tokens): C[y][x]
      if (x < rows_x) {
        if (yc < rows_y) C[(long long)yc * rows_x + x] = (unsigned short)(v & 0xFFFF);
        if (yc + 1 < rows_y) C[(long long)(yc + 1) * rows_x + x] = (unsigned short)(v >> 16);
      }
% else
      // N % 8 == 0, so yc < N implies yc + 1 < N: one aligned 4-byte store
      if (x < rows_x && yc < rows_y) *(u32 *)(C + (long long)x * rows_y + yc) = v;
% end
    }
  }
}
