/* test_reference.c - the CPU reference (src/reference.c). It is the oracle for the GPU
 * kernels, so it is checked against hand-written tables and hand-computed results, never
 * against a second copy of its own formulas. */
#include "testutil.h"

#include <math.h>
#include <stdint.h>

#include "reference.h"

/* ---- element formats ---- */

static void test_e2m1_table(void) {
    static const double want[16] = {
        0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,  /* 0x0..0x7 */
        -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0, /* 0x8..0xF */
    };
    for (unsigned c = 0; c < 16; c++) {
        CHECKF(ref_e2m1(c) == want[c], "code %u: %g, want %g", c, ref_e2m1(c), want[c]);
        CHECKF(ref_e2m1(c + 0x10) == want[c], "code 0x%x: only the low 4 bits count", c + 16);
    }
    CHECK(!signbit(ref_e2m1(0)));
    CHECK(signbit(ref_e2m1(8))); /* -0 */
}

static void test_e4m3_table(void) {
    static const struct {
        unsigned byte;
        double value;
    } t[] = {
        {0x00, 0.0},
        {0x01, 0.001953125},  /* 2^-9, smallest subnormal */
        {0x02, 0.00390625},   /* 2^-8 */
        {0x03, 0.005859375},  /* 3 * 2^-9 */
        {0x04, 0.0078125},    /* 2^-7 */
        {0x07, 0.013671875},  /* 7 * 2^-9, largest subnormal */
        {0x08, 0.015625},     /* 2^-6, smallest normal */
        {0x09, 0.017578125},  /* 1.125 * 2^-6 */
        {0x0F, 0.029296875},  /* 1.875 * 2^-6 */
        {0x10, 0.03125},      /* 2^-5 */
        {0x30, 0.5},
        {0x34, 0.75},
        {0x38, 1.0},
        {0x39, 1.125},
        {0x3C, 1.5},
        {0x3F, 1.875},
        {0x40, 2.0},
        {0x48, 4.0},
        {0x50, 8.0},
        {0x70, 128.0},
        {0x77, 240.0},
        {0x78, 256.0},
        {0x7D, 416.0},
        {0x7E, 448.0},        /* largest finite */
        {0x81, -0.001953125},
        {0x87, -0.013671875},
        {0x88, -0.015625},
        {0xB0, -0.5},
        {0xB8, -1.0},
        {0xC0, -2.0},
        {0xFE, -448.0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECKF(ref_e4m3(t[i].byte) == t[i].value, "byte 0x%02X: %.17g, want %.17g", t[i].byte,
               ref_e4m3(t[i].byte), t[i].value);
    CHECK(ref_e4m3(0x80) == 0.0 && signbit(ref_e4m3(0x80))); /* -0 */
    CHECK(!signbit(ref_e4m3(0x00)));
    CHECK(isnan(ref_e4m3(0x7F)));
    CHECK(isnan(ref_e4m3(0xFF)));
}

/* Properties over all 256 bytes: exactly two NaNs, no infinities, positive codes strictly
 * increasing, negative codes the mirror image. */
static void test_e4m3_all_bytes(void) {
    int nans = 0;
    for (unsigned b = 0; b < 256; b++) {
        double v = ref_e4m3(b);
        if (isnan(v)) {
            nans++;
            continue;
        }
        CHECKF(!isinf(v), "byte 0x%02X is inf", b);
        CHECKF(fabs(v) <= 448.0, "byte 0x%02X: %g", b, v);
        if (b >= 1 && b <= 0x7E) CHECKF(v > ref_e4m3(b - 1), "0x%02X not increasing", b);
        if (b >= 0x80 && b != 0xFF) CHECKF(v == -ref_e4m3(b - 0x80), "0x%02X not mirrored", b);
    }
    CHECK(nans == 2);
}

static void test_f16_from_double(void) {
    static const struct {
        double x;
        uint16_t bits;
    } t[] = {
        {0.0, 0x0000},
        {-0.0, 0x8000},
        {1.0, 0x3C00},
        {-2.0, 0xC000},
        {0.5, 0x3800},
        {1.0 / 3.0, 0x3555},      /* 1365 * 2^-12 = 0.333251953125 */
        {0.1, 0x2E66},            /* 0.0999755859375 */
        {65504.0, 0x7BFF},        /* largest finite */
        {65519.99, 0x7BFF},       /* just below the midpoint of 65504 and "65536" */
        {65520.0, 0x7C00},        /* that midpoint: ties to even = overflow = inf */
        {-65520.0, 0xFC00},
        {65536.0, 0x7C00},
        {100000.0, 0x7C00},
        {1e6, 0x7C00},
        {1e300, 0x7C00},
        {0x1p-14, 0x0400},        /* smallest normal */
        {0x3FFp-24, 0x03FF},      /* 2^-14 - 2^-24, largest subnormal */
        {0x7FFp-25, 0x0400},      /* 2^-14 - 2^-25: tie 0x3FF/0x400 -> even 0x400 */
        {0x1p-24, 0x0001},        /* smallest subnormal */
        {-0x1p-24, 0x8001},
        {0x1p-25, 0x0000},        /* tie 0/1 -> even 0 */
        {-0x1p-25, 0x8000},
        {0x1.0000000000001p-25, 0x0001}, /* a hair above */
        {0x3p-25, 0x0002},        /* tie 1/2 -> even 2 */
        {0x5p-25, 0x0002},        /* tie 2/3 -> even 2 */
        {0x1p-26, 0x0000},
        {1e-300, 0x0000},
        {0x1.002p0, 0x3C00},      /* 1 + 2^-11: tie 0x3C00/0x3C01 -> even 0x3C00 */
        {0x1.0020000000001p0, 0x3C01}, /* a hair above the tie */
        {0x1.006p0, 0x3C02},      /* 1 + 3 * 2^-11: tie 0x3C01/0x3C02 -> 0x3C02 */
        {0x1.004p0, 0x3C01},      /* 1 + 2^-10 exactly */
        {0x1.ffcp0, 0x3FFF},      /* 2 - 2^-10, largest below 2 */
        {0x1.ffdp0, 0x3FFF},      /* 2 - 3 * 2^-12: nearer 0x3FFF */
        {0x1.ffep0, 0x4000},      /* 2 - 2^-11: tie 0x3FFF/0x4000 -> even 0x4000 */
        {2047.9, 0x6800},         /* step 1 below 2048: rounds up into the next binade */
        {2049.0, 0x6800},         /* step 2: tie 2048/2050 -> 2048 */
        {2051.0, 0x6802},         /* tie 2050/2052 -> 2052 */
        {21512.0, 0x7540},        /* step 16: tie 21504/21520 -> 21504 (mantissa 320) */
        {21512.01171875, 0x7541}, /* 21520 */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECKF(ref_f16_from_double(t[i].x) == t[i].bits, "%.17g -> 0x%04X, want 0x%04X",
               t[i].x, ref_f16_from_double(t[i].x), t[i].bits);
    CHECK(ref_f16_from_double(INFINITY) == 0x7C00);
    CHECK(ref_f16_from_double(-INFINITY) == 0xFC00);
    uint16_t n = ref_f16_from_double(NAN);
    CHECKF((n & 0x7C00) == 0x7C00 && (n & 0x03FF) != 0, "NaN -> 0x%04X", n);
}

static void test_f16_to_double(void) {
    static const struct {
        uint16_t bits;
        double x;
    } t[] = {
        {0x0000, 0.0},
        {0x0001, 0x1p-24},
        {0x0002, 0x1p-23},
        {0x00C0, 0xC0p-24},
        {0x03FF, 0x3FFp-24},
        {0x0400, 0x1p-14},
        {0x3555, 0.333251953125},
        {0x3800, 0.5},
        {0x3C00, 1.0},
        {0x3C01, 1.0009765625},
        {0x4000, 2.0},
        {0x6800, 2048.0},
        {0x7BFF, 65504.0},
        {0x8001, -0x1p-24},
        {0xC000, -2.0},
        {0xFBFF, -65504.0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECKF(ref_f16_to_double(t[i].bits) == t[i].x, "0x%04X -> %.17g, want %.17g",
               t[i].bits, ref_f16_to_double(t[i].bits), t[i].x);
    CHECK(ref_f16_to_double(0x8000) == 0.0 && signbit(ref_f16_to_double(0x8000)));
    CHECK(ref_f16_to_double(0x7C00) == INFINITY);
    CHECK(ref_f16_to_double(0xFC00) == -INFINITY);
    CHECK(isnan(ref_f16_to_double(0x7C01)));
    CHECK(isnan(ref_f16_to_double(0x7E00)));
    CHECK(isnan(ref_f16_to_double(0xFFFF)));
}

/* Every non-NaN fp16 survives double and back; and the midpoint between two neighbours
 * rounds to the one with an even mantissa. */
static void test_f16_roundtrip_all(void) {
    int bad = 0, badmid = 0;
    for (unsigned h = 0; h < 0x10000; h++) {
        double x = ref_f16_to_double((uint16_t)h);
        if (isnan(x)) continue;
        if (ref_f16_from_double(x) != h) bad++;
        /* positive finite h and its successor (0x7BFF's successor is inf: skip) */
        if (h < 0x7BFF) {
            double mid = (x + ref_f16_to_double((uint16_t)(h + 1))) / 2; /* exact */
            unsigned want = (h % 2 == 0) ? h : h + 1;
            if (ref_f16_from_double(mid) != want) badmid++;
        }
    }
    CHECKF(bad == 0, "%d values do not round-trip", bad);
    CHECKF(badmid == 0, "%d midpoints do not round to even", badmid);
}

/* ---- blocked scale layout ---- */

static void test_sf_offsets_hand(void) {
    static const struct {
        int64_t r, j, k;
        size_t off;
    } t[] = {
        /* K = 64: 4 scale columns, padded_cols 4: one 512-byte block per 128 rows. */
        {0, 0, 64, 0},
        {0, 3, 64, 3},
        {1, 0, 64, 16},
        {31, 0, 64, 496},
        {32, 0, 64, 4},     /* (r%128)/32 = 1 -> +4 */
        {33, 1, 64, 21},    /* 16 + 4 + 1 */
        {64, 2, 64, 10},    /* 0 + 8 + 2 */
        {127, 3, 64, 511},  /* 31*16 + 3*4 + 3 */
        {128, 0, 64, 512},  /* next row block */
        {255, 3, 64, 1023},
        /* K = 128: 8 columns, padded_cols 8: two blocks per row block. */
        {0, 4, 128, 512},
        {5, 6, 128, 594},   /* 512 + 80 + 2 */
        {130, 5, 128, 1569}, /* ((1*2)+1)*512 + 2*16 + 0 + 1 */
        /* K = 80: 5 columns, padded to 8. */
        {0, 4, 80, 512},
        {200, 4, 80, 1672}, /* (1*2+1)*512 + 8*16 + 2*4 + 0 */
        /* K = 7168: 448 columns = 112 blocks per row block. */
        {129, 447, 7168, 114195}, /* (112+111)*512 = 114176, + 1*16 + 0 + 3 */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECKF(ref_sf_offset(t[i].r, t[i].j, t[i].k) == t[i].off,
               "r=%lld j=%lld K=%lld: %zu, want %zu", (long long)t[i].r, (long long)t[i].j,
               (long long)t[i].k, ref_sf_offset(t[i].r, t[i].j, t[i].k), t[i].off);

    CHECK(ref_sf_bytes(0, 64) == 0);
    CHECK(ref_sf_bytes(1, 64) == 512);
    CHECK(ref_sf_bytes(128, 64) == 512);
    CHECK(ref_sf_bytes(129, 64) == 1024);
    CHECK(ref_sf_bytes(1, 16) == 512);    /* 1 column padded to 4 */
    CHECK(ref_sf_bytes(200, 80) == 2048); /* 256 * 8 */
    CHECK(ref_sf_bytes(256, 7168) == 114688);
}

/* Over the padded buffer the layout is a bijection onto [0, ref_sf_bytes). */
static void test_sf_layout_bijection(void) {
    static const int64_t shapes[][2] = {{1, 16}, {128, 64}, {200, 80}, {300, 1040}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], k = shapes[s][1];
        size_t bytes = ref_sf_bytes(rows, k);
        int64_t prows = (rows + 127) / 128 * 128, pcols = (k / 16 + 3) / 4 * 4;
        REQUIRE(bytes == (size_t)(prows * pcols));
        unsigned char *seen = calloc(bytes, 1);
        REQUIRE(seen);
        int dup = 0, out = 0;
        for (int64_t r = 0; r < prows; r++)
            for (int64_t j = 0; j < pcols; j++) {
                size_t o = ref_sf_offset(r, j, k);
                if (o >= bytes) out++;
                else if (seen[o]++) dup++;
            }
        CHECKF(dup == 0 && out == 0, "rows=%lld K=%lld: %d duplicates, %d out of range",
               (long long)rows, (long long)k, dup, out);
        free(seen);
    }
}

static void test_sf_roundtrip(void) {
    const int64_t rows = 200, k = 80, cols = 5; /* both dimensions need padding */
    size_t bytes = ref_sf_bytes(rows, k);
    uint8_t *plain = malloc((size_t)(rows * cols));
    uint8_t *back = malloc((size_t)(rows * cols));
    uint8_t *blocked = malloc(bytes);
    REQUIRE(plain && back && blocked);
    for (int64_t i = 0; i < rows * cols; i++) plain[i] = (uint8_t)(1 + (i * 37) % 255);
    memset(blocked, 0xAA, bytes);
    ref_sf_to_blocked(plain, rows, k, blocked);
    ref_sf_from_blocked(blocked, rows, k, back);
    CHECK(memcmp(plain, back, (size_t)(rows * cols)) == 0);
    /* every stored byte is non-zero, so the zeros are exactly the padding */
    size_t zeros = 0;
    for (size_t i = 0; i < bytes; i++) zeros += blocked[i] == 0;
    CHECKF(zeros == bytes - (size_t)(rows * cols), "%zu zero bytes, want %zu", zeros,
           bytes - (size_t)(rows * cols));
    /* hand-placed samples: (0,0) at 0, (1,0) at 16, (32,0) at 4, (0,4) at 512 */
    CHECK(blocked[0] == plain[0 * cols + 0]);
    CHECK(blocked[16] == plain[1 * cols + 0]);
    CHECK(blocked[4] == plain[32 * cols + 0]);
    CHECK(blocked[512] == plain[0 * cols + 4]);
    /* (199,4): block (1*2 + 1) -> 1536, + (199%32 = 7)*16 + ((199%128)/32 = 2)*4 = 1656 */
    CHECK(blocked[1656] == plain[199 * cols + 4]);
    free(plain);
    free(back);
    free(blocked);
}

/* ---- operands and GEMM ---- */

static void test_element_hand(void) {
    /* one row, K = 32: bytes 0..7 block 0 (scale 1.5), bytes 8..15 block 1 (scale 2^-9) */
    uint8_t packed[16] = {0x71, 0xF8, 0, 0, 0, 0, 0, 0x3A, 0x07, 0, 0, 0, 0, 0, 0, 0xE0};
    uint8_t *sf = calloc(ref_sf_bytes(1, 32), 1);
    REQUIRE(sf);
    sf[0] = 0x3C; /* (0,0): 1.5 */
    sf[1] = 0x01; /* (0,1): 2^-9 */
    CHECK(ref_element(packed, sf, 0, 0, 32) == 0.75);   /* code 1: 0.5 * 1.5 */
    CHECK(ref_element(packed, sf, 0, 1, 32) == 9.0);    /* code 7: 6 * 1.5 */
    CHECK(ref_element(packed, sf, 0, 2, 32) == 0.0);    /* code 8: -0 */
    CHECK(signbit(ref_element(packed, sf, 0, 2, 32)));
    CHECK(ref_element(packed, sf, 0, 3, 32) == -9.0);   /* code F: -6 * 1.5 */
    CHECK(ref_element(packed, sf, 0, 14, 32) == -1.5);  /* code A: -1 * 1.5 */
    CHECK(ref_element(packed, sf, 0, 15, 32) == 2.25);  /* code 3: 1.5 * 1.5 */
    CHECK(ref_element(packed, sf, 0, 16, 32) == 0.01171875); /* code 7: 6 * 2^-9 */
    CHECK(ref_element(packed, sf, 0, 17, 32) == 0.0);
    CHECK(ref_element(packed, sf, 0, 31, 32) == -0.0078125); /* code E: -4 * 2^-9 */
    free(sf);
}

/* C[0][n] for 1 x 8 x 64. A (one row, 4 scale blocks of 16):
 *   k  0..15: bytes 0x22 (1.0, 1.0), scale 0x38 (1)      -> a = 1
 *   k 16..31: bytes 0xA2 (1.0, -1.0), scale 0x40 (2)     -> a = +2 (even k), -2 (odd k)
 *   k 32..47: bytes 0x77 (6, 6), scale 0x01 (2^-9)       -> a = 6 * 2^-9 = 0.01171875
 *   k 48..63: bytes 0xF1 (0.5, -6), scale 0x7E (448)     -> a = 224 (even), -2688 (odd)
 *   sum(a) = 16 + 0 + 0.1875 + 8*224 - 8*2688 = 16.1875 + 1792 - 21504 = -19695.8125
 * B rows (bytes 0 and scales 0x38 unless said):
 *   n0: all 0x22 -> b = 1: C = -19695.8125; fp16 step 16 there -> -19696
 *   n1: all 0 -> C = +0
 *   n2: bytes 0..7 = 0x66 (4, 4): C = 16 * 1 * 4 = 64
 *   n3: bytes 8..15 = 0xA2, scale j1 = 0x48 (4): b = +4/-4, products 2*4 = 8: C = 128
 *   n4: byte 16 = 0x01 (k32: 0.5), scale j2 = 0x01: C = (6*2^-9)(0.5*2^-9) = 3*2^-18
 *       = 192 * 2^-24, an fp16 subnormal (bits 0x00C0)
 *   n5: bytes 0..3 = 0x22 (k 0..7 = 1), bytes 24..31 = 0xA0 (odd k: -1):
 *       C = 8*1 + 8*(-2688)(-1) = 21512, the midpoint of 21504 and 21520 -> even: 21504
 *   n6: n5 plus byte 16 = 0x01 (k32: 0.5), scale j2 = 0x01: + 3*2^-18 (as in n4)
 *       = 21512.0000114... -> 21520: one rounding at the end, and the tiny term decides
 *       (an fp32 sum would have lost it next to 2688: fp32's step there is 2^-12)
 *   n7: all 0x99 (-0.5, -0.5): C = -0.5 * -19695.8125 = 9847.90625; step 8 -> 9848 */
static void test_gemm_1x8x64(void) {
    enum { K = 64, N = 8 };
    uint8_t a[K / 2], b[N][K / 2];
    uint8_t *sfa = calloc(ref_sf_bytes(1, K), 1), *sfb = calloc(ref_sf_bytes(N, K), 1);
    REQUIRE(sfa && sfb);
    for (int i = 0; i < 8; i++) {
        a[i] = 0x22;
        a[8 + i] = 0xA2;
        a[16 + i] = 0x77;
        a[24 + i] = 0xF1;
    }
    /* row 0, column j sits at byte j (K = 64) */
    sfa[0] = 0x38;
    sfa[1] = 0x40;
    sfa[2] = 0x01;
    sfa[3] = 0x7E;
    memset(b, 0, sizeof b);
    /* row n, column j at byte n*16 + j (n < 32, K = 64) */
    for (int n = 0; n < N; n++)
        for (int j = 0; j < 4; j++) sfb[n * 16 + j] = 0x38;
    memset(b[0], 0x22, K / 2);
    memset(b[2], 0x66, 8);
    memset(b[3] + 8, 0xA2, 8);
    sfb[3 * 16 + 1] = 0x48;
    b[4][16] = 0x01;
    sfb[4 * 16 + 2] = 0x01;
    memset(b[5], 0x22, 4);
    memset(b[5] + 24, 0xA0, 8);
    memcpy(b[6], b[5], K / 2);
    b[6][16] = 0x01;
    sfb[6 * 16 + 2] = 0x01;
    memset(b[7], 0x99, K / 2);

    static const double want[N] = {-19696.0, 0.0,     64.0,    128.0,
                                   1.1444091796875e-05, 21504.0, 21520.0, 9848.0};
    for (int threads = 1; threads <= 4; threads += 3) {
        uint16_t c[N];
        memset(c, 0xFF, sizeof c);
        ref_gemm(a, sfa, &b[0][0], sfb, 1, N, K, c, threads);
        for (int n = 0; n < N; n++)
            CHECKF(ref_f16_to_double(c[n]) == want[n], "threads %d C[0][%d] = %.17g (0x%04X), "
                   "want %.17g", threads, n, ref_f16_to_double(c[n]), c[n], want[n]);
        CHECK(c[1] == 0x0000); /* +0, not -0 */
        CHECK(c[4] == 0x00C0);
        CHECK(c[5] == 0x7540);
    }
    free(sfa);
    free(sfb);
}

/* 2 x 8 x 128: two 512-byte scale blocks per row (j 0..3 and j 4..7), row 1 at +16.
 * A row 0: bytes 0x22 (1.0); scales j0..3 = 0x38 (1), j4..7 = 0x40 (2): a = 1 (k < 64), 2.
 * A row 1: bytes 0xBB (-1.5); scales 0x30 (0.5): a = -0.75 everywhere.
 * B rows (bytes 0 and scales 0x38 unless said); C[0][n], C[1][n]:
 *   n0: all 0x22 (b = 1): 64*1 + 64*2 = 192; 128 * -0.75 = -96
 *   n1: bytes 32..63 = 0x44 (b = 2 for k >= 64): 64*2*2 = 256; 64*-0.75*2 = -96
 *   n2: bytes 0..31 = 0xCC (-2), scales j0..3 = 0x48 (4): b = -8 for k < 64:
 *       64*-8 = -512; 64*-0.75*-8 = 384
 *   n3: byte 31 = 0x70 (k63: 6), byte 32 = 0x0F (k64: -6), scale j4 = 0x40 (2): b63 = 6,
 *       b64 = -12, across the two 64-blocks: 6 - 24 = -18; -4.5 + 9 = 4.5
 *   n4: all 0x11 (0.5), all scales 0x01 (2^-9): b = 2^-10: 192/1024 = 0.1875; -96/1024
 *       = -0.09375
 *   n5: bytes 56..63 = 0x77 (6), scale j7 = 0x07 (7 * 2^-9, largest subnormal):
 *       b = 42/512 for k 112..127: 16*2*42/512 = 2.625; 16*-0.75*42/512 = -0.984375
 *   n6: bytes 0..15 = 0x77, scales j0, j1 = 0x7E (448): b = 2688 for k < 32:
 *       32*2688 = 86016 -> +inf; 32*2688*-0.75 = -64512 (fp16 step 32: exact)
 *   n7: all 0, scale j5 = 0x7F (NaN): 0 * NaN = NaN in both rows */
static void test_gemm_2x8x128(void) {
    enum { M = 2, K = 128, N = 8 };
    uint8_t a[M][K / 2], b[N][K / 2];
    uint8_t *sfa = calloc(ref_sf_bytes(M, K), 1), *sfb = calloc(ref_sf_bytes(N, K), 1);
    REQUIRE(sfa && sfb);
    REQUIRE(ref_sf_bytes(N, K) == 1024);
/* K = 128, row < 32: column j of row r at (j/4)*512 + r*16 + j%4 */
#define OFF(r, j) ((size_t)((j) / 4 * 512 + (r) * 16 + (j) % 4))
    memset(a[0], 0x22, K / 2);
    memset(a[1], 0xBB, K / 2);
    for (int j = 0; j < 8; j++) {
        sfa[OFF(0, j)] = j < 4 ? 0x38 : 0x40;
        sfa[OFF(1, j)] = 0x30;
    }
    memset(b, 0, sizeof b);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < 8; j++) sfb[OFF(n, j)] = 0x38;
    memset(b[0], 0x22, K / 2);
    memset(b[1] + 32, 0x44, 32);
    memset(b[2], 0xCC, 32);
    for (int j = 0; j < 4; j++) sfb[OFF(2, j)] = 0x48;
    b[3][31] = 0x70;
    b[3][32] = 0x0F;
    sfb[OFF(3, 4)] = 0x40;
    memset(b[4], 0x11, K / 2);
    for (int j = 0; j < 8; j++) sfb[OFF(4, j)] = 0x01;
    memset(b[5] + 56, 0x77, 8);
    sfb[OFF(5, 7)] = 0x07;
    memset(b[6], 0x77, 16);
    sfb[OFF(6, 0)] = 0x7E;
    sfb[OFF(6, 1)] = 0x7E;
    sfb[OFF(7, 5)] = 0x7F;
#undef OFF
    static const double want[M][N] = {
        {192.0, 256.0, -512.0, -18.0, 0.1875, 2.625, INFINITY, NAN},
        {-96.0, -96.0, 384.0, 4.5, -0.09375, -0.984375, -64512.0, NAN},
    };
    for (int threads = 1; threads <= 8; threads *= 8) {
        uint16_t c[M][N];
        memset(c, 0, sizeof c);
        ref_gemm(&a[0][0], sfa, &b[0][0], sfb, M, N, K, &c[0][0], threads);
        for (int i = 0; i < M; i++)
            for (int n = 0; n < N; n++) {
                double got = ref_f16_to_double(c[i][n]);
                if (isnan(want[i][n]))
                    CHECKF(isnan(got), "C[%d][%d] = %g, want NaN", i, n, got);
                else
                    CHECKF(got == want[i][n], "threads %d C[%d][%d] = %.17g, want %.17g",
                           threads, i, n, got, want[i][n]);
            }
        CHECK(c[0][6] == 0x7C00);
    }
    free(sfa);
    free(sfb);
}

static void test_gemm_m0(void) {
    /* m = 0: nothing is read or written (NULL pointers are fine) */
    ref_gemm(NULL, NULL, NULL, NULL, 0, 64, 64, NULL, 4);
    ref_gemm(NULL, NULL, NULL, NULL, 0, 64, 64, NULL, 1);
    /* m = 1 with many threads: fewer tiles than threads */
    enum { K = 64, N = 8 };
    uint8_t a[K / 2], b[N * K / 2];
    uint8_t *sfa = calloc(ref_sf_bytes(1, K), 1), *sfb = calloc(ref_sf_bytes(N, K), 1);
    REQUIRE(sfa && sfb);
    memset(a, 0x22, sizeof a);
    memset(b, 0x22, sizeof b);
    for (int j = 0; j < 4; j++) sfa[j] = 0x38;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < 4; j++) sfb[n * 16 + j] = 0x40; /* 2 */
    uint16_t c[N];
    ref_gemm(a, sfa, b, sfb, 1, N, K, c, 16);
    for (int n = 0; n < N; n++) CHECK(ref_f16_to_double(c[n]) == 128.0); /* 64 * 1 * 2 */
    free(sfa);
    free(sfb);
}

/* Random problems crossing 128-row scale blocks and the 32x32 work tiles, N not a multiple
 * of 4, against the plain triple loop over ref_element; every thread count gives the same
 * bits. */
static void test_gemm_random_vs_elements(void) {
    const int64_t m = 130, n = 37, k = 192;
    ref_rng rng;
    ref_rng_seed(&rng, 42);
    uint8_t *a = malloc((size_t)(m * k / 2)), *b = malloc((size_t)(n * k / 2));
    uint8_t *sfa = malloc(ref_sf_bytes(m, k)), *sfb = malloc(ref_sf_bytes(n, k));
    uint16_t *want = malloc((size_t)(m * n) * 2), *c = malloc((size_t)(m * n) * 2);
    REQUIRE(a && b && sfa && sfb && want && c);
    ref_fill_packed(&rng, a, m, k);
    ref_fill_packed(&rng, b, n, k);
    ref_fill_scales(&rng, sfa, m, k, 4);
    ref_fill_scales(&rng, sfb, n, k, 2);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t kk = 0; kk < k; kk++)
                s += ref_element(a, sfa, i, kk, k) * ref_element(b, sfb, j, kk, k);
            want[i * n + j] = ref_f16_from_double(s);
            nonzero += s != 0.0 && !isinf(s) && !isnan(s);
        }
    CHECK(nonzero > m * n / 2);
    static const int thread_counts[] = {1, 2, 3, 7, 16};
    for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
        memset(c, 0xFF, (size_t)(m * n) * 2);
        ref_gemm(a, sfa, b, sfb, m, n, k, c, thread_counts[t]);
        CHECKF(memcmp(c, want, (size_t)(m * n) * 2) == 0, "threads %d differ",
               thread_counts[t]);
    }
    free(a);
    free(b);
    free(sfa);
    free(sfb);
    free(want);
    free(c);
}

