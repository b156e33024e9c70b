/* test_cache.c - the disk cache: round trip, verification, corruption handling, many
 * processes at once, foreach/clear, default directory. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"

#define KEY1 "0123456789abcdef0123456789abcdef"
#define KEY2 "fedcba9876543210fedcba9876543210"
#define KEY3 "01aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* same prefix dir as KEY1 */

static char *dup_tmpdir(void) {
    const char *t = tu_tmpdir();
    char *d = malloc(strlen(t) + 1);
    if (d) strcpy(d, t);
    return d;
}

static void done_tmpdir(char *d) {
    if (!d) return;
    tu_rmtree(d);
    free(d);
}

/* The ELF header fields the cache checks: a CUDA cubin (ELF64, little endian, EM_CUDA 190,
 * CUDA OS/ABI 0x41, ABI version 8: the SM number in bits 8-15 of e_flags, as nvJitLink of
 * CUDA 13 writes it for sm_90a: 0x0a005a04). */
static void set_cuda_elf(unsigned char *b, int sm) {
    memset(b, 0, 64);
    b[0] = 0x7f; b[1] = 'E'; b[2] = 'L'; b[3] = 'F';
    b[4] = 2; b[5] = 1; b[6] = 1; b[7] = 0x41; b[8] = 8;
    b[16] = 2; /* ET_EXEC */
    b[18] = 190; b[19] = 0;
    uint32_t flags = 0x0a000004u | (uint32_t)sm << 8;
    memcpy(b + 48, &flags, 4);
}

/* A recognisable entry; the cubin is binary with NUL bytes. */
static void make_entry(cache_entry *e, int seed) {
    cache_entry_init(e);
    nj_buf_printf(&e->source, "// source %d\n__global__ void k() {}\n", seed);
    nj_buf_printf(&e->ptx, ".version 8.0\n// ptx %d\n", seed);
    unsigned char bin[3000];
    for (size_t i = 0; i < sizeof bin; i++) bin[i] = (unsigned char)((i * 131u + (unsigned)seed) & 0xff);
    set_cuda_elf(bin, 90);
    bin[100] = 0; bin[2999] = 0;
    nj_buf_append(&e->cubin, bin, sizeof bin);
    nj_buf_printf(&e->log, "ptxas info: Used %d registers\n", 40 + seed);
    nj_buf_printf(&e->manifest_extra, "variant = test%d\nkey.arch = sm_90a\nregisters = %d\n",
                  seed, 40 + seed);
}

static int buf_eq(const nj_buf *a, const nj_buf *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static int entry_eq(const cache_entry *a, const cache_entry *b) {
    return buf_eq(&a->source, &b->source) && buf_eq(&a->ptx, &b->ptx) &&
           buf_eq(&a->cubin, &b->cubin) && buf_eq(&a->log, &b->log) &&
           buf_eq(&a->manifest_extra, &b->manifest_extra);
}

static int exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

static void file_in_entry(const char *dir, const char *key, const char *name, char *out,
                          size_t n) {
    char ep[2048];
    cache_entry_path(dir, key, ep, sizeof ep);
    snprintf(out, n, "%s/%s", ep, name);
}

/* Entry directories under dir/v1/xx/ and tmp.* / trash.* names in dir/v1. */
static void count_dir(const char *dir, int *entries, int *scratch) {
    char v1[2048];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    *entries = *scratch = 0;
    DIR *d = opendir(v1);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strncmp(de->d_name, "tmp.", 4) || !strncmp(de->d_name, "trash.", 6)) {
            (*scratch)++;
            continue;
        }
        if (de->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", v1, de->d_name);
        DIR *d2 = opendir(p);
        if (!d2) continue;
        struct dirent *e2;
        while ((e2 = readdir(d2)) != NULL)
            if (e2->d_name[0] != '.') (*entries)++;
        closedir(d2);
    }
    closedir(d);
}

static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

static void test_key_and_path(void) {
    CHECK(cache_key_valid(KEY1));
    CHECK(!cache_key_valid("0123456789ABCDEF0123456789abcdef"));
    CHECK(!cache_key_valid("0123"));
    CHECK(!cache_key_valid("../3456789abcdef0123456789abcdef0"));
    CHECK(!cache_key_valid(NULL));
    char p[4096];
    cache_entry_path("/c", KEY1, p, sizeof p);
    CHECK(!strcmp(p, "/c/v1/01/" KEY1));
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e;
    make_entry(&e, 0);
    char err[512];
    CHECK(cache_store(dir, "../../etc", &e, err, sizeof err) == -1);
    CHECK(strstr(err, "key") != NULL);
    CHECK(cache_lookup(dir, "nope", &e, err, sizeof err) == CACHE_ERROR);
    /* a reserved "file " line in the caller's extra lines is refused */
    nj_buf_puts(&e.manifest_extra, "file kernel.cubin 1 0000000000000000\n");
    CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == -1);
    int n, s;
    count_dir(dir, &n, &s);
    CHECK(n == 0 && s == 0);
    cache_entry_free(&e);
    done_tmpdir(dir);
}

