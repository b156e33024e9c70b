/* template.c - sandboxed Lua rendering of kernel templates (syntax in template.h).
 *
 * A template is translated line by line into a Lua chunk: code lines ('%') are copied, text
 * lines become one `__emit(...)` call each, so chunk line N is template line N and Lua's own
 * error positions ("templates/x.cu:12:") point into the template. */
#include "template.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#define TMPL_MAX_DEPTH 8
/* Bounds of one render (README "Trust and limits"). The shipped templates use about 2000
 * instructions and under 100 KiB of Lua heap (measured 2026-12-03), 1/10000 of the limits. A render may run at most TMPL_MAX_TICKS * TMPL_HOOK_EVERY Lua instructions (the
 * limit is sticky: once hit, every further instruction fails, so no handler can resume), the
 * Lua heap is capped through the allocator, and so is the rendered text. */
#define TMPL_HOOK_EVERY 100
#define TMPL_MAX_TICKS 200000                     /* 2e7 instructions, ~0.1-0.2 s */
/* Wall-clock bound, checked at every hook call: some C functions do work the instruction
 * count does not see (comparing two 30 MB strings is one instruction and milliseconds of
 * memcmp), so the count alone would let a loop of them run for hours. */
#define TMPL_MAX_MS 2000
#define TMPL_MEM_MAX ((size_t)64 << 20)           /* Lua heap of one render */
#define TMPL_OUT_MAX ((size_t)16 << 20)           /* rendered text of one render */
#define TMPL_OUT_KEY "nvfp4jit.out"
#define TMPL_FILE_MAX ((size_t)1 << 20) /* a template override larger than 1 MiB is refused */

/* Per-render state, reached through lua_getallocf's user data. */
typedef struct tmpl_run {
    size_t mem, mem_max;
    long ticks;
    double start_ms;
    int limit_hit;
    int oom; /* a (nested) render ran out of memory */
    nj_buf *out;
    size_t out_start;
    const char *dir; /* the context's template override directory ("" = none) */
} tmpl_run;

/* Append s[0..n) to b as a Lua string literal. */
static int put_lua_string(nj_buf *b, const char *s, size_t n) {
    if (nj_buf_puts(b, "\"")) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\'; esc[1] = (char)c; esc[2] = 0;
        } else if (c < 32 || c == 127) {
            snprintf(esc, sizeof esc, "\\%03u", c);
        } else {
            esc[0] = (char)c; esc[1] = 0;
        }
        if (nj_buf_puts(b, esc)) return -1;
    }
    return nj_buf_puts(b, "\"");
}

/* Translate template text into a Lua chunk. @return 0, or -1 with a message in err. */
static int translate(const char *text, size_t len, const char *name, nj_buf *lua, char *err,
                     size_t errn) {
    size_t pos = 0;
    int line = 1;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        const char *s = text + pos;
        size_t n = end - pos;
        size_t i = 0;
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i < n && s[i] == '%') {
            if (nj_buf_append(lua, s + i + 1, n - i - 1)) goto oom;
        } else {
            if (nj_buf_puts(lua, "__emit(")) goto oom;
            size_t j = 0, lit = 0;
            int first = 1;
            while (j < n) {
                if (s[j] == '$' && j + 1 < n && s[j + 1] == '{') {
                    size_t k = j + 2;
                    int depth = 1;
                    while (k < n && depth) {
                        if (s[k] == '{') depth++;
                        else if (s[k] == '}') depth--;
                        if (depth) k++;
                    }
                    if (depth) {
                        snprintf(err, errn, "templates/%s:%d: unterminated ${", name, line);
                        return -1;
                    }
                    if (!first && nj_buf_puts(lua, ",")) goto oom;
                    if (put_lua_string(lua, s + lit, j - lit)) goto oom;
                    if (nj_buf_puts(lua, ",__str(") || nj_buf_append(lua, s + j + 2, k - j - 2) ||
                        nj_buf_puts(lua, ")"))
                        goto oom;
                    first = 0;
                    j = k + 1;
                    lit = j;
                } else {
                    j++;
                }
            }
            if (!first && nj_buf_puts(lua, ",")) goto oom;
            if (put_lua_string(lua, s + lit, n - lit)) goto oom;
            if (end < len && nj_buf_puts(lua, ",\"\\n\"")) goto oom;
            if (nj_buf_puts(lua, ")")) goto oom;
        }
        if (nj_buf_puts(lua, "\n")) goto oom;
        pos = end + 1;
        line++;
    }
    return 0;
oom:
    snprintf(err, errn, "out of memory translating templates/%s", name);
    return -1;
}

