/* fuzz_cache.c - the disk cache's entry reader: manifest parser, file checks, cubin check
 * (src/cache.c), through cache_foreach, cache_lookup and cache_store.
 *
 * Input: one mode byte, then up to five parts separated by "@@@@": manifest.txt, source.cu,
 * kernel.ptx, kernel.cubin, log.txt (a missing part: that file is absent). Mode & 3:
 *   0  the files are planted as they are;
 *   1  the same, with correct "file" lines appended to the manifest (so the fuzzer gets past
 *      the checksums without having to find XXH3 collisions);
 *   2  as 1, and the cubin starts with a CUDA ELF header for sm_90 (reaches the arch check);
 *   3  cache_store of the parts (the manifest part as manifest_extra, the cubin behind a CUDA
 *      ELF header), then a lookup.
 * Checked: foreach and lookup agree; a hit returns exactly the files and the caller's
 * manifest lines, and stays a hit; a bad entry is reported (why) and removed, nothing else
 * left behind; a store that succeeded reads back as a hit with the same data. */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "cache.h"
#include "common.h"

#define KEY "0123456789abcdef0123456789abcdef"
static const char *const names[5] = {"manifest.txt", "source.cu", "kernel.ptx", "kernel.cubin",
                                     "log.txt"};

/* 64-byte ELF64 header of a CUDA cubin for sm_90a (ABI version 8: SM in e_flags bits 8-15) */
static void elf_header(unsigned char h[64]) {
    memset(h, 0, 64);
    memcpy(h, "\x7f" "ELF", 4);
    h[4] = 2;    /* ELFCLASS64 */
    h[5] = 1;    /* little endian */
    h[6] = 1;
    h[7] = 0x33; /* CUDA */
    h[8] = 8;    /* ABI version */
    h[18] = 190; /* EM_CUDA */
    h[48] = 0x04;
    h[49] = 0x5a;
    h[50] = 0x00;
    h[51] = 0x0a;
}

typedef struct part {
    const uint8_t *p;
    size_t n;
} part;

static int split(const uint8_t *d, size_t n, part out[5]) {
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; k < 4 && i + 4 <= n; i++) {
        if (!memcmp(d + i, "@@@@", 4)) {
            out[k].p = d + start;
            out[k].n = i - start;
            k++;
            start = i + 4;
            i += 3;
        }
    }
    out[k].p = d + start;
    out[k].n = n - start;
    return k + 1;
}

static int foreach_ok = -1, foreach_n;
static void visit(const char *key, const char *dir, int ok, const char *why, void *u) {
    (void)dir;
    (void)u;
    FUZZ_CHECK(!strcmp(key, KEY));
    FUZZ_CHECK(ok ? why[0] == '\0' : why[0] != '\0');
    foreach_ok = ok;
    foreach_n++;
}

/* v1 holds nothing but the prefix dir (no temporaries or trash left behind) */
static void check_v1_clean(const char *root) {
    char p[4300];
    snprintf(p, sizeof p, "%s/v1", root);
    DIR *d = opendir(p);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (strcmp(de->d_name, "01")) fprintf(stderr, "left in v1: %s\n", de->d_name);
        FUZZ_CHECK(!strcmp(de->d_name, "01"));
    }
    closedir(d);
}

/* The caller's lines of a manifest: after line 2, up to the first "file " line. */
static void extra_of(const uint8_t *m, size_t n, const uint8_t **x, size_t *xn) {
    size_t pos = 0;
    for (int l = 0; l < 2 && pos < n; l++) {
        const uint8_t *nl = memchr(m + pos, '\n', n - pos);
        pos = nl ? (size_t)(nl - m) + 1 : n;
    }
    size_t end = pos;
    while (end < n && !(n - end >= 5 && !memcmp(m + end, "file ", 5))) {
        const uint8_t *nl = memchr(m + end, '\n', n - end);
        end = nl ? (size_t)(nl - m) + 1 : n;
    }
    *x = m + pos;
    *xn = end - pos;
}

static const nj_buf *entry_buf(const cache_entry *e, int i) {
    return i == 1 ? &e->source : i == 2 ? &e->ptx : i == 3 ? &e->cubin : &e->log;
}