static void test_round_trip(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e, got;
    make_entry(&e, 1);
    cache_entry_init(&got);
    char err[512] = "", why[512] = "x";
    CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    CHECK(why[0] == '\0');
    CHECK(entry_eq(&e, &got));
    CHECK(got.cubin.len == 3000 && got.cubin.data[9] == 0 && got.cubin.data[4] == 2);
    /* a second lookup into a filled entry replaces its contents (no leak under ASan) */
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    CHECK(entry_eq(&e, &got));
    /* manifest layout */
    char mp[4096];
    file_in_entry(dir, KEY1, "manifest.txt", mp, sizeof mp);
    nj_buf m;
    nj_buf_init(&m);
    REQUIRE(nj_read_file(mp, &m) == 0);
    const char *head = "format = 1\nkey = " KEY1 "\nvariant = test1\n";
    CHECK(!strncmp(m.data, head, strlen(head)));
    char line[128];
    snprintf(line, sizeof line, "file kernel.cubin 3000 %016llx\n",
             (unsigned long long)nj_hash64(e.cubin.data, e.cubin.len));
    CHECK(strstr(m.data, line) != NULL);
    CHECK(strstr(m.data, "file source.cu ") && strstr(m.data, "file kernel.ptx ") &&
          strstr(m.data, "file log.txt "));
    nj_buf_free(&m);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT); /* verify only */
    /* storing again over a good entry succeeds and keeps one entry */
    CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    /* an empty entry (all buffers empty but a bare ELF header: a cubin must be a CUDA ELF)
     * round-trips too, extra without final newline */
    cache_entry empty, got2;
    cache_entry_init(&empty);
    cache_entry_init(&got2);
    unsigned char hdr[64];
    set_cuda_elf(hdr, 90);
    nj_buf_set(&empty.cubin, hdr, sizeof hdr);
    nj_buf_puts(&empty.manifest_extra, "a = b");
    CHECKF(cache_store(dir, KEY2, &empty, err, sizeof err) == 0, "%s", err);
    CHECK(cache_lookup(dir, KEY2, &got2, why, sizeof why) == CACHE_HIT);
    CHECK(got2.cubin.len == 64 && got2.source.len == 0);
    CHECK(got2.manifest_extra.len == 6 && !strcmp(got2.manifest_extra.data, "a = b\n"));
    int n, s;
    count_dir(dir, &n, &s);
    CHECK(n == 2 && s == 0);
    cache_entry_free(&empty);
    cache_entry_free(&got2);
    cache_entry_free(&e);
    cache_entry_free(&got);
    done_tmpdir(dir);
}

static void test_miss(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry got;
    cache_entry_init(&got);
    char why[256];
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_MISS);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/does/not/exist", dir);
    CHECK(cache_lookup(sub, KEY1, &got, why, sizeof why) == CACHE_MISS);
    CHECK(got.cubin.len == 0 && got.cubin.data == NULL);
    CHECK(!exists(sub));
    cache_entry_free(&got);
    done_tmpdir(dir);
}

/* Store KEY1, damage it with fn, expect CACHE_CORRUPT with `want` in why, entry gone, no
 * trash left; then store again and hit. */
static void corrupt_case(void (*fn)(const char *dir), const char *want) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e, got;
    make_entry(&e, 2);
    cache_entry_init(&got);
    char err[512], why[512] = "";
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    fn(dir);
    cache_result r = cache_lookup(dir, KEY1, &got, why, sizeof why);
    CHECKF(r == CACHE_CORRUPT, "got %d (%s)", (int)r, why);
    CHECKF(strstr(why, want) != NULL, "why = \"%s\", want \"%s\"", why, want);
    CHECK(got.cubin.len == 0);
    char ep[4096];
    cache_entry_path(dir, KEY1, ep, sizeof ep);
    CHECK(!exists(ep));
    int n, s;
    count_dir(dir, &n, &s);
    CHECK(n == 0 && s == 0);
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_MISS);
    CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    CHECK(entry_eq(&e, &got));
    cache_entry_free(&e);
    cache_entry_free(&got);
    done_tmpdir(dir);
}

static void damage_truncate(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "kernel.cubin", p, sizeof p);
    CHECK(truncate(p, 1234) == 0);
}
static void damage_flip(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "kernel.cubin", p, sizeof p);
    nj_buf b;
    nj_buf_init(&b);
    CHECK(nj_read_file(p, &b) == 0);
    if (b.len > 1000) b.data[1000] ^= 0x01;
    CHECK(write_bytes(p, b.data, b.len) == 0);
    nj_buf_free(&b);
}
static void damage_no_manifest(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    CHECK(unlink(p) == 0);
}
static void damage_garbage_manifest(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    const char g[] = "\x89PNG\r\n\x1a\n garbage \x00\x01\x02 more\n";
    CHECK(write_bytes(p, g, sizeof g - 1) == 0);
}
static void damage_text_manifest(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    CHECK(write_bytes(p, "hello = world\n", 14) == 0);
}
static void damage_wrong_key(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    nj_buf b;
    nj_buf_init(&b);
    CHECK(nj_read_file(p, &b) == 0);
    char *k = strstr(b.data, KEY1);
    if (k) k[31] = k[31] == 'f' ? 'e' : 'f';
    CHECK(write_bytes(p, b.data, b.len) == 0);
    nj_buf_free(&b);
}
static void damage_drop_file_line(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    nj_buf b;
    nj_buf_init(&b);
    CHECK(nj_read_file(p, &b) == 0);
    char *l = strstr(b.data, "file log.txt ");
    if (l) *l = '\0';
    CHECK(write_bytes(p, b.data, strlen(b.data)) == 0);
    nj_buf_free(&b);
}
static void damage_truncate_manifest(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    struct stat st;
    CHECK(stat(p, &st) == 0);
    CHECK(truncate(p, st.st_size - 3) == 0); /* cuts the last checksum */
}
static void damage_missing_ptx(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "kernel.ptx", p, sizeof p);
    CHECK(unlink(p) == 0);
}
static void damage_not_a_dir(const char *dir) {
    char p[4096];
    cache_entry_path(dir, KEY1, p, sizeof p);
    tu_rmtree(p);
    CHECK(write_bytes(p, "x", 1) == 0);
}

