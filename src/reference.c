/* reference.c - CPU reference for the NVFP4 block-scaled grouped GEMM: the oracle the GPU
 * kernels are judged against, so everything here is written to be read, not to be fast:
 * decode by table (e2m1) or by the format's definition (e4m3), multiply and sum in double,
 * round once to fp16.
 *
 * NOTE: exactness. Every element value e2m1 * e4m3 is a multiple of 2^-10 with at most 6
 * significant bits, so every product is exact in double and a multiple of 2^-20. A partial
 * sum is then exact as long as its magnitude stays below 2^(53-20) = 2^33, far beyond fp16's
 * range: for any data whose partial sums stay below 8.6e9, ref_gemm returns the exact sum
 * rounded once (correctly) to fp16, independent of summation order. */
#define _POSIX_C_SOURCE 200809L
#include "reference.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- element formats ------------------------------------------------------------------- */

/* e2m1: the data contract's table, bit 3 the sign (code 8 is -0). */
static const double e2m1_table[16] = {
    0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
    -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
};

double ref_e2m1(unsigned code) { return e2m1_table[code & 15u]; }

/* float8_e4m3fn: s eeee mmm, bias 7. Exponent field 0: subnormal m * 2^-9 (= 0.m * 2^-6).
 * Otherwise (1.m) * 2^(e-7) = (8 + m) * 2^(e-10). No infinities; only s1111111 is NaN, so
 * exponent field 15 still holds finite values up to 1.75 * 2^8 = 448. */
double ref_e4m3(unsigned byte) {
    byte &= 0xFFu;
    unsigned sign = byte >> 7;
    unsigned e = (byte >> 3) & 15u;
    unsigned m = byte & 7u;
    if (e == 15 && m == 7) return NAN;
    double v = (e == 0) ? ldexp((double)m, -9) : ldexp((double)(8 + m), (int)e - 10);
    return sign ? -v : v;
}

/* fp16: s eeeee mmmmmmmmmm, bias 15. Normal: (1024 + m) * 2^(e-25); subnormal m * 2^-24. */
double ref_f16_to_double(uint16_t h) {
    unsigned sign = (h >> 15) & 1u;
    unsigned e = (h >> 10) & 31u;
    unsigned m = h & 1023u;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp((double)(1024 + m), (int)e - 25);
    return sign ? -v : v;
}

/* Nearest fp16, ties to even. Works with the quantum q (the spacing of fp16 values around
 * |x|): q = 2^(E-10) in the binade [2^E, 2^(E+1)) for E >= -14, q = 2^-24 below 2^-14
 * (subnormals). |x| / q is exact (q is a power of two) and below 2^12, so its rounding to an
 * integer is exact too. */
uint16_t ref_f16_from_double(double x) {
    if (isnan(x)) return 0x7E00;
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (a == 0.0) return sign;
    if (a >= 131072.0) return sign | 0x7C00; /* >= 2^17: certainly inf (also catches inf) */

    int fe;
    frexp(a, &fe); /* a = f * 2^fe, f in [0.5, 1): a in [2^(fe-1), 2^fe) */
    int e = fe - 1; /* a in [2^e, 2^(e+1)) */
    int normal = e >= -14;
    int qexp = normal ? e - 10 : -24;
    double n = ldexp(a, -qexp); /* a / q, exact */
    double fl = floor(n);
    double frac = n - fl; /* exact */
    if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) == 1.0)) fl += 1.0;

    if (!normal) {
        /* fl in [0, 1024]; 1024 is 2^-14, whose bits 0x0400 are the smallest normal. */
        return sign | (uint16_t)fl;
    }
    /* fl in [1024, 2048]; 2048 means rounding carried into the next binade. */
    if (fl == 2048.0) {
        fl = 1024.0;
        e += 1;
    }
    int biased = e + 15;
    if (biased >= 31) return sign | 0x7C00; /* overflow: >= 65520 rounds to inf */
    return sign | (uint16_t)((unsigned)biased << 10) | (uint16_t)((unsigned)fl - 1024u);
}

/* ---- blocked scale layout ---------------------------------------------------------------- */

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static int64_t sf_padded_cols(int64_t k) { return round_up(k / 16, 4); }

