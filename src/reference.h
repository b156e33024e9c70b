/* reference.h - CPU reference for the NVFP4 block-scaled grouped GEMM, and test-data makers.
 * Used by tests, the demo and the benchmark. Independent of the kernels: decode by table,
 * multiply in double, round once to fp16. */
#ifndef NJ_REFERENCE_H
#define NJ_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

/* The types are the extension API's (include/nvfp4jit_ext.h), which the command uses. */
#ifndef NVFP4JIT_STATIC_LINKING_ONLY
#define NVFP4JIT_STATIC_LINKING_ONLY
#endif
#include "nvfp4jit_ext.h"

/* e2m1 code (low 4 bits used) -> value: 0, 0.5, 1, 1.5, 2, 3, 4, 6, sign in bit 3. */
double ref_e2m1(unsigned code);
/* float8_e4m3fn byte -> value: bias 7, subnormals down to 2^-9, no infinities,
 * 0x7F and 0xFF are NaN. */
double ref_e4m3(unsigned byte);
/* Nearest fp16 (round to nearest even, overflow to inf, subnormals kept) as bits. */
uint16_t ref_f16_from_double(double x);
double ref_f16_to_double(uint16_t h);

/* Blocked scale layout: bytes needed for `rows` rows and K (K % 16 == 0). */
size_t ref_sf_bytes(int64_t rows, int64_t k);
/* Byte offset of (row r, scale column j) for a matrix with K columns of values. */
size_t ref_sf_offset(int64_t r, int64_t j, int64_t k);
/* Convert between a plain row-major [rows][K/16] scale matrix and the blocked layout.
 * Padding bytes of the blocked buffer are set to 0 by to_blocked. */
void ref_sf_to_blocked(const uint8_t *plain, int64_t rows, int64_t k, uint8_t *blocked);
void ref_sf_from_blocked(const uint8_t *blocked, int64_t rows, int64_t k, uint8_t *plain);

/* Value of element (r, kk) of a packed operand with K columns and blocked scales. */
double ref_element(const uint8_t *packed, const uint8_t *sf_blocked, int64_t r, int64_t kk,
                   int64_t k);

/* One group: C[M][N] (fp16 bits) = A * B^T, each product and the sum in double, rounded
 * once to fp16. Threads: uses up to `threads` POSIX threads (<= 1: serial); the result does
 * not depend on the thread count (each element is summed in k order). m = 0 or n = 0: does
 * nothing (no pointer is read). Every product is exact in double and a multiple of 2^-20,
 * so while partial sums stay below 2^33 the result is the exact sum correctly rounded.
 * Aborts on out of memory ((32 + 32) * K doubles per thread). */
void ref_gemm(const uint8_t *a, const uint8_t *sfa, const uint8_t *b, const uint8_t *sfb,
              int64_t m, int64_t n, int64_t k, uint16_t *c, int threads);

/* Deterministic random generator (splitmix64/xoshiro256**), seedable. */
typedef nvfp4jit_ext_rng ref_rng;
void ref_rng_seed(ref_rng *r, uint64_t seed);
uint64_t ref_rng_next(ref_rng *r);

/* Fill a packed operand (rows x K/2 bytes) with uniformly random bytes (all 16 e2m1 codes).*/
void ref_fill_packed(ref_rng *r, uint8_t *packed, int64_t rows, int64_t k);
/* Fill the blocked scale buffer for rows x K with random finite e4m3 scales spanning
 * subnormals (2^-9) to 448, padding bytes 0. The exponent is drawn so that typical dot
 * products stay inside fp16 range: scales are drawn from [2^lo_exp, 448] with lo_exp = -9;
 * pass max_exp < 8 to cap the largest scale at 2^max_exp * 1.875 (e.g. for long K).
 * Distribution: a binade 2^e, e uniform in [-9, max_exp] (max_exp clamped to [-9, 8]), then
 * a uniform e4m3 value in it; scales are positive, never 0, never NaN (0x7F/0xFF).
 * NOTE: with max_exp = 8 a product of two elements reaches 2688^2 = 7.2e6, so long dot
 * products can overflow fp16 to inf; ref_compare passes equal infinities. */
void ref_fill_scales(ref_rng *r, uint8_t *sf_blocked, int64_t rows, int64_t k, int max_exp);

/* Compare: |out-ref| <= atol + rtol*|ref| element-wise, NaN never passes, and
 * ||out-ref|| / ||ref|| <= rel_l2. Fills the stats; @return 1 if all pass.
 * A NaN in out or in ref is a bad element (even NaN against NaN). Equal values pass (also
 * equal infinities); an infinity against any other value is bad. max_abs_err and the L2
 * norms ignore NaN elements (they are counted in bad). rel_l2 is INFINITY when ||ref|| is 0
 * and out differs. res may be NULL. */
typedef nvfp4jit_ext_ref_check ref_check; /* bad, first_bad, max_abs_err, rel_l2, pass */
int ref_compare(const uint16_t *out, const uint16_t *ref, int64_t count, double atol,
                double rtol, double rel_l2, ref_check *res);

#endif

/* Sum over k of |a(m,k) * b(n,k)| in double, per element (row-major M x N): the scale of the
 * rounding error any fp32-accumulating GEMM makes (tests allow a multiple of fp32's epsilon
 * of it on top of the DESIGN.md tolerance, for outputs where large terms cancel). */
void ref_gemm_abs(const uint8_t *a, const uint8_t *sfa, const uint8_t *b, const uint8_t *sfb,
                  int64_t m, int64_t n, int64_t k, double *out);
