/* tunedb.c - the tuning database: problem-set signatures, the file (tune-v1.txt) and its
 * lookup and store, and the plan-time lookup. Below the plan API: dispatch.c asks it at
 * nvfp4jit_plan_create; the tuner (tuner.c, above the plan API) stores into it. See tunedb.h
 * for the file format and the locking, nvfp4jit.h for the contract. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "family.h"
#include "tunedb.h"
#include "context.h"
#include "variant.h"

/* ---- signatures ---------------------------------------------------------------------------- */
int64_t tdb_m_bucket(int64_t m) {
    if (m <= 0) return 0;
    if (m <= 8) return 8;
    int64_t b = 16;
    while (b < m && b < ((int64_t)1 << 62)) b <<= 1;
    return b;
}

static const char *arch_str(nvfp4jit_arch a) {
    const family *f = fam_get(a);
    return f ? f->arch_name : NULL;
}

int tdb_signature(nvfp4jit_arch arch, const nvfp4jit_group *g, size_t n, char *out,
                  size_t cap) {
    const char *an = arch_str(arch);
    if (!an || !out || cap < 64 || (!g && n)) return -1;
    nj_buf b;
    nj_buf_init(&b);
    int oom = nj_buf_printf(&b, "%s:", an);
    for (size_t i = 0; i < n && !oom;) {
        size_t j = i + 1;
        int64_t mb = tdb_m_bucket(g[i].m);
        while (j < n && tdb_m_bucket(g[j].m) == mb && g[j].n == g[i].n && g[j].k == g[i].k) j++;
        oom |= nj_buf_printf(&b, "%s%lldx%lldx%lld", i ? "," : "", (long long)mb,
                             (long long)g[i].n, (long long)g[i].k);
        if (j - i > 1) oom |= nj_buf_printf(&b, "*%zu", j - i);
        i = j;
    }
    if (oom) {
        nj_buf_free(&b);
        return -1;
    }
    if (b.len < cap && b.len < TDB_SIG_MAX) {
        memcpy(out, b.data, b.len + 1);
    } else {
        char h[33];
        nj_hash128_hex(b.data, b.len, h);
        snprintf(out, cap, "%s:g%zu:h%s", an, n, h);
    }
    nj_buf_free(&b);
    return 0;
}

/* ---- device identity ---------------------------------------------------------------------- */
int tdb_device_key(const char *sig, tdb_key *key) {
    memset(key, 0, sizeof *key);
    const drv_api *api = drv_load();
    if (!api) return -1;
    CUcontext cur = NULL;
    CUdevice dev;
    if (api->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) {
        if (api->cuCtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
    } else {
        int count = 0;
        if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) return -1;
        if (api->cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return -1;
    }
    char name[256] = "";
    if (api->cuDeviceGetName(name, (int)sizeof name - 1, dev) != CUDA_SUCCESS) return -1;
    int sms = 0, drv = 0;
    if (api->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) !=
            CUDA_SUCCESS ||
        api->cuDriverGetVersion(&drv) != CUDA_SUCCESS)
        return -1;
    for (char *c = name; *c; c++)
        if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
    snprintf(key->device, sizeof key->device, "%s", name);
    key->sms = sms;
    key->driver = drv;
    snprintf(key->library, sizeof key->library, "%s", NVFP4JIT_VERSION_STRING);
    snprintf(key->sig, sizeof key->sig, "%s", sig ? sig : "");
    return 0;
}

/* ---- the database file -------------------------------------------------------------------- */
int tdb_path(const char *cache_dir, char *out, size_t n) {
    if (!cache_dir || !*cache_dir) {
        if (n) out[0] = '\0';
        return -1;
    }
    int w = snprintf(out, n, "%s/%s", cache_dir, TDB_FILE);
    if (w < 0 || (size_t)w >= n) {
        if (n) out[0] = '\0';
        return -1;
    }
    return 0;
}

static int key_eq(const tdb_key *a, const tdb_key *b) {
    return a->sms == b->sms && a->driver == b->driver && !strcmp(a->device, b->device) &&
           !strcmp(a->library, b->library) && !strcmp(a->sig, b->sig);
}

int tdb_format(const tdb_entry *e, char *out, size_t n) {
    char v[96];
    nj_variant_format(&e->v, v, sizeof v);
    int w = snprintf(out, n, "%s\t%d\t%d\t%s\t%s\t%s\t%.3f\n", e->key.device, e->key.sms,
                     e->key.driver, e->key.library, e->key.sig, v, e->us);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static int parse_int(const char *s, int *out) {
    if (*s < '0' || *s > '9') return -1; /* strtol would skip blanks and take a sign */
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 0x7fffffff) return -1;
    *out = (int)v;
    return 0;
}

