/* cmd_cache.c - `nvfp4jit cache dir|list|verify|clear`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* Find "name = value" in a manifest; copies value (trimmed) into out. @return 0 if found. */
static int manifest_field(const char *text, const char *name, char *out, size_t n) {
    size_t nl = strlen(name);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && (*p == ' ' || *p == '\t')) p++;
        if ((size_t)(line + len - p) > nl && !strncmp(p, name, nl)) {
            const char *q = p + nl;
            while (q < line + len && (*q == ' ' || *q == '\t')) q++;
            if (q < line + len && *q == '=') {
                q++;
                while (q < line + len && (*q == ' ' || *q == '\t')) q++;
                const char *e = line + len;
                while (e > q && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
                snprintf(out, n, "%.*s", (int)(e - q), q);
                return 0;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return -1;
}

typedef struct visit_state {
    int verify; /* 0 = list, 1 = verify */
    int entries, bad;
    const char *dir; /* the cache directory */
} visit_state;

static char manifest_text[(1 << 20) + 1]; /* the library's manifest limit, and a NUL */

static void visit(const char *key, const char *entry_dir, int ok, const char *why, void *user) {
    visit_state *st = user;
    st->entries++;
    if (!ok) st->bad++;
    if (st->verify) {
        if (!ok) printf("BAD %s: %s (%s)\n", key, why && *why ? why : "failed verification",
                        entry_dir);
        return;
    }
    /* through the library: each directory below the cache opened with O_NOFOLLOW, so a
     * symlinked prefix or entry directory is not followed */
    char variant[256] = "-", arch[64] = "-";
    const char *m = manifest_text;
    if (nvfp4jit_ext_cache_manifest(st->dir, key, manifest_text, sizeof manifest_text) >= 0) {
        manifest_field(m, "variant", variant, sizeof variant);
        if (manifest_field(m, "arch", arch, sizeof arch))
            manifest_field(m, "key.arch", arch, sizeof arch);
    }
    printf("%s  %-3s  variant=%s  arch=%s", key, ok ? "ok" : "BAD", variant, arch);
    if (!ok && why && *why) printf("  (%s)", why);
    printf("\n");
}

int cmd_cache(int argc, char **argv) {
    static const tool_usage u = {
        "cache", "dir|list|verify|clear",
        "  dir     print the cache directory\n"
        "  list    one line per entry: key, ok/BAD, variant and arch from its manifest\n"
        "  verify  check every entry (sizes and checksums); exit 1 naming any bad one\n"
        "  clear   remove every entry and temporary file; print how many entries went"};
    const tool_opt opts[] = {{NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0}};
    char *pos[2];
    int np = 0;
    int r = tool_parse(&u, opts, argc, argv, pos, 1, &np);
    if (r >= 0) return r;
    if (np == 0) return tool_bad_usage(u.cmd, "missing action: dir, list, verify or clear");
    const char *action = pos[0];
    if (strcmp(action, "dir") && strcmp(action, "list") && strcmp(action, "verify") &&
        strcmp(action, "clear"))
        return tool_bad_usage(u.cmd, "unknown action '%s' (expected dir, list, verify or clear)",
                              action);
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) return 1;
    const char *dir = nvfp4jit_cache_dir(ctx);
    int rc = 0;
    if (!dir || !*dir) {
        rc = tool_fail(u.cmd, "no cache directory could be determined (set NVFP4JIT_CACHE_DIR "
                              "or HOME, or give --cache-dir)");
    } else if (!strcmp(action, "dir")) {
        printf("%s\n", dir);
    } else if (!strcmp(action, "clear")) {
        char err[512] = "";
        int n = nvfp4jit_ext_cache_clear(dir, err, sizeof err);
        if (n < 0) rc = tool_fail(u.cmd, "cannot clear %s: %s", dir, err);
        else printf("removed %d entr%s from %s\n", n, n == 1 ? "y" : "ies", dir);
    } else {
        visit_state st = {!strcmp(action, "verify"), 0, 0, dir};
        int n = nvfp4jit_ext_cache_foreach(dir, visit, &st);
        if (n < 0) {
            rc = tool_fail(u.cmd, "cannot read the cache directory %s", dir);
        } else if (st.verify) {
            printf("%d entr%s, %d bad in %s\n", st.entries, st.entries == 1 ? "y" : "ies",
                   st.bad, dir);
            if (st.bad) rc = 1;
        } else if (st.entries == 0) {
            printf("(no entries in %s)\n", dir);
        }
    }
    nvfp4jit_ctx_destroy(ctx);
    return rc;
}
