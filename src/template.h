/* template.h - renders kernel templates in a sandboxed Lua state.
 *
 * Template syntax (a template reads as CUDA):
 *   - a line whose first non-blank character is '%' is Lua code (the '%' is dropped);
 *   - elsewhere ${expr} is replaced by tostring(expr) of a Lua expression;
 *   - include("name") renders another template of the template directory inline, with the
 *     same parameters; emit(str) appends text.
 * Parameters are globals of the rendering environment (integers or strings). Each template
 * line becomes exactly one line of the Lua chunk, whose name is "@templates/<name>", so a Lua
 * error reports "templates/<name>:<line>: message". The state has no io, os, debug, package,
 * coroutine, require, load, loadfile, dofile, print, warn, pcall, xpcall, collectgarbage,
 * raw access or metatables, no table.move, and no pattern matching (string.find/match/gmatch/
 * gsub: Lua's matcher backtracks in C, out of reach of the instruction limit); string.rep is
 * bounded by the heap cap. */
#ifndef NJ_TEMPLATE_H
#define NJ_TEMPLATE_H

#include "common.h"

typedef struct tmpl_param {
    const char *name;
    int is_string;
    long long ival;
    const char *sval;
} tmpl_param;

/* Render template `name` with params into out (appended) in a fresh sandboxed Lua state
 * (nothing survives from one render to the next). Bounds: 2e7 Lua instructions and 2 s (both
 * sticky: no handler can resume after the limit), 64 MiB of Lua heap, 16 MiB of output. On error
 * returns NVFP4JIT_ERR_TEMPLATE (out is as it was) and sets the message on ctx, always
 * naming the template ("templates/x.cu:12: ..."). Overrides come from ctx->template_dir. */
nvfp4jit_status tmpl_render(nvfp4jit_ctx *ctx, const char *name, const tmpl_param *params,
                            int nparams, nj_buf *out);

/* Embedded template lookup (generated at build time). @return 0 and the text, -1 if
 * unknown. dir (tmpl_render passes the context's NVFP4JIT_TEMPLATE_DIR, read at context
 * creation), when not NULL or "", is searched first (for template developers): a file missing
 * there falls back to the embedded one, but one that is there and cannot be read (not a
 * regular file, larger than 1 MiB, EACCES...) returns -2 with errno set. */
int tmpl_find(const char *dir, const char *name, const char **text, size_t *len,
              nj_buf *scratch);

/* The embedded template table. */
typedef struct tmpl_file {
    const char *name;
    const char *text;
    size_t len;
} tmpl_file;
extern const tmpl_file tmpl_embedded[];
extern const size_t tmpl_embedded_count;

#endif
