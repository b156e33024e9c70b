/* cache.c - content-addressed disk cache of compiled variants (see cache.h).
 *
 * Entry: <dir>/v1/<key[0:2]>/<key>/{source.cu,kernel.ptx,kernel.cubin,log.txt,manifest.txt}.
 * manifest.txt:
 *   format = 1
 *   key = <key>
 *   <the caller's manifest_extra lines, verbatim>
 *   file <name> <size> <xxh3-64 hex>      (one line per data file, the last lines)
 *
 * Publishing: all files go into <dir>/v1/tmp.XXXXXX (mkdtemp), the manifest last, and the
 * directory is renamed onto the entry path. A bad entry is first renamed to
 * <dir>/v1/trash.XXXXXX (so no reader ever sees it half deleted) and then removed.
 *
 * Every file inside an entry is read through a descriptor of the entry directory (openat), so
 * one verification always looks at one directory, even if another process renames it away or
 * publishes a replacement meanwhile. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define FORMAT_DIR "v" STR(NJ_CACHE_FORMAT)

#define MANIFEST "manifest.txt"
#define MANIFEST_MAX (1u << 20) /* a bigger manifest is not one of ours */
#define NFILES 4
static const char *const file_names[NFILES] = {"source.cu", "kernel.ptx", "kernel.cubin",
                                               "log.txt"};

static const nj_buf *entry_file(const cache_entry *e, int i) {
    switch (i) {
    case 0: return &e->source;
    case 1: return &e->ptx;
    case 2: return &e->cubin;
    default: return &e->log;
    }
}
static nj_buf *entry_file_mut(cache_entry *e, int i) {
    return (nj_buf *)entry_file(e, i);
}

void cache_entry_init(cache_entry *e) {
    nj_buf_init(&e->source);
    nj_buf_init(&e->ptx);
    nj_buf_init(&e->cubin);
    nj_buf_init(&e->log);
    nj_buf_init(&e->manifest_extra);
}

void cache_entry_free(cache_entry *e) {
    if (!e) return;
    nj_buf_free(&e->source);
    nj_buf_free(&e->ptx);
    nj_buf_free(&e->cubin);
    nj_buf_free(&e->log);
    nj_buf_free(&e->manifest_extra);
}

static void msg(char *out, size_t n, const char *fmt, ...) NJ_PRINTF(3, 4);
static void msg(char *out, size_t n, const char *fmt, ...) {
    if (!out || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

int cache_key_valid(const char *key) {
    if (!key) return 0;
    size_t i = 0;
    for (; key[i]; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return 0;
    return i == 32;
}

static int is_hex2(const char *s) {
    for (int i = 0; i < 2; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return s[2] == '\0';
}

void cache_entry_path(const char *dir, const char *key, char *out, size_t n) {
    if (!out || !n) return;
    snprintf(out, n, "%s/" FORMAT_DIR "/%.2s/%s", dir ? dir : "", key ? key : "",
             key ? key : "");
}

/* snprintf into a path buffer. @return 0, -1 if it does not fit (errno = ENAMETOOLONG). */
static int path_fmt(char *out, size_t n, const char *fmt, ...) NJ_PRINTF(3, 4);
static int path_fmt(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (r < 0 || (size_t)r >= n) { errno = ENAMETOOLONG; return -1; }
    return 0;
}

/* ---- small I/O helpers ---- */

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Create `name` in directory dfd (it must not exist) holding p[0:n]. @return 0 or -1/errno. */
static int write_file_at(int dfd, const char *name, const void *p, size_t n) {
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    int r = write_all(fd, p, n);
    int e = errno;
    if (close(fd) != 0 && r == 0) return -1;
    errno = e;
    return r;
}

/* Read all of fd into out (replacing its contents), at most max bytes; reading more than max
 * sets *over. @return 0 or -1/errno. */
static int read_fd(int fd, nj_buf *out, size_t max, int *over) {
    out->len = 0;
    if (nj_buf_append(out, "", 0)) { errno = ENOMEM; return -1; }
    *over = 0;
    char tmp[65536];
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) return 0;
        if (out->len + (size_t)r > max) { *over = 1; return 0; }
        if (nj_buf_append(out, tmp, (size_t)r)) { errno = ENOMEM; return -1; }
    }
}

/* An errno that says "this machine cannot do it now", not "the entry is bad". */
static int errno_is_local(int e) {
    return e == ENOMEM || e == EMFILE || e == ENFILE || e == EACCES || e == EPERM;
}

/* Remove name (relative to dfd, or a path with AT_FDCWD) and everything under it. Entries
 * that vanish meanwhile (another process removing the same trash) are fine.
 * @return 0 or -1/errno. */
static int rm_tree_at(int dfd, const char *name, int depth) {
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT) return 0;
    /* NOTE: unlink(2) of a directory fails with EISDIR on Linux, EPERM per POSIX. */
    if (errno != EISDIR && errno != EPERM) return -1;
    if (depth > 16) { errno = ELOOP; return -1; }
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(fd);
    if (!d) { int e = errno; close(fd); errno = e; return -1; }
    int rc = 0, err = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (rm_tree_at(dirfd(d), de->d_name, depth + 1) != 0 && !rc) { rc = -1; err = errno; }
    }
    closedir(d);
    if (unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && !rc) {
        rc = -1;
        err = errno;
    }
    if (rc) errno = err;
    return rc;
}

/* ---- directories, one component at a time ---- */

/* A fresh name prefix + 12 hex digits (mkdtemp's job, relative to a directory fd). */
static void scratch_name(char *out, size_t n, const char *prefix) {
    static unsigned long long counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long x = (unsigned long long)ts.tv_nsec ^ (unsigned long long)ts.tv_sec << 30 ^
                           (unsigned long long)getpid() << 40 ^
                           __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
    x ^= x >> 31; x *= 0x7fb5d329728ea185ull; x ^= x >> 27; x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    snprintf(out, n, "%s%012llx", prefix, x & 0xffffffffffffull);
}