static void test_corrupt_truncated(void) {
    corrupt_case(damage_truncate, "kernel.cubin: size 1234, manifest says 3000");
}
static void test_corrupt_flipped(void) { corrupt_case(damage_flip, "kernel.cubin: checksum"); }
static void test_corrupt_no_manifest(void) {
    corrupt_case(damage_no_manifest, "manifest.txt: missing");
}
static void test_corrupt_garbage_manifest(void) {
    corrupt_case(damage_garbage_manifest, "manifest.txt");
    corrupt_case(damage_text_manifest, "manifest.txt: line 1");
    corrupt_case(damage_truncate_manifest, "manifest.txt: ");
}
static void test_corrupt_wrong_key(void) { corrupt_case(damage_wrong_key, "manifest.txt: key"); }
static void test_corrupt_unlisted(void) {
    corrupt_case(damage_drop_file_line, "manifest.txt: no file line for log.txt");
}
static void test_corrupt_missing_file(void) {
    corrupt_case(damage_missing_ptx, "kernel.ptx: missing");
}
static void test_corrupt_not_dir(void) {
    corrupt_case(damage_not_a_dir, "not a directory");
}

/* Rewrite the size on `name`'s file line of KEY1's manifest (the checksum stays). */
static void set_manifest_size(const char *dir, const char *name, unsigned long long size) {
    char p[4096], pfx[64];
    file_in_entry(dir, KEY1, "manifest.txt", p, sizeof p);
    nj_buf b, o;
    nj_buf_init(&b);
    nj_buf_init(&o);
    CHECK(nj_read_file(p, &b) == 0);
    snprintf(pfx, sizeof pfx, "file %s ", name);
    char *l = strstr(b.data, pfx);
    REQUIRE(l);
    char *sz = l + strlen(pfx), *sp = strchr(sz, ' ');
    REQUIRE(sp);
    nj_buf_append(&o, b.data, (size_t)(sz - b.data));
    nj_buf_printf(&o, "%llu", size);
    nj_buf_puts(&o, sp);
    CHECK(write_bytes(p, o.data, o.len) == 0);
    nj_buf_free(&b);
    nj_buf_free(&o);
}

/* An entry file larger than NJ_CACHE_FILE_MAX is corrupt before a byte is read or allocated,
 * even when its manifest claims that size (a sparse 4 GiB source.cu made `cache verify` read
 * 4 GiB into memory, and under a memory limit the ENOMEM kept the entry forever). */
static void damage_huge_source(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "source.cu", p, sizeof p);
    CHECK(truncate(p, (off_t)NJ_CACHE_FILE_MAX + 1) == 0); /* sparse */
    set_manifest_size(dir, "source.cu", (unsigned long long)NJ_CACHE_FILE_MAX + 1);
}
static void damage_4g_source(const char *dir) {
    char p[4096];
    file_in_entry(dir, KEY1, "source.cu", p, sizeof p);
    CHECK(truncate(p, (off_t)1 << 32) == 0); /* sparse */
    set_manifest_size(dir, "source.cu", 1ull << 32);
}
static void damage_huge_claim(const char *dir) { /* the manifest alone says 4 GiB */
    set_manifest_size(dir, "kernel.ptx", 1ull << 32);
}
static void test_corrupt_oversized(void) {
    corrupt_case(damage_huge_source, "source.cu: 67108865 bytes, more than the limit");
    corrupt_case(damage_4g_source, "source.cu: 4294967296 bytes, more than the limit");
    corrupt_case(damage_huge_claim, "kernel.ptx: size ");
    /* a store of a file over the limit is refused: it could never be read back */
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e;
    make_entry(&e, 2);
    char err[512] = "";
    char *big = calloc(1, (size_t)NJ_CACHE_FILE_MAX + 1);
    REQUIRE(big);
    CHECK(nj_buf_set(&e.ptx, big, (size_t)NJ_CACHE_FILE_MAX + 1) == 0);
    free(big);
    CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == -1);
    CHECKF(strstr(err, "kernel.ptx") && strstr(err, "limit"), "%s", err);
    int n, s;
    count_dir(dir, &n, &s);
    CHECK(n == 0 && s == 0);
    cache_entry_free(&e);
    done_tmpdir(dir);
}

/* cache_store over a bad entry replaces it. */
static void test_store_replaces_bad(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e, got;
    make_entry(&e, 3);
    cache_entry_init(&got);
    char err[512], why[512];
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    damage_truncate(dir);
    CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    CHECK(entry_eq(&e, &got));
    int n, s;
    count_dir(dir, &n, &s);
    CHECK(n == 1 && s == 0);
    /* and over a plain file in the entry's place */
    damage_not_a_dir(dir);
    CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    count_dir(dir, &n, &s);
    CHECK(n == 1 && s == 0);
    cache_entry_free(&e);
    cache_entry_free(&got);
    done_tmpdir(dir);
}

