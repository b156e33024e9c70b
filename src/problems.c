/* problems.c - parser of problem sets (problems/NAME.txt and --groups strings). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "problems.h"

#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t err_n, const char *fmt, ...) {
    if (!err || !err_n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_n, fmt, ap);
    va_end(ap);
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* A token for a message: at most 40 bytes, with non-printable bytes as '?'. */
static void quote_token(const char *tok, size_t len, char *out, size_t n) {
    size_t max = len > 40 ? 40 : len, j = 0;
    for (size_t i = 0; i < max && j + 1 < n; i++)
        out[j++] = (tok[i] >= 0x20 && tok[i] < 0x7f) ? tok[i] : '?';
    if (len > max && j + 4 < n) { memcpy(out + j, "...", 3); j += 3; }
    out[j] = '\0';
}

/* Decimal digits only; the value must not exceed PROB_MAX_DIM. @return 0, -1 not a number,
 * -2 out of range. */
static int parse_dim(const char *p, size_t len, int64_t *out) {
    if (len == 0) return -1;
    int64_t v = 0;
    int big = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        if (!big) {
            v = v * 10 + (p[i] - '0');
            if (v > PROB_MAX_DIM) big = 1; /* keep scanning: "1e99" is a syntax error */
        }
    }
    if (big) return -2;
    *out = v;
    return 0;
}

int prob_parse_shape(const char *tok, size_t len, prob_shape *out, char *err, size_t err_n) {
    const char *names = "MNK";
    int64_t v[3];
    size_t start = 0;
    for (int d = 0; d < 3; d++) {
        size_t end = start;
        while (end < len && tok[end] != 'x' && tok[end] != 'X') end++;
        /* the last field runs to the end; an earlier one must stop at an 'x' */
        if ((d < 2 && end == len) || (d == 2 && end != len)) {
            set_err(err, err_n, "expected MxNxK");
            return -1;
        }
        int r = parse_dim(tok + start, end - start, &v[d]);
        if (r == -1) {
            /* say which field when the shape is otherwise right */
            set_err(err, err_n, "expected MxNxK (%c is not a non-negative integer)", names[d]);
            return -1;
        }
        if (r == -2) {
            char q[64];
            quote_token(tok + start, end - start, q, sizeof q);
            set_err(err, err_n, "%c=%s out of range (at most %lld)", names[d], q,
                    (long long)PROB_MAX_DIM);
            return -1;
        }
        start = end + 1;
    }
    out->m = v[0];
    out->n = v[1];
    out->k = v[2];
    return 0;
}

static int push_shape(prob_set *s, size_t *cap, prob_shape sh) {
    if (s->count == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        prob_shape *g = realloc(s->groups, nc * sizeof *g);
        if (!g) return -1;
        s->groups = g;
        *cap = nc;
    }
    s->groups[s->count++] = sh;
    return 0;
}

void prob_set_free(prob_set *s) {
    if (!s) return;
    free(s->groups);
    s->groups = NULL;
    s->count = 0;
}

void prob_file_free(prob_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->count; i++) prob_set_free(&f->sets[i]);
    free(f->sets);
    f->sets = NULL;
    f->count = 0;
}

int prob_set_copy(prob_set *dst, const prob_set *src) {
    *dst = *src;
    dst->groups = NULL;
    if (src->count) {
        dst->groups = malloc(src->count * sizeof *dst->groups);
        if (!dst->groups) { dst->count = 0; return -1; }
        memcpy(dst->groups, src->groups, src->count * sizeof *dst->groups);
    }
    return 0;
}