/* Create a new directory prefix+random in dfd, mode 0700. @return 0 (name in out) or -1. */
static int mkdtemp_at(int dfd, const char *prefix, char *out, size_t n) {
    for (int i = 0; i < 100; i++) {
        scratch_name(out, n, prefix);
        if (mkdirat(dfd, out, 0700) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    return -1;
}

/* Open directory `name` of dfd without following a symlink (ELOOP or ENOTDIR when something
 * else is there); with create, make it (mode) when missing. @return fd or -1/errno. */
static int open_dir_at(int dfd, const char *name, int create, mode_t mode) {
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT || !create) return fd;
    if (mkdirat(dfd, name, mode) != 0 && errno != EEXIST) return -1;
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int not_a_dir(int e) { return e == ELOOP || e == ENOTDIR; }

/* The rule of trust_of (below) for a directory under the cache root, open as fd inside the
 * directory open as pfd: not writable by group or others without the sticky bit, and owned by
 * us, by root or by pfd's owner (who could replace it anyway). Checked on the open descriptors,
 * so what is checked is what is used. @return 1, or 0 with why ("<what> is ...") and errno
 * EPERM (or fstat's errno). */
static int below_trusted(int pfd, int fd, const char *what, char *why, size_t why_n) {
    struct stat pst, st;
    if (fstat(pfd, &pst) != 0 || fstat(fd, &st) != 0) {
        int e = errno;
        msg(why, why_n, "%s: fstat: %s", what, strerror(e));
        errno = e;
        return 0;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        msg(why, why_n, "%s is writable by other users (mode %04o, no sticky bit): not used "
            "(chmod go-w it)", what, (unsigned)(st.st_mode & 07777));
        errno = EPERM;
        return 0;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0 && st.st_uid != pst.st_uid) {
        msg(why, why_n, "%s belongs to another user (uid %u): not used", what,
            (unsigned)st.st_uid);
        errno = EPERM;
        return 0;
    }
    return 1;
}

/* ---- verification ---- */

static int parse_u64(const char *s, size_t n, uint64_t *v) {
    if (n == 0 || n > 20) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

static int parse_hex64(const char *s, size_t n, uint64_t *v) {
    if (n != 16) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d;
        if (s[i] >= '0' && s[i] <= '9') d = (unsigned)(s[i] - '0');
        else if (s[i] >= 'a' && s[i] <= 'f') d = (unsigned)(s[i] - 'a' + 10);
        else return -1;
        x = x << 4 | d;
    }
    *v = x;
    return 0;
}

typedef struct manifest_info {
    int listed[NFILES];
    uint64_t size[NFILES], hash[NFILES];
    size_t extra_off, extra_len; /* the caller's lines, within the manifest text */
} manifest_info;

/* Parse manifest text m (NUL-terminated, len n). @return 0, or 1 with why set. */
static int parse_manifest(const char *m, size_t n, const char *key, manifest_info *mi,
                          char *why, size_t why_n) {
    memset(mi, 0, sizeof *mi);
    if (memchr(m, '\0', n)) { msg(why, why_n, MANIFEST ": contains a NUL byte"); return 1; }
    if (n == 0) { msg(why, why_n, MANIFEST ": empty"); return 1; }
    if (m[n - 1] != '\n') { msg(why, why_n, MANIFEST ": last line is unterminated"); return 1; }
    const char *p = m, *end = m + n;
    int line = 0, in_files = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)(nl - p);
        line++;
        if (line == 1) {
            static const char fmt_pfx[] = "format = ";
            if (len < sizeof fmt_pfx - 1 || memcmp(p, fmt_pfx, sizeof fmt_pfx - 1)) {
                msg(why, why_n, MANIFEST ": line 1 is not \"format = %d\"", NJ_CACHE_FORMAT);
                return 1;
            }
            char want[16];
            snprintf(want, sizeof want, "%d", NJ_CACHE_FORMAT);
            const char *v = p + sizeof fmt_pfx - 1;
            size_t vl = len - (sizeof fmt_pfx - 1);
            if (vl != strlen(want) || memcmp(v, want, vl)) {
                msg(why, why_n, MANIFEST ": format %.*s, expected %s", (int)(vl > 32 ? 32 : vl),
                    v, want);
                return 1;
            }
        } else if (line == 2) {
            static const char key_pfx[] = "key = ";
            if (len < sizeof key_pfx - 1 || memcmp(p, key_pfx, sizeof key_pfx - 1)) {
                msg(why, why_n, MANIFEST ": line 2 is not \"key = ...\"");
                return 1;
            }
            const char *v = p + sizeof key_pfx - 1;
            size_t vl = len - (sizeof key_pfx - 1);
            if (vl != strlen(key) || memcmp(v, key, vl)) {
                msg(why, why_n, MANIFEST ": key %.*s, expected %s", (int)(vl > 64 ? 64 : vl), v,
                    key);
                return 1;
            }
            mi->extra_off = (size_t)(nl + 1 - m);
        } else if (len >= 5 && !memcmp(p, "file ", 5)) {
            if (!in_files) mi->extra_len = (size_t)(p - m) - mi->extra_off;
            in_files = 1;
            /* file <name> <size> <hex> */
            const char *f = p + 5, *le = nl;
            const char *s1 = memchr(f, ' ', (size_t)(le - f));
            const char *s2 = s1 ? memchr(s1 + 1, ' ', (size_t)(le - s1 - 1)) : NULL;
            uint64_t sz, h;
            if (!s2 || parse_u64(s1 + 1, (size_t)(s2 - s1 - 1), &sz) ||
                parse_hex64(s2 + 1, (size_t)(le - s2 - 1), &h)) {
                msg(why, why_n, MANIFEST ": line %d: malformed file line", line);
                return 1;
            }
            int idx = -1;
            for (int i = 0; i < NFILES; i++)
                if ((size_t)(s1 - f) == strlen(file_names[i]) &&
                    !memcmp(f, file_names[i], (size_t)(s1 - f)))
                    idx = i;
            if (idx < 0) {
                msg(why, why_n, MANIFEST ": line %d: unknown file \"%.*s\"", line,
                    (int)((s1 - f) > 64 ? 64 : (s1 - f)), f);
                return 1;
            }
            if (mi->listed[idx]) {
                msg(why, why_n, MANIFEST ": line %d: %s listed twice", line, file_names[idx]);
                return 1;
            }
            mi->listed[idx] = 1;
            mi->size[idx] = sz;
            mi->hash[idx] = h;
        } else if (in_files) {
            msg(why, why_n, MANIFEST ": line %d: not a file line after the file lines", line);
            return 1;
        }
        p = nl + 1;
    }
    if (line < 2) { msg(why, why_n, MANIFEST ": no key line"); return 1; }
    if (!in_files) mi->extra_len = n - mi->extra_off;
    for (int i = 0; i < NFILES; i++)
        if (!mi->listed[i]) {
            msg(why, why_n, MANIFEST ": no file line for %s", file_names[i]);
            return 1;
        }
    return 0;
}