size_t ref_sf_bytes(int64_t rows, int64_t k) {
    if (rows <= 0 || k <= 0) return 0;
    return (size_t)round_up(rows, 128) * (size_t)sf_padded_cols(k);
}

/* The cuBLAS block-scaling layout: 128 rows x 4 scale columns form one 512-byte block; blocks
 * are ordered row-block outer, column-block inner; inside a block, row r sits at
 * (r%32)*16 + ((r%128)/32)*4 and its 4 columns are consecutive. */
size_t ref_sf_offset(int64_t r, int64_t j, int64_t k) {
    int64_t padded_cols = sf_padded_cols(k);
    int64_t block = (r / 128) * (padded_cols / 4) + j / 4;
    return (size_t)(block * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (j % 4));
}

void ref_sf_to_blocked(const uint8_t *plain, int64_t rows, int64_t k, uint8_t *blocked) {
    size_t bytes = ref_sf_bytes(rows, k);
    if (bytes == 0) return;
    memset(blocked, 0, bytes);
    int64_t cols = k / 16;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            blocked[ref_sf_offset(r, j, k)] = plain[r * cols + j];
}

void ref_sf_from_blocked(const uint8_t *blocked, int64_t rows, int64_t k, uint8_t *plain) {
    int64_t cols = k / 16;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            plain[r * cols + j] = blocked[ref_sf_offset(r, j, k)];
}

/* ---- decoding operands --------------------------------------------------------------------- */

double ref_element(const uint8_t *packed, const uint8_t *sf_blocked, int64_t r, int64_t kk,
                   int64_t k) {
    uint8_t byte = packed[r * (k / 2) + kk / 2];
    unsigned code = (kk % 2 == 0) ? (byte & 15u) : (byte >> 4); /* element 2j low nibble */
    double scale = ref_e4m3(sf_blocked[ref_sf_offset(r, kk / 16, k)]);
    return ref_e2m1(code) * scale;
}

/* Row r of a packed operand -> k doubles (the same as ref_element for each kk, but looking
 * each scale up once per 16 values). */