/* Parse one entry line (no newline, NUL-terminated, modified in place). @return 0 or -1 with
 * the reason in why. */
static int parse_line(char *line, tdb_entry *e, const char **why) {
    char *f[8];
    int nf = 0;
    char *p = line;
    for (;;) {
        if (nf == 8) {
            *why = "more than 7 tab-separated fields";
            return -1;
        }
        f[nf++] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    if (nf != 7) {
        *why = "expected 7 tab-separated fields";
        return -1;
    }
    memset(e, 0, sizeof *e);
    if (!*f[0] || strlen(f[0]) >= sizeof e->key.device) {
        *why = "bad device name";
        return -1;
    }
    strcpy(e->key.device, f[0]);
    if (parse_int(f[1], &e->key.sms) || parse_int(f[2], &e->key.driver)) {
        *why = "bad SM count or driver version";
        return -1;
    }
    if (!*f[3] || strlen(f[3]) >= sizeof e->key.library || !*f[4] ||
        strlen(f[4]) >= sizeof e->key.sig) {
        *why = "bad library version or signature";
        return -1;
    }
    strcpy(e->key.library, f[3]);
    strcpy(e->key.sig, f[4]);
    if (nj_variant_parse(f[5], &e->v) != NVFP4JIT_OK) {
        *why = "bad variant";
        return -1;
    }
    char *end;
    errno = 0;
    e->us = strtod(f[6], &end);
    if (errno || end == f[6] || *end || !(e->us >= 0) || isinf(e->us)) {
        *why = "bad time";
        return -1;
    }
    return 0;
}

/* Parse text into entries. @return 0, -1 out of memory. */
static int parse_text(nvfp4jit_ctx *ctx, const char *path, char *text, size_t len,
                      tdb_entry **entries, size_t *count, size_t *ignored) {
    *entries = NULL;
    *count = 0;
    *ignored = 0;
    size_t cap = 0;
    if (len == 0) return 0;
    char *line = text;
    int lineno = 0;
    while (line && line < text + len) {
        char *e = memchr(line, '\n', (size_t)(text + len - line));
        if (e) *e = '\0';
        lineno++;
        size_t l = strlen(line);
        /* a NUL byte ends the C string early: such a line is not what it seems to say (the
         * header "...v1\0junk" was taken for ours here, and the rewrite replaced the file) */
        int nul = l != (size_t)((e ? e : text + len) - line);
        if (l && line[l - 1] == '\r') line[--l] = '\0';
        if (lineno == 1) {
            if (nul || strcmp(line, TDB_HEADER) != 0) {
                nj_warn(ctx, "tuning database %s: first line is not '%s': ignoring the file "
                        "(the next tune rewrites it)", path, TDB_HEADER);
                *ignored = 1; /* this line, then every further line */
                for (const char *q = e ? e + 1 : text + len; q < text + len; q++)
                    if (*q == '\n' || q + 1 == text + len) (*ignored)++;
                return 0;
            }
        } else if (l && line[0] != '#') {
            tdb_entry ent;
            const char *why = "NUL byte in the line";
            if (nul || parse_line(line, &ent, &why) != 0) {
                nj_warn(ctx, "tuning database %s:%d: %s: line ignored", path, lineno, why);
                (*ignored)++;
            } else {
                if (*count == cap) {
                    size_t nc = cap ? 2 * cap : 16;
                    tdb_entry *np = realloc(*entries, nc * sizeof *np);
                    if (!np) {
                        free(*entries);
                        *entries = NULL;
                        *count = 0;
                        return -1;
                    }
                    *entries = np;
                    cap = nc;
                }
                (*entries)[(*count)++] = ent;
            }
        }
        line = e ? e + 1 : NULL;
    }
    return 0;
}

int tdb_load(nvfp4jit_ctx *ctx, const char *path, tdb_entry **entries, size_t *count,
             size_t *ignored) {
    *entries = NULL;
    *count = 0;
    *ignored = 0;
    nj_buf b;
    nj_buf_init(&b);
    if (nj_read_file(path, &b) != 0) {
        int err = errno;
        nj_buf_free(&b);
        if (err == ENOENT || err == ENOTDIR) return 0;
        errno = err;
        return -1;
    }
    int r = parse_text(ctx, path, b.data, b.len, entries, count, ignored);
    nj_buf_free(&b);
    if (r) errno = ENOMEM;
    return r;
}

int tdb_lookup(nvfp4jit_ctx *ctx, const char *path, const tdb_key *key, tdb_entry *out) {
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    if (tdb_load(ctx, path, &all, &n, &ign) != 0) return -1;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (key_eq(&all[i].key, key)) {
            *out = all[i];
            found = 1;
        }
    }
    free(all);
    return found;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The new text of the database at path with e stored: every line kept as it was (comments,
 * blank lines, lines this version cannot parse: a newer library's, a hand edit), except that
 * e replaces the first line of its key, later lines of that key go, and of another key only
 * the last line stays. A file without our header is not ours: it is replaced as a whole.
 * @return 0, or -1 with err. */
static int rewrite_text(nvfp4jit_ctx *ctx, const char *path, const tdb_entry *e, nj_buf *out,
                        char *err, size_t err_n) {
    nj_buf b;
    nj_buf_init(&b);
    if (nj_read_file(path, &b) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            snprintf(err, err_n, "cannot read %s: %s", path, nj_file_strerror(errno));
            nj_buf_free(&b);
            return -1;
        }
        b.len = 0;
    }
    typedef struct raw_line {
        const char *p;
        size_t len;  /* without the newline */
        int parsed;
        tdb_key key; /* when parsed */
    } raw_line;
    size_t n = 0, cap = 0;
    raw_line *L = NULL;
    int oom = 0;
    for (size_t pos = 0; pos < b.len && !oom;) {
        const char *nl = memchr(b.data + pos, '\n', b.len - pos);
        size_t len = nl ? (size_t)(nl - (b.data + pos)) : b.len - pos;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            raw_line *nv = realloc(L, nc * sizeof *nv);
            if (!nv) { oom = 1; break; }
            L = nv;
            cap = nc;
        }
        L[n].p = b.data + pos;
        L[n].len = len;
        L[n].parsed = 0;
        n++;
        pos += len + 1;
    }
    size_t hl = n ? L[0].len : 0;
    if (hl && L[0].p[hl - 1] == '\r') hl--;
    int ours = n && hl == strlen(TDB_HEADER) && !memcmp(L[0].p, TDB_HEADER, hl);
    if (n && !ours)
        nj_warn(ctx, "tuning database %s: first line is not '%s': replacing the file", path,
                TDB_HEADER);
    char line[TDB_SIG_MAX + 512];
    /* Every line is parsed as tdb_load parses it, whatever its length: a longer line that
     * loads (e.g. a time written with many digits) but was skipped here stayed in the file
     * after the stored entry of its key and hid it from every lookup (found by fuzz_tune). */
    for (size_t i = 1; ours && i < n && !oom; i++) {
        if (!L[i].len || L[i].p[0] == '#' || memchr(L[i].p, '\0', L[i].len)) continue;
        char *copy = malloc(L[i].len + 1);
        if (!copy) { oom = 1; break; }
        memcpy(copy, L[i].p, L[i].len);
        copy[L[i].len] = '\0';
        if (copy[L[i].len - 1] == '\r') copy[L[i].len - 1] = '\0';
        tdb_entry ent;
        const char *why = "";
        if (parse_line(copy, &ent, &why) == 0) {
            L[i].parsed = 1;
            L[i].key = ent.key;
        }
        free(copy);
    }
    oom |= nj_buf_printf(out, "%s\n", TDB_HEADER);
    int replaced = 0;
    for (size_t i = 1; ours && i < n && !oom; i++) {
        if (L[i].parsed) {
            if (key_eq(&L[i].key, &e->key)) {
                if (replaced) continue; /* drop duplicates of the key */
                if (tdb_format(e, line, sizeof line) != 0) {
                    snprintf(err, err_n, "entry does not fit a line");
                    free(L);
                    nj_buf_free(&b);
                    return -1;
                }
                oom |= nj_buf_puts(out, line);
                replaced = 1;
                continue;
            }
            /* drop older duplicates of other keys too: the last line of a key wins */
            int later = 0;
            for (size_t j = i + 1; j < n && !later; j++)
                later = L[j].parsed && key_eq(&L[j].key, &L[i].key);
            if (later) continue;
        }
        if (i + 1 == n && L[i].len == 0) break; /* the text's final newline */
        oom |= nj_buf_append(out, L[i].p, L[i].len) | nj_buf_puts(out, "\n");
    }
    if (!replaced && !oom) {
        if (tdb_format(e, line, sizeof line) != 0) {
            snprintf(err, err_n, "entry does not fit a line");
            free(L);
            nj_buf_free(&b);
            return -1;
        }
        oom |= nj_buf_puts(out, line);
    }
    free(L);
    nj_buf_free(&b);
    if (oom) snprintf(err, err_n, "out of memory");
    return oom ? -1 : 0;
}