#define CUBIN_INDEX 2 /* file_names[2] */

/* The SM number of a "key.arch = sm_NN[a]" line among the caller's manifest lines (what
 * nvfp4jit_compile writes), or 0 when there is none. */
static int manifest_sm(const char *m, size_t n) {
    static const char pfx[] = "key.arch = sm_";
    const char *end = m + n;
    for (const char *p = m; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len > sizeof pfx - 1 && !memcmp(p, pfx, sizeof pfx - 1)) {
            int sm = 0;
            for (size_t i = sizeof pfx - 1; i < len && p[i] >= '0' && p[i] <= '9' && sm < 1000; i++)
                sm = sm * 10 + (p[i] - '0');
            return sm;
        }
        if (!nl) break;
        p = nl + 1;
    }
    return 0;
}

/* A cubin must be a CUDA ELF (ELF64, little endian, EM_CUDA) and, when the entry says its
 * arch, one for that SM: a planted entry with matching checksums is not a hit. NOTE: CUDA ELF
 * ABI version 8 (nvJitLink of CUDA 13: e_flags 0x0a005a04 for sm_90a, 0x0a006402 for
 * sm_100a) keeps the SM in bits 8-15 of e_flags; older ABI versions in bits 0-7.
 * @return 1, or 0 with why. */
static int cubin_ok(const nj_buf *c, int want_sm, char *why, size_t why_n) {
    const unsigned char *b = (const unsigned char *)c->data;
    if (c->len < 64 || memcmp(b, "\x7f" "ELF", 4) || b[4] != 2 /* ELFCLASS64 */ ||
        b[5] != 1 /* ELFDATA2LSB */ || (b[18] | b[19] << 8) != 190 /* EM_CUDA */) {
        msg(why, why_n, "kernel.cubin: not a CUDA ELF (64-bit, EM_CUDA)");
        return 0;
    }
    uint32_t flags = (uint32_t)b[48] | (uint32_t)b[49] << 8 | (uint32_t)b[50] << 16 |
                     (uint32_t)b[51] << 24;
    int sm = b[8] >= 8 ? (int)(flags >> 8 & 0xff) : (int)(flags & 0xff);
    if (want_sm && sm != want_sm) {
        msg(why, why_n, "kernel.cubin: an ELF for sm_%d, the entry is for sm_%d", sm, want_sm);
        return 0;
    }
    return 1;
}

/* Verify the entry directory open as dfd. With out != NULL, fill it on success (out's old
 * contents are freed). @return CACHE_HIT, CACHE_CORRUPT (why says what) or CACHE_ERROR. */
/* A file of an entry (open as fd's stat st, in the entry directory dfd): the directory's rule
 * stops others replacing it, this one changing it in place (checksums and all): not writable by
 * group or others, owned by us, by root or by the directory's owner. @return 1, or 0 with why. */
static int file_trusted(int dfd, const struct stat *st, const char *name, char *why,
                        size_t why_n) {
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        msg(why, why_n, "%s is writable by other users (mode %04o): not used", name,
            (unsigned)(st->st_mode & 07777));
        return 0;
    }
    struct stat dst;
    if (st->st_uid != geteuid() && st->st_uid != 0 &&
        (fstat(dfd, &dst) != 0 || st->st_uid != dst.st_uid)) {
        msg(why, why_n, "%s belongs to another user (uid %u): not used", name,
            (unsigned)st->st_uid);
        return 0;
    }
    return 1;
}