/* A store that cannot write leaves no temporary behind. */
static void test_store_error_cleans_up(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e;
    make_entry(&e, 4);
    char err[512] = "";
    char bad[4096];
    snprintf(bad, sizeof bad, "%s/file", dir);
    REQUIRE(write_bytes(bad, "x", 1) == 0);
    CHECK(cache_store(bad, KEY1, &e, err, sizeof err) == -1); /* dir is a file */
    CHECK(err[0] != '\0');
    /* an existing entry we cannot read: store fails cleanly (skip as root: root reads it) */
    if (geteuid() != 0) {
        REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
        char ep[2048];
        cache_entry_path(dir, KEY1, ep, sizeof ep);
        char mp[4096];
        snprintf(mp, sizeof mp, "%s/manifest.txt", ep);
        CHECK(chmod(mp, 0) == 0);
        cache_entry got;
        cache_entry_init(&got);
        char why[512];
        CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_ERROR);
        CHECK(exists(ep)); /* not thrown away for a permission problem */
        CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == -1);
        int n, s;
        count_dir(dir, &n, &s);
        CHECK(n == 1 && s == 0);
        CHECK(chmod(mp, 0644) == 0);
        cache_entry_free(&got);
    }
    cache_entry_free(&e);
    done_tmpdir(dir);
}

/* ---- many processes ---- */

static int wait_all(pid_t *pids, int n) {
    int ok = 0;
    for (int i = 0; i < n; i++) {
        int st;
        if (pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0)
            ok++;
    }
    return ok;
}

#define NPROC 16

/* fork NPROC children running child(dir, i); they block on a pipe until all exist. */
static int run_children(const char *dir, int (*child)(const char *, int)) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pids[NPROC];
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(fds[1]);
            char c;
            while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
            }
            close(fds[0]);
            _exit(child(dir, i));
        }
    }
    close(fds[0]);
    close(fds[1]); /* EOF for everyone at once: the start signal */
    return wait_all(pids, NPROC);
}

static int child_store(const char *dir, int i) {
    (void)i;
    cache_entry e;
    make_entry(&e, 5);
    char err[512];
    int rc = cache_store(dir, KEY1, &e, err, sizeof err);
    if (rc) fprintf(stderr, "  child %d: store: %s\n", i, err);
    cache_entry_free(&e);
    return rc ? 1 : 0;
}

static int child_lookup_store(const char *dir, int i) {
    cache_entry want, got;
    make_entry(&want, 5);
    cache_entry_init(&got);
    char why[512], err[512];
    int rc = 0;
    cache_result r = cache_lookup(dir, KEY1, &got, why, sizeof why);
    if (r == CACHE_HIT) {
        if (!entry_eq(&want, &got)) { fprintf(stderr, "  child %d: wrong data\n", i); rc = 1; }
    } else if (r == CACHE_MISS || r == CACHE_CORRUPT) {
        if (cache_store(dir, KEY1, &want, err, sizeof err) != 0) {
            fprintf(stderr, "  child %d: store: %s\n", i, err);
            rc = 1;
        }
    } else {
        fprintf(stderr, "  child %d: lookup error: %s\n", i, why);
        rc = 1;
    }
    cache_entry_free(&want);
    cache_entry_free(&got);
    return rc;
}

static void check_one_good(const char *dir) {
    int n, s;
    count_dir(dir, &n, &s);
    CHECKF(n == 1, "%d entries", n);
    CHECKF(s == 0, "%d temporaries left", s);
    char ep[4096];
    cache_entry_path(dir, KEY1, ep, sizeof ep);
    CHECK(exists(ep));
    cache_entry want, got;
    make_entry(&want, 5);
    cache_entry_init(&got);
    char why[512];
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    CHECK(entry_eq(&want, &got));
    cache_entry_free(&want);
    cache_entry_free(&got);
}

static void test_concurrent_store(void) {
    for (int round = 0; round < 5; round++) {
        char *dir = dup_tmpdir();
        REQUIRE(dir);
        int ok = run_children(dir, child_store);
        CHECKF(ok == NPROC, "round %d: %d of %d children succeeded", round, ok, NPROC);
        check_one_good(dir);
        done_tmpdir(dir);
    }
}

static void test_concurrent_repair(void) {
    for (int round = 0; round < 5; round++) {
        char *dir = dup_tmpdir();
        REQUIRE(dir);
        cache_entry e;
        make_entry(&e, 5);
        char err[512];
        int stored = cache_store(dir, KEY1, &e, err, sizeof err) == 0;
        cache_entry_free(&e);
        REQUIRE(stored);
        if (round % 2) damage_flip(dir);
        else damage_truncate(dir);
        int ok = run_children(dir, child_lookup_store);
        CHECKF(ok == NPROC, "round %d: %d of %d children succeeded", round, ok, NPROC);
        check_one_good(dir);
        done_tmpdir(dir);
    }
}

/* ---- foreach / clear ---- */

typedef struct visit_log {
    int n, bad;
    char bad_key[33];
    char why[512];
} visit_log;

static void visit(const char *key, const char *entry_dir, int ok, const char *why, void *user) {
    visit_log *v = user;
    v->n++;
    CHECK(strstr(entry_dir, key) != NULL);
    if (!ok) {
        v->bad++;
        snprintf(v->bad_key, sizeof v->bad_key, "%s", key);
        snprintf(v->why, sizeof v->why, "%s", why);
    } else {
        CHECK(why && why[0] == '\0');
    }
}

