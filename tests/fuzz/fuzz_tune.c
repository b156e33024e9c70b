/* fuzz_tune.c - the tuning-database reader and rewriter (src/tune.c).
 *
 * Input: one mode byte, then the text of tune-v1.txt. The text is loaded (tdb_load): every
 * entry must have sane fields and survive tdb_format + reload. With mode bit 0 an entry is
 * then stored (tdb_store; bit 1: with the key of the first loaded entry, else a fixed key) and
 * the file reloaded: the stored entry must be what a lookup of its key finds, and every other
 * key must find what it found before (the rewrite keeps the other keys' last lines). */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "common.h"
#include "tunedb.h"

static nvfp4jit_ctx *ctx_get(void) {
    static nvfp4jit_ctx *ctx;
    if (!ctx) {
        nvfp4jit_ctx_options o;
        memset(&o, 0, sizeof o);
        o.disable_disk_cache = 1;
        FUZZ_CHECK(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    }
    return ctx;
}

static int key_eq(const tdb_key *a, const tdb_key *b) {
    return a->sms == b->sms && a->driver == b->driver && !strcmp(a->device, b->device) &&
           !strcmp(a->library, b->library) && !strcmp(a->sig, b->sig);
}

static int us_close(double a, double b) { return fabs(a - b) <= 0.0005 + 1e-12 * fabs(a); }

static void check_entry(const tdb_entry *e, const char *dir) {
    FUZZ_CHECK(e->key.device[0] && e->key.library[0] && e->key.sig[0]);
    FUZZ_CHECK(!strchr(e->key.device, '\t') && !strchr(e->key.device, '\n'));
    FUZZ_CHECK(!strchr(e->key.sig, '\t') && !strchr(e->key.sig, '\n'));
    FUZZ_CHECK(e->key.sms >= 0 && e->key.driver >= 0);
    FUZZ_CHECK(e->us >= 0 && !isinf(e->us));
    /* format it and load it back */
    char line[8192];
    FUZZ_CHECK(tdb_format(e, line, sizeof line) == 0);
    char path[4300];
    snprintf(path, sizeof path, "%s/one.txt", dir);
    nj_buf t;
    nj_buf_init(&t);
    FUZZ_CHECK(nj_buf_printf(&t, "%s\n%s", TDB_HEADER, line) == 0);
    FUZZ_CHECK(fuzz_write_file(path, t.data, t.len) == 0);
    nj_buf_free(&t);
    tdb_entry *back = NULL;
    size_t n = 0, ign = 0;
    FUZZ_CHECK(tdb_load(ctx_get(), path, &back, &n, &ign) == 0);
    FUZZ_CHECK(n == 1 && ign == 0);
    FUZZ_CHECK(key_eq(&back[0].key, &e->key));
    FUZZ_CHECK(!memcmp(&back[0].v, &e->v, sizeof e->v));
    FUZZ_CHECK(us_close(back[0].us, e->us));
    free(back);
}

/* What a lookup finds for key among entries (the last line wins). */
static const tdb_entry *last_of(const tdb_entry *all, size_t n, const tdb_key *key) {
    const tdb_entry *r = NULL;
    for (size_t i = 0; i < n; i++)
        if (key_eq(&all[i].key, key)) r = &all[i];
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/tune", fuzz_tmpdir());
    fuzz_rmtree(dir);
    FUZZ_CHECK(nj_mkdirs(dir, 0700) == 0);
    snprintf(path, sizeof path, "%s/" TDB_FILE, dir);
    FUZZ_CHECK(fuzz_write_file(path, data + 1, size - 1) == 0);

    nvfp4jit_ctx *ctx = ctx_get();
    tdb_entry *all = NULL;
    size_t n = 0, ign = 0;
    FUZZ_CHECK(tdb_load(ctx, path, &all, &n, &ign) == 0);
    size_t lines = 0;
    for (size_t i = 1; i < size; i++) lines += data[i] == '\n';
    if (size > 1 && data[size - 1] != '\n') lines++;
    FUZZ_CHECK(n + ign <= lines);
    for (size_t i = 0; i < n; i++) check_entry(&all[i], dir);

    if (data[0] & 1) {
        tdb_entry e;
        memset(&e, 0, sizeof e);
        if ((data[0] & 2) && n) {
            e.key = all[0].key;
        } else {
            snprintf(e.key.device, sizeof e.key.device, "NVIDIA H200");
            e.key.sms = 132;
            e.key.driver = 12080;
            snprintf(e.key.library, sizeof e.key.library, "0.1.0");
            snprintf(e.key.sig, sizeof e.key.sig, "sm_90a:8x4096x7168");
        }
        FUZZ_CHECK(nvfp4jit_variant_parse("sm90a:128x128x64:s4:swap", &e.v) == NVFP4JIT_OK);
        e.us = 4321.125;
        char err[512] = "";
        FUZZ_CHECK(tdb_store(ctx, path, &e, err, sizeof err) == 0);
        tdb_entry *now = NULL;
        size_t m = 0, ign2 = 0;
        FUZZ_CHECK(tdb_load(ctx, path, &now, &m, &ign2) == 0);
        const tdb_entry *got = last_of(now, m, &e.key);
        FUZZ_CHECK(got != NULL); /* the stored entry is what a lookup finds */
        FUZZ_CHECK(!memcmp(&got->v, &e.v, sizeof e.v) && us_close(got->us, e.us));
        /* the other keys: unchanged (where load gave entries, the file was ours for it: the
         * rewrite must take it for ours too, not replace it) */
        int ours = n > 0;
        for (size_t i = 0; ours && i < n; i++) {
            if (key_eq(&all[i].key, &e.key)) continue;
            const tdb_entry *before = last_of(all, n, &all[i].key);
            const tdb_entry *after = last_of(now, m, &all[i].key);
            FUZZ_CHECK(after != NULL);
            FUZZ_CHECK(!memcmp(&after->v, &before->v, sizeof e.v) &&
                       after->us == before->us);
        }
        free(now);
    }
    free(all);
    return 0;
}
