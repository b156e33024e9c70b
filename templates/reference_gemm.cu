% -- reference_gemm.cu: the GPU reference for one group of the NVFP4 block-scaled GEMM
% -- (src/gpuref.c launches it once per group with M > 0). Written to be read, not to be
% -- fast: ONE THREAD PER OUTPUT C[m][n], which decodes every value of row m of A and row n
% -- of B by the data contract (include/nvfp4jit.h), multiplies and sums in double in k
% -- order and rounds once to fp16, exactly as ref_gemm (src/reference.c) does on the CPU.
% --
% -- NOTE: exactness (DESIGN.md "Numerics", src/reference.c): every value*scale is a multiple
% -- of 2^-10 with at most 6 significant bits and every product a multiple of 2^-20, so every
% -- product is exact in double and every partial sum too while it stays below 2^33; the sum
% -- is then the exact one whatever the order, and an FMA (NVRTC contracts by default) gives
% -- the same result as a multiply and an add. So this kernel and ref_gemm agree bit for bit
% -- on data that stays in fp16's range.
% --
% -- Parameters: KERNEL_NAME, ARCH (only named in a comment), TILE (the CTA is TILE x TILE
% -- threads: threadIdx.x along n, threadIdx.y along m).
// nvfp4jit GPU reference kernel (${ARCH}): one thread per output, double accumulation
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned long long u64;

// e2m1 code -> value: the data contract's table, bit 3 the sign (code 8 is -0).
__constant__ double kE2m1[16] = {
   0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
  -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
};

// float8_e4m3fn byte -> value, by the format's definition: s eeee mmm, bias 7. Exponent
// field 0: subnormal m * 2^-9. Otherwise (8 + m) * 2^(e-10). No infinities; s1111111
// (0x7F, 0xFF) is NaN, so exponent field 15 still holds finite values up to 448.
static __device__ double e4m3_value(unsigned byte) {
  unsigned s = (byte >> 7) & 1u, e = (byte >> 3) & 15u, m = byte & 7u;
  if (e == 15 && m == 7) return __longlong_as_double(0x7FF8000000000000ULL); // quiet NaN
  double v = e == 0 ? (double)m / 512.0 : (double)(8 + m) * (double)(1u << e) / 1024.0;
  return s ? -v : v;
}

// 2^p as a double, for -1022 <= p <= 1023 (the IEEE-754 binary64 exponent field, bias 1023).
static __device__ double pow2(int p) { return __longlong_as_double((u64)(1023 + p) << 52); }

// Nearest fp16 (round to nearest even, overflow to inf, subnormals kept) as bits: the
// algorithm of ref_f16_from_double in src/reference.c, step for step. It works with the
// quantum q (the spacing of fp16 values around |x|): q = 2^(E-10) in the binade
// [2^E, 2^(E+1)) for E >= -14, q = 2^-24 below 2^-14 (subnormals). |x| / q is exact (q is a
// power of two) and below 2^12, so its rounding to an integer is exact too.
static __device__ u16 f16_from_double(double x) {
  if (x != x) return 0x7E00;                                   // NaN
  u64 bits = (u64)__double_as_longlong(x);
  u16 sign = (bits >> 63) ? 0x8000 : 0;
  double a = __longlong_as_double((long long)(bits & 0x7FFFFFFFFFFFFFFFULL)); // |x|
  if (a == 0.0) return sign;
  if (a >= 131072.0) return sign | 0x7C00;                     // >= 2^17: inf (also inf)
  int e = (int)((bits >> 52) & 0x7FF) - 1023;                  // a in [2^e, 2^(e+1)); a double
                                                               // subnormal gives -1023: fine,
                                                               // it only has to be < -14
  int normal = e >= -14;
  int qexp = normal ? e - 10 : -24;
  double n = a * pow2(-qexp);                                  // a / q, exact
  double fl = (double)(long long)n;                            // floor: n >= 0, n < 2^12
  double frac = n - fl;                                        // exact
  if (frac > 0.5 || (frac == 0.5 && ((long long)fl & 1))) fl += 1.0;
  if (!normal) return sign | (u16)fl;  // fl in [0, 1024]; 1024 is 2^-14 (0x0400), normal
  if (fl == 2048.0) {                  // fl in [1024, 2048]; 2048 carried into the next binade
    fl = 1024.0;
    e += 1;
  }
  int biased = e + 15;
  if (biased >= 31) return sign | 0x7C00;                      // overflow: >= 65520 -> inf
  return sign | (u16)((unsigned)biased << 10) | (u16)((unsigned)fl - 1024u);
}