int tmpl_find(const char *dir, const char *name, const char **text, size_t *len,
              nj_buf *scratch) {
    if (dir && *dir) {
        char path[4096];
        int w = snprintf(path, sizeof path, "%s/%s", dir, name);
        if (w < 0 || (size_t)w >= sizeof path) { errno = ENAMETOOLONG; return -2; }
        if (nj_read_file_max(path, scratch, TMPL_FILE_MAX) == 0) {
            *text = scratch->data;
            *len = scratch->len;
            return 0;
        }
        /* Only "there is no such file" falls back to the embedded template: an override
         * that is there but cannot be read (a FIFO, a directory, EACCES, too big) is an
         * error, or a developer would test the embedded template without knowing. */
        if (errno != ENOENT) return -2;
    }
    for (size_t i = 0; i < tmpl_embedded_count; i++) {
        if (strcmp(tmpl_embedded[i].name, name) == 0) {
            *text = tmpl_embedded[i].text;
            *len = tmpl_embedded[i].len;
            return 0;
        }
    }
    return -1;
}

static tmpl_run *run_of(lua_State *L) {
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return (tmpl_run *)ud;
}

static int l_emit(lua_State *L) {
    tmpl_run *r = run_of(L);
    nj_buf *b = r->out;
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if (len > TMPL_OUT_MAX - (b->len - r->out_start))
            return luaL_error(L, "template output larger than %d MiB", (int)(TMPL_OUT_MAX >> 20));
        if (nj_buf_append(b, s, len)) return luaL_error(L, "out of memory");
        lua_pop(L, 1);
    }
    return 0;
}

static int l_str(lua_State *L) {
    luaL_checkany(L, 1);
    if (lua_isnil(L, 1)) return luaL_error(L, "substituted expression is nil");
    if (lua_type(L, 1) == LUA_TNUMBER && lua_isinteger(L, 1)) {
        lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, 1));
        return 1;
    }
    luaL_tolstring(L, 1, NULL);
    return 1;
}

static int run_template(lua_State *L, const char *name, int depth);
static int add_position(lua_State *L);

/* include("name"): render another template inline, in the same environment. */
static int l_include(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    if (strchr(name, '/') || strstr(name, "..") || !*name)
        return luaL_error(L, "include: bad template name '%s'", name);
    lua_getfield(L, LUA_REGISTRYINDEX, "nvfp4jit.depth");
    int depth = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (depth >= TMPL_MAX_DEPTH) return luaL_error(L, "include: nesting deeper than %d", depth);
    if (run_template(L, name, depth + 1) != LUA_OK) return lua_error(L);
    return 0;
}

/* Load and run template `name` in the environment table at registry "nvfp4jit.env".
 * On error leaves the message on the stack and returns the Lua status. */
static int run_template(lua_State *L, const char *name, int depth) {
    nj_buf scratch, lua;
    nj_buf_init(&scratch);
    nj_buf_init(&lua);
    const char *text;
    size_t len;
    char err[512];
    void *ud = NULL;
    lua_getallocf(L, &ud);
    const char *dir = ((const tmpl_run *)ud)->dir;
    int found = tmpl_find(dir, name, &text, &len, &scratch);
    if (found == -2) {
        int e = errno;
        nj_buf_free(&scratch);
        lua_pushfstring(L, "template override %s/%s: %s", dir, name, nj_file_strerror(e));
        return LUA_ERRRUN;
    }
    if (found) {
        nj_buf_free(&scratch);
        lua_pushfstring(L, "template '%s' not found", name);
        return LUA_ERRRUN;
    }
    if (translate(text, len, name, &lua, err, sizeof err)) {
        nj_buf_free(&scratch);
        nj_buf_free(&lua);
        lua_pushstring(L, err);
        return LUA_ERRSYNTAX;
    }
    nj_buf_free(&scratch);
    char chunk[300];
    snprintf(chunk, sizeof chunk, "@templates/%s", name);
    int st = luaL_loadbufferx(L, lua.data ? lua.data : "", lua.len, chunk, "t");
    nj_buf_free(&lua);
    if (st == LUA_ERRMEM) run_of(L)->oom = 1;
    if (st != LUA_OK && st != LUA_ERRMEM) {
        /* every message names the template: Lua's refusal of a chunk that starts like a
         * binary one (a first `%` line beginning with ESC, found by the template fuzzer) has
         * no chunk name of its own */
        const char *m = lua_tostring(L, -1);
        if (!m || !strstr(m, "templates/")) {
            lua_pushfstring(L, "templates/%s: %s", name, m ? m : "(no message)");
            lua_remove(L, -2);
        }
    }
    if (st != LUA_OK) return st;
    lua_getfield(L, LUA_REGISTRYINDEX, "nvfp4jit.env");
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1); /* _ENV is the chunk's first upvalue */
    lua_pushinteger(L, depth);
    lua_setfield(L, LUA_REGISTRYINDEX, "nvfp4jit.depth");
    lua_pushcfunction(L, add_position); /* message handler, below the chunk */
    lua_insert(L, -2);
    int h = lua_gettop(L) - 1;
    st = lua_pcall(L, 0, 0, h);
    lua_remove(L, h);
    if (st == LUA_ERRMEM) run_of(L)->oom = 1; /* l_include re-raises it as a plain error */
    lua_pushinteger(L, depth > 0 ? depth - 1 : 0);
    lua_setfield(L, LUA_REGISTRYINDEX, "nvfp4jit.depth");
    return st;
}

