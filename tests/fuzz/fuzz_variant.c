/* fuzz_variant.c - nvfp4jit_variant_parse (src/nvfp4jit.c), with format and check.
 *
 * Input: the variant name (up to the first NUL). Checked: a name that parses is exactly what
 * nvfp4jit_variant_format writes for the result (the parser takes only that form), every
 * number is 1..NVFP4JIT_VARIANT_MAX_PARAM, format's length query and truncation behave like
 * snprintf, and nvfp4jit_variant_check answers without crashing. A failed parse leaves out
 * untouched. */
#include "fuzz.h"

#include <string.h>

#include "nvfp4jit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_strndup(data, size);
    nvfp4jit_variant v, guard;
    memset(&v, 0x5a, sizeof v);
    guard = v;
    nvfp4jit_status st = nvfp4jit_variant_parse(s, &v);
    if (st != NVFP4JIT_OK) {
        FUZZ_CHECK(st == NVFP4JIT_ERR_INVALID_ARG);
        FUZZ_CHECK(!memcmp(&v, &guard, sizeof v));
        free(s);
        return 0;
    }
    FUZZ_CHECK(v.arch == NVFP4JIT_ARCH_SM90A || v.arch == NVFP4JIT_ARCH_SM100A);
    const int p[4] = {v.block_m, v.block_n, v.block_k, v.stages};
    for (int i = 0; i < 4; i++) FUZZ_CHECK(p[i] >= 1 && p[i] <= NVFP4JIT_VARIANT_MAX_PARAM);
    FUZZ_CHECK(v.swap_ab == 0 || v.swap_ab == 1);
    FUZZ_CHECK(v.strategy >= NVFP4JIT_STRATEGY_DUAL && v.strategy <= NVFP4JIT_STRATEGY_ACT16SK);

    int need = nvfp4jit_variant_format(&v, NULL, 12345);
    FUZZ_CHECK(need > 0 && (size_t)need == strlen(s));
    char buf[128];
    FUZZ_CHECK(nvfp4jit_variant_format(&v, buf, sizeof buf) == need);
    FUZZ_CHECK(!strcmp(buf, s)); /* the one accepted form is the formatted one */
    /* truncation: like snprintf, at every size (each on its own heap block for ASan) */
    for (size_t n = 0; n <= (size_t)need + 1; n++) {
        char *t = malloc(n ? n : 1);
        FUZZ_CHECK(t != NULL);
        FUZZ_CHECK(nvfp4jit_variant_format(&v, n ? t : NULL, n) == need);
        if (n) FUZZ_CHECK(strlen(t) == n - 1 || (size_t)need < n);
        if (n) FUZZ_CHECK(!strncmp(t, s, strlen(t)));
        free(t);
    }
    nvfp4jit_variant w;
    FUZZ_CHECK(nvfp4jit_variant_parse(buf, &w) == NVFP4JIT_OK && !memcmp(&w, &v, sizeof v));
    st = nvfp4jit_variant_check(NULL, &v);
    FUZZ_CHECK(st == NVFP4JIT_OK || st == NVFP4JIT_ERR_INVALID_VARIANT ||
               st == NVFP4JIT_ERR_UNSUPPORTED_ARCH);
    free(s);
    return 0;
}