static cache_result verify_dir(int dfd, const char *key, cache_entry *out, char *why,
                               size_t why_n) {
    cache_result res = CACHE_CORRUPT;
    cache_entry tmp;
    cache_entry_init(&tmp);
    nj_buf data;
    nj_buf_init(&data);
    manifest_info mi;
    int over = 0;

    /* NOTE: without O_NONBLOCK, open(2) of a FIFO planted here blocks until a writer comes */
    int fd = openat(dfd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        res = errno_is_local(errno) ? CACHE_ERROR : CACHE_CORRUPT;
        msg(why, why_n, MANIFEST ": %s", errno == ENOENT ? "missing" : strerror(errno));
        goto done;
    }
    struct stat mst;
    if (fstat(fd, &mst) != 0 || !S_ISREG(mst.st_mode)) {
        close(fd);
        msg(why, why_n, MANIFEST ": not a regular file");
        goto done;
    }
    if (!file_trusted(dfd, &mst, MANIFEST, why, why_n)) {
        close(fd);
        goto done;
    }
    int r = read_fd(fd, &data, MANIFEST_MAX, &over);
    int e = errno;
    close(fd);
    if (r) {
        res = errno_is_local(e) ? CACHE_ERROR : CACHE_CORRUPT;
        msg(why, why_n, MANIFEST ": %s", strerror(e));
        goto done;
    }
    if (over) { msg(why, why_n, MANIFEST ": larger than %u bytes", MANIFEST_MAX); goto done; }
    if (parse_manifest(data.data, data.len, key, &mi, why, why_n)) goto done;
    int want_sm = manifest_sm(data.data + mi.extra_off, mi.extra_len);
    if (out && nj_buf_set(&tmp.manifest_extra, data.data + mi.extra_off, mi.extra_len)) {
        res = CACHE_ERROR;
        msg(why, why_n, "out of memory");
        goto done;
    }

    for (int i = 0; i < NFILES; i++) {
        const char *name = file_names[i];
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            res = errno_is_local(errno) ? CACHE_ERROR : CACHE_CORRUPT;
            msg(why, why_n, "%s: %s", name, errno == ENOENT ? "missing" : strerror(errno));
            goto done;
        }
        struct stat st;
        if (fstat(fd, &st) != 0) {
            e = errno;
            close(fd);
            res = CACHE_ERROR;
            msg(why, why_n, "%s: fstat: %s", name, strerror(e));
            goto done;
        }
        if (!S_ISREG(st.st_mode)) {
            close(fd);
            msg(why, why_n, "%s: not a regular file", name);
            goto done;
        }
        if (!file_trusted(dfd, &st, name, why, why_n)) {
            close(fd);
            goto done;
        }
        if ((uint64_t)st.st_size != mi.size[i]) {
            close(fd);
            msg(why, why_n, "%s: size %lld, manifest says %" PRIu64, name,
                (long long)st.st_size, mi.size[i]);
            goto done;
        }
        /* before a byte is read: a sparse file the manifest agrees with is no excuse */
        if (mi.size[i] > NJ_CACHE_FILE_MAX) {
            close(fd);
            msg(why, why_n, "%s: %" PRIu64 " bytes, more than the limit of %llu", name,
                mi.size[i], NJ_CACHE_FILE_MAX);
            goto done;
        }
        nj_buf *dst = out ? entry_file_mut(&tmp, i) : &data;
        r = read_fd(fd, dst, (size_t)mi.size[i], &over);
        e = errno;
        close(fd);
        if (r) {
            res = errno_is_local(e) ? CACHE_ERROR : CACHE_CORRUPT;
            msg(why, why_n, "%s: read: %s", name, strerror(e));
            goto done;
        }
        if (over || dst->len != mi.size[i]) {
            /* changed size while we read it: nothing of ours writes into a published entry */
            msg(why, why_n, "%s: size changed while reading", name);
            goto done;
        }
        uint64_t h = nj_hash64(dst->data, dst->len);
        if (h != mi.hash[i]) {
            msg(why, why_n, "%s: checksum %016" PRIx64 ", manifest says %016" PRIx64, name, h,
                mi.hash[i]);
            goto done;
        }
        if (i == CUBIN_INDEX && !cubin_ok(dst, want_sm, why, why_n)) goto done;
    }
    res = CACHE_HIT;
    if (why && why_n) why[0] = '\0';
    if (out) {
        cache_entry_free(out);
        *out = tmp;
        cache_entry_init(&tmp);
    }
done:
    cache_entry_free(&tmp);
    nj_buf_free(&data);
    return res;
}

/* Open directory `name` of pfd and verify it as the entry of `key`. *st gets what was found there
 * (st_mode 0 if nothing). @return CACHE_HIT / CACHE_MISS / CACHE_CORRUPT / CACHE_ERROR. */
static cache_result check_at(int pfd, const char *name, const char *key, cache_entry *out,
                             struct stat *st, char *why, size_t why_n) {
    memset(st, 0, sizeof *st);
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            if (why && why_n) why[0] = '\0';
            return CACHE_MISS;
        }
        if (not_a_dir(e) && fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 &&
            !S_ISDIR(st->st_mode)) {
            msg(why, why_n, "entry is not a directory%s",
                S_ISLNK(st->st_mode) ? " (a symbolic link)" : "");
            return CACHE_CORRUPT;
        }
        msg(why, why_n, "entry %s: %s", name, strerror(e));
        return CACHE_ERROR;
    }
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        msg(why, why_n, "entry %s: fstat: %s", name, strerror(e));
        return CACHE_ERROR;
    }
    if (!below_trusted(pfd, fd, "entry directory", why, why_n)) {
        int e = errno;
        close(fd);
        return e == EPERM ? CACHE_CORRUPT : CACHE_ERROR;
    }
    cache_result r = verify_dir(fd, key, out, why, why_n);
    close(fd);
    return r;
}

static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Move entry `key` of pfd aside (into v1fd's trash.*) and delete it. With seen != NULL, only
 * the object that was verified (same device and inode) is removed: if another process has
 * replaced it by a new entry meanwhile, that one is left alone (or put back, if our rename
 * took it and it verifies). @return 0 (gone, by us or someone else), 1 (it now holds a
 * different entry that was left there), -1 on error (errno). */
static int discard_at(int v1fd, int pfd, const char *key, const struct stat *seen) {
    struct stat now;
    if (fstatat(pfd, key, &now, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -1;
    if (seen && !same_file(seen, &now)) return 1;
    if (!S_ISDIR(now.st_mode)) {
        /* NOTE: unlink(2) is atomic, and of a symlink removes the link, not its target */
        if (unlinkat(pfd, key, 0) != 0 && errno != ENOENT) return -1;
        return 0;
    }
    char trash[64];
    if (mkdtemp_at(v1fd, "trash.", trash, sizeof trash)) return -1;
    /* NOTE: rename(2) of a directory onto an existing empty directory replaces it atomically
     * (POSIX); within one filesystem readers see the entry at its old name or not at all. */
    if (renameat(pfd, key, v1fd, trash) != 0) {
        int e = errno;
        unlinkat(v1fd, trash, AT_REMOVEDIR);
        if (e == ENOENT) return 0; /* another process moved it aside first: fine */
        errno = e;
        return -1;
    }
    struct stat moved;
    int put_back = 0;
    if (seen && fstatat(v1fd, trash, &moved, AT_SYMLINK_NOFOLLOW) == 0 &&
        !same_file(seen, &moved)) {
        /* Between our fstatat and renameat another process replaced the bad entry by a new
         * one, and we took that. Put it back if it is good (fails harmlessly if a third
         * process has published yet another entry meanwhile). */
        struct stat st2;
        if (check_at(v1fd, trash, key, NULL, &st2, NULL, 0) == CACHE_HIT &&
            renameat(v1fd, trash, pfd, key) == 0)
            put_back = 1;
    }
    if (!put_back && rm_tree_at(v1fd, trash, 0) != 0) return -1;
    return put_back ? 1 : 0;
}

/* ---- the cache directory: who may write it ---- */

static cache_trust trust_of(const struct stat *st, const char *dir, char *why, size_t why_n) {
    if (!S_ISDIR(st->st_mode)) {
        msg(why, why_n, "%s is not a directory: the disk cache is not used", dir);
        return CACHE_UNTRUSTED;
    }
    /* NOTE: in a sticky directory (mode +t, like /tmp) only a file's owner can rename or
     * remove it, so others writing there cannot replace our entries. */
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
        msg(why, why_n, "%s is writable by other users (mode %04o, no sticky bit): the disk "
            "cache is not used (chmod go-w it, or choose another NVFP4JIT_CACHE_DIR)", dir,
            (unsigned)(st->st_mode & 07777));
        return CACHE_UNTRUSTED;
    }
    if (st->st_uid != geteuid()) {
        msg(why, why_n, "%s belongs to another user (uid %u): the disk cache is used read-only",
            dir, (unsigned)st->st_uid);
        return CACHE_READ_ONLY;
    }
    if (why && why_n) why[0] = '\0';
    return CACHE_TRUSTED;
}

cache_trust cache_check_dir(const char *dir, char *why, size_t why_n) {
    struct stat st;
    if (why && why_n) why[0] = '\0';
    if (!dir || !*dir) {
        msg(why, why_n, "no cache directory");
        return CACHE_UNTRUSTED;
    }
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) return CACHE_TRUSTED; /* made 0700 by the first store */
        msg(why, why_n, "%s: %s: the disk cache is not used", dir, strerror(errno));
        return CACHE_UNTRUSTED;
    }
    cache_trust t = trust_of(&st, dir, why, why_n);
    if (t == CACHE_UNTRUSTED) return t;
    /* v1 by the same rule, when it is there (what else is wrong with it, lookups report) */
    int rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0) return t;
    int v1 = open_dir_at(rfd, FORMAT_DIR, 0, 0);
    if (v1 >= 0) {
        char what[4200], w[4400];
        snprintf(what, sizeof what, "%s/" FORMAT_DIR, dir);
        if (!below_trusted(rfd, v1, what, w, sizeof w)) {
            msg(why, why_n, "%s", w);
            t = CACHE_UNTRUSTED;
        }
        close(v1);
    }
    close(rfd);
    return t;
}