int prob_parse_groups(const char *s, const char *name, prob_set *out, char *err, size_t err_n) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name ? name : "groups");
    if (!s) s = "";
    size_t cap = 0, tokno = 0;
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *t = p;
        tokno++;
        while (len && is_blank(*t)) { t++; len--; }
        while (len && is_blank(t[len - 1])) len--;
        prob_shape sh;
        char why[160];
        if (prob_parse_shape(t, len, &sh, why, sizeof why)) {
            char q[64];
            quote_token(t, len, q, sizeof q);
            set_err(err, err_n, "group %zu '%s': %s", tokno - 1, q, why);
            prob_set_free(out);
            return -1;
        }
        if (push_shape(out, &cap, sh)) {
            set_err(err, err_n, "out of memory");
            prob_set_free(out);
            return -1;
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* Set names seen so far: open addressing over indices into f->sets (SIZE_MAX = empty), kept
 * at most half full, so the duplicate check is O(1) per set instead of a scan of all sets. */
typedef struct name_index {
    size_t *slot;
    size_t cap; /* a power of two, or 0 */
} name_index;

static size_t *name_slot(const name_index *ix, const prob_file *f, const char *name) {
    size_t mask = ix->cap - 1, i = (size_t)nj_hash64(name, strlen(name)) & mask;
    while (ix->slot[i] != SIZE_MAX && strcmp(f->sets[ix->slot[i]].name, name)) i = (i + 1) & mask;
    return &ix->slot[i];
}

/* Make room for one more name. @return 0, -1 out of memory. */
static int name_index_grow(name_index *ix, const prob_file *f) {
    if (ix->cap && (f->count + 1) * 2 <= ix->cap) return 0;
    name_index n = {NULL, ix->cap ? ix->cap * 2 : 64};
    n.slot = malloc(n.cap * sizeof *n.slot);
    if (!n.slot) return -1;
    for (size_t i = 0; i < n.cap; i++) n.slot[i] = SIZE_MAX;
    for (size_t i = 0; i < f->count; i++) *name_slot(&n, f, f->sets[i].name) = i;
    free(ix->slot);
    *ix = n;
    return 0;
}

/* Parse one line (without its newline). @return 0 (a set was added or the line was empty),
 * -1 on error. */
static int parse_line(const char *line, size_t len, int lineno, const char *fname,
                      prob_file *f, size_t *fcap, name_index *ix, char *err, size_t err_n) {
    const char *hash = memchr(line, '#', len);
    if (hash) len = (size_t)(hash - line);
    size_t i = 0, tokno = 0;
    prob_set set;
    memset(&set, 0, sizeof set);
    size_t gcap = 0;
    while (i < len) {
        while (i < len && is_blank(line[i])) i++;
        if (i == len) break;
        size_t b = i;
        while (i < len && !is_blank(line[i])) i++;
        const char *tok = line + b;
        size_t tl = i - b;
        char q[64];
        quote_token(tok, tl, q, sizeof q);
        tokno++;
        if (tokno == 1) {
            if (tl >= sizeof set.name) {
                set_err(err, err_n, "%s:%d: set name '%s' is too long (at most %d bytes)",
                        fname, lineno, q, PROB_NAME_MAX - 1);
                return -1;
            }
            for (size_t c = 0; c < tl; c++) {
                if ((unsigned char)tok[c] < 0x21 || (unsigned char)tok[c] > 0x7e) {
                    set_err(err, err_n, "%s:%d: set name '%s' has a non-printable byte",
                            fname, lineno, q);
                    return -1;
                }
            }
            memcpy(set.name, tok, tl);
            set.name[tl] = '\0';
            set.line = lineno;
            continue;
        }
        prob_shape sh;
        char why[160];
        if (prob_parse_shape(tok, tl, &sh, why, sizeof why)) {
            set_err(err, err_n, "%s:%d: group %zu '%s': %s", fname, lineno, tokno - 2, q, why);
            prob_set_free(&set);
            return -1;
        }
        if (push_shape(&set, &gcap, sh)) {
            set_err(err, err_n, "out of memory");
            prob_set_free(&set);
            return -1;
        }
    }
    if (tokno == 0) return 0; /* blank or comment line */
    if (set.count == 0) {
        set_err(err, err_n, "%s:%d: set '%s' has no groups (expected: name MxNxK ...)", fname,
                lineno, set.name);
        return -1;
    }
    if (name_index_grow(ix, f)) {
        set_err(err, err_n, "out of memory");
        prob_set_free(&set);
        return -1;
    }
    size_t *slot = name_slot(ix, f, set.name);
    if (*slot != SIZE_MAX) {
        set_err(err, err_n, "%s:%d: duplicate set name '%s' (first on line %d)", fname, lineno,
                set.name, f->sets[*slot].line);
        prob_set_free(&set);
        return -1;
    }
    if (f->count == *fcap) {
        size_t nc = *fcap ? *fcap * 2 : 16;
        prob_set *s = realloc(f->sets, nc * sizeof *s);
        if (!s) {
            set_err(err, err_n, "out of memory");
            prob_set_free(&set);
            return -1;
        }
        f->sets = s;
        *fcap = nc;
    }
    *slot = f->count;
    f->sets[f->count++] = set;
    return 0;
}

int prob_parse_text(const char *text, size_t len, const char *filename, prob_file *out,
                    char *err, size_t err_n) {
    memset(out, 0, sizeof *out);
    if (!filename) filename = "<problems>";
    size_t fcap = 0, pos = 0;
    name_index ix = {NULL, 0};
    int lineno = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        if (memchr(text + pos, '\0', ll)) {
            set_err(err, err_n, "%s:%d: NUL byte in the line", filename, lineno);
            free(ix.slot);
            prob_file_free(out);
            return -1;
        }
        if (parse_line(text + pos, ll, lineno, filename, out, &fcap, &ix, err, err_n)) {
            free(ix.slot);
            prob_file_free(out);
            return -1;
        }
        pos += ll + (nl ? 1 : 0);
    }
    free(ix.slot);
    return 0;
}

int prob_load_file(const char *path, prob_file *out, char *err, size_t err_n) {
    memset(out, 0, sizeof *out);
    if (!path || !*path || strlen(path) >= PATH_MAX) {
        /* never shorten a path: a shortened one names another file */
        set_err(err, err_n, "problems file path is empty or longer than %d bytes", PATH_MAX - 1);
        return -1;
    }
    nj_buf b;
    nj_buf_init(&b);
    if (nj_read_file_max(path, &b, PROB_FILE_MAX) != 0) {
        int e = errno;
        nj_buf_free(&b);
        if (e == EFBIG)
            set_err(err, err_n, "problems file '%s' is larger than %zu bytes", path,
                    (size_t)PROB_FILE_MAX);
        else
            set_err(err, err_n, "cannot read problems file '%s': %s", path, nj_file_strerror(e));
        return -1;
    }
    int r = prob_parse_text(b.data ? b.data : "", b.len, path, out, err, err_n);
    nj_buf_free(&b);
    return r;
}

const prob_set *prob_find(const prob_file *f, const char *name) {
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->sets[i].name, name) == 0) return &f->sets[i];
    return NULL;
}
