/* common.c - buffers, files, hashing, error recording. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

void nj_buf_init(nj_buf *b) { b->data = NULL; b->len = b->cap = 0; }

void nj_buf_free(nj_buf *b) {
    if (!b) return;
    free(b->data);
    nj_buf_init(b);
}

static int buf_reserve(nj_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) return -1;
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int nj_buf_append(nj_buf *b, const void *p, size_t n) {
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int nj_buf_puts(nj_buf *b, const char *s) { return nj_buf_append(b, s, strlen(s)); }

int nj_buf_vprintf(nj_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || buf_reserve(b, (size_t)n)) return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int nj_buf_printf(nj_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = nj_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

int nj_buf_set(nj_buf *b, const void *p, size_t n) {
    size_t old = b->len;
    b->len = 0;
    if (nj_buf_append(b, p, n)) { b->len = old; return -1; }
    return 0;
}

int nj_read_fd(int fd, nj_buf *out, size_t max) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    if (S_ISDIR(st.st_mode)) { errno = EISDIR; return -1; }
    if (!S_ISREG(st.st_mode)) { errno = ENODEV; return -1; }
    if ((uint64_t)st.st_size > (uint64_t)max) { errno = EFBIG; return -1; }
    size_t old = out->len;
    out->len = 0;
    if (nj_buf_append(out, "", 0)) { out->len = old; errno = ENOMEM; return -1; }
    char tmp[65536];
    for (;;) {
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) return 0;
        /* it may grow after the fstat */
        if ((size_t)n > max - out->len) { errno = EFBIG; return -1; }
        if (nj_buf_append(out, tmp, (size_t)n)) { errno = ENOMEM; return -1; }
    }
}

int nj_read_file_max(const char *path, nj_buf *out, size_t max) {
    /* NOTE: open(2) of a FIFO blocks until a writer comes unless O_NONBLOCK is given; with it,
     * the open returns at once and the fstat refuses it before any read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = nj_read_fd(fd, out, max);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

int nj_read_file(const char *path, nj_buf *out) {
    return nj_read_file_max(path, out, NJ_FILE_MAX);
}

const char *nj_file_strerror(int e) {
    if (e == ENODEV) return "not a regular file";
    if (e == EISDIR) return "is a directory";
    if (e == EFBIG) return "larger than the size limit";
    return strerror(e);
}

int nj_mkdirs(const char *path, int mode) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) { errno = ENAMETOOLONG; return -1; }
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];
            tmp[i] = '\0';
            if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST) return -1;
            tmp[i] = c;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

void nj_hash128_hex(const void *p, size_t n, char out[33]) {
    XXH128_hash_t h = XXH3_128bits(p, n);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

uint64_t nj_hash64(const void *p, size_t n) { return (uint64_t)XXH3_64bits(p, n); }

double nj_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static _Thread_local char nj_create_msg[1024];

nvfp4jit_status nj_fail(nvfp4jit_ctx *ctx, nvfp4jit_status s, const char *fmt, ...) {
    if (!ctx || !ctx->msg) return s; /* no context: nothing is kept (not the thread's message) */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, NJ_MSG_CAP, fmt, ap);
    va_end(ap);
    return s;
}

nvfp4jit_status nj_fail_create(nvfp4jit_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nj_create_msg, sizeof nj_create_msg, fmt, ap);
    va_end(ap);
    return s;
}

void nj_warn(nvfp4jit_ctx *ctx, const char *fmt, ...) {
    if (!ctx || !ctx->warn) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->warn, NJ_MSG_CAP, fmt, ap);
    va_end(ap);
    if (ctx->verbose) fprintf(stderr, "nvfp4jit: warning: %s\n", ctx->warn);
}

void nj_clear(nvfp4jit_ctx *ctx) {
    if (ctx && ctx->msg) ctx->msg[0] = '\0';
}

const char *nj_thread_create_msg(void) { return nj_create_msg; }