static void decode_row(const uint8_t *packed, const uint8_t *sf_blocked, int64_t r, int64_t k,
                       double *out) {
    const uint8_t *row = packed + r * (k / 2);
    for (int64_t j = 0; j < k / 16; j++) {
        double scale = ref_e4m3(sf_blocked[ref_sf_offset(r, j, k)]);
        for (int t = 0; t < 8; t++) {
            uint8_t byte = row[j * 8 + t];
            out[j * 16 + 2 * t] = ref_e2m1(byte & 15u) * scale;
            out[j * 16 + 2 * t + 1] = ref_e2m1(byte >> 4) * scale;
        }
    }
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

/* Work is cut into tiles of TILE_M rows of A x TILE_N rows of B, handed out in row-major order
 * from a shared counter; a worker decodes the tile's rows to doubles (keeping the A rows while
 * it stays on the same row tile) and computes the dot products. Each C element is one dot
 * product summed in k order, so the result does not depend on the thread count. */
enum { TILE_M = 32, TILE_N = 32 };

typedef struct gemm_job {
    const uint8_t *a, *sfa, *b, *sfb;
    int64_t m, n, k;
    uint16_t *c;
    int64_t tiles_m, tiles_n;
    pthread_mutex_t lock;
    int64_t next_tile; /* under lock */
} gemm_job;

static int64_t take_tile(gemm_job *job) {
    pthread_mutex_lock(&job->lock);
    int64_t t = job->next_tile < job->tiles_m * job->tiles_n ? job->next_tile++ : -1;
    pthread_mutex_unlock(&job->lock);
    return t;
}

static void gemm_tile(const gemm_job *job, int64_t tm, int64_t tn, const double *abuf,
                      double *bbuf) {
    const int64_t k = job->k;
    const int64_t m0 = tm * TILE_M, m1 = m0 + TILE_M < job->m ? m0 + TILE_M : job->m;
    const int64_t n0 = tn * TILE_N, n1 = n0 + TILE_N < job->n ? n0 + TILE_N : job->n;
    for (int64_t j = n0; j < n1; j++)
        decode_row(job->b, job->sfb, j, k, bbuf + (j - n0) * k);
    for (int64_t i = m0; i < m1; i++) {
        const double *ar = abuf + (i - m0) * k;
        uint16_t *crow = job->c + i * job->n;
        int64_t j = n0;
        /* Four columns at a time: four independent sums, each still in k order. */
        for (; j + 4 <= n1; j += 4) {
            const double *b0 = bbuf + (j - n0) * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (int64_t kk = 0; kk < k; kk++) {
                double x = ar[kk];
                s0 += x * b0[kk];
                s1 += x * b1[kk];
                s2 += x * b2[kk];
                s3 += x * b3[kk];
            }
            crow[j] = ref_f16_from_double(s0);
            crow[j + 1] = ref_f16_from_double(s1);
            crow[j + 2] = ref_f16_from_double(s2);
            crow[j + 3] = ref_f16_from_double(s3);
        }
        for (; j < n1; j++) {
            const double *br = bbuf + (j - n0) * k;
            double s = 0.0;
            for (int64_t kk = 0; kk < k; kk++) s += ar[kk] * br[kk];
            crow[j] = ref_f16_from_double(s);
        }
    }
}

/* One worker's loop; buf holds (TILE_M + TILE_N) * k doubles. */
static void gemm_work(gemm_job *job, double *buf) {
    double *abuf = buf, *bbuf = buf + (size_t)TILE_M * (size_t)job->k;
    int64_t have_tm = -1; /* row tile currently decoded in abuf */
    for (int64_t t; (t = take_tile(job)) >= 0;) {
        int64_t tm = t / job->tiles_n, tn = t % job->tiles_n;
        if (tm != have_tm) {
            int64_t m0 = tm * TILE_M, m1 = m0 + TILE_M < job->m ? m0 + TILE_M : job->m;
            for (int64_t i = m0; i < m1; i++)
                decode_row(job->a, job->sfa, i, job->k, abuf + (i - m0) * job->k);
            have_tm = tm;
        }
        gemm_tile(job, tm, tn, abuf, bbuf);
    }
}

static double *alloc_work_buf(int64_t k) {
    return malloc((size_t)(TILE_M + TILE_N) * (size_t)k * sizeof(double));
}

static void *gemm_thread(void *arg) {
    gemm_job *job = arg;
    double *buf = alloc_work_buf(job->k);
    if (buf) gemm_work(job, buf); /* out of memory: leave the tiles to the others */
    free(buf);
    return NULL;
}

void ref_gemm(const uint8_t *a, const uint8_t *sfa, const uint8_t *b, const uint8_t *sfb,
              int64_t m, int64_t n, int64_t k, uint16_t *c, int threads) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) { /* empty sum: +0 */
        for (int64_t i = 0; i < m * n; i++) c[i] = 0;
        return;
    }
    gemm_job job;
    job.a = a;
    job.sfa = sfa;
    job.b = b;
    job.sfb = sfb;
    job.m = m;
    job.n = n;
    job.k = k;
    job.c = c;
    job.tiles_m = (m + TILE_M - 1) / TILE_M;
    job.tiles_n = (n + TILE_N - 1) / TILE_N;
    job.next_tile = 0;
    pthread_mutex_init(&job.lock, NULL);

    /* The calling thread always works too, so a failed pthread_create only costs speed. */
    double *buf = alloc_work_buf(k);
    if (!buf) {
        fprintf(stderr, "ref_gemm: out of memory\n");
        abort();
    }
    int64_t tiles = job.tiles_m * job.tiles_n;
    int extra = threads > 1 ? threads - 1 : 0;
    if (extra > tiles - 1) extra = (int)(tiles - 1);
    pthread_t *tids = extra > 0 ? malloc((size_t)extra * sizeof *tids) : NULL;
    int started = 0;
    if (tids)
        for (; started < extra; started++)
            if (pthread_create(&tids[started], NULL, gemm_thread, &job) != 0) break;
    gemm_work(&job, buf);
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
    free(tids);
    free(buf);
    pthread_mutex_destroy(&job.lock);
}