static void test_foreach(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    visit_log v = {0, 0, "", ""};
    CHECK(cache_foreach(dir, visit, &v) == 0);
    CHECK(v.n == 0);
    cache_entry e;
    make_entry(&e, 6);
    char err[512];
    CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    CHECK(cache_store(dir, KEY2, &e, err, sizeof err) == 0);
    CHECK(cache_store(dir, KEY3, &e, err, sizeof err) == 0);
    /* scratch names and junk are not entries */
    char p[4096];
    snprintf(p, sizeof p, "%s/v1/tmp.stale1", dir);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/v1/01/not-a-key", dir);
    CHECK(mkdir(p, 0755) == 0);
    memset(&v, 0, sizeof v);
    CHECK(cache_foreach(dir, visit, &v) == 3);
    CHECK(v.n == 3 && v.bad == 0);
    file_in_entry(dir, KEY2, "kernel.cubin", p, sizeof p);
    CHECK(truncate(p, 10) == 0);
    memset(&v, 0, sizeof v);
    CHECK(cache_foreach(dir, visit, &v) == 3);
    CHECK(v.n == 3 && v.bad == 1);
    CHECK(!strcmp(v.bad_key, KEY2));
    CHECKF(strstr(v.why, "kernel.cubin: size 10") != NULL, "%s", v.why);
    /* foreach only reports: the bad entry is still there */
    cache_entry_path(dir, KEY2, p, sizeof p);
    CHECK(exists(p));
    CHECK(cache_foreach(dir, NULL, NULL) == 3);
    cache_entry_free(&e);
    snprintf(p, sizeof p, "%s/v1/01/not-a-key", dir);
    rmdir(p);
    done_tmpdir(dir);
}

static void test_clear(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    char err[512];
    CHECK(cache_clear(dir, err, sizeof err) == 0); /* nothing there */
    cache_entry e;
    make_entry(&e, 7);
    CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    CHECK(cache_store(dir, KEY2, &e, err, sizeof err) == 0);
    CHECK(cache_store(dir, KEY3, &e, err, sizeof err) == 0);
    damage_truncate(dir); /* bad entries are removed too */
    char p[4096];
    snprintf(p, sizeof p, "%s/v1/tmp.stale1", dir);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/v1/tmp.stale1/kernel.cubin", dir);
    CHECK(write_bytes(p, "half", 4) == 0);
    snprintf(p, sizeof p, "%s/v1/trash.stale2", dir);
    CHECK(mkdir(p, 0755) == 0);
    int r = cache_clear(dir, err, sizeof err);
    CHECKF(r == 3, "clear returned %d (%s)", r, err);
    int n, s;
    count_dir(dir, &n, &s);
    CHECK(n == 0 && s == 0);
    CHECK(cache_foreach(dir, NULL, NULL) == 0);
    snprintf(p, sizeof p, "%s/v1/01", dir);
    CHECK(!exists(p)); /* empty prefix dirs go too */
    /* the cache works after clear */
    CHECK(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    cache_entry got;
    cache_entry_init(&got);
    char why[512];
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) == CACHE_HIT);
    CHECK(cache_clear(dir, err, sizeof err) == 1);
    cache_entry_free(&got);
    cache_entry_free(&e);
    done_tmpdir(dir);
}

/* Run fn(dir) in a child process as a user that file permissions apply to: the current one,
 * or uid/gid 65534 (nobody) when running as root (dir is given to that user first).
 * @return fn's result (0 = pass), 77 when the child could not drop root. */
static int as_plain_user(const char *dir, int (*fn)(const char *dir)) {
    if (geteuid() == 0 && chown(dir, 65534, 65534) != 0) return 77;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 77;
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0 || geteuid() == 0))
            _exit(77);
        _exit(fn(dir));
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 1;
    return WEXITSTATUS(st);
}

/* A prefix directory that cannot be opened (EACCES) was skipped silently: `cache clear`
 * said "removed 0 entries" and succeeded with the entries still there. */
static int child_clear_unreadable_prefix(const char *dir) {
    cache_entry e;
    make_entry(&e, 7);
    char err[512] = "", p[4096];
    int bad = 0;
    if (cache_store(dir, KEY1, &e, err, sizeof err) != 0 ||
        cache_store(dir, KEY2, &e, err, sizeof err) != 0) {
        fprintf(stderr, "  child: store: %s\n", err);
        cache_entry_free(&e);
        return 1;
    }
    cache_entry_free(&e);
    snprintf(p, sizeof p, "%s/v1/%.2s", dir, KEY1);
    if (chmod(p, 0) != 0) return 1;
    int r = cache_clear(dir, err, sizeof err);
    if (r != -1 || !strstr(err, "v1/01") || !strstr(err, "Permission denied")) {
        fprintf(stderr, "  child: clear returned %d (%s), want -1 naming v1/01\n", r, err);
        bad = 1;
    }
    if (chmod(p, 0755) != 0) return 1;
    char why[512];
    /* the other prefix was still cleared; the unreadable one's entry is still there */
    if (cache_lookup(dir, KEY2, NULL, why, sizeof why) != CACHE_MISS ||
        cache_lookup(dir, KEY1, NULL, why, sizeof why) != CACHE_HIT) {
        fprintf(stderr, "  child: after clear: KEY2 should be gone, KEY1 kept\n");
        bad = 1;
    }
    if (cache_clear(dir, err, sizeof err) != 1) bad = 1;
    return bad;
}

static void test_clear_unreadable_prefix(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    int r = as_plain_user(dir, child_clear_unreadable_prefix);
    done_tmpdir(dir);
    if (r == 77) SKIP("skipped: running as root and cannot switch to uid 65534");
    CHECKF(r == 0, "child exited %d", r);
}

/* ---- hostile cache directories (issue 11) ---- */

static int count_names(const char *d) {
    DIR *dd = opendir(d);
    if (!dd) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(dd);
    return n;
}

/* <cache>/v1/01 -> elsewhere: compile wrote the entry outside the cache and deleted files
 * there, and `cache clear` deleted outside data. */
