/* common.h - internal helpers shared by every subsystem: growable buffers, error recording,
 * and the context structure. Not part of the API. */
#ifndef NJ_COMMON_H
#define NJ_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "nvfp4jit.h"

#if defined(__GNUC__)
#define NJ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define NJ_PRINTF(a, b)
#endif

/* ---- growable byte buffer (always NUL-terminated after the data) ---- */
typedef struct nj_buf {
    char *data;
    size_t len, cap;
} nj_buf;

void nj_buf_init(nj_buf *b);
void nj_buf_free(nj_buf *b);
/* @return 0 on success, -1 when out of memory (the buffer is left as it was). */
int nj_buf_append(nj_buf *b, const void *p, size_t n);
int nj_buf_puts(nj_buf *b, const char *s);
int nj_buf_printf(nj_buf *b, const char *fmt, ...) NJ_PRINTF(2, 3);
int nj_buf_vprintf(nj_buf *b, const char *fmt, va_list ap);
int nj_buf_set(nj_buf *b, const void *p, size_t n); /* replace contents */

/* ---- file helpers ---- */
/* Files are untrusted (STYLE.md): a path is opened O_NONBLOCK (a FIFO cannot block the open),
 * fstat'ed, and refused unless it is a regular file of at most max bytes, before a byte is
 * read. @return 0, or -1 with errno: EISDIR (a directory), ENODEV (a FIFO, socket or device),
 * EFBIG (larger than max, also when it grows while being read), else open/read's errno.
 * nj_file_strerror words these ("not a regular file"). out's old contents are replaced. */
#define NJ_FILE_MAX ((size_t)64 << 20) /* nj_read_file's cap: 64 MiB */
int nj_read_file(const char *path, nj_buf *out);
int nj_read_file_max(const char *path, nj_buf *out, size_t max);
/* The same for an open descriptor (it should have been opened O_NONBLOCK). */
int nj_read_fd(int fd, nj_buf *out, size_t max);
const char *nj_file_strerror(int e);
/* mkdir -p. @return 0 or -1 with errno set. */
int nj_mkdirs(const char *path, int mode);

/* ---- error recording ---- */
#define NJ_MSG_CAP 65536
#define NJ_PATH_CAP 4096

/* The context. Created and destroyed by src/context.c, which reads the options and the
 * environment into it, once; every subsystem reads its settings from here, never from the
 * environment. */
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

/* Record a status and a formatted message on ctx. ctx may be NULL: then nothing is recorded
 * (in particular not the thread's creation message). @return s. */
nvfp4jit_status nj_fail(nvfp4jit_ctx *ctx, nvfp4jit_status s, const char *fmt, ...)
    NJ_PRINTF(3, 4);
/* Record the message of a failed nvfp4jit_ctx_create, which nvfp4jit_last_error(NULL) returns
 * (per thread). @return s. */
nvfp4jit_status nj_fail_create(nvfp4jit_status s, const char *fmt, ...) NJ_PRINTF(2, 3);
/* The thread's creation message (nvfp4jit_last_error(NULL)). */
const char *nj_thread_create_msg(void);
/* Record a warning (also printed to stderr when ctx->verbose). */
void nj_warn(nvfp4jit_ctx *ctx, const char *fmt, ...) NJ_PRINTF(2, 3);
/* Clear the last message. Only public entry points call it (first, before anything can
 * fail); internals never do, so an inner call cannot clear its caller's message. */
void nj_clear(nvfp4jit_ctx *ctx);

#define NJ_RETURN_IF(ctx, cond, status, ...)                                                 \
    do {                                                                                     \
        if (cond) return nj_fail((ctx), (status), __VA_ARGS__);                             \
    } while (0)
#define NJ_FORWARD_IF_ERROR(expr)                                                            \
    do {                                                                                     \
        nvfp4jit_status nj_s_ = (expr);                                                      \
        if (nj_s_ != NVFP4JIT_OK) return nj_s_;                                              \
    } while (0)

/* XXH3-128 of a byte range as 32 lowercase hex chars + NUL. */
void nj_hash128_hex(const void *p, size_t n, char out[33]);
/* XXH3-64 of a byte range. */
uint64_t nj_hash64(const void *p, size_t n);

/* Monotonic wall clock in milliseconds. */
double nj_now_ms(void);

#endif