enum { OPEN_INSPECT, OPEN_READ, OPEN_WRITE, OPEN_CLEAR };

/* Open <dir>/v1 for `how`: OPEN_INSPECT (foreach: it only reports) takes any directory,
 * OPEN_READ needs one others cannot write (another owner is fine), OPEN_WRITE and OPEN_CLEAR need our own (OPEN_WRITE creates what is missing: dir and
 * its parents 0700, v1 0755). The root itself may be a symlink (the user named it); v1 may
 * not. @return the v1 fd, or -1 with errno and why (ENOENT: there is no cache yet). */
static int open_v1(const char *dir, int how, char *why, size_t why_n) {
    int rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0 && errno == ENOENT && how == OPEN_WRITE) {
        if (nj_mkdirs(dir, 0700) != 0) {
            int e = errno;
            msg(why, why_n, "cannot create %s: %s", dir, strerror(e));
            errno = e;
            return -1;
        }
        rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (rfd < 0) {
        int e = errno;
        msg(why, why_n, "%s: %s", dir, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(rfd, &st) != 0) {
        int e = errno;
        close(rfd);
        msg(why, why_n, "%s: fstat: %s", dir, strerror(e));
        errno = e;
        return -1;
    }
    cache_trust t = trust_of(&st, dir, why, why_n);
    if ((t == CACHE_UNTRUSTED && (how != OPEN_INSPECT || !S_ISDIR(st.st_mode))) ||
        (how >= OPEN_WRITE && t != CACHE_TRUSTED)) {
        close(rfd);
        errno = EPERM;
        return -1;
    }
    int v1 = open_dir_at(rfd, FORMAT_DIR, how == OPEN_WRITE, 0755);
    int e = errno;
    if (v1 >= 0 && how != OPEN_INSPECT) { /* foreach reads it anyway, as it does dir */
        char what[4200];
        snprintf(what, sizeof what, "%s/" FORMAT_DIR, dir);
        if (!below_trusted(rfd, v1, what, why, why_n)) {
            e = errno;
            close(v1);
            close(rfd);
            errno = e;
            return -1;
        }
    }
    close(rfd);
    if (v1 < 0) {
        if (not_a_dir(e))
            msg(why, why_n, "%s/" FORMAT_DIR " is not a directory (a symbolic link?): remove it",
                dir);
        else
            msg(why, why_n, "%s/" FORMAT_DIR ": %s", dir, strerror(e));
        errno = e;
    }
    return v1;
}

/* Check the prefix directory pfd (name pfx) of v1 by below_trusted. @return 1, or 0 with why
 * naming it. */
static int prefix_trusted(int v1, int pfd, const char *dir, const char *pfx, char *why,
                          size_t why_n) {
    char what[4200];
    snprintf(what, sizeof what, "%s/" FORMAT_DIR "/%s", dir, pfx);
    return below_trusted(v1, pfd, what, why, why_n);
}

/* ---- public ---- */

cache_result cache_lookup(const char *dir, const char *key, cache_entry *e, char *why,
                          size_t why_n) {
    if (why && why_n) why[0] = '\0';
    if (!dir || !*dir) { msg(why, why_n, "no cache directory"); return CACHE_ERROR; }
    if (!cache_key_valid(key)) {
        msg(why, why_n, "invalid cache key (want 32 lowercase hex digits)");
        return CACHE_ERROR;
    }
    int v1 = open_v1(dir, OPEN_READ, why, why_n);
    if (v1 < 0) {
        if (errno != ENOENT) return CACHE_ERROR;
        if (why && why_n) why[0] = '\0';
        return CACHE_MISS; /* no cache yet */
    }
    char pfx[3] = {key[0], key[1], '\0'};
    int pfd = open_dir_at(v1, pfx, 0, 0);
    if (pfd < 0) {
        int e2 = errno;
        cache_result r = CACHE_MISS;
        if (not_a_dir(e2)) {
            /* a symlink or file planted as the prefix directory: never followed, removed so
             * that the store after this miss makes a real one */
            msg(why, why_n, "prefix directory " FORMAT_DIR "/%s is not a directory (a symbolic "
                "link?)", pfx);
            if (unlinkat(v1, pfx, 0) != 0 && errno != ENOENT) {
                size_t l = why ? strlen(why) : 0;
                if (why && l < why_n)
                    msg(why + l, why_n - l, " (and it could not be removed: %s)",
                        strerror(errno));
            }
            r = CACHE_CORRUPT;
        } else if (e2 != ENOENT) {
            msg(why, why_n, "%s/" FORMAT_DIR "/%s: %s", dir, pfx, strerror(e2));
            r = CACHE_ERROR;
        }
        close(v1);
        return r;
    }
    if (!prefix_trusted(v1, pfd, dir, pfx, why, why_n)) {
        close(pfd);
        close(v1);
        return CACHE_ERROR;
    }
    struct stat st;
    cache_result r = check_at(pfd, key, key, e, &st, why, why_n);
    /* Several processes may find the same bad entry: one rename wins, the others see ENOENT
     * (or a fresh replacement, which discard_at leaves alone). All report CORRUPT and
     * rebuild; their stores then find the published entry good. */
    if (r == CACHE_CORRUPT && discard_at(v1, pfd, key, &st) < 0) {
        size_t l = why ? strlen(why) : 0;
        if (why && l < why_n)
            msg(why + l, why_n - l, " (and it could not be removed: %s)", strerror(errno));
    }
    close(pfd);
    close(v1);
    return r;
}

int cache_store(const char *dir, const char *key, const cache_entry *e, char *err,
                size_t err_n) {
    if (err && err_n) err[0] = '\0';
    if (!dir || !*dir) { msg(err, err_n, "no cache directory"); return -1; }
    if (!cache_key_valid(key)) {
        msg(err, err_n, "invalid cache key (want 32 lowercase hex digits)");
        return -1;
    }
    const nj_buf *x = &e->manifest_extra;
    if (x->len && memchr(x->data, '\0', x->len)) {
        msg(err, err_n, "manifest_extra contains a NUL byte");
        return -1;
    }
    for (const char *p = x->len ? x->data : ""; *p;) {
        if (!strncmp(p, "file ", 5)) {
            msg(err, err_n, "manifest_extra has a line starting with \"file \" (reserved)");
            return -1;
        }
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    for (int i = 0; i < NFILES; i++)
        if ((unsigned long long)entry_file(e, i)->len > NJ_CACHE_FILE_MAX) {
            msg(err, err_n, "%s is %zu bytes, more than the limit of %llu a cache entry may hold",
                file_names[i], entry_file(e, i)->len, NJ_CACHE_FILE_MAX);
            return -1;
        }
    char path[4096];
    if (path_fmt(path, sizeof path, "%s/" FORMAT_DIR "/%.2s/%s", dir, key, key)) {
        msg(err, err_n, "cache path too long");
        return -1;
    }

    /* manifest text */
    nj_buf man;
    nj_buf_init(&man);
    int oom = nj_buf_printf(&man, "format = %d\nkey = %s\n", NJ_CACHE_FORMAT, key);
    if (x->len) {
        oom |= nj_buf_append(&man, x->data, x->len);
        if (x->data[x->len - 1] != '\n') oom |= nj_buf_puts(&man, "\n");
    }
    for (int i = 0; i < NFILES; i++) {
        const nj_buf *b = entry_file(e, i);
        oom |= nj_buf_printf(&man, "file %s %zu %016" PRIx64 "\n", file_names[i], b->len,
                             nj_hash64(b->len ? b->data : "", b->len));
    }
    if (oom) {
        nj_buf_free(&man);
        msg(err, err_n, "out of memory");
        return -1;
    }

    char pfx[3] = {key[0], key[1], '\0'}, tmp[64] = "";
    int rc = -1, pfd = -1;
    int v1 = open_v1(dir, OPEN_WRITE, err, err_n);
    if (v1 < 0) goto out;
    pfd = open_dir_at(v1, pfx, 1, 0755);
    if (pfd < 0 && not_a_dir(errno)) {
        /* a symlink or file planted as the prefix directory: remove the link, never follow */
        if (unlinkat(v1, pfx, 0) == 0 || errno == ENOENT) pfd = open_dir_at(v1, pfx, 1, 0755);
    }
    if (pfd < 0) {
        msg(err, err_n, "cannot create %s/" FORMAT_DIR "/%s: %s", dir, pfx, strerror(errno));
        goto out;
    }
    if (!prefix_trusted(v1, pfd, dir, pfx, err, err_n)) goto out;
    /* NOTE: the temporary is made 0700 and chmod'ed to 0755 so that a cache directory shared
     * read-only works like one made by mkdir under umask 022. */
    if (mkdtemp_at(v1, "tmp.", tmp, sizeof tmp)) {
        msg(err, err_n, "mkdtemp in %s/" FORMAT_DIR ": %s", dir, strerror(errno));
        tmp[0] = '\0';
        goto out;
    }
    int tfd = open_dir_at(v1, tmp, 0, 0);
    if (tfd < 0) {
        msg(err, err_n, "%s/" FORMAT_DIR "/%s: %s", dir, tmp, strerror(errno));
        goto out;
    }
    (void)fchmod(tfd, 0755);
    for (int i = 0; i < NFILES; i++) {
        const nj_buf *b = entry_file(e, i);
        if (write_file_at(tfd, file_names[i], b->len ? b->data : "", b->len) != 0) {
            msg(err, err_n, "writing %s/" FORMAT_DIR "/%s/%s: %s", dir, tmp, file_names[i],
                strerror(errno));
            close(tfd);
            goto out;
        }
    }
    /* the manifest last: a directory with a complete manifest has all its files */
    if (write_file_at(tfd, MANIFEST, man.data, man.len) != 0) {
        msg(err, err_n, "writing %s/" FORMAT_DIR "/%s/" MANIFEST ": %s", dir, tmp,
            strerror(errno));
        close(tfd);
        goto out;
    }
    close(tfd);

    /* Publish. Bounded: each round either publishes, accepts a good existing entry, or
     * removes a bad one / recreates a vanished prefix dir (cache_clear) and tries again. */
    for (int attempt = 0; attempt < 4; attempt++) {
        /* NOTE: rename(2) of a directory is atomic within one filesystem (tmp and the entry
         * are both under v1), and fails with EEXIST or ENOTEMPTY (POSIX allows either; Linux
         * says ENOTEMPTY) if the target is a non-empty directory, ENOTDIR if it is a file. */
        if (renameat(v1, tmp, pfd, key) == 0) {
            tmp[0] = '\0'; /* published: nothing to clean up */
            rc = 0;
            goto out;
        }
        int re = errno;
        if (re == ENOENT) { /* the prefix dir was removed under us (cache_clear) */
            close(pfd);
            pfd = open_dir_at(v1, pfx, 1, 0755);
            if (pfd < 0) {
                msg(err, err_n, "cannot create %s/" FORMAT_DIR "/%s: %s", dir, pfx,
                    strerror(errno));
                goto out;
            }
            if (!prefix_trusted(v1, pfd, dir, pfx, err, err_n)) goto out;
            continue;
        }
        if (re != EEXIST && re != ENOTEMPTY && re != ENOTDIR) {
            msg(err, err_n, "rename %s/" FORMAT_DIR "/%s -> %s: %s", dir, tmp, path,
                strerror(re));
            goto out;
        }
        /* another process won (or a bad entry is in the way) */
        char why[512];
        struct stat st;
        cache_result cr = check_at(pfd, key, key, NULL, &st, why, sizeof why);
        if (cr == CACHE_HIT) { rc = 0; goto out; }
        if (cr == CACHE_MISS) continue; /* moved aside meanwhile: try again */
        if (cr == CACHE_ERROR) {
            msg(err, err_n, "existing entry %s: %s", path, why);
            goto out;
        }
        if (discard_at(v1, pfd, key, &st) < 0) {
            msg(err, err_n, "existing entry %s is bad (%s) and cannot be removed: %s", path, why,
                strerror(errno));
            goto out;
        }
    }
    msg(err, err_n, "cannot publish %s: the entry kept changing", path);
out:
    if (tmp[0]) (void)rm_tree_at(v1, tmp, 0); /* on every path that did not publish it */
    if (pfd >= 0) close(pfd);
    if (v1 >= 0) close(v1);
    nj_buf_free(&man);
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in directory dfd accepted by keep(name, arg). @return count, -1 on error
 * (errno). */
static int list_dir_at(int dfd, int (*keep)(const char *, const char *), const char *arg,
                       char ***names) {
    *names = NULL;
    /* a new open file description: readdir must not move dfd's own offset */
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    size_t n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        if (!keep(de->d_name, arg)) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nv = realloc(v, nc * sizeof *nv);
            if (!nv) { rc = -1; break; }
            v = nv;
            cap = nc;
        }
        if (!(v[n] = strdup(de->d_name))) { rc = -1; break; }
        n++;
    }
    closedir(d);
    if (rc) {
        for (size_t i = 0; i < n; i++) free(v[i]);
        free(v);
        errno = ENOMEM;
        return -1;
    }
    if (n) qsort(v, n, sizeof *v, cmp_str);
    *names = v;
    return (int)n;
}

static void free_names(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static int keep_prefix(const char *name, const char *arg) {
    (void)arg;
    return is_hex2(name);
}
static int keep_key(const char *name, const char *pfx) {
    return cache_key_valid(name) && name[0] == pfx[0] && name[1] == pfx[1];
}
static int keep_scratch(const char *name, const char *arg) {
    (void)arg;
    return !strncmp(name, "tmp.", 4) || !strncmp(name, "trash.", 6);
}

int cache_foreach(const char *dir, cache_visit_fn cb, void *user) {
    if (!dir || !*dir) { errno = EINVAL; return -1; }
    char why0[512];
    int v1 = open_v1(dir, OPEN_INSPECT, why0, sizeof why0);
    if (v1 < 0) return errno == ENOENT ? 0 : -1;
    /* an untrusted top directory or v1 is still listed (foreach only reports), but none of
     * its entries counts as good (a read-only cache of another user's is fine) */
    char v1_distrust[4400] = "", what[4200];
    if (cache_check_dir(dir, v1_distrust, sizeof v1_distrust) != CACHE_UNTRUSTED)
        v1_distrust[0] = '\0';
    int rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(what, sizeof what, "%s/" FORMAT_DIR, dir);
    if (rfd >= 0 && !v1_distrust[0] &&
        !below_trusted(rfd, v1, what, v1_distrust, sizeof v1_distrust) && !v1_distrust[0])
        snprintf(v1_distrust, sizeof v1_distrust, "%s not trusted", what);
    if (rfd >= 0) close(rfd);
    char **pfx;
    int np = list_dir_at(v1, keep_prefix, NULL, &pfx);
    if (np < 0) {
        int e = errno;
        close(v1);
        errno = e;
        return -1;
    }
    int count = 0;
    for (int i = 0; i < np; i++) {
        char pdir[4096];
        if (path_fmt(pdir, sizeof pdir, "%s/" FORMAT_DIR "/%s", dir, pfx[i])) continue;
        int pfd = open_dir_at(v1, pfx[i], 0, 0);
        if (pfd < 0) {
            if (errno == ENOENT) continue; /* removed since we listed it */
            count++;
            if (cb)
                cb(pfx[i], pdir, 0, not_a_dir(errno) ? "prefix directory is not a directory "
                                                       "(a symbolic link?)" : strerror(errno),
                   user);
            continue;
        }
        /* likewise an untrusted prefix directory */
        char distrust[4400];
        snprintf(distrust, sizeof distrust, "%s", v1_distrust);
        if (!distrust[0]) (void)prefix_trusted(v1, pfd, dir, pfx[i], distrust, sizeof distrust);
        char **keys;
        int nk = list_dir_at(pfd, keep_key, pfx[i], &keys);
        if (nk < 0) {
            int e = errno;
            close(pfd);
            close(v1);
            free_names(pfx, np);
            errno = e;
            return -1;
        }
        for (int k = 0; k < nk; k++) {
            char path[4096], why[4400] = "";
            struct stat st;
            if (path_fmt(path, sizeof path, "%s/%s", pdir, keys[k])) continue;
            cache_result r = check_at(pfd, keys[k], keys[k], NULL, &st, why, sizeof why);
            if (r == CACHE_MISS) continue; /* removed since we listed it */
            count++;
            if (r == CACHE_HIT && distrust[0]) {
                r = CACHE_CORRUPT;
                snprintf(why, sizeof why, "%s", distrust);
            }
            if (cb) cb(keys[k], path, r == CACHE_HIT, r == CACHE_HIT ? "" : why, user);
        }
        free_names(keys, nk);
        close(pfd);
    }
    free_names(pfx, np);
    close(v1);
    return count;
}

int cache_read_manifest(const char *dir, const char *key, char *out, size_t n) {
    if (out && n) out[0] = '\0';
    if (!dir || !*dir || !cache_key_valid(key) || !out || !n) { errno = EINVAL; return -1; }
    int v1 = open_v1(dir, OPEN_INSPECT, NULL, 0);
    if (v1 < 0) return -1;
    char pfx[3] = {key[0], key[1], '\0'};
    int pfd = open_dir_at(v1, pfx, 0, 0), e = errno;
    close(v1);
    if (pfd < 0) { errno = e; return -1; }
    int efd = open_dir_at(pfd, key, 0, 0);
    e = errno;
    close(pfd);
    if (efd < 0) { errno = e; return -1; }
    /* NOTE: O_NONBLOCK: a FIFO planted as the manifest must not block the open */
    int fd = openat(efd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    e = errno;
    close(efd);
    if (fd < 0) { errno = e; return -1; }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    nj_buf m;
    nj_buf_init(&m);
    int over = 0, r = read_fd(fd, &m, MANIFEST_MAX, &over);
    e = errno;
    close(fd);
    if (r || over) {
        nj_buf_free(&m);
        errno = r ? e : EFBIG;
        return -1;
    }
    size_t len = m.len < n - 1 ? m.len : n - 1;
    memcpy(out, m.data, len);
    out[len] = '\0';
    nj_buf_free(&m);
    return (int)len;
}

int cache_clear(const char *dir, char *err, size_t err_n) {
    if (err && err_n) err[0] = '\0';
    if (!dir || !*dir) { msg(err, err_n, "no cache directory"); return -1; }
    int v1 = open_v1(dir, OPEN_CLEAR, err, err_n);
    if (v1 < 0) {
        if (errno != ENOENT) return -1;
        if (err && err_n) err[0] = '\0';
        return 0;
    }
    int count = 0, failed = 0;
    char **pfx;
    int np = list_dir_at(v1, keep_prefix, NULL, &pfx);
    if (np < 0) {
        msg(err, err_n, "%s/" FORMAT_DIR ": %s", dir, strerror(errno));
        close(v1);
        return -1;
    }
    for (int i = 0; i < np; i++) {
        int pfd = open_dir_at(v1, pfx[i], 0, 0);
        if (pfd < 0) {
            int e = errno;
            if (e == ENOENT) continue; /* removed since we listed it */
            if (!not_a_dir(e)) { /* EACCES...: its entries stay, so clear did not succeed */
                if (!failed) msg(err, err_n, "%s/" FORMAT_DIR "/%s: %s", dir, pfx[i], strerror(e));
                failed = 1;
                continue;
            }
            /* a symlink (or file) planted as a prefix dir: remove the link only */
            if (unlinkat(v1, pfx[i], 0) != 0 && errno != ENOENT && !failed) {
                msg(err, err_n, "removing %s/" FORMAT_DIR "/%s: %s", dir, pfx[i],
                    strerror(errno));
                failed = 1;
            }
            continue;
        }
        char why[4400];
        if (!prefix_trusted(v1, pfd, dir, pfx[i], why, sizeof why)) { /* left as it is */
            if (!failed) msg(err, err_n, "%s", why);
            failed = 1;
            close(pfd);
            continue;
        }
        char **keys;
        int nk = list_dir_at(pfd, keep_key, pfx[i], &keys);
        if (nk < 0) {
            if (!failed) msg(err, err_n, "%s/" FORMAT_DIR "/%s: %s", dir, pfx[i], strerror(errno));
            failed = 1;
            close(pfd);
            continue;
        }
        for (int k = 0; k < nk; k++) {
            struct stat st;
            if (fstatat(pfd, keys[k], &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone */
            /* moved aside first, so a concurrent reader sees the whole entry or none */
            if (discard_at(v1, pfd, keys[k], NULL) < 0) {
                if (!failed)
                    msg(err, err_n, "removing %s/" FORMAT_DIR "/%s/%s: %s", dir, pfx[i], keys[k],
                        strerror(errno));
                failed = 1;
            } else {
                count++;
            }
        }
        free_names(keys, nk);
        close(pfd);
        unlinkat(v1, pfx[i], AT_REMOVEDIR); /* only if empty; a concurrent store recreates it */
    }
    free_names(pfx, np);
    /* Temporaries of crashed writers and trash of interrupted removals. (A store running at
     * this very moment loses its temporary and fails cleanly.) */
    char **scratch;
    int ns = list_dir_at(v1, keep_scratch, NULL, &scratch);
    if (ns < 0) {
        if (!failed) msg(err, err_n, "%s/" FORMAT_DIR ": %s", dir, strerror(errno));
        failed = 1;
        ns = 0;
    }
    for (int i = 0; i < ns; i++) {
        if (rm_tree_at(v1, scratch[i], 0) != 0) {
            if (!failed)
                msg(err, err_n, "removing %s/" FORMAT_DIR "/%s: %s", dir, scratch[i],
                    strerror(errno));
            failed = 1;
        }
    }
    free_names(scratch, ns);
    close(v1);
    return failed ? -1 : count;
}

static const char *env_nonempty(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int cache_default_dir(char *out, size_t n) {
    if (!out || !n) return -1;
    out[0] = '\0';
    const char *v;
    int r;
    if ((v = env_nonempty("NVFP4JIT_CACHE_DIR")))
        r = path_fmt(out, n, "%s", v);
    /* The XDG base directory spec says a relative path in XDG_CACHE_HOME is invalid and must
     * be ignored. */
    else if ((v = env_nonempty("XDG_CACHE_HOME")) && v[0] == '/')
        r = path_fmt(out, n, "%s/nvfp4jit", v);
    else if ((v = env_nonempty("HOME")))
        r = path_fmt(out, n, "%s/.cache/nvfp4jit", v);
    else
        r = -1;
    if (r) out[0] = '\0';
    if (r && v) return -2; /* formed, but too long */
    return r ? -1 : 0;
}