/* ---- random data ---- */

static void test_rng(void) {
    ref_rng r1, r2, r3;
    /* splitmix64 from 0: its published first outputs */
    ref_rng_seed(&r1, 0);
    CHECK(r1.s[0] == 0xE220A8397B1DCDAFull);
    CHECK(r1.s[1] == 0x6E789E6AA1B965F4ull);
    CHECK(r1.s[2] == 0x06C45D188009454Full);
    CHECK(r1.s[3] == 0xF88BB8A8724C81ECull);
    /* xoshiro256** from the state {1, 2, 3, 4}: first output rotl(2*5, 7)*9 = 1280*9 */
    ref_rng s = {{1, 2, 3, 4}};
    CHECK(ref_rng_next(&s) == 11520);
    /* the state after one step, by hand: t = 2<<17; s2 = 3^1 = 2; s3 = 4^2 = 6;
     * s1 = 2^2 = 0; s0 = 1^6 = 7; s2 = 2^t; s3 = rotl(6, 45) */
    CHECK(s.s[0] == 7 && s.s[1] == 0 && s.s[2] == (2u ^ (2ull << 17)) && s.s[3] == 6ull << 45);
    CHECK(ref_rng_next(&s) == 0); /* rotl(0*5, 7) * 9 */
    /* deterministic and seed-dependent */
    ref_rng_seed(&r1, 12345);
    ref_rng_seed(&r2, 12345);
    ref_rng_seed(&r3, 12346);
    int same = 1, differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = ref_rng_next(&r1);
        same &= x == ref_rng_next(&r2);
        differ += x != ref_rng_next(&r3);
    }
    CHECK(same);
    CHECK(differ > 990);
}

