/* variant.h - variants and problem sets as the internals see them: the validity rules,
 * names, the variant space, and the group checks. The public nvfp4jit_variant_* and
 * nvfp4jit_problem_check* (src/nvfp4jit.c) are thin wrappers over these; internals call these
 * ones, which never clear the context's message. */
#ifndef NJ_VARIANT_H
#define NJ_VARIANT_H

#include "common.h"

/* Check v against its arch's rules. ctx may be NULL: then nothing is recorded anywhere.
 * @return NVFP4JIT_OK, NVFP4JIT_ERR_INVALID_ARG (v NULL), NVFP4JIT_ERR_UNSUPPORTED_ARCH,
 * NVFP4JIT_ERR_INVALID_VARIANT. */
nvfp4jit_status nj_variant_check(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v);
/* As nvfp4jit_variant_format / _parse / _space (include/nvfp4jit.h). */
int nj_variant_format(const nvfp4jit_variant *v, char *buf, size_t n);
nvfp4jit_status nj_variant_parse(const char *s, nvfp4jit_variant *out);
nvfp4jit_status nj_variant_space(nvfp4jit_arch arch, nvfp4jit_variant *out, size_t cap,
                                 size_t *count);
/* 1 if a and b are the same variant. */
int nj_variant_eq(const nvfp4jit_variant *a, const nvfp4jit_variant *b);
/* Validate a problem set (pointers too when `pointers`), as nvfp4jit_problem_check(_shapes). */
nvfp4jit_status nj_check_groups(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n,
                                int pointers);

#endif
