/* fuzz_util.c - helpers of the fuzz targets (fuzz.h). */
#define _XOPEN_SOURCE 700
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[4096];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void fuzz_rmtree(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static void rm_tmp(void) {
    if (tmp_dir[0]) fuzz_rmtree(tmp_dir);
}

const char *fuzz_tmpdir(void) {
    if (tmp_dir[0]) return tmp_dir;
    const char *t = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/nvfp4jit-fuzz.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(rm_tmp);
    return tmp_dir;
}

int fuzz_write_file(const char *path, const void *p, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            close(fd);
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return close(fd);
}

char *fuzz_strndup(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