static void test_fill_packed(void) {
    ref_rng rng;
    ref_rng_seed(&rng, 7);
    const int64_t rows = 64, k = 256;
    size_t bytes = (size_t)(rows * k / 2);
    uint8_t *p = malloc(bytes + 16);
    REQUIRE(p);
    memset(p, 0xAB, bytes + 16);
    ref_fill_packed(&rng, p, rows, k);
    int lo[16] = {0}, hi[16] = {0};
    for (size_t i = 0; i < bytes; i++) {
        lo[p[i] & 15]++;
        hi[p[i] >> 4]++;
    }
    for (int c = 0; c < 16; c++)
        CHECKF(lo[c] > 300 && hi[c] > 300, "code %d: %d low, %d high of %zu", c, lo[c], hi[c],
               bytes); /* expect 512 each */
    for (size_t i = bytes; i < bytes + 16; i++) CHECK(p[i] == 0xAB); /* no overrun */
    /* a size that is not a multiple of 8 bytes: 1 row of K = 48 is 24 bytes */
    memset(p, 0xAB, 40);
    ref_fill_packed(&rng, p, 1, 48);
    for (int i = 24; i < 40; i++) CHECK(p[i] == 0xAB);
    free(p);
}

static void test_fill_scales(void) {
    const int64_t rows = 300, k = 1040; /* 65 columns, padded to 68; rows padded to 384 */
    size_t bytes = ref_sf_bytes(rows, k);
    REQUIRE(bytes == 384 * 68);
    uint8_t *sf = malloc(bytes), *plain = malloc((size_t)(rows * 65));
    REQUIRE(sf && plain);
    ref_rng rng;
    ref_rng_seed(&rng, 99);

    /* max_exp = 8: the whole range */
    memset(sf, 0xFF, bytes);
    ref_fill_scales(&rng, sf, rows, k, 8);
    ref_sf_from_blocked(sf, rows, k, plain);
    int subnormal = 0, b01 = 0, b7e = 0, bad = 0;
    for (int64_t i = 0; i < rows * 65; i++) {
        uint8_t v = plain[i];
        if (v == 0x00 || v >= 0x7F) bad++; /* zero, NaN or negative */
        subnormal += v < 0x08;
        b01 += v == 0x01;
        b7e += v == 0x7E;
    }
    CHECKF(bad == 0, "%d bytes outside 0x01..0x7E", bad);
    CHECKF(subnormal > 0 && b01 > 0 && b7e > 0, "subnormal %d, 0x01 %d, 0x7E %d", subnormal,
           b01, b7e);
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i++) nonzero += sf[i] != 0;
    CHECKF(nonzero == (size_t)(rows * 65), "padding not zero: %zu non-zero bytes", nonzero);

    /* max_exp = 2: at most 1.875 * 4 = 7.5 (0x4F), which must show up */
    ref_fill_scales(&rng, sf, rows, k, 2);
    ref_sf_from_blocked(sf, rows, k, plain);
    int over = 0, b4f = 0;
    subnormal = 0;
    for (int64_t i = 0; i < rows * 65; i++) {
        double v = ref_e4m3(plain[i]);
        over += !(v >= 0.001953125 && v <= 7.5);
        b4f += plain[i] == 0x4F;
        subnormal += plain[i] < 0x08;
    }
    CHECK(over == 0);
    CHECK(b4f > 0 && subnormal > 0);

    /* max_exp = -7: only the subnormals 0x01..0x07 */
    ref_fill_scales(&rng, sf, rows, k, -7);
    ref_sf_from_blocked(sf, rows, k, plain);
    int seen[8] = {0};
    over = 0;
    for (int64_t i = 0; i < rows * 65; i++) {
        if (plain[i] < 0x01 || plain[i] > 0x07) over++;
        else seen[plain[i]]++;
    }
    CHECK(over == 0);
    for (int v = 1; v < 8; v++) CHECKF(seen[v] > 0, "0x%02X never drawn", v);

    /* same seed, same scales */
    uint8_t *sf2 = malloc(bytes);
    REQUIRE(sf2);
    ref_rng r1, r2;
    ref_rng_seed(&r1, 5);
    ref_rng_seed(&r2, 5);
    ref_fill_scales(&r1, sf, rows, k, 8);
    ref_fill_scales(&r2, sf2, rows, k, 8);
    CHECK(memcmp(sf, sf2, bytes) == 0);
    free(sf2);
    free(sf);
    free(plain);
}

