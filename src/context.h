/* context.h - creating and destroying a context (src/context.c). The struct itself is in
 * common.h, below every subsystem; this pair is above the ones whose state a context owns
 * (the JIT's modules), so the import graph has no circle. */
#ifndef NJ_CONTEXT_H
#define NJ_CONTEXT_H

#include "common.h"

/* Create a context from opts (may be NULL) and the environment (NVFP4JIT_CACHE_DIR or
 * XDG_CACHE_HOME or HOME when opts has no cache_dir, NVFP4JIT_DUMP_DIR,
 * NVFP4JIT_TEMPLATE_DIR, NVFP4JIT_NO_TUNE), read here and nowhere else.
 * @return as nvfp4jit_ctx_create; messages go to the thread's creation message. */
nvfp4jit_status nj_ctx_create(const nvfp4jit_ctx_options *opts, nvfp4jit_ctx **out);
/* A context with parent's settings (cache directory and its trust, the environment as parent
 * read it; not verbose) and nothing else: the tuner's compile workers, one per thread. Reads
 * no environment. @return NVFP4JIT_OK or NVFP4JIT_ERR_OUT_OF_MEMORY. */
nvfp4jit_status nj_ctx_create_like(const nvfp4jit_ctx *parent, nvfp4jit_ctx **out);
/* Free ctx and everything it owns (its modules: src/jit.c nj_jit_free_all). NULL is a no-op. */
void nj_ctx_destroy(nvfp4jit_ctx *ctx);

#endif