static void count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    tmpl_run *r = run_of(L);
    if (!r->limit_hit) {
        if (++r->ticks <= TMPL_MAX_TICKS && nj_now_ms() - r->start_ms <= TMPL_MAX_MS) return;
        /* From now on every instruction fails: whatever catches this error cannot run on. */
        r->limit_hit = r->ticks > TMPL_MAX_TICKS ? 1 : 2;
        lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    }
    if (r->limit_hit == 2)
        luaL_error(L, "template exceeded the time limit (%d ms)", TMPL_MAX_MS);
    luaL_error(L, "template exceeded the instruction limit (%d)",
               TMPL_MAX_TICKS * TMPL_HOOK_EVERY);
}

/* The Lua heap of one render, capped: a failed allocation is Lua's "not enough memory". */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    tmpl_run *r = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        r->mem -= old;
        return NULL;
    }
    if (nsize > old && nsize - old > r->mem_max - r->mem) return NULL;
    void *p = realloc(ptr, nsize);
    if (p) r->mem = r->mem - old + nsize;
    return p;
}

static int l_unavailable(lua_State *L) {
    return luaL_error(L, "%s is not available in templates (%s)",
                      lua_tostring(L, lua_upvalueindex(1)), lua_tostring(L, lua_upvalueindex(2)));
}

/* string.rep, bounded: the result may not exceed the heap cap, and an empty result is made at
 * once (Lua's own loops n times even when it copies nothing: string.rep("", 2^62) never ended;
 * reproducer: tests/fuzz/corpus/template/rep_empty). */
