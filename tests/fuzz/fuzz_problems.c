/* fuzz_problems.c - the problems-file and --groups parsers (src/problems.c).
 *
 * Input: one mode byte, then the text. Mode even: a problems file (prob_parse_text);
 * odd: a --groups string (prob_parse_groups, up to the first NUL). Checked: on success every
 * set is well-formed (printable unique name, at least one group, every number in range) and
 * formatting it back gives text that parses to the same sets; on failure the result is empty
 * and the message is not. */
#include "fuzz.h"

#include <string.h>

#include "common.h"
#include "problems.h"

static void check_set(const prob_set *s) {
    size_t nl = strnlen(s->name, PROB_NAME_MAX);
    FUZZ_CHECK(nl > 0 && nl < PROB_NAME_MAX);
    FUZZ_CHECK(s->count > 0 && s->groups != NULL);
    for (size_t i = 0; i < s->count; i++) {
        const prob_shape *g = &s->groups[i];
        FUZZ_CHECK(g->m >= 0 && g->m <= PROB_MAX_DIM);
        FUZZ_CHECK(g->n >= 0 && g->n <= PROB_MAX_DIM);
        FUZZ_CHECK(g->k >= 0 && g->k <= PROB_MAX_DIM);
    }
}

static int same_groups(const prob_set *a, const prob_set *b) {
    return a->count == b->count &&
           !memcmp(a->groups, b->groups, a->count * sizeof *a->groups);
}

static void put_groups(nj_buf *b, const prob_set *s, const char *sep) {
    for (size_t i = 0; i < s->count; i++)
        FUZZ_CHECK(nj_buf_printf(b, "%s%lldx%lldx%lld", i ? sep : "", (long long)s->groups[i].m,
                                 (long long)s->groups[i].n, (long long)s->groups[i].k) == 0);
}

static void fuzz_text(const char *text, size_t len) {
    prob_file f;
    char err[512] = "";
    if (prob_parse_text(text, len, "fuzz.txt", &f, err, sizeof err) != 0) {
        FUZZ_CHECK(f.count == 0 && f.sets == NULL);
        FUZZ_CHECK(err[0] != '\0' && strlen(err) < sizeof err);
        return;
    }
    nj_buf again;
    nj_buf_init(&again);
    for (size_t i = 0; i < f.count; i++) {
        const prob_set *s = &f.sets[i];
        check_set(s);
        for (const char *c = s->name; *c; c++) FUZZ_CHECK(*c > ' ' && *c < 0x7f && *c != '#');
        FUZZ_CHECK(prob_find(&f, s->name) == s); /* names are unique */
        FUZZ_CHECK(s->line >= 1);
        FUZZ_CHECK(nj_buf_printf(&again, "%s ", s->name) == 0);
        put_groups(&again, s, " ");
        FUZZ_CHECK(nj_buf_puts(&again, "\n") == 0);
    }
    prob_file g;
    FUZZ_CHECK(prob_parse_text(again.data ? again.data : "", again.len, "again.txt", &g, err,
                               sizeof err) == 0);
    FUZZ_CHECK(g.count == f.count);
    for (size_t i = 0; i < f.count; i++) {
        FUZZ_CHECK(!strcmp(g.sets[i].name, f.sets[i].name));
        FUZZ_CHECK(same_groups(&g.sets[i], &f.sets[i]));
    }
    prob_file_free(&g);
    nj_buf_free(&again);
    prob_file_free(&f);
    FUZZ_CHECK(f.count == 0 && f.sets == NULL);
}

static void fuzz_groups(const char *s) {
    prob_set set;
    char err[512] = "";
    if (prob_parse_groups(s, NULL, &set, err, sizeof err) != 0) {
        FUZZ_CHECK(set.count == 0 && set.groups == NULL);
        FUZZ_CHECK(err[0] != '\0');
        return;
    }
    check_set(&set);
    FUZZ_CHECK(!strcmp(set.name, "groups"));
    nj_buf again;
    nj_buf_init(&again);
    put_groups(&again, &set, ",");
    prob_set back;
    FUZZ_CHECK(prob_parse_groups(again.data, "again", &back, err, sizeof err) == 0);
    FUZZ_CHECK(same_groups(&back, &set));
    prob_set copy;
    FUZZ_CHECK(prob_set_copy(&copy, &set) == 0 && same_groups(&copy, &set));
    prob_set_free(&copy);
    prob_set_free(&back);
    nj_buf_free(&again);
    prob_set_free(&set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char *text = fuzz_strndup(data + 1, size - 1);
    if (data[0] & 1) fuzz_groups(text);
    else fuzz_text(text, size - 1);
    free(text);
    return 0;
}