int tdb_store(nvfp4jit_ctx *ctx, const char *path, const tdb_entry *e, char *err,
              size_t err_n) {
    char dir[4200], lock[4300], tmp[4300];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) *slash = '\0';
    else snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
    if (strchr(e->key.device, '\t') || strchr(e->key.device, '\n') || strchr(e->key.sig, '\t') ||
        strchr(e->key.sig, '\n') || strchr(e->key.library, '\t')) {
        snprintf(err, err_n, "entry key contains a tab or newline");
        return -1;
    }
    if (nj_mkdirs(dir, 0700) != 0) { /* the cache directory: made 0700 like cache_store's */
        snprintf(err, err_n, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(lock, sizeof lock, "%s.lock", path);
    int lfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (lfd < 0) {
        snprintf(err, err_n, "cannot open %s: %s", lock, strerror(errno));
        return -1;
    }
    struct stat lst;
    if (fstat(lfd, &lst) != 0 || !S_ISREG(lst.st_mode)) {
        snprintf(err, err_n, "%s: not a regular file", lock);
        close(lfd);
        return -1;
    }
    while (flock(lfd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        snprintf(err, err_n, "cannot lock %s: %s", lock, strerror(errno));
        close(lfd);
        return -1;
    }
    int rc = -1;
    nj_buf out;
    nj_buf_init(&out);
    int fd = -1;
    tmp[0] = '\0';
    if (rewrite_text(ctx, path, e, &out, err, err_n) != 0) goto done;
    snprintf(tmp, sizeof tmp, "%s/.tune-v1.XXXXXX", dir);
    fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, err_n, "cannot create a temporary file in %s: %s", dir, strerror(errno));
        tmp[0] = '\0';
        goto done;
    }
    if (fchmod(fd, 0644) != 0 || write_all(fd, out.data, out.len) != 0 || fsync(fd) != 0) {
        snprintf(err, err_n, "cannot write %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (close(fd) != 0) {
        fd = -1;
        snprintf(err, err_n, "cannot write %s: %s", tmp, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        snprintf(err, err_n, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto done;
    }
    tmp[0] = '\0';
    rc = 0;
done:
    if (fd >= 0) close(fd);
    if (tmp[0]) unlink(tmp);
    nj_buf_free(&out);
    flock(lfd, LOCK_UN);
    close(lfd);
    return rc;
}

/* ---- plan-time lookup ------------------------------------------------------------------- */
int tune_lookup(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g, size_t n,
                nvfp4jit_variant *v) {
    if (!ctx || ctx->no_tune || !ctx->disk_cache || !ctx->cache_dir[0]) return 0;
    char path[4200];
    if (tdb_path(ctx->cache_dir, path, sizeof path) != 0) return 0;
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* no database: do not even ask the driver */
    char sig[TDB_SIG_MAX];
    if (tdb_signature(arch, g, n, sig, sizeof sig) != 0) return 0;
    tdb_key key;
    if (tdb_device_key(sig, &key) != 0) return 0;
    tdb_entry e;
    int found = tdb_lookup(ctx, path, &key, &e);
    if (found < 0)
        nj_warn(ctx, "tuning database %s: cannot read it (%s); using the heuristic", path,
                nj_file_strerror(errno));
    if (found != 1) return 0;
    const family *f = fam_get(arch);
    char why[256] = "";
    if (e.v.arch != arch || !f || !f->check(&e.v, why, sizeof why)) {
        char name[96];
        nj_variant_format(&e.v, name, sizeof name);
        nj_warn(ctx, "tuning database %s: entry for %s names %s, which is not a valid %s "
                "variant%s%s; using the heuristic", path, sig, name, arch_str(arch),
                why[0] ? ": " : "", why);
        return 0;
    }
    *v = e.v;
    return 1;
}

NVFP4JIT_API const char *nvfp4jit_tune_db_path(nvfp4jit_ctx *ctx) {
    if (!ctx) return "";
    if (tdb_path(ctx->cache_dir, ctx->tune_db, sizeof ctx->tune_db) != 0) ctx->tune_db[0] = 0;
    return ctx->tune_db;
}
