/* reference_bound.c - sum |a*b| per output element (see reference.h). */
#include <math.h>
#include <stdlib.h>

#include "reference.h"

void ref_gemm_abs(const uint8_t *a, const uint8_t *sfa, const uint8_t *b, const uint8_t *sfb,
                  int64_t m, int64_t n, int64_t k, double *out) {
    double *ra = malloc((size_t)k * sizeof *ra), *rb = malloc((size_t)(n * k) * sizeof *rb);
    if (!ra || !rb) {
        free(ra);
        free(rb);
        for (int64_t i = 0; i < m * n; i++) out[i] = INFINITY; /* no bound: allow anything */
        return;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t kk = 0; kk < k; kk++) rb[j * k + kk] = fabs(ref_element(b, sfb, j, kk, k));
    for (int64_t i = 0; i < m; i++) {
        for (int64_t kk = 0; kk < k; kk++) ra[kk] = fabs(ref_element(a, sfa, i, kk, k));
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            const double *pb = rb + j * k;
            for (int64_t kk = 0; kk < k; kk++) s += ra[kk] * pb[kk];
            out[i * n + j] = s;
        }
    }
    free(ra);
    free(rb);
}