/* ---- random data ----------------------------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood), used only to expand the seed into xoshiro's state. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void ref_rng_seed(ref_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** 1.0 (Blackman, Vigna). */
uint64_t ref_rng_next(ref_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n), n >= 1 (modulo bias below 2^-50 for the small n used here). */
static unsigned rng_below(ref_rng *r, unsigned n) { return (unsigned)(ref_rng_next(r) % n); }

void ref_fill_packed(ref_rng *r, uint8_t *packed, int64_t rows, int64_t k) {
    size_t bytes = rows > 0 && k > 0 ? (size_t)rows * (size_t)(k / 2) : 0;
    size_t i = 0;
    while (i < bytes) {
        uint64_t v = ref_rng_next(r);
        for (int t = 0; t < 8 && i < bytes; t++, i++) packed[i] = (uint8_t)(v >> (8 * t));
    }
}

/* One random positive finite e4m3 byte with value in [2^-9, 1.875 * 2^max_exp] (and <= 448).
 * The binade [2^e, 2^(e+1)) is chosen uniformly among e = -9..max_exp, then a value uniformly
 * among the e4m3 values of that binade: that spreads scales over the whole exponent range
 * instead of piling them up near the top.
 *   e = -9: 0x01 (2^-9)            e = -8: 0x02, 0x03        e = -7: 0x04..0x07 (subnormals)
 *   e = -6..8: exponent field e + 7, mantissa 0..7 (0..6 for e = 8: 0x7F is NaN). */
static uint8_t random_scale(ref_rng *r, int max_exp) {
    int e = -9 + (int)rng_below(r, (unsigned)(max_exp + 10));
    switch (e) {
    case -9: return 0x01;
    case -8: return (uint8_t)(0x02 + rng_below(r, 2));
    case -7: return (uint8_t)(0x04 + rng_below(r, 4));
    default: {
        unsigned mant = rng_below(r, e == 8 ? 7 : 8);
        return (uint8_t)(((unsigned)(e + 7) << 3) | mant);
    }
    }
}

void ref_fill_scales(ref_rng *r, uint8_t *sf_blocked, int64_t rows, int64_t k, int max_exp) {
    if (max_exp > 8) max_exp = 8;
    if (max_exp < -9) max_exp = -9;
    size_t bytes = ref_sf_bytes(rows, k);
    if (bytes == 0) return;
    memset(sf_blocked, 0, bytes);
    for (int64_t row = 0; row < rows; row++)
        for (int64_t j = 0; j < k / 16; j++)
            sf_blocked[ref_sf_offset(row, j, k)] = random_scale(r, max_exp);
}

/* ---- comparison ------------------------------------------------------------------------------ */

int ref_compare(const uint16_t *out, const uint16_t *ref, int64_t count, double atol,
                double rtol, double rel_l2, ref_check *res) {
    ref_check st = {0, -1, 0.0, 0.0, 0};
    double err2 = 0.0, ref2 = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double o = ref_f16_to_double(out[i]);
        double r = ref_f16_to_double(ref[i]);
        int bad;
        double diff = 0.0;
        if (isnan(o) || isnan(r)) {
            bad = 1; /* NaN never passes, not even against NaN */
        } else if (o == r) {
            bad = 0; /* also equal infinities, and +0 against -0 */
        } else {
            diff = fabs(o - r);
            /* An infinity against anything else fails (the tolerance would be infinite). */
            bad = isinf(o) || isinf(r) || !(diff <= atol + rtol * fabs(r));
            if (diff > st.max_abs_err) st.max_abs_err = diff;
            err2 += diff * diff;
        }
        if (!isnan(r)) ref2 += r * r;
        if (bad) {
            if (st.first_bad < 0) st.first_bad = i;
            st.bad++;
        }
    }
    if (ref2 == 0.0)
        st.rel_l2 = err2 == 0.0 ? 0.0 : INFINITY;
    else
        st.rel_l2 = sqrt(err2) / sqrt(ref2); /* inf/inf = NaN: fails below */
    st.pass = st.bad == 0 && st.rel_l2 <= rel_l2;
    if (res) *res = st;
    return st.pass;
}
