/* dispatch.h - plans (src/dispatch.c) as the internals see them: the bodies of
 * nvfp4jit_plan_create / _run / _destroy without the argument checks and without clearing
 * the context's message (the tuner calls these). */
#ifndef NJ_DISPATCH_H
#define NJ_DISPATCH_H

#include "common.h"

/* As nvfp4jit_plan_create; out must not be NULL. */
nvfp4jit_status nj_plan_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                               const nvfp4jit_group *groups, size_t num_groups,
                               const nvfp4jit_variant *force, nvfp4jit_plan **out);
/* As nvfp4jit_plan_run; p must not be NULL. */
nvfp4jit_status nj_plan_run(nvfp4jit_plan *p, const nvfp4jit_group *groups, size_t num_groups,
                            void *stream);
/* The context p was made on (p not NULL). */
nvfp4jit_ctx *nj_plan_ctx(const nvfp4jit_plan *p);
/* As nvfp4jit_plan_destroy (NULL: no-op). */
void nj_plan_destroy(nvfp4jit_plan *p);

#endif
