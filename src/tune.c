/* tune.c - autotuning (nvfp4jit_tune), the tuning database and problem-set signatures.
 * See tune.h for the file format and the locking, nvfp4jit.h for the contract. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "family.h"
#include "heuristic.h"
#include "reference.h"
#include "tune.h"
#include "cache.h"

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
    nvfp4jit_variant_format(&e->v, v, sizeof v);
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
    if (nvfp4jit_variant_parse(f[5], &e->v) != NVFP4JIT_OK) {
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
    const char *off = getenv("NVFP4JIT_NO_TUNE");
    if (off && *off && strcmp(off, "0")) return 0;
    if (!ctx || !ctx->disk_cache || !ctx->cache_dir[0]) return 0;
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
        nvfp4jit_variant_format(&e.v, name, sizeof name);
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

/* ---- the tuner ---------------------------------------------------------------------------- */
#define TUNE_ATOL 1e-3
#define TUNE_RTOL 1e-3
#define TUNE_ACC_EPS(k) (((double)(k) / 16 + 4) / 16777216.0) /* fp32 accumulation, as tests */
#define TUNE_CHECK_BUDGET 4e9                                  /* multiply-adds of the check */
#define TUNE_TIE 0.03

typedef struct tune_cand {
    heur_cand h;
    nvfp4jit_status st; /* compile status */
    int compiled;
    double med, min;
    char err[512];
} tune_cand;

typedef struct tune_pool {
    pthread_mutex_t mu;
    tune_cand *c;
    size_t n, next, done;
    double deadline_ms; /* 0 = none */
    const char *cache_dir;
    int progress;
} tune_pool;

static void progress_bar(int on, const char *phase, size_t done, size_t total) {
    if (!on || total == 0) return;
    int width = 30, fill = (int)(width * done / total);
    fprintf(stderr, "\rnvfp4jit tune: %-8s [", phase);
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %zu/%zu", done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

static void *compile_worker(void *u) {
    tune_pool *p = u;
    nvfp4jit_ctx_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = p->cache_dir;
    nvfp4jit_ctx *c = NULL;
    nvfp4jit_status cs = nvfp4jit_ctx_create(&o, &c);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n) break;
        tune_cand *t = &p->c[i];
        if (i > 0 && p->deadline_ms > 0 && nj_now_ms() > p->deadline_ms) {
            t->st = NVFP4JIT_ERR_NOT_FOUND;
            snprintf(t->err, sizeof t->err, "time limit reached before compiling");
        } else if (cs != NVFP4JIT_OK) {
            t->st = cs;
            snprintf(t->err, sizeof t->err, "cannot create a context: %s",
                     nvfp4jit_last_error(NULL));
        } else {
            nvfp4jit_kernel *k = NULL;
            t->st = nvfp4jit_compile(c, &t->h.v, &k);
            if (t->st != NVFP4JIT_OK)
                snprintf(t->err, sizeof t->err, "%.500s", nvfp4jit_last_error(c));
            else
                t->compiled = 1;
        }
        pthread_mutex_lock(&p->mu);
        p->done++;
        progress_bar(p->progress, "compile", p->done, p->n);
        pthread_mutex_unlock(&p->mu);
    }
    nvfp4jit_ctx_destroy(c);
    return NULL;
}