/* ---- comparison ---- */

static void test_compare(void) {
    enum { N = 1000 };
    uint16_t ref[N], out[N];
    ref_rng rng;
    ref_rng_seed(&rng, 3);
    for (int i = 0; i < N; i++) {
        uint16_t h;
        do h = (uint16_t)ref_rng_next(&rng);
        while ((h & 0x7C00) == 0x7C00); /* finite */
        ref[i] = h;
    }
    ref_check st;
    memcpy(out, ref, sizeof out);
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 1);
    CHECK(st.pass == 1 && st.bad == 0 && st.first_bad == -1 && st.max_abs_err == 0.0 &&
          st.rel_l2 == 0.0);
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, NULL) == 1);
    CHECK(ref_compare(out, ref, 0, 1e-3, 1e-3, 1e-3, &st) == 1 && st.first_bad == -1);

    /* one wrong element: ref 1.0, out 1 + 3 * 2^-10 (error 2.9e-3 > 1e-3 + 1e-3) */
    for (int i = 0; i < N; i++) ref[i] = out[i] = 0x3C00;
    out[417] = 0x3C03;
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 0);
    CHECK(st.bad == 1 && st.first_bad == 417 && st.max_abs_err == 0.0029296875);
    /* 1 + 2^-10 is inside the tolerance */
    out[417] = 0x3C01;
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 1 && st.bad == 0);

    /* every element inside the element-wise tolerance (1.95e-3 <= 2e-3), but the relative
     * L2 error 1.95e-3 is above 1e-3 */
    for (int i = 0; i < N; i++) out[i] = 0x3C02;
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 0);
    CHECK(st.bad == 0 && fabs(st.rel_l2 - 0.001953125) < 1e-12);
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 3e-3, &st) == 1);

    /* NaN in out, in ref, in both: never passes, even with huge tolerances */
    memcpy(out, ref, sizeof out);
    out[5] = 0x7E00;
    CHECK(ref_compare(out, ref, N, 1e30, 1e30, 1e30, &st) == 0 && st.bad == 1 &&
          st.first_bad == 5);
    ref[5] = 0x7E00;
    CHECK(ref_compare(out, ref, N, 1e30, 1e30, 1e30, &st) == 0 && st.bad == 1);
    out[5] = 0x3C00;
    CHECK(ref_compare(out, ref, N, 1e30, 1e30, 1e30, &st) == 0 && st.bad == 1);

    /* infinities: equal passes, anything else fails */
    for (int i = 0; i < N; i++) ref[i] = out[i] = 0x3C00;
    ref[9] = out[9] = 0x7C00;
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 1);
    out[9] = 0x7BFF; /* 65504 against inf */
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 0 && st.first_bad == 9);
    out[9] = 0xFC00; /* -inf against inf */
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 0);
    ref[9] = 0x7BFF;
    out[9] = 0x7C00; /* inf against 65504 */
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 0 && st.first_bad == 9);

    /* all-zero reference: -0 against +0 passes; any difference makes rel_l2 infinite */
    for (int i = 0; i < N; i++) ref[i] = out[i] = 0;
    out[1] = 0x8000;
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 1 && st.rel_l2 == 0.0);
    out[2] = 0x0001;
    CHECK(ref_compare(out, ref, N, 1e-3, 1e-3, 1e-3, &st) == 0 && st.bad == 0 &&
          isinf(st.rel_l2));
}

const test_case tests_reference[] = {
    {"e2m1_table", test_e2m1_table},
    {"e4m3_table", test_e4m3_table},
    {"e4m3_all_bytes", test_e4m3_all_bytes},
    {"f16_from_double", test_f16_from_double},
    {"f16_to_double", test_f16_to_double},
    {"f16_roundtrip_all", test_f16_roundtrip_all},
    {"sf_offsets_hand", test_sf_offsets_hand},
    {"sf_layout_bijection", test_sf_layout_bijection},
    {"sf_roundtrip", test_sf_roundtrip},
    {"element_hand", test_element_hand},
    {"gemm_1x8x64", test_gemm_1x8x64},
    {"gemm_2x8x128", test_gemm_2x8x128},
    {"gemm_m0", test_gemm_m0},
    {"gemm_random_vs_elements", test_gemm_random_vs_elements},
    {"rng", test_rng},
    {"fill_packed", test_fill_packed},
    {"fill_scales", test_fill_scales},
    {"compare", test_compare},
    {0, 0},
};
