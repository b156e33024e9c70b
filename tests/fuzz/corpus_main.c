/* corpus_main.c - runs the fuzz targets' entry functions over their committed corpora as
 * plain regression tests (CTest fuzz_corpus; no clang or libFuzzer needed).
 *
 *   nvfp4jit_fuzz_corpus DIR               every target over each file of DIR/<target>/
 *   nvfp4jit_fuzz_corpus TARGET FILE...    one target over the given files (a reproducer)
 *
 * A target aborts on a broken invariant (and the sanitizer build reports memory errors), so
 * the run fails on the first bad file, after printing its name. A target directory without
 * files is an error too (a lost corpus must not pass silently). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define TARGETS(X) X(problems) X(variant) X(cache) X(tune) X(template)
#define DECL(n) int fuzz_one_##n(const uint8_t *data, size_t size);
TARGETS(DECL)
#define ROW(n) {#n, fuzz_one_##n},
static const struct {
    const char *name;
    int (*one)(const uint8_t *, size_t);
} targets[] = {TARGETS(ROW)};
#define NTARGETS (sizeof targets / sizeof targets[0])

static int run_file(int t, const char *path) {
    nj_buf b;
    nj_buf_init(&b);
    if (nj_read_file(path, &b) != 0) {
        fprintf(stderr, "fuzz_corpus: cannot read %s\n", path);
        return -1;
    }
    fprintf(stderr, "fuzz_corpus: %s %s\n", targets[t].name, path);
    /* an exact-size heap copy, so that ASan sees a read past the input's end */
    uint8_t *copy = malloc(b.len ? b.len : 1);
    if (!copy) return -1;
    if (b.len) memcpy(copy, b.data, b.len);
    targets[t].one(copy, b.len);
    free(copy);
    nj_buf_free(&b);
    return 0;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(int t, const char *root) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, targets[t].name);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz_corpus: no corpus directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (!nn) break;
        names = nn;
        names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
        if (!names[n]) break;
        sprintf(names[n], "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp);
    int bad = n == 0;
    if (!n) fprintf(stderr, "fuzz_corpus: %s has no files\n", dir);
    for (size_t i = 0; i < n; i++) {
        if (!bad && run_file(t, names[i])) bad = 1;
        free(names[i]);
    }
    free(names);
    if (!bad) printf("fuzz_corpus: %s: %zu files pass\n", targets[t].name, n);
    return bad ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 2) {
        int bad = 0;
        for (size_t t = 0; t < NTARGETS; t++) bad |= run_dir((int)t, argv[1]) != 0;
        return bad;
    }
    if (argc >= 3) {
        for (size_t t = 0; t < NTARGETS; t++) {
            if (strcmp(argv[1], targets[t].name)) continue;
            for (int i = 2; i < argc; i++)
                if (run_file((int)t, argv[i])) return 1;
            printf("fuzz_corpus: %s: %d files pass\n", targets[t].name, argc - 2);
            return 0;
        }
    }
    fprintf(stderr, "usage: %s CORPUS_DIR | %s TARGET FILE...\ntargets:", argv[0], argv[0]);
    for (size_t t = 0; t < NTARGETS; t++) fprintf(stderr, " %s", targets[t].name);
    fprintf(stderr, "\n");
    return 2;
}
