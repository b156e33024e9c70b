/* fuzz_template.c - the template renderer and its sandbox (src/template.c).
 *
 * Input: the text of a template, written as fuzz.cu into a scratch template directory and
 * rendered with a few parameters (it may include itself or the embedded templates). The
 * sandbox's bounds (instructions, Lua heap, output) must end every render: the status is OK
 * or NVFP4JIT_ERR_TEMPLATE, an error names a template position and leaves the output as it
 * was, a success stays within the output limit. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz.h"

#include <string.h>

#include "common.h"
#include "template.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/templates", fuzz_tmpdir());
    FUZZ_CHECK(nj_mkdirs(dir, 0700) == 0);
    snprintf(path, sizeof path, "%s/fuzz.cu", dir);
    FUZZ_CHECK(fuzz_write_file(path, data, size) == 0);
    nvfp4jit_ctx *ctx = ctx_get();
    /* the override directory, as nvfp4jit_ctx_create reads it from NVFP4JIT_TEMPLATE_DIR */
    FUZZ_CHECK(strlen(dir) < sizeof ctx->template_dir);
    memcpy(ctx->template_dir, dir, strlen(dir) + 1);
    static const tmpl_param p[] = {{"N", 0, 42, NULL},
                                   {"BLOCK_M", 0, 128, NULL},
                                   {"NAME", 1, 0, "kern"},
                                   {"EMPTY", 1, 0, ""},
                                   {"ZERO", 0, 0, NULL}};
    nj_buf out;
    nj_buf_init(&out);
    FUZZ_CHECK(nj_buf_puts(&out, "before|") == 0);
    double t0 = nj_now_ms();
    nvfp4jit_status st = tmpl_render(ctx, "fuzz.cu", p, (int)(sizeof p / sizeof p[0]), &out);
    double ms = nj_now_ms() - t0;
    const char *m = nvfp4jit_last_error(ctx);
    if (st != NVFP4JIT_OK && st != NVFP4JIT_ERR_TEMPLATE)
        fprintf(stderr, "status %d: %s\n", (int)st, m);
    FUZZ_CHECK(st == NVFP4JIT_OK || st == NVFP4JIT_ERR_TEMPLATE);
    FUZZ_CHECK(out.len >= 7 && !memcmp(out.data, "before|", 7));
    FUZZ_CHECK(out.data[out.len] == '\0');
    if (st == NVFP4JIT_OK) {
        FUZZ_CHECK(out.len - 7 <= ((size_t)16 << 20));
    } else {
        if (!strstr(m, "templates/")) fprintf(stderr, "message: %s\n", m);
        FUZZ_CHECK(strstr(m, "templates/") != NULL); /* every error names the template */
        FUZZ_CHECK(out.len == 7);                      /* the output is as it was */
    }
    /* the limits bound a render to well under a second (generous here: sanitizers, CI) */
    if (ms > 30000) fprintf(stderr, "render took %.0f ms\n", ms);
    FUZZ_CHECK(ms < 30000);
    nj_buf_free(&out);
    return 0;
}