/* Time one plan: warmup untimed launches, then iters between event pairs. */
static nvfp4jit_status time_plan(nvfp4jit_ctx *ctx, const drv_api *api, nvfp4jit_plan *plan,
                                 const nvfp4jit_group *g, size_t n, CUstream st, CUevent *ev,
                                 int warmup, int iters, double *med, double *mn) {
    for (int i = 0; i < warmup; i++) NJ_FORWARD_IF_ERROR(nvfp4jit_plan_run(plan, g, n, st));
    for (int i = 0; i < iters; i++) {
        DRV_CHECK(ctx, api, cuEventRecord(ev[2 * i], st), "cuEventRecord");
        NJ_FORWARD_IF_ERROR(nvfp4jit_plan_run(plan, g, n, st));
        DRV_CHECK(ctx, api, cuEventRecord(ev[2 * i + 1], st), "cuEventRecord");
    }
    DRV_CHECK(ctx, api, cuStreamSynchronize(st), "cuStreamSynchronize (a launch failed)");
    double *us = malloc((size_t)iters * sizeof *us);
    NJ_RETURN_IF(ctx, !us, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (timing)");
    for (int i = 0; i < iters; i++) {
        float ms = 0;
        CUresult r = api->cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        if (r != CUDA_SUCCESS) {
            free(us);
            return drv_fail(ctx, r, "cuEventElapsedTime");
        }
        us[i] = (double)ms * 1e3;
    }
    /* insertion sort: iters is small */
    for (int i = 1; i < iters; i++) {
        double x = us[i];
        int j = i - 1;
        while (j >= 0 && us[j] > x) {
            us[j + 1] = us[j];
            j--;
        }
        us[j + 1] = x;
    }
    *med = iters % 2 ? us[iters / 2] : 0.5 * (us[iters / 2 - 1] + us[iters / 2]);
    *mn = us[0];
    free(us);
    return NVFP4JIT_OK;
}

/* Copy rows [r0, r0+rows) of a packed operand and its scale block (r0 % 128 == 0). */
static nvfp4jit_status fetch_rows(nvfp4jit_ctx *ctx, const drv_api *api, uint64_t data,
                                  uint64_t sf, int64_t r0, int64_t rows, int64_t k, uint8_t **hd,
                                  uint8_t **hs) {
    size_t nd = (size_t)(rows * k / 2), ns = ref_sf_bytes(rows, k);
    *hd = malloc(nd);
    *hs = malloc(ns);
    NJ_RETURN_IF(ctx, !*hd || !*hs, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (check)");
    DRV_CHECK(ctx, api, cuMemcpyDtoH(*hd, (CUdeviceptr)(data + (uint64_t)(r0 * k / 2)), nd),
              "cuMemcpyDtoH (check)");
    DRV_CHECK(ctx, api, cuMemcpyDtoH(*hs, (CUdeviceptr)(sf + ref_sf_offset(r0, 0, k)), ns),
              "cuMemcpyDtoH (check)");
    return NVFP4JIT_OK;
}

/* Compare C (on the device, after a run of the winner) with the reference on sampled blocks.
 * @return NVFP4JIT_OK with *pass set, or an error. */
static nvfp4jit_status check_result(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_group *g, size_t n, int *pass, char *why,
                                    size_t why_n) {
    *pass = 1;
    why[0] = '\0';
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
    double budget = TUNE_CHECK_BUDGET;
    nvfp4jit_status s = NVFP4JIT_OK;
    for (size_t i = 0; i < n && *pass && s == NVFP4JIT_OK; i++) {
        const nvfp4jit_group *p = &g[i];
        if (p->m == 0) continue;
        int64_t ablk[2] = {0, (p->m - 1) / 128 * 128}, bblk[2] = {0, (p->n - 1) / 128 * 128};
        int na = ablk[1] ? 2 : 1, nb = bblk[1] ? 2 : 1;
        for (int ia = 0; ia < na && *pass && s == NVFP4JIT_OK; ia++) {
            int64_t r0 = ablk[ia], mr = p->m - r0 < 128 ? p->m - r0 : 128;
            for (int ib = 0; ib < nb && *pass && s == NVFP4JIT_OK; ib++) {
                int64_t c0 = bblk[ib], nr = p->n - c0 < 128 ? p->n - c0 : 128;
                double macs = (double)mr * (double)nr * (double)p->k;
                if (macs > budget) continue; /* out of budget: a sample of the groups only */
                budget -= 2 * macs;
                uint8_t *ha = NULL, *hsa = NULL, *hb = NULL, *hsb = NULL;
                uint16_t *hc = NULL, *ref = NULL;
                double *abs_sum = NULL;
                s = fetch_rows(ctx, api, p->a, p->sfa, r0, mr, p->k, &ha, &hsa);
                if (s == NVFP4JIT_OK) s = fetch_rows(ctx, api, p->b, p->sfb, c0, nr, p->k, &hb, &hsb);
                if (s == NVFP4JIT_OK) {
                    hc = malloc((size_t)(mr * p->n) * 2);
                    ref = malloc((size_t)(mr * nr) * 2);
                    abs_sum = malloc((size_t)(mr * nr) * sizeof *abs_sum);
                    if (!hc || !ref || !abs_sum)
                        s = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (check)");
                }
                if (s == NVFP4JIT_OK) {
                    CUresult r = api->cuMemcpyDtoH(
                        hc, (CUdeviceptr)(p->c + (uint64_t)(r0 * p->n * 2)), (size_t)(mr * p->n) * 2);
                    if (r != CUDA_SUCCESS) s = drv_fail(ctx, r, "cuMemcpyDtoH (check)");
                }
                if (s == NVFP4JIT_OK) {
                    ref_gemm(ha, hsa, hb, hsb, mr, nr, p->k, ref, threads);
                    ref_gemm_abs(ha, hsa, hb, hsb, mr, nr, p->k, abs_sum);
                    for (int64_t y = 0; y < mr && *pass; y++) {
                        for (int64_t x = 0; x < nr; x++) {
                            double o = ref_f16_to_double(hc[y * p->n + c0 + x]);
                            double rv = ref_f16_to_double(ref[y * nr + x]);
                            double lim = TUNE_ATOL + TUNE_RTOL * fabs(rv) +
                                         TUNE_ACC_EPS(p->k) * abs_sum[y * nr + x];
                            int bad = isnan(o) || isnan(rv) ||
                                      ((isinf(o) || isinf(rv)) ? o != rv : fabs(o - rv) > lim);
                            if (bad) {
                                *pass = 0;
                                snprintf(why, why_n,
                                         "group %zu, C[%lld,%lld] = %.6g, reference %.6g", i,
                                         (long long)(r0 + y), (long long)(c0 + x), o, rv);
                                break;
                            }
                        }
                    }
                }
                free(ha);
                free(hsa);
                free(hb);
                free(hsb);
                free(hc);
                free(ref);
                free(abs_sum);
            }
        }
    }
    return s;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_tune(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                           const nvfp4jit_group *groups, size_t n,
                                           const nvfp4jit_tune_options *opt,
                                           nvfp4jit_variant *best, double *best_us) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !best, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_tune: best is NULL");
    const family *f = fam_get(arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)arch);
    NJ_FORWARD_IF_ERROR(nvfp4jit_problem_check_shapes(ctx, groups, n));
    nvfp4jit_tune_options o;
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    if (o.results_count) *o.results_count = 0;
    NJ_RETURN_IF(ctx, o.candidates < 0 || o.iters < 0 || o.warmup < 0 || o.jobs < 0 ||
                          !(o.time_limit_s >= 0) || (o.results_cap && !o.results),
                 NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_tune: negative or inconsistent option");
    int cands = o.candidates ? o.candidates : 12;
    int iters = o.iters ? (o.iters < 10 ? 10 : o.iters) : 20;
    int warmup = o.warmup ? o.warmup : 3;
    int progress = o.progress && isatty(2);
    double t0 = nj_now_ms();
    double deadline = o.time_limit_s > 0 ? t0 + o.time_limit_s * 1e3 : 0;

    nvfp4jit_status s;
    const drv_api *api = drv_get(ctx, &s);
    if (!api) return s;
    NJ_FORWARD_IF_ERROR(nvfp4jit_problem_check(ctx, groups, n));
    int cc = ctx->device_cc;
    NJ_RETURN_IF(ctx, cc != f->cc, /* "a" cubins run on exactly one cc (family.h) */
                 NVFP4JIT_ERR_ARCH_MISMATCH,
                 "cannot tune %s on a device of compute capability %d.%d", f->arch_name,
                 cc / 10, cc % 10);

    /* rank (the device's SM count, as nvfp4jit_plan_create models it) and keep the top K */
    size_t total = 0;
    NJ_FORWARD_IF_ERROR(heur_rank(ctx, arch, groups, n, 0, NULL, 0, &total));
    size_t k = total < (size_t)cands ? total : (size_t)cands;
    tune_cand *c = calloc(k ? k : 1, sizeof *c);
    heur_cand *hc = calloc(k ? k : 1, sizeof *hc);
    if (!c || !hc) {
        free(c);
        free(hc);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (tune)");
    }
    s = heur_rank(ctx, arch, groups, n, 0, hc, k, &total);
    if (s != NVFP4JIT_OK) {
        free(c);
        free(hc);
        return s;
    }
    for (size_t i = 0; i < k; i++) {
        c[i].h = hc[i];
        c[i].med = c[i].min = -1;
    }
    free(hc);

    /* compile in parallel, one context per thread, into the shared disk cache */
    tune_pool pool;
    memset(&pool, 0, sizeof pool);
    pthread_mutex_init(&pool.mu, NULL);
    pool.c = c;
    pool.n = k;
    pool.deadline_ms = deadline;
    pool.cache_dir = ctx->cache_dir;
    pool.progress = progress;
    if (ctx->disk_cache && ctx->cache_dir[0]) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int jobs = o.jobs ? o.jobs : (ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu);
        if ((size_t)jobs > k) jobs = (int)k;
        pthread_t tid[64];
        int started = 0;
        if (jobs > 64) jobs = 64;
        for (int t = 0; t < jobs; t++)
            if (pthread_create(&tid[t], NULL, compile_worker, &pool) == 0) started++;
            else break;
        if (started == 0) compile_worker(&pool);
        for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    } else {
        for (size_t i = 0; i < k; i++) {
            nvfp4jit_kernel *kk = NULL;
            if (i > 0 && deadline > 0 && nj_now_ms() > deadline) {
                c[i].st = NVFP4JIT_ERR_NOT_FOUND;
                snprintf(c[i].err, sizeof c[i].err, "time limit reached before compiling");
            } else {
                c[i].st = nvfp4jit_compile(ctx, &c[i].h.v, &kk);
                if (c[i].st == NVFP4JIT_OK) c[i].compiled = 1;
                else snprintf(c[i].err, sizeof c[i].err, "%.500s", nvfp4jit_last_error(ctx));
            }
            progress_bar(progress, "compile", i + 1, k);
        }
    }
    pthread_mutex_destroy(&pool.mu);

    /* time */
    CUstream st = NULL;
    CUevent *ev = calloc((size_t)iters * 2, sizeof *ev);
    nvfp4jit_status fail = NVFP4JIT_OK;
    char failmsg[1024] = "";
    if (!ev) {
        fail = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (events)");
        goto out;
    }
    CUresult r = api->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        fail = drv_fail(ctx, r, "cuStreamCreate");
        goto out;
    }
    for (int i = 0; i < 2 * iters; i++) {
        if ((r = api->cuEventCreate(&ev[i], CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
            fail = drv_fail(ctx, r, "cuEventCreate");
            goto out;
        }
    }
    size_t timed = 0;
    for (size_t i = 0; i < k; i++) {
        progress_bar(progress, "time", i, k);
        if (!c[i].compiled) continue;
        if (i > 0 && deadline > 0 && nj_now_ms() > deadline) {
            c[i].st = NVFP4JIT_ERR_NOT_FOUND;
            snprintf(c[i].err, sizeof c[i].err, "time limit reached before timing");
            continue;
        }
        nvfp4jit_plan *plan = NULL;
        s = nvfp4jit_plan_create(ctx, arch, groups, n, &c[i].h.v, &plan);
        if (s == NVFP4JIT_OK)
            s = time_plan(ctx, api, plan, groups, n, st, ev, warmup, iters, &c[i].med, &c[i].min);
        if (s != NVFP4JIT_OK) {
            char name[96];
            nvfp4jit_variant_format(&c[i].h.v, name, sizeof name);
            snprintf(failmsg, sizeof failmsg, "timing %s: %.900s", name,
                     nvfp4jit_last_error(ctx));
            api->cuStreamSynchronize(st);
            nvfp4jit_plan_destroy(plan);
            fail = s;
            nj_fail(ctx, s, "%s", failmsg);
            goto out;
        }
        api->cuStreamSynchronize(st);
        nvfp4jit_plan_destroy(plan);
        timed++;
        if (o.verbose) {
            char name[96];
            nvfp4jit_variant_format(&c[i].h.v, name, sizeof name);
            if (progress) fputc('\n', stderr);
            fprintf(stderr, "nvfp4jit tune: #%zu %-28s est %9.2f us  median %9.2f us  min %9.2f us\n",
                    i + 1, name, c[i].h.est_us, c[i].med, c[i].min);
        }
    }
    progress_bar(progress, "time", k, k);
    if (timed == 0) {
        /* every candidate failed to compile: report the first error */
        fail = c[0].st != NVFP4JIT_OK ? c[0].st : NVFP4JIT_ERR_INTERNAL;
        nj_fail(ctx, fail, "no candidate could be compiled; the first: %s", c[0].err);
        goto out;
    }

    /* choose: fastest median; ties within 3 % go to the better heuristic rank. Winners that
     * fail the reference check are dropped and the choice is made again. */
    int *dropped = calloc(k, sizeof *dropped);
    if (!dropped) {
        fail = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (tune)");
        goto out;
    }
    long win = -1;
    for (;;) {
        double fastest = -1;
        for (size_t i = 0; i < k; i++)
            if (c[i].med >= 0 && !dropped[i] && (fastest < 0 || c[i].med < fastest))
                fastest = c[i].med;
        if (fastest < 0) break;
        long pick = -1;
        for (size_t i = 0; i < k && pick < 0; i++)
            if (c[i].med >= 0 && !dropped[i] && c[i].med <= fastest * (1.0 + TUNE_TIE))
                pick = (long)i;
        nvfp4jit_plan *plan = NULL;
        s = nvfp4jit_plan_create(ctx, arch, groups, n, &c[pick].h.v, &plan);
        if (s == NVFP4JIT_OK) s = nvfp4jit_plan_run(plan, groups, n, st);
        if (s == NVFP4JIT_OK) {
            r = api->cuStreamSynchronize(st);
            if (r != CUDA_SUCCESS) s = drv_fail(ctx, r, "cuStreamSynchronize (check run)");
        }
        nvfp4jit_plan_destroy(plan);
        int pass = 0;
        char why[256] = "";
        if (s == NVFP4JIT_OK) s = check_result(ctx, api, groups, n, &pass, why, sizeof why);
        if (s != NVFP4JIT_OK) {
            fail = s;
            break;
        }
        if (pass) {
            win = pick;
            break;
        }
        char name[96];
        nvfp4jit_variant_format(&c[pick].h.v, name, sizeof name);
        nj_warn(ctx, "tune: %s was fastest but fails the reference check (%s); dropped", name,
                why);
        dropped[pick] = 1;
    }
    free(dropped);
    if (fail != NVFP4JIT_OK) goto out;
    if (win < 0) {
        fail = nj_fail(ctx, NVFP4JIT_ERR_INTERNAL,
                       "no timed candidate passes the reference check (see the warnings)");
        goto out;
    }
    *best = c[win].h.v;
    if (best_us) *best_us = c[win].med;

    if (!o.no_store) {
        char path[4200], sig[TDB_SIG_MAX], err[1024] = "";
        tdb_entry e;
        memset(&e, 0, sizeof e);
        char why[1024] = "";
        if (tdb_path(ctx->cache_dir, path, sizeof path) != 0) {
            fail = nj_fail(ctx, NVFP4JIT_ERR_TUNE_DB,
                           "the context has no cache directory: the result is not stored");
        } else if (cache_check_dir(ctx->cache_dir, why, sizeof why) != CACHE_TRUSTED) {
            fail = nj_fail(ctx, NVFP4JIT_ERR_TUNE_DB, "the result is not stored: %s", why);
        } else if (tdb_signature(arch, groups, n, sig, sizeof sig) != 0 ||
                   tdb_device_key(sig, &e.key) != 0) {
            fail = nj_fail(ctx, NVFP4JIT_ERR_TUNE_DB, "cannot form the database key");
        } else {
            e.v = c[win].h.v;
            e.us = c[win].med;
            if (tdb_store(ctx, path, &e, err, sizeof err) != 0)
                fail = nj_fail(ctx, NVFP4JIT_ERR_TUNE_DB, "cannot store the result in %s: %s",
                               path, err);
        }
    }
out:
    if (o.results_count) *o.results_count = k;
    for (size_t i = 0; i < k && i < o.results_cap; i++) {
        nvfp4jit_tune_result *res = &o.results[i];
        memset(res, 0, sizeof *res);
        res->variant = c[i].h.v;
        res->heuristic_rank = (int)i;
        res->est_us = c[i].h.est_us;
        res->median_us = c[i].med;
        res->min_us = c[i].min;
        res->status = c[i].st;
        res->winner = 0;
        if (fail == NVFP4JIT_OK || fail == NVFP4JIT_ERR_TUNE_DB)
            res->winner = c[i].med >= 0 && !memcmp(&c[i].h.v, best, sizeof *best);
    }
    if (ev) {
        for (int i = 0; i < 2 * iters; i++)
            if (ev[i]) api->cuEventDestroy(ev[i]);
        free(ev);
    }
    if (st) api->cuStreamDestroy(st);
    free(c);
    return fail;
}