static void test_symlinked_prefix(void) {
    char *dir = dup_tmpdir(), *outside = dup_tmpdir();
    REQUIRE(dir && outside);
    cache_entry e, got;
    make_entry(&e, 1);
    cache_entry_init(&got);
    char p[4096], why[512] = "", err[512] = "";
    /* outside: a precious file and a valid-looking entry under KEY1's name */
    snprintf(p, sizeof p, "%s/precious", outside);
    REQUIRE(write_bytes(p, "data", 4) == 0);
    char other[4096];
    snprintf(other, sizeof other, "%s/other", outside);
    REQUIRE(mkdir(other, 0700) == 0);
    REQUIRE(cache_store(other, KEY1, &e, err, sizeof err) == 0);
    snprintf(p, sizeof p, "%s/v1", dir);
    REQUIRE(mkdir(p, 0755) == 0);
    char link[4096], target[4096];
    snprintf(link, sizeof link, "%s/v1/01", dir);
    snprintf(target, sizeof target, "%s/other/v1/01", outside);
    REQUIRE(symlink(target, link) == 0);
    /* lookup: the entry behind the link is not ours */
    CHECK(cache_lookup(dir, KEY1, &got, why, sizeof why) != CACHE_HIT);
    CHECK(cache_lookup(other, KEY1, NULL, why, sizeof why) == CACHE_HIT); /* untouched */
    /* store: goes into a real directory in the cache, nothing outside changes */
    REQUIRE(symlink(target, link) == 0 || errno == EEXIST);
    CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    CHECK(count_names(outside) == 2 && cache_lookup(other, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    /* clear: removes the link, not what it points to */
    tu_rmtree(link);
    REQUIRE(symlink(target, link) == 0);
    CHECK(cache_clear(dir, err, sizeof err) >= 0);
    CHECK(lstat(link, &st) != 0);
    CHECK(count_names(outside) == 2 && cache_lookup(other, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    /* the same with v1 itself a link: refused, outside untouched */
    tu_rmtree(dir);
    REQUIRE(mkdir(dir, 0700) == 0);
    snprintf(link, sizeof link, "%s/v1", dir);
    snprintf(target, sizeof target, "%s/other/v1", outside);
    REQUIRE(symlink(target, link) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) != CACHE_HIT);
    CHECK(cache_store(dir, KEY2, &e, err, sizeof err) == -1);
    CHECKF(strstr(err, "v1") != NULL, "%s", err);
    CHECK(cache_clear(dir, err, sizeof err) == -1);
    CHECK(cache_foreach(dir, NULL, NULL) <= 0);
    CHECK(cache_lookup(other, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    snprintf(p, sizeof p, "%s/other/v1/%.2s", outside, KEY2);
    CHECK(lstat(p, &st) != 0); /* nothing stored outside */
    cache_entry_free(&e);
    cache_entry_free(&got);
    done_tmpdir(dir);
    done_tmpdir(outside);
}

/* A planted self-consistent entry (matching sizes and checksums) whose cubin is not a CUDA
 * ELF, or is one for another GPU, passed verification and loaded as a hit. */
static void test_cubin_not_elf(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e;
    char err[512] = "", why[512] = "";
    make_entry(&e, 1);
    nj_buf_set(&e.cubin, "#!/bin/sh\necho hello\n", 21);
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_CORRUPT);
    CHECKF(strstr(why, "kernel.cubin") && strstr(why, "ELF"), "%s", why);
    /* an ELF for sm_100 in an entry made for sm_90a */
    unsigned char bin[256];
    memset(bin, 7, sizeof bin);
    set_cuda_elf(bin, 100);
    nj_buf_set(&e.cubin, bin, sizeof bin);
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_CORRUPT);
    CHECKF(strstr(why, "sm_100") && strstr(why, "sm_90"), "%s", why);
    /* an x86 ELF */
    set_cuda_elf(bin, 90);
    bin[18] = 62;
    nj_buf_set(&e.cubin, bin, sizeof bin);
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_CORRUPT);
    /* the right one */
    set_cuda_elf(bin, 90);
    nj_buf_set(&e.cubin, bin, sizeof bin);
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    CHECKF(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT, "%s", why);
    cache_entry_free(&e);
    done_tmpdir(dir);
}

/* A cache directory others can write to is not used; one that belongs to another user is
 * used read-only; a new one is made 0700. */
static void test_untrusted_dir(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e;
    make_entry(&e, 1);
    char err[512] = "", why[512] = "", sub[4096];
    snprintf(sub, sizeof sub, "%s/new/cache", dir);
    CHECKF(cache_store(sub, KEY1, &e, err, sizeof err) == 0, "%s", err);
    struct stat st;
    CHECK(stat(sub, &st) == 0 && (st.st_mode & 07777) == 0700);
    CHECK(cache_check_dir(sub, why, sizeof why) == CACHE_TRUSTED);
    REQUIRE(chmod(sub, 0777) == 0);
    CHECK(cache_check_dir(sub, why, sizeof why) == CACHE_UNTRUSTED);
    CHECKF(strstr(why, "writable by other users") != NULL, "%s", why);
    CHECK(cache_store(sub, KEY2, &e, err, sizeof err) == -1);
    CHECKF(strstr(err, "writable by other users") != NULL, "%s", err);
    CHECK(cache_lookup(sub, KEY1, NULL, why, sizeof why) == CACHE_ERROR);
    CHECK(cache_foreach(sub, NULL, NULL) == 1); /* verify/list still report what is there */
    REQUIRE(chmod(sub, 01777) == 0); /* sticky, like /tmp: others cannot replace our files */
    CHECK(cache_check_dir(sub, why, sizeof why) == CACHE_TRUSTED);
    CHECK(cache_lookup(sub, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    REQUIRE(chmod(sub, 0770) == 0);
    CHECK(cache_check_dir(sub, why, sizeof why) == CACHE_UNTRUSTED);
    REQUIRE(chmod(sub, 0755) == 0);
    if (geteuid() == 0 && chown(sub, 12345, 12345) == 0) { /* only root can give it away */
        CHECK(cache_check_dir(sub, why, sizeof why) == CACHE_READ_ONLY);
        CHECKF(strstr(why, "another user") != NULL, "%s", why);
        CHECK(cache_lookup(sub, KEY1, NULL, why, sizeof why) == CACHE_HIT);
        CHECK(cache_store(sub, KEY2, &e, err, sizeof err) == -1);
        CHECKF(strstr(err, "another user") != NULL, "%s", err);
        CHECK(cache_clear(sub, err, sizeof err) == -1);
        CHECK(cache_lookup(sub, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    }
    cache_entry_free(&e);
    done_tmpdir(dir);
}

static int has_scratch(const char *dir) {
    int n, s;
    count_dir(dir, &n, &s);
    return s;
}

/* Only the top directory was checked: with v1, a prefix or an entry directory writable by
 * others (or, as root, one that belongs to another user) anyone could replace an entry, and it
 * was used as a hit without a word. Each level now follows the top directory's rule. */
static void test_untrusted_subdirs(void) {
    char *dir = dup_tmpdir();
    REQUIRE(dir);
    cache_entry e;
    make_entry(&e, 1);
    char err[512] = "", why[512] = "", v1[4096], pfx[4096], ep[4096], ep3[4096];
    REQUIRE(cache_store(dir, KEY1, &e, err, sizeof err) == 0);
    REQUIRE(cache_store(dir, KEY2, &e, err, sizeof err) == 0);
    snprintf(v1, sizeof v1, "%s/v1", dir);
    snprintf(pfx, sizeof pfx, "%s/v1/01", dir);
    cache_entry_path(dir, KEY1, ep, sizeof ep);
    cache_entry_path(dir, KEY3, ep3, sizeof ep3);

    /* the top directory writable by others: not used, and foreach (cache list/verify) counts
     * none of its entries good (it listed them as ok) */
    REQUIRE(chmod(dir, 0777) == 0);
    CHECK(cache_check_dir(dir, why, sizeof why) == CACHE_UNTRUSTED);
    {
        visit_log vr = {0, 0, "", ""};
        CHECK(cache_foreach(dir, visit, &vr) == 2);
        CHECKF(vr.bad == 2 && strstr(vr.why, "writable by other users"), "%d bad: %s", vr.bad,
               vr.why);
    }
    REQUIRE(chmod(dir, 0700) == 0);

    /* v1 writable by others: not used at all, the context is told (cache_check_dir) */
    REQUIRE(chmod(v1, 0777) == 0);
    CHECK(cache_check_dir(dir, why, sizeof why) == CACHE_UNTRUSTED);
    CHECKF(strstr(why, "/v1") && strstr(why, "writable by other users"), "%s", why);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_ERROR);
    CHECKF(strstr(why, "/v1") && strstr(why, "writable by other users"), "%s", why);
    CHECK(cache_store(dir, KEY3, &e, err, sizeof err) == -1);
    CHECKF(strstr(err, "writable by other users") != NULL, "%s", err);
    CHECK(!exists(ep3) && !has_scratch(dir));
    CHECK(cache_clear(dir, err, sizeof err) == -1);
    CHECK(exists(ep));
    REQUIRE(chmod(v1, 01777) == 0); /* sticky: as for the top directory, fine */
    CHECK(cache_check_dir(dir, why, sizeof why) == CACHE_TRUSTED);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    REQUIRE(chmod(v1, 0755) == 0);

    /* a prefix directory writable by its group: its entries are neither read nor written */
    REQUIRE(chmod(pfx, 0775) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_ERROR);
    CHECKF(strstr(why, "v1/01") && strstr(why, "writable by other users"), "%s", why);
    CHECK(cache_lookup(dir, KEY2, NULL, why, sizeof why) == CACHE_HIT); /* another prefix */
    CHECK(cache_store(dir, KEY3, &e, err, sizeof err) == -1);
    CHECKF(strstr(err, "v1/01") && strstr(err, "writable by other users"), "%s", err);
    CHECK(!exists(ep3) && !has_scratch(dir));
    visit_log v = {0, 0, "", ""};
    CHECK(cache_foreach(dir, visit, &v) == 2); /* verify names it */
    CHECKF(v.bad == 1 && !strcmp(v.bad_key, KEY1) && strstr(v.why, "writable by other users"),
           "%d bad: %s %s", v.bad, v.bad_key, v.why);
    CHECK(exists(ep)); /* only reported */
    REQUIRE(chmod(pfx, 0755) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT);

    /* an entry directory writable by others: corrupt, moved aside and rebuilt */
    REQUIRE(chmod(ep, 0777) == 0);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_CORRUPT);
    CHECKF(strstr(why, "writable by other users") != NULL, "%s", why);
    CHECK(!exists(ep) && !has_scratch(dir));
    CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
    CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT);

    /* a file of an entry writable by others (the manifest or a payload file): anyone could
     * rewrite it in place, checksums and all; corrupt, moved aside and rebuilt (it was a hit) */
    static const char *const files[] = {"manifest.txt", "kernel.cubin"};
    for (int i = 0; i < 2; i++) {
        char fp[4400];
        snprintf(fp, sizeof fp, "%s/%s", ep, files[i]);
        REQUIRE(chmod(fp, i ? 0666 : 0664) == 0);
        CHECKF(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_CORRUPT, "%s", files[i]);
        CHECKF(strstr(why, files[i]) && strstr(why, "writable by other users"), "%s", why);
        CHECK(!exists(ep) && !has_scratch(dir));
        CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
        CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    }

    /* another user's directories inside our cache (only root can give them away) */
    if (geteuid() == 0 && chown(ep, 12345, 12345) == 0) {
        CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_CORRUPT);
        CHECKF(strstr(why, "another user") != NULL, "%s", why);
        CHECKF(cache_store(dir, KEY1, &e, err, sizeof err) == 0, "%s", err);
        REQUIRE(chown(pfx, 12345, 12345) == 0);
        CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_ERROR);
        CHECKF(strstr(why, "v1/01") && strstr(why, "another user"), "%s", why);
        CHECK(cache_store(dir, KEY3, &e, err, sizeof err) == -1);
        CHECK(!exists(ep3));
        REQUIRE(chown(pfx, 0, 0) == 0);
        REQUIRE(chown(v1, 12345, 12345) == 0);
        CHECK(cache_check_dir(dir, why, sizeof why) == CACHE_UNTRUSTED);
        CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_ERROR);
        CHECKF(strstr(why, "another user") != NULL, "%s", why);
        REQUIRE(chown(v1, 0, 0) == 0);
        CHECK(cache_lookup(dir, KEY1, NULL, why, sizeof why) == CACHE_HIT);
    }
    cache_entry_free(&e);
    done_tmpdir(dir);
}