// Byte offset of (row r, scale column j) in the cuBLAS "blocked" scale layout (data
// contract): 128 rows x 4 scale columns form one 512-byte block, blocks row-block outer;
// padded_cols = K/16 rounded up to a multiple of 4.
static __device__ u64 sf_offset(u64 r, u64 j, u64 padded_cols) {
  return ((r / 128) * (padded_cols / 4) + j / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (j % 4);
}

// e2m1 code of element kk of a packed row: byte kk/2, element 2t in the low nibble of
// byte t, 2t+1 in the high nibble.
static __device__ unsigned code_at(const u8 *row, u64 kk) {
  unsigned byte = row[kk / 2];
  return (kk % 2 == 0) ? (byte & 15u) : (byte >> 4);
}

// C[m][n] (fp16 bits, row-major M x N) = sum over k of A(m,k) * B(n,k). When sum_abs is not
// NULL, sum_abs[m][n] = sum over k of |A(m,k) * B(n,k)|, rounded up to fp32 (the scale of the
// rounding error of an fp32-accumulating GEMM; tests use it). Grid: x over n tiles, y over m
// tiles (a grid-stride loop: gridDim.y is capped at 65535).
extern "C" __global__ void __launch_bounds__(${TILE * TILE})
${KERNEL_NAME}(const u8 *a, const u8 *b, const u8 *sfa, const u8 *sfb, u16 *c, float *sum_abs,
               int m, int n, int k) {
  // The table in shared memory: the threads of a warp read different codes, which constant
  // memory would serialise.
  __shared__ double e2m1[16];
  int tid = threadIdx.y * ${TILE} + threadIdx.x;
  if (tid < 16) e2m1[tid] = kE2m1[tid];
  __syncthreads();
  u64 col = (u64)blockIdx.x * ${TILE} + threadIdx.x;
  if (col >= (u64)n) return;
  const u64 kcols = (u64)k / 16;                // scale columns (K is a multiple of 64)
  const u64 padded_cols = (kcols + 3) / 4 * 4;    // ... padded to a multiple of 4
  for (u64 row = (u64)blockIdx.y * ${TILE} + threadIdx.y; row < (u64)m; row += (u64)gridDim.y * ${TILE}) {
    const u8 *arow = a + row * ((u64)k / 2), *brow = b + col * ((u64)k / 2);
    double sum = 0.0, abs_sum = 0.0;
    for (u64 j = 0; j < kcols; j++) {             // scale block j holds k = 16j .. 16j+15
      double sa = e4m3_value(sfa[sf_offset(row, j, padded_cols)]);
      double sb = e4m3_value(sfb[sf_offset(col, j, padded_cols)]);
#pragma unroll
      for (u64 t = 0; t < 16; t++) {              // in k order
        u64 kk = 16 * j + t;
        double va = e2m1[code_at(arow, kk)] * sa; // value * scale: exact
        double vb = e2m1[code_at(brow, kk)] * sb;
        double p = va * vb;                       // exact
        sum += p;
        abs_sum += fabs(p);
      }
    }
    c[row * n + col] = f16_from_double(sum);
    if (sum_abs) sum_abs[row * n + col] = __double2float_ru(abs_sum);
  }
}