static int l_rep(lua_State *L) {
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    if (l + lsep < l || (size_t)n > TMPL_MEM_MAX / (l + lsep))
        return luaL_error(L, "string.rep: result larger than the memory limit of a render (%d MiB)",
                          (int)(TMPL_MEM_MAX >> 20));
    lua_pushvalue(L, lua_upvalueindex(1)); /* Lua's string.rep */
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static void disable(lua_State *L, const char *table, const char *name, const char *why) {
    if (table) lua_getglobal(L, table);
    else lua_pushglobaltable(L);
    char full[64];
    snprintf(full, sizeof full, "%s%s%s", table ? table : "", table ? "." : "", name);
    lua_pushstring(L, full);
    lua_pushstring(L, why);
    lua_pushcclosure(L, l_unavailable, 2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* The libraries of the sandbox (run inside render_main's protection: they allocate). */
static void setup_state(lua_State *L) {
    /* Only pure libraries: no io, os, debug, package, coroutine, utf8. */
    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
    luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
    lua_pop(L, 4);
    static const char *const removed[] = {"dofile", "loadfile", "load", "require",
                                          "collectgarbage", "rawset", "rawget", "rawequal",
                                          "setmetatable", "getmetatable", NULL};
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    disable(L, NULL, "print", "it writes to the caller's stdout; use emit");
    disable(L, NULL, "warn", "it writes to the caller's stderr");
    disable(L, NULL, "pcall", "a template error ends the render");
    disable(L, NULL, "xpcall", "a template error ends the render");
    /* NOTE: Lua's pattern matcher backtracks in C, where the instruction hook never runs: a
     * pattern can take exponential time. Templates only substitute; plain string functions
     * (rep, sub, format, byte, char, upper, lower, len, reverse) remain. */
    static const char *const pat[] = {"find", "match", "gmatch", "gsub", NULL};
    for (int i = 0; pat[i]; i++)
        disable(L, LUA_STRLIBNAME, pat[i], "pattern matching is unbounded");
    disable(L, LUA_STRLIBNAME, "dump", "no bytecode in templates");
    /* table.move(t, 1, 2^62, 2) loops in C over absent keys without allocating: beyond both the
     * instruction and the heap limit (tests/fuzz/corpus/template/table_move); templates do not
     * move tables. */
    disable(L, LUA_TABLIBNAME, "move", "it loops in C, beyond the instruction limit");
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_getfield(L, -1, "rep");
    lua_pushcclosure(L, l_rep, 1);
    lua_setfield(L, -2, "rep");
    lua_pop(L, 1);
}

/* Message handler: every error names a template line. An error raised with level 0, or by a
 * C function (the limits), carries no position: prefix the innermost template line. */
static int add_position(lua_State *L) {
    const char *m = lua_tostring(L, 1);
    if (!m) m = "template error (the error value is not a string)";
    if (!strncmp(m, "templates/", 10)) {
        lua_pushstring(L, m);
        return 1;
    }
    lua_Debug ar;
    for (int level = 0; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar)) break;
        if (ar.currentline > 0 && !strncmp(ar.source, "@templates/", 11)) {
            lua_pushfstring(L, "%s:%d: %s", ar.source + 1, ar.currentline, m);
            return 1;
        }
    }
    lua_pushstring(L, m);
    return 1;
}

typedef struct render_args {
    const char *name;
    const tmpl_param *params;
    int nparams;
} render_args;

/* The whole render, run by lua_pcall: any error on the way (out of memory included) is
 * caught, none reaches Lua's panic (which would abort the process). */
static int render_main(lua_State *L) {
    const render_args *a = (const render_args *)lua_touserdata(L, 1);
    setup_state(L);
    /* The environment: parameters plus the helpers, falling back to the sandboxed globals. */
    lua_newtable(L);
    for (int i = 0; i < a->nparams; i++) {
        const tmpl_param *p = &a->params[i];
        if (p->is_string) lua_pushstring(L, p->sval ? p->sval : "");
        else lua_pushinteger(L, (lua_Integer)p->ival);
        lua_setfield(L, -2, p->name);
    }
    lua_pushcfunction(L, l_emit);
    lua_setfield(L, -2, "emit");
    lua_pushcfunction(L, l_emit);
    lua_setfield(L, -2, "__emit");
    lua_pushcfunction(L, l_str);
    lua_setfield(L, -2, "__str");
    lua_pushcfunction(L, l_include);
    lua_setfield(L, -2, "include");
    lua_newtable(L); /* metatable: fall back to the sandboxed globals */
    lua_pushglobaltable(L);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "nvfp4jit.env");
    lua_pushinteger(L, 0);
    lua_setfield(L, LUA_REGISTRYINDEX, "nvfp4jit.depth");
    lua_sethook(L, count_hook, LUA_MASKCOUNT, TMPL_HOOK_EVERY);
    if (run_template(L, a->name, 0) != LUA_OK) return lua_error(L);
    return 0;
}

nvfp4jit_status tmpl_render(nvfp4jit_ctx *ctx, const char *name, const tmpl_param *params,
                            int nparams, nj_buf *out) {
    NJ_RETURN_IF(ctx, !name || !out, NVFP4JIT_ERR_INVALID_ARG, "tmpl_render: bad args");
    /* A fresh state per render: nothing one template does (_G.X = 1, string.format = nil)
     * can reach the next one. Creating one costs tens of microseconds. */
    tmpl_run run = {0, TMPL_MEM_MAX, 0, nj_now_ms(), 0, 0, out, out->len,
                    ctx ? ctx->template_dir : ""};
    lua_State *L = lua_newstate(capped_alloc, &run);
    NJ_RETURN_IF(ctx, !L, NVFP4JIT_ERR_OUT_OF_MEMORY, "cannot create the Lua state");
    render_args a = {name, params, nparams};
    lua_pushcfunction(L, render_main); /* neither push allocates */
    lua_pushlightuserdata(L, &a);
    int st = lua_pcall(L, 1, 0, 0);
    nvfp4jit_status rs = NVFP4JIT_OK;
    if (st == LUA_ERRMEM || (st != LUA_OK && run.oom)) /* no message handler runs for these */
        rs = nj_fail(ctx, NVFP4JIT_ERR_TEMPLATE,
                     "templates/%s: the render ran out of memory (a render may use at most %d "
                     "MiB)", name, (int)(TMPL_MEM_MAX >> 20));
    else if (st != LUA_OK) {
        const char *m = lua_tostring(L, -1);
        rs = nj_fail(ctx, NVFP4JIT_ERR_TEMPLATE, "%s", m ? m : "template error (no message)");
    }
    if (st != LUA_OK) {
        out->len = run.out_start;
        if (out->data) out->data[run.out_start] = '\0';
    }
    lua_close(L);
    return rs;
}
