/* context.h - the context: what nvfp4jit_ctx_create reads once (options and the
 * environment) and what the context owns (messages, compiled modules, device facts).
 * Every subsystem reads its settings from here, never from the environment. */
#ifndef NJ_CONTEXT_H
#define NJ_CONTEXT_H

#include "nvfp4jit.h"

#define NJ_MSG_CAP 65536
#define NJ_PATH_CAP 4096

struct nvfp4jit_kernel;

struct nvfp4jit_ctx {
    char *msg;  /* last error detail, NJ_MSG_CAP bytes */
    char *warn; /* last warning, NJ_MSG_CAP bytes */
    char cache_dir[NJ_PATH_CAP];
    int disk_cache; /* 1 = use the disk cache */
    int cache_read_only; /* the cache directory is another user's: lookups only */
    int verbose;
    /* the environment, read once by nvfp4jit_ctx_create ("" / 0 when unset) */
    char dump_dir[NJ_PATH_CAP];     /* NVFP4JIT_DUMP_DIR: write each kernel's artifacts */
    char template_dir[NJ_PATH_CAP]; /* NVFP4JIT_TEMPLATE_DIR: template overrides */
    int no_tune;                    /* NVFP4JIT_NO_TUNE set, non-empty and not "0" */
    struct nvfp4jit_kernel *kernels; /* every compiled module (src/jit.c), newest first */
    /* device state (filled on first launch) */
    int cu_ready;
    int device_cc;
    int device_sms;
    char tune_db[4200]; /* nvfp4jit_tune_db_path's answer */
};

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