/* ---- default dir ---- */

static char *save_env(const char *name) {
    const char *v = getenv(name);
    if (!v) return NULL;
    char *c = malloc(strlen(v) + 1);
    if (c) strcpy(c, v);
    return c;
}

static void restore_env(const char *name, char *v) {
    if (v) setenv(name, v, 1);
    else unsetenv(name);
    free(v);
}

static void test_default_dir(void) {
    char *s1 = save_env("NVFP4JIT_CACHE_DIR"), *s2 = save_env("XDG_CACHE_HOME"),
         *s3 = save_env("HOME");
    char out[4096];
    setenv("NVFP4JIT_CACHE_DIR", "/explicit/dir", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    CHECK(cache_default_dir(out, sizeof out) == 0 && !strcmp(out, "/explicit/dir"));
    setenv("NVFP4JIT_CACHE_DIR", "", 1);
    CHECK(cache_default_dir(out, sizeof out) == 0 && !strcmp(out, "/xdg/nvfp4jit"));
    unsetenv("NVFP4JIT_CACHE_DIR");
    CHECK(cache_default_dir(out, sizeof out) == 0 && !strcmp(out, "/xdg/nvfp4jit"));
    setenv("XDG_CACHE_HOME", "", 1);
    CHECK(cache_default_dir(out, sizeof out) == 0 && !strcmp(out, "/home/u/.cache/nvfp4jit"));
    setenv("XDG_CACHE_HOME", "relative", 1); /* invalid per the XDG spec: ignored */
    CHECK(cache_default_dir(out, sizeof out) == 0 && !strcmp(out, "/home/u/.cache/nvfp4jit"));
    unsetenv("XDG_CACHE_HOME");
    CHECK(cache_default_dir(out, sizeof out) == 0 && !strcmp(out, "/home/u/.cache/nvfp4jit"));
    setenv("HOME", "", 1);
    CHECK(cache_default_dir(out, sizeof out) == -1);
    unsetenv("HOME");
    CHECK(cache_default_dir(out, sizeof out) == -1);
    setenv("HOME", "/home/u", 1);
    char small[8];
    CHECK(cache_default_dir(small, sizeof small) == -2); /* does not fit */
    CHECK(small[0] == '\0');
    restore_env("NVFP4JIT_CACHE_DIR", s1);
    restore_env("XDG_CACHE_HOME", s2);
    restore_env("HOME", s3);
}

const test_case tests_cache[] = {
    {"key_and_path", test_key_and_path},
    {"round_trip", test_round_trip},
    {"miss", test_miss},
    {"corrupt_truncated", test_corrupt_truncated},
    {"corrupt_flipped", test_corrupt_flipped},
    {"corrupt_no_manifest", test_corrupt_no_manifest},
    {"corrupt_garbage_manifest", test_corrupt_garbage_manifest},
    {"corrupt_wrong_key", test_corrupt_wrong_key},
    {"corrupt_unlisted", test_corrupt_unlisted},
    {"corrupt_missing_file", test_corrupt_missing_file},
    {"corrupt_not_dir", test_corrupt_not_dir},
    {"corrupt_oversized", test_corrupt_oversized},
    {"store_replaces_bad", test_store_replaces_bad},
    {"store_error_cleans_up", test_store_error_cleans_up},
    {"concurrent_store", test_concurrent_store},
    {"concurrent_repair", test_concurrent_repair},
    {"foreach", test_foreach},
    {"clear", test_clear},
    {"clear_unreadable_prefix", test_clear_unreadable_prefix},
    {"default_dir", test_default_dir},
    {"symlinked_prefix", test_symlinked_prefix},
    {"cubin_not_elf", test_cubin_not_elf},
    {"untrusted_dir", test_untrusted_dir},
    {"untrusted_subdirs", test_untrusted_subdirs},
    {0, 0},
};