static int same(const nj_buf *b, const void *p, size_t n) {
    return b->len == n && (!n || !memcmp(b->data, p, n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] & 3;
    part parts[5];
    int np = split(data + 1, size - 1, parts);
    char root[4200], edir[4400], path[4600];
    snprintf(root, sizeof root, "%s/cache", fuzz_tmpdir());
    fuzz_rmtree(root);
    snprintf(edir, sizeof edir, "%s/v1/01/" KEY, root);

    unsigned char hdr[64];
    elf_header(hdr);
    nj_buf files[5];
    for (int i = 0; i < 5; i++) {
        nj_buf_init(&files[i]);
        if (i == 3 && mode >= 2) FUZZ_CHECK(nj_buf_append(&files[i], hdr, sizeof hdr) == 0);
        if (i >= np) continue; /* absent (mode 3: empty, the cubin just the ELF header) */
        FUZZ_CHECK(nj_buf_append(&files[i], parts[i].p, parts[i].n) == 0);
    }

    char why[1024] = "";
    cache_entry e;
    cache_entry_init(&e);
    if (mode == 3) {
        cache_entry s;
        cache_entry_init(&s);
        FUZZ_CHECK(nj_buf_set(&s.manifest_extra, files[0].data ? files[0].data : "",
                              files[0].len) == 0);
        for (int i = 1; i < 5; i++)
            FUZZ_CHECK(nj_buf_set((nj_buf *)entry_buf(&s, i), files[i].data ? files[i].data : "",
                                  files[i].len) == 0);
        int st = cache_store(root, KEY, &s, why, sizeof why);
        if (st == 0) {
            cache_result r = cache_lookup(root, KEY, &e, why, sizeof why);
            /* a "key.arch = sm_NN" line of the caller's may name another SM than the cubin's */
            int arch_line = files[0].len && strstr(files[0].data, "key.arch = sm_") != NULL;
            if (r != CACHE_HIT && !arch_line) fprintf(stderr, "stored, then: %d %s\n", (int)r, why);
            FUZZ_CHECK(r == CACHE_HIT || (arch_line && r == CACHE_CORRUPT));
            if (r == CACHE_HIT) {
                for (int i = 1; i < 5; i++)
                    FUZZ_CHECK(same(entry_buf(&e, i), files[i].data, files[i].len));
                size_t xl = files[0].len;
                FUZZ_CHECK(e.manifest_extra.len == xl + (xl && files[0].data[xl - 1] != '\n'));
                FUZZ_CHECK(!xl || !memcmp(e.manifest_extra.data, files[0].data, xl));
            }
        } else {
            FUZZ_CHECK(why[0] != '\0');
        }
        check_v1_clean(root);
        cache_entry_free(&s);
    } else {
        FUZZ_CHECK(nj_mkdirs(edir, 0700) == 0);
        FUZZ_CHECK(chmod(root, 0700) == 0);
        if (mode >= 1 && np >= 1) {
            for (int i = 1; i < np; i++)
                FUZZ_CHECK(nj_buf_printf(&files[0], "file %s %zu %016llx\n", names[i],
                                         files[i].len,
                                         (unsigned long long)nj_hash64(
                                             files[i].data ? files[i].data : "", files[i].len)) ==
                           0);
        }
        for (int i = 0; i < np; i++) {
            snprintf(path, sizeof path, "%s/%s", edir, names[i]);
            FUZZ_CHECK(fuzz_write_file(path, files[i].data ? files[i].data : "", files[i].len) ==
                       0);
        }
        foreach_ok = -1;
        foreach_n = 0;
        FUZZ_CHECK(cache_foreach(root, visit, NULL) == 1 && foreach_n == 1);
        cache_result r = cache_lookup(root, KEY, &e, why, sizeof why);
        FUZZ_CHECK(r == CACHE_HIT || r == CACHE_CORRUPT);
        FUZZ_CHECK(foreach_ok == (r == CACHE_HIT));
        if (r == CACHE_HIT) {
            FUZZ_CHECK(why[0] == '\0');
            for (int i = 1; i < 5; i++)
                FUZZ_CHECK(same(entry_buf(&e, i), files[i].data, files[i].len));
            FUZZ_CHECK(e.cubin.len >= 64 && !memcmp(e.cubin.data, "\x7f" "ELF", 4));
            const uint8_t *x;
            size_t xn;
            extra_of((const uint8_t *)files[0].data, files[0].len, &x, &xn);
            FUZZ_CHECK(same(&e.manifest_extra, x, xn));
            FUZZ_CHECK(cache_lookup(root, KEY, NULL, why, sizeof why) == CACHE_HIT);
        } else {
            FUZZ_CHECK(why[0] != '\0');
            struct stat st;
            FUZZ_CHECK(lstat(edir, &st) != 0); /* the bad entry was removed */
            FUZZ_CHECK(cache_lookup(root, KEY, NULL, why, sizeof why) == CACHE_MISS);
        }
        check_v1_clean(root);
    }
    cache_entry_free(&e);
    for (int i = 0; i < 5; i++) nj_buf_free(&files[i]);
    return 0;
}
