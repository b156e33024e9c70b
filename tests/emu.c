/* emu.c - the sm_100a data-path emulator (see emu.h). Written from the PTX ISA sections named
 * at each function; where the ISA leaves a choice the emulator is strict and says so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "emu.h"

#include <dlfcn.h>
#include <elf.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "emu_api.h"
#include "reference.h"

#ifndef NVFP4JIT_SOURCE_DIR
#define NVFP4JIT_SOURCE_DIR "."
#endif

extern const emu_api emu_table;

_Static_assert(sizeof(emu_tmap) <= sizeof(CUtensorMap), "emu_tmap must fit a CUtensorMap");

/* ---- tensor maps ------------------------------------------------------------------------ */
static int dtype_bits(uint32_t t) {
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: return 4; /* .b4x16: packed, no padding */
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 8;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 16;
    default: return 0;
    }
}
static int swizzle_span(uint32_t s) {
    switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    case CU_TENSOR_MAP_SWIZZLE_128B: return 128;
    default: return -1;
    }
}

CUresult emu_encode_tiled(CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank,
                          void *addr, const cuuint64_t *dims, const cuuint64_t *strides,
                          const cuuint32_t *box, const cuuint32_t *estrides,
                          CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                          CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    int bits = dtype_bits(dtype), span = swizzle_span(sw);
    if (!map || rank != 2 || !bits || span < 0 || il != CU_TENSOR_MAP_INTERLEAVE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    if (((uintptr_t)addr & 15) || !dims[0] || !dims[1] || (strides[0] & 15) ||
        strides[0] * 8 < dims[0] * (uint64_t)bits)
        return CUDA_ERROR_INVALID_VALUE;
    if (!box[0] || !box[1] || box[0] > 256 || box[1] > 256 || estrides[0] != 1 ||
        estrides[1] != 1)
        return CUDA_ERROR_INVALID_VALUE;
    if ((box[0] * (uint32_t)bits / 8) % 16) return CUDA_ERROR_INVALID_VALUE; /* inner box bytes */
    if (span && box[0] * (uint32_t)bits / 8 > (uint32_t)span) return CUDA_ERROR_INVALID_VALUE;
    emu_tmap m;
    memset(&m, 0, sizeof m);
    m.magic = EMU_TMAP_MAGIC;
    m.addr = (uint64_t)(uintptr_t)addr;
    m.dims[0] = dims[0];
    m.dims[1] = dims[1];
    m.stride1 = strides[0];
    m.dtype = dtype;
    m.rank = rank;
    m.interleave = il;
    m.swizzle = sw;
    m.l2 = l2;
    m.oob = oob;
    m.box[0] = box[0];
    m.box[1] = box[1];
    m.estride[0] = estrides[0];
    m.estride[1] = estrides[1];
    memset(map, 0, sizeof *map);
    memcpy(map, &m, sizeof m);
    return CUDA_SUCCESS;
}

/* PTX ISA "Swizzling modes" (tensors): with 16-byte cells, the cell index (address bits 4..)
 * is XORed with the row of the repeating pattern (address bits 7..): 1 bit for 32B, 2 for
 * 64B, 3 for 128B. The pattern is a function of the absolute shared address: a destination
 * that is not aligned to the pattern (256/512/1024 bytes) lands shifted in it. */
uint32_t emu_swizzle(uint32_t a, int span) {
    switch (span) {
    case 32: return a ^ (((a >> 7) & 1u) << 4);
    case 64: return a ^ (((a >> 7) & 3u) << 4);
    case 128: return a ^ (((a >> 7) & 7u) << 4);
    default: return a;
    }
}

long emu_tma_box_2d(const emu_tmap *m, int x, int y, uint8_t *smem, size_t smem_size,
                    uint32_t dst, char *err, size_t errn) {
    if (m->magic != EMU_TMAP_MAGIC) {
        snprintf(err, errn, "tensor map was not written by cuTensorMapEncodeTiled");
        return -1;
    }
    int bits = dtype_bits(m->dtype), span = swizzle_span(m->swizzle);
    /* PTX ISA cp.async.bulk.tensor: the shared destination must be 128-byte aligned */
    if (dst & 127) {
        snprintf(err, errn, "cp.async.bulk.tensor destination 0x%x is not 128-byte aligned", dst);
        return -1;
    }
    uint32_t row_bytes = m->box[0] * (uint32_t)bits / 8;
    size_t bytes = (size_t)row_bytes * m->box[1];
    if (span && row_bytes != (uint32_t)span) {
        snprintf(err, errn, "emulator: swizzled box rows of %u bytes with a %d-byte span are not "
                 "modelled", row_bytes, span);
        return -1;
    }
    if ((size_t)dst + bytes > smem_size) {
        snprintf(err, errn, "cp.async.bulk.tensor writes 0x%x..0x%zx past the shared window (0x%zx)",
                 dst, dst + bytes, smem_size);
        return -1;
    }
    if (bits == 4 && (x & 1)) {
        snprintf(err, errn, "emulator: odd 4-bit coordinate %d", x);
        return -1;
    }
    const uint8_t *g = (const uint8_t *)(uintptr_t)m->addr;
    for (uint32_t r = 0; r < m->box[1]; r++) {
        int64_t row = (int64_t)y + r;
        int row_in = row >= 0 && (uint64_t)row < m->dims[1];
        for (uint32_t b = 0; b < row_bytes; b++) {
            uint8_t v = 0;
            if (row_in) {
                const uint8_t *src = g + (uint64_t)row * m->stride1;
                if (bits == 4) {
                    int64_t e0 = (int64_t)x + 2 * (int64_t)b;
                    if (e0 >= 0 && (uint64_t)e0 < m->dims[0]) v |= src[e0 / 2] & 0x0F;
                    if (e0 + 1 >= 0 && (uint64_t)(e0 + 1) < m->dims[0]) v |= src[e0 / 2] & 0xF0;
                } else {
                    int eb = bits / 8;
                    int64_t e = (int64_t)x + b / eb;
                    if (e >= 0 && (uint64_t)e < m->dims[0]) v = src[e * eb + b % eb];
                }
            }
            /* out of bounds: FLOAT_OOB_FILL_NONE fills zeros */
            smem[emu_swizzle(dst + r * row_bytes + b, span)] = v;
        }
    }
    return (long)bytes;
}

/* ---- ELF -------------------------------------------------------------------------------- */
long emu_elf_section_size(const void *elf, size_t n, const char *name) {
    const Elf64_Ehdr *h = elf;
    if (n < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64)
        return -1;
    if (h->e_shoff + (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > n || h->e_shstrndx >= h->e_shnum)
        return -1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)((const char *)elf + h->e_shoff);
    const char *strs = (const char *)elf + sh[h->e_shstrndx].sh_offset;
    for (unsigned i = 0; i < h->e_shnum; i++)
        if (sh[i].sh_name < sh[h->e_shstrndx].sh_size && strcmp(strs + sh[i].sh_name, name) == 0)
            return (long)sh[i].sh_size;
    return -1;
}

/* ---- host build of the EMU render ------------------------------------------------------- */
int emu_kernel_build(const char *src, size_t len, const char *dir, const char *tag,
                     const char *name, emu_kernel *k, char *err, size_t errn) {
    memset(k, 0, sizeof *k);
    char cpp[4096], so[4096], log[4096], cmd[16384];
    snprintf(cpp, sizeof cpp, "%s/%s.cpp", dir, tag);
    snprintf(so, sizeof so, "%s/%s.so", dir, tag);
    snprintf(log, sizeof log, "%s/%s.log", dir, tag);
    FILE *f = fopen(cpp, "wb");
    if (!f || fwrite(src, 1, len, f) != len) {
        if (f) fclose(f);
        snprintf(err, errn, "cannot write %s", cpp);
        return -1;
    }
    fclose(f);
    const char *cxx = getenv("CXX");
    if (!cxx || !*cxx) cxx = "c++";
    const char *sd = getenv("NVFP4JIT_SOURCE_DIR");
    if (!sd || !*sd) sd = NVFP4JIT_SOURCE_DIR;
    snprintf(cmd, sizeof cmd,
             "%s -std=c++17 -O1 -fPIC -shared -Wall -Wno-unknown-pragmas -Wno-unused -include "
             "'%s/tests/emu_prelude.h' -I'%s/tests' -o '%s' '%s' > '%s' 2>&1",
             cxx, sd, sd, so, cpp, log);
    if (system(cmd) != 0) {
        FILE *l = fopen(log, "rb");
        size_t got = l ? fread(err, 1, errn - 1, l) : 0;
        if (l) fclose(l);
        err[got] = '\0';
        if (!got) snprintf(err, errn, "%s failed", cmd);
        return -1;
    }
    k->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!k->so) {
        snprintf(err, errn, "dlopen %s: %s", so, dlerror());
        return -1;
    }
    void (*bind)(const emu_api *) = (void (*)(const emu_api *))dlsym(k->so, "emu_bind");
    k->fn = (void (*)(const unsigned char *))dlsym(k->so, name);
    char moe_name[256];
    snprintf(moe_name, sizeof moe_name, "%s_moe", name);
    *(void **)&k->fn_moe = dlsym(k->so, moe_name);
    if (!bind || !k->fn) {
        snprintf(err, errn, "%s: emu_bind or %s missing", so, name);
        dlclose(k->so);
        k->so = NULL;
        return -1;
    }
    bind(&emu_table);
    return 0;
}

void emu_kernel_close(emu_kernel *k) {
    if (k->so) dlclose(k->so);
    k->so = NULL;
}

/* ---- the CTA ---------------------------------------------------------------------------- */
enum { T_RUN, T_BAR, T_MBAR, T_DONE };
#define MAX_THREADS 1024
#define STACK_SIZE (256 * 1024)
#define MAX_MBARS 64
#define MAX_STATIC 16
#define SMEM_MAX 232448 /* bytes of static + dynamic shared memory one CTA may use */

typedef struct ethread {
    ucontext_t uc;
    int state;
    int addr, parity;
    unsigned gen;
    int nstatic;
    unsigned nld;
} ethread;

typedef struct embar {
    uint32_t addr;
    int count, pending, tx;
    unsigned phase;
} embar;

typedef struct ecopy {
    struct ecopy *next;
    int tensor;
    uint32_t dst, mbar;
    const void *src;
    int size;
    emu_tmap map;
    int x, y;
} ecopy;

enum { C_ALLOC, C_RELINQ, C_DEALLOC, C_N };

static struct {
    const emu_launch *l;
    void (*fn)(const unsigned char *);
    void (*fn_moe)(const unsigned char *, const void *, const void *);
    const unsigned char *blob;
    emu_stats *st;
    unsigned nthreads, cta;
    ethread *th;
    char *stacks;
    ucontext_t sched;
    int cur;
    uint8_t *smem;
    uint32_t smem_size, dyn_base, static_start, static_next;
    uint32_t static_off[MAX_STATIC], static_size[MAX_STATIC];
    int nstatic;
    unsigned bar_count, bar_gen;
    embar mb[MAX_MBARS];
    int nmb;
    ecopy *pend, **pend_tail;
    uint32_t (*tmem)[512];
    int tmem_cols, tmem_base, tmem_freed, relinquished;
    unsigned coll[MAX_THREADS / 32][C_N];
    int coll_arg[MAX_THREADS / 32][C_N];
    int ld_addr[MAX_THREADS / 32][64];
    int failed;
    char *err;
    size_t errn;
} G;

/* Record the first violation and stop the running emulated thread for good. */
static void fail(const char *fmt, ...) {
    if (!G.failed) {
        int o = G.cur >= 0 ? snprintf(G.err, G.errn, "CTA %u thread %d: ", G.cta, G.cur)
                           : snprintf(G.err, G.errn, "CTA %u: ", G.cta);
        va_list ap;
        va_start(ap, fmt);
        if (o >= 0 && (size_t)o < G.errn) vsnprintf(G.err + o, G.errn - (size_t)o, fmt, ap);
        va_end(ap);
        G.failed = 1;
    }
    if (G.cur >= 0) swapcontext(&G.th[G.cur].uc, &G.sched); /* never resumed */
}

static void yield(void) {
    G.st->switches++;
    swapcontext(&G.th[G.cur].uc, &G.sched);
}

static void check_range(uint32_t a, uint32_t n, int dynamic_only, const char *what) {
    uint32_t lo = dynamic_only ? G.dyn_base : G.static_start;
    uint32_t hi = dynamic_only ? G.dyn_base + (uint32_t)G.l->dyn_smem : G.smem_size;
    if (a < lo || (uint64_t)a + n > hi)
        fail("%s at shared 0x%x..0x%x is outside the %s (0x%x..0x%x)", what, a, a + n,
             dynamic_only ? "dynamic shared memory" : "shared window", lo, hi);
}

static unsigned e_tid(void) { return (unsigned)G.cur; }
static unsigned e_ctaid(void) { return G.cta; }

static void e_syncthreads(void) {
    if (++G.bar_count == G.nthreads) {
        G.bar_count = 0;
        G.bar_gen++;
        return;
    }
    ethread *t = &G.th[G.cur];
    t->state = T_BAR;
    t->gen = G.bar_gen;
    yield();
}

static unsigned e_cvta_shared(const void *p) {
    const uint8_t *q = p;
    if (q < G.smem || q >= G.smem + G.smem_size) fail("__cvta_generic_to_shared of a non-shared pointer");
    return (unsigned)(q - G.smem);
}

/* Static __shared__ variables: the emulated static section, in declaration order after the
 * reserved bytes (the cubin's symbol table does not keep their offsets; what matters to the
 * kernel, the dynamic base, comes from the section size). */
static void *e_static_shared(unsigned size, unsigned align) {
    ethread *t = &G.th[G.cur];
    int i = t->nstatic++;
    if (i >= MAX_STATIC) fail("too many static shared variables");
    if (i == G.nstatic) {
        uint32_t o = (G.static_next + align - 1) & ~(align - 1);
        if (o + size > G.dyn_base)
            fail("static shared variables (%u bytes so far) exceed the cubin's static section "
                 "(0x%x..0x%x)", o + size - G.static_start, G.static_start, G.dyn_base);
        G.static_off[i] = o;
        G.static_size[i] = size;
        G.static_next = o + size;
        G.nstatic++;
    } else if (i > G.nstatic || G.static_size[i] != size) {
        fail("static shared variables declared differently by different threads");
    }
    return G.smem + G.static_off[i];
}

static char *e_dynamic_shared(void) { return (char *)G.smem + G.dyn_base; }

/* elect.sync with a full mask: every lane of the warp is active here, the leader is lane 0 */
static unsigned e_elect_sync(void) { return (G.cur % 32) == 0; }

static embar *find_mbar(int addr, const char *what) {
    for (int i = 0; i < G.nmb; i++)
        if (G.mb[i].addr == (uint32_t)addr) return &G.mb[i];
    fail("%s on shared 0x%x, which holds no initialized mbarrier", what, addr);
    return NULL;
}

static void mbar_progress(embar *b) {
    if (b->pending == 0 && b->tx == 0) {
        b->phase++;
        b->pending = b->count;
    }
    /* every arrival is in and more bytes completed than were announced: the tx-count can only
     * fall further, the phase never completes */
    if (b->pending == 0 && b->tx < 0)
        fail("mbarrier 0x%x: complete_tx delivered at least %d bytes more than expect_tx announced",
             b->addr, -b->tx);
}

/* PTX ISA mbarrier: init sets the expected arrival count, phase 0, tx-count 0 */
static void e_mbarrier_init(int addr, int count) {
    if (addr & 7) fail("mbarrier.init at 0x%x: not 8-byte aligned", addr);
    check_range((uint32_t)addr, 8, 0, "mbarrier");
    if (count < 1 || count > (1 << 20) - 1) fail("mbarrier.init count %d out of range", count);
    for (int i = 0; i < G.nmb; i++)
        if (G.mb[i].addr == (uint32_t)addr) fail("mbarrier at 0x%x initialized twice", addr);
    if (G.nmb == MAX_MBARS) fail("too many mbarriers");
    embar *b = &G.mb[G.nmb++];
    b->addr = (uint32_t)addr;
    b->count = b->pending = count;
    b->tx = 0;
    b->phase = 0;
}

static void deliver(ecopy *c) {
    if (c->tensor) {
        char e[256];
        long n = emu_tma_box_2d(&c->map, c->x, c->y, G.smem, G.smem_size, c->dst, e, sizeof e);
        if (n < 0) fail("%s", e);
        G.st->tma++;
    } else {
        memcpy(G.smem + c->dst, c->src, (size_t)c->size);
        G.st->bulk++;
    }
    embar *b = find_mbar((int)c->mbar, "complete_tx");
    if (!b) return;
    b->tx -= c->size; /* complete_tx */
    mbar_progress(b);
}

static void deliver_pending(uint32_t mbar) {
    ecopy **p = &G.pend;
    while (*p) {
        ecopy *c = *p;
        if (c->mbar == mbar) {
            *p = c->next;
            if (G.pend_tail == &c->next) G.pend_tail = p;
            deliver(c);
            free(c);
        } else {
            p = &c->next;
        }
    }
}

static int mbar_done(int addr, int parity) {
    deliver_pending((uint32_t)addr);
    embar *b = find_mbar(addr, "mbarrier.try_wait");
    /* try_wait.parity P waits for the completion of the phase whose parity is P: it is done
     * once the current phase's parity differs */
    return b && (int)(b->phase & 1) != (parity & 1);
}

static void e_mbarrier_wait(int addr, int parity) {
    while (!mbar_done(addr, parity)) {
        ethread *t = &G.th[G.cur];
        t->state = T_MBAR;
        t->addr = addr;
        t->parity = parity;
        yield();
    }
}

static void e_arrive_expect_tx(int addr, int bytes) {
    embar *b = find_mbar(addr, "mbarrier.arrive.expect_tx");
    if (!b) return;
    if (bytes < 0 || b->tx + bytes > (1 << 20) - 1)
        fail("mbarrier 0x%x: expect_tx %d overflows the tx-count (%d)", addr, bytes, b->tx);
    b->tx += bytes;
    if (b->pending <= 0) fail("mbarrier 0x%x: more arrivals than its count", addr);
    b->pending--;
    mbar_progress(b);
}

static void e_nop(void) {}

/* global reads must stay inside one of the launch's buffers, when it names them */
static void check_global(const void *p, size_t n, const char *what) {
    if (!G.l->nranges) return;
    const uint8_t *q = p;
    for (int i = 0; i < G.l->nranges; i++) {
        const uint8_t *b = G.l->ranges[i].p;
        if (q >= b && q + n <= b + G.l->ranges[i].n) return;
    }
    fail("%s reads global %p..%p, outside every buffer of the problem set", what, p,
         (const void *)(q + n));
}

static void queue_copy(ecopy *c) {
    /* destination checks at issue time: where the hardware would fault */
    for (int i = 0; i < G.nmb; i++)
        if (G.mb[i].addr + 8 > c->dst && G.mb[i].addr < c->dst + (uint32_t)c->size)
            fail("async copy to 0x%x..0x%x overwrites the mbarrier at 0x%x", c->dst,
                 c->dst + c->size, G.mb[i].addr);
    if (!find_mbar((int)c->mbar, "async copy completion")) return;
    if (G.l->lazy) {
        c->next = NULL;
        *G.pend_tail = c;
        G.pend_tail = &c->next;
    } else {
        deliver(c);
        free(c);
    }
}

/* cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes: 16-byte aligned addresses,
 * size a multiple of 16 */
static void e_bulk_g2s(int dst, const void *src, int size, int mbar, unsigned long long pol) {
    (void)pol;
    if ((dst & 15) || ((uintptr_t)src & 15) || size <= 0 || (size & 15))
        fail("cp.async.bulk dst 0x%x src %p size %d: needs 16-byte alignment and size", dst, src,
             size);
    check_range((uint32_t)dst, (uint32_t)size, 1, "cp.async.bulk destination");
    check_global(src, (size_t)size, "cp.async.bulk");
    ecopy *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->dst = (uint32_t)dst;
    c->src = src;
    c->size = size;
    c->mbar = (uint32_t)mbar;
    queue_copy(c);
}

static void e_tma_2d_g2s(int dst, const void *tmap, int x, int y, int mbar,
                         unsigned long long pol) {
    (void)pol;
    if ((uintptr_t)tmap & 63) fail("tensor map at %p is not 64-byte aligned", tmap);
    ecopy *c = calloc(1, sizeof *c);
    if (!c) abort();
    memcpy(&c->map, tmap, sizeof c->map);
    if (c->map.magic != EMU_TMAP_MAGIC) fail("tensor map at %p was never encoded", tmap);
    int bits = dtype_bits(c->map.dtype);
    check_global((const void *)(uintptr_t)c->map.addr,
                 (size_t)((c->map.dims[1] - 1) * c->map.stride1 + (c->map.dims[0] * (uint64_t)bits + 7) / 8),
                 "the tensor map's extent");
    c->tensor = 1;
    c->dst = (uint32_t)dst;
    c->size = (int)((size_t)c->map.box[0] * c->map.box[1] * (size_t)bits / 8);
    c->x = x;
    c->y = y;
    c->mbar = (uint32_t)mbar;
    if (dst & 127) fail("cp.async.bulk.tensor destination 0x%x is not 128-byte aligned", dst);
    check_range((uint32_t)dst, (uint32_t)c->size, 1, "cp.async.bulk.tensor destination");
    queue_copy(c);
}

/* warp-collective (.sync.aligned) instructions: executed once per warp, by its first lane to
 * arrive; every lane must execute it with the same operand (checked at the end of the CTA) */
static int collective(int op, int arg) {
    int w = G.cur / 32;
    unsigned n = G.coll[w][op]++;
    if (n % 32 == 0) {
        G.coll_arg[w][op] = arg;
        return 1;
    }
    if (G.coll_arg[w][op] != arg) fail("lanes of warp %d disagree on a .sync.aligned operand", w);
    return 0;
}

static void e_tmem_alloc(int dst, int ncols) {
    if (!collective(C_ALLOC, ncols)) return;
    if (G.relinquished) fail("tcgen05.alloc after tcgen05.relinquish_alloc_permit");
    if (ncols < 32 || ncols > 512 || (ncols & (ncols - 1)))
        fail("tcgen05.alloc of %d columns (a power of two in 32..512)", ncols);
    if (G.tmem_cols) fail("emulator: a second tcgen05.alloc in one CTA is not modelled");
    if (dst & 3) fail("tcgen05.alloc destination 0x%x not 4-byte aligned", dst);
    check_range((uint32_t)dst, 4, 0, "tcgen05.alloc destination");
    /* not always column 0: as if other CTAs on the SM held some, so the base is really read */
    G.tmem_cols = ncols;
    G.tmem_base = (int)((G.cta * (unsigned)ncols) % 512u);
    uint32_t v = (uint32_t)G.tmem_base; /* lane 0, column base */
    memcpy(G.smem + dst, &v, 4);
}

static void e_tmem_relinquish(void) {
    if (collective(C_RELINQ, 0)) G.relinquished = 1;
}

static void e_tmem_dealloc(int taddr, int ncols) {
    if (!collective(C_DEALLOC, taddr)) return;
    if (!G.tmem_cols || taddr != G.tmem_base || ncols != G.tmem_cols || G.tmem_freed)
        fail("tcgen05.dealloc(0x%x, %d) does not match the allocation (0x%x, %d)", taddr, ncols,
             G.tmem_base, G.tmem_cols);
    G.tmem_freed = 1;
}

static uint32_t *tm(int lane, int col, const char *what) {
    if (!G.tmem_cols || G.tmem_freed) fail("%s: no tensor memory allocated", what);
    if (lane < 0 || lane >= 128 || col < G.tmem_base || col >= G.tmem_base + G.tmem_cols)
        fail("%s: lane %d column %d outside the allocation (columns %d..%d)", what, lane, col,
             G.tmem_base, G.tmem_base + G.tmem_cols - 1);
    return &G.tmem[lane][col];
}

/* PTX ISA "Shared memory descriptor" (tcgen05) */
typedef struct sdesc {
    uint32_t start, lbo, sbo;
    int base_off, layout, span;
} sdesc;
static void decode_sdesc(uint64_t d, sdesc *s, const char *what) {
    s->start = (uint32_t)(d & 0x3FFF) << 4;
    s->lbo = (uint32_t)((d >> 16) & 0x3FFF) << 4;
    s->sbo = (uint32_t)((d >> 32) & 0x3FFF) << 4;
    s->base_off = (int)((d >> 49) & 7);
    s->layout = (int)((d >> 61) & 7);
    if (((d >> 46) & 7) != 1) fail("%s descriptor 0x%016llx: bits 46-48 must be 0b001", what, (unsigned long long)d);
    if ((d >> 52) & 1) fail("%s descriptor: leading-dimension absolute mode not modelled", what);
    if (((d >> 53) & 0xFF) || ((d >> 14) & 3) || ((d >> 30) & 3))
        fail("%s descriptor 0x%016llx: reserved bits set", what, (unsigned long long)d);
    switch (s->layout) {
    case 0: s->span = 0; break;
    case 2: s->span = 128; break;
    case 4: s->span = 64; break;
    case 6: s->span = 32; break;
    case 1: fail("%s descriptor: 128B swizzle with 32B atoms not modelled", what); break;
    default: fail("%s descriptor: invalid layout type %d", what, s->layout);
    }
}

/* tcgen05.cp.cta_group::1.32x128b.warpx4: 32 rows x 16 bytes from shared memory (no-swizzle
 * K-major core matrices: 8 rows x 16 bytes, SBO between 8-row groups), multicast to the same
 * 32 lanes of all four lane quarters, 4 columns */
static void e_cp_32x128b_warpx4(int taddr, unsigned long long d) {
    sdesc s;
    decode_sdesc(d, &s, "tcgen05.cp");
    if (s.layout != 0) fail("emulator: tcgen05.cp from a swizzled layout not modelled");
    if (s.base_off) fail("tcgen05.cp descriptor: base offset %d without swizzle", s.base_off);
    int lane0 = taddr >> 16, col = taddr & 0xFFFF;
    if (lane0 != 0) fail("tcgen05.cp.32x128b.warpx4 to lane %d (must be 0)", lane0);
    for (int r = 0; r < 32; r++) {
        uint32_t a = s.start + (uint32_t)(r / 8) * s.sbo + (uint32_t)(r % 8) * 16;
        check_range(a, 16, 1, "tcgen05.cp source");
        for (int c = 0; c < 4; c++) {
            uint32_t w;
            memcpy(&w, G.smem + a + 4 * c, 4);
            for (int q = 0; q < 4; q++) *tm(q * 32 + r, col + c, "tcgen05.cp") = w;
        }
    }
    G.st->cp++;
}

static double e2m1(unsigned c) {
    static const double v[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (c & 8) ? -v[c & 7] : v[c & 7];
}
static double ue4m3(unsigned b) {
    unsigned e = (b >> 3) & 15, m = b & 7;
    if (b & 0x80) return NAN; /* unsigned scale: a set sign bit is not a valid UE4M3 */
    if (e == 15 && m == 7) return NAN;
    return e ? ldexp(1.0 + m / 8.0, (int)e - 7) : ldexp(m / 8.0, -6);
}

/* Operand element (row r, k) of a K-major swizzled matrix (K = 64 4-bit values = 32 bytes per
 * row per MMA): logical address start + (r/8)*SBO + (r%8)*span + k/2, physical address by the
 * same address-bit swizzle the TMA applied */
static void read_operand(const sdesc *s, int rows, double (*out)[64], const char *what) {
    if (!s->span) fail("emulator: %s without swizzle not modelled", what);
    uint32_t in_row = s->start % (uint32_t)s->span;
    if (in_row + 32 > (uint32_t)s->span)
        fail("%s: the 32-byte K step at row offset %u crosses the %d-byte swizzle row", what,
             in_row, s->span);
    uint32_t row0 = s->start - in_row, rep = 8u * (uint32_t)s->span;
    if (s->base_off != 0 || row0 % rep)
        fail("%s: rows start at 0x%x, %u bytes into the %u-byte repeat of the %d-byte swizzle, "
             "descriptor base offset %d (PTX ISA: 0 only when the pattern starts on a %u-byte "
             "boundary; the emulator models base offset 0 only)",
             what, row0, row0 % rep, rep, s->span, s->base_off, rep);
    for (int r = 0; r < rows; r++) {
        uint32_t base = s->start + (uint32_t)(r / 8) * s->sbo + (uint32_t)(r % 8) * (uint32_t)s->span;
        for (int b = 0; b < 32; b++) {
            uint32_t a = emu_swizzle(base + (uint32_t)b, s->span);
            check_range(a, 1, 1, what);
            uint8_t v = G.smem[a];
            out[r][2 * b] = e2m1(v & 15);
            out[r][2 * b + 1] = e2m1(v >> 4);
        }
    }
}

/* block16 scales in tensor memory (PTX ISA "Block Scaling", scale_vec::4X/block16, K=64):
 * row r's four scales are the bytes of column (col + r/32) in lane r%32, duplicated in all
 * four lane quarters (checked) */
static void read_scales(int taddr, int rows, double (*sf)[4], const char *what) {
    int lane0 = taddr >> 16, col = taddr & 0xFFFF;
    if (lane0 != 0) fail("%s scale address lane %d (must be 0)", what, lane0);
    for (int r = 0; r < rows; r++) {
        uint32_t w = *tm(r % 32, col + r / 32, what);
        for (int q = 1; q < 4; q++)
            if (*tm(q * 32 + r % 32, col + r / 32, what) != w)
                fail("%s scales of row %d differ between lane quarters 0 and %d (they must be "
                     "duplicated)", what, r, q);
        for (int j = 0; j < 4; j++) sf[r][j] = ue4m3((w >> (8 * j)) & 0xFF);
    }
}

/* tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [d], adesc, bdesc, idesc,
 * [sfa], [sfb], enable_input_d. Executed at issue (tcgen05.mma is asynchronous; the kernel only
 * observes it through tcgen05.commit, which follows in the same thread). */
static void e_mma(int dt, unsigned long long ad, unsigned long long bd, unsigned id, int sfa,
                  int sfb, int en) {
    /* instruction descriptor, PTX ISA Table "Instruction descriptor format for .kind::mxf4 and
     * .kind::mxf4nvf4" */
    unsigned reserved = id & ((3u << 0) | (1u << 3) | (1u << 6) | (1u << 12) | (7u << 24));
    int sparse = (id >> 2) & 1, bsf = (id >> 4) & 3, at = (id >> 7) & 7, bt = (id >> 10) & 3;
    int nega = (id >> 13) & 1, negb = (id >> 14) & 1, ta = (id >> 15) & 1, tb = (id >> 16) & 1;
    int n = (int)((id >> 17) & 63) << 3, ue8m0 = (id >> 23) & 1, m = (int)((id >> 27) & 3) << 7;
    int asf = (id >> 29) & 3, k96 = (id >> 31) & 1;
    if (reserved) fail("instruction descriptor 0x%08x: reserved bits set", id);
    if (sparse || bsf || asf || nega || negb || ta || tb || k96)
        fail("emulator: instruction descriptor 0x%08x uses sparsity/scale ids/negate/transpose/"
             "K=96, not modelled", id);
    if (at != 1 || bt != 1) fail("instruction descriptor 0x%08x: A/B type %d/%d, want E2M1 (1)", id, at, bt);
    if (ue8m0) fail("instruction descriptor 0x%08x: scale type UE8M0, the data is UE4M3", id);
    if (m != 128) fail("emulator: MMA M=%d not modelled (M=128 only)", m);
    if (n < 16 || n > 256 || n % 16) fail("instruction descriptor: N=%d invalid for M=128", n);
    sdesc a, b;
    decode_sdesc(ad, &a, "A");
    decode_sdesc(bd, &b, "B");
    static double av[128][64], bv[256][64], sa[128][4], sb[256][4];
    read_operand(&a, m, av, "MMA operand A");
    read_operand(&b, n, bv, "MMA operand B");
    read_scales(sfa, m, sa, "scale A");
    read_scales(sfb, n, sb, "scale B");
    int dl = dt >> 16, dc = dt & 0xFFFF;
    if (dl != 0) fail("MMA D address lane %d (must be 0)", dl);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int blk = 0; blk < 4; blk++) {
                double s = 0;
                for (int kk = blk * 16; kk < blk * 16 + 16; kk++) s += av[i][kk] * bv[j][kk];
                acc += s * sa[i][blk] * sb[j][blk]; /* every term exact in double */
            }
            uint32_t *d = tm(i, dc + j, "MMA D");
            float old;
            memcpy(&old, d, 4);
            float r = en ? old + (float)acc : (float)acc;
            memcpy(d, &r, 4);
        }
    G.st->mma++;
}

/* tcgen05.commit.cta_group::1.mbarrier::arrive::one: one arrival once the thread's earlier
 * tcgen05 operations are complete (they complete at issue here) */
static void e_commit(int mbar) {
    embar *b = find_mbar(mbar, "tcgen05.commit");
    if (!b) return;
    if (b->pending <= 0) fail("mbarrier 0x%x: more arrivals than its count", mbar);
    b->pending--;
    mbar_progress(b);
}

/* tcgen05.ld.sync.aligned.16x256b.xN.b32: lanes L..L+15; per repetition i thread t holds
 * r[4i], r[4i+1] = lane L + t/4, columns 8i + 2(t%4) + {0,1}; r[4i+2], r[4i+3] = lane
 * L + 8 + t/4, same columns. Warp w of a warpgroup may only access lanes 32(w%4)..+31. */
static void e_ld_16x256b(float *t, int nrep, int taddr) {
    int lane0 = taddr >> 16, col = taddr & 0xFFFF, w = G.cur / 32, l = G.cur % 32;
    int q = (w % 4) * 32;
    /* .sync.aligned: the k-th tcgen05.ld of every lane of a warp has the same address */
    unsigned k = G.th[G.cur].nld++;
    if (k < 64) {
        if (G.ld_addr[w][k] < 0) G.ld_addr[w][k] = taddr; /* the first lane to get here */
        else if (G.ld_addr[w][k] != taddr)
            fail("lanes of warp %d disagree on the address of tcgen05.ld #%u", w, k);
    }
    if (lane0 < q || lane0 + 16 > q + 32)
        fail("tcgen05.ld.16x256b of lanes %d..%d by warp %d (may access lanes %d..%d only)",
             lane0, lane0 + 15, w, q, q + 31);
    for (int i = 0; i < nrep; i++) {
        int c = col + 8 * i + 2 * (l % 4);
        memcpy(&t[4 * i + 0], tm(lane0 + l / 4, c, "tcgen05.ld"), 4);
        memcpy(&t[4 * i + 1], tm(lane0 + l / 4, c + 1, "tcgen05.ld"), 4);
        memcpy(&t[4 * i + 2], tm(lane0 + 8 + l / 4, c, "tcgen05.ld"), 4);
        memcpy(&t[4 * i + 3], tm(lane0 + 8 + l / 4, c + 1, "tcgen05.ld"), 4);
    }
    G.st->ld++;
}

/* cvt.rn.f16x2.f32 d, a, b: d = {a -> upper half, b -> lower half}, round to nearest even */
static unsigned e_cvt(float hi, float lo) {
    return ((unsigned)ref_f16_from_double((double)hi) << 16) | ref_f16_from_double((double)lo);
}

const emu_api emu_table = {
    e_tid, e_ctaid, e_syncthreads, e_cvta_shared, e_static_shared, e_dynamic_shared,
    e_elect_sync, e_mbarrier_init, e_mbarrier_wait, e_arrive_expect_tx, e_nop, e_bulk_g2s,
    e_tma_2d_g2s, e_tmem_alloc, e_tmem_relinquish, e_tmem_dealloc, e_nop, e_nop,
    e_cp_32x128b_warpx4, e_mma, e_commit, e_ld_16x256b, e_nop, e_cvt,
};

static void trampoline(void) {
    int i = G.cur;
    if (G.l->moe_args) G.fn_moe(G.blob, G.l->moe_args, G.l->token_map);
    else G.fn(G.blob);
    G.th[i].state = T_DONE;
}

static int ready(ethread *t) {
    switch (t->state) {
    case T_RUN: return 1;
    case T_BAR: return t->gen != G.bar_gen;
    case T_MBAR: return mbar_done(t->addr, t->parity);
    default: return 0;
    }
}

static void deadlock(void) {
    int o = snprintf(G.err, G.errn, "CTA %u: deadlock, every live thread waits:", G.cta);
    for (unsigned i = 0; i < G.nthreads && o > 0 && (size_t)o < G.errn; i++) {
        ethread *t = &G.th[i];
        if (t->state == T_DONE) continue;
        /* one line per run of threads with the same wait */
        unsigned j = i;
        while (j + 1 < G.nthreads && G.th[j + 1].state == t->state && G.th[j + 1].addr == t->addr &&
               G.th[j + 1].parity == t->parity)
            j++;
        if (t->state == T_BAR)
            o += snprintf(G.err + o, G.errn - (size_t)o, " [threads %u-%u at __syncthreads, %u of %u arrived]",
                          i, j, G.bar_count, G.nthreads);
        else {
            embar *b = NULL;
            for (int k = 0; k < G.nmb; k++)
                if (G.mb[k].addr == (uint32_t)t->addr) b = &G.mb[k];
            o += snprintf(G.err + o, G.errn - (size_t)o,
                          " [threads %u-%u on mbarrier 0x%x parity %d: phase %u, %d arrivals "
                          "pending, tx-count %d]",
                          i, j, t->addr, t->parity, b ? b->phase : 0, b ? b->pending : -1,
                          b ? b->tx : 0);
        }
        i = j;
    }
    G.failed = 1;
}

/* separate (getcontext returns twice: no loop variable of the caller may live across it) */
static __attribute__((noinline)) void init_thread(unsigned i) {
    ethread *t = &G.th[i];
    memset(t, 0, sizeof *t);
    getcontext(&t->uc);
    t->uc.uc_stack.ss_sp = G.stacks + (size_t)i * STACK_SIZE;
    t->uc.uc_stack.ss_size = STACK_SIZE;
    t->uc.uc_link = &G.sched;
    makecontext(&t->uc, trampoline, 0);
}

static int run_cta(void) {
    G.nmb = 0;
    G.pend = NULL;
    G.pend_tail = &G.pend;
    G.bar_count = 0;
    G.bar_gen = 0;
    G.tmem_cols = G.tmem_freed = G.relinquished = 0;
    G.static_next = G.static_start;
    G.nstatic = 0;
    memset(G.coll, 0, sizeof G.coll);
    memset(G.ld_addr, 0xFF, sizeof G.ld_addr); /* -1: not seen */
    memset(G.smem, 0xFF, G.smem_size);          /* poison: 0xFF scales are NaN */
    memset(G.tmem, 0xFF, sizeof(uint32_t) * 128 * 512);
    for (unsigned i = 0; i < G.nthreads; i++) init_thread(i);
    uint64_t rs = G.l->sched_seed ^ ((uint64_t)G.cta * 0x9E3779B97F4A7C15ULL);
    for (;;) {
        int live = 0, ran = 0;
        unsigned first = 0;
        if (G.l->sched_seed) { /* xorshift: another interleaving of the same program */
            rs ^= rs << 13;
            rs ^= rs >> 7;
            rs ^= rs << 17;
            first = (unsigned)(rs % G.nthreads);
        }
        for (unsigned n = 0; n < G.nthreads && !G.failed; n++) {
            unsigned i = (first + n) % G.nthreads;
            ethread *t = &G.th[i];
            if (t->state == T_DONE) continue;
            live = 1;
            G.cur = -1; /* ready() runs in the scheduler (it may deliver lazy copies) */
            if (!ready(t)) continue;
            if (G.failed) break;
            G.cur = (int)i;
            t->state = T_RUN;
            ran = 1;
            swapcontext(&G.sched, &t->uc);
        }
        G.cur = -1;
        if (G.failed) return -1;
        if (!live) break;
        if (!ran) {
            deadlock();
            return -1;
        }
    }
    if (G.pend) {
        fail("async copy to 0x%x (mbarrier 0x%x) still in flight when the CTA exited", G.pend->dst,
             G.pend->mbar);
        return -1;
    }
    for (unsigned w = 0; w < G.nthreads / 32; w++)
        for (int op = 0; op < C_N; op++)
            if (G.coll[w][op] % 32) {
                static const char *nm[] = {"tcgen05.alloc", "tcgen05.relinquish_alloc_permit",
                                           "tcgen05.dealloc"};
                fail("%s executed by %u lanes of warp %u (.sync.aligned: all 32)", nm[op],
                     G.coll[w][op] % 32, w);
                return -1;
            }
    if (G.tmem_cols && !G.tmem_freed) {
        fail("tensor memory still allocated when the CTA exited");
        return -1;
    }
    return 0;
}

static void free_pending(void) {
    while (G.pend) {
        ecopy *c = G.pend;
        G.pend = c->next;
        free(c);
    }
}

int emu_run(const emu_kernel *k, const emu_launch *l, const unsigned char *blob, emu_stats *st,
            char *err, size_t errn) {
    static emu_stats dummy;
    memset(&G, 0, sizeof G);
    G.l = l;
    G.fn = k->fn;
    G.fn_moe = k->fn_moe;
    if (l->moe_args && !k->fn_moe) {
        snprintf(err, errn, "MoE launch of a kernel without a MoE entry");
        return -1;
    }
    G.blob = blob;
    G.st = st ? st : &dummy;
    G.err = err;
    G.errn = errn;
    G.cur = -1;
    err[0] = '\0';
    if (l->threads == 0 || l->threads > MAX_THREADS || l->threads % 32) {
        snprintf(err, errn, "launch of %u threads per CTA", l->threads);
        return -1;
    }
    G.nthreads = l->threads;
    G.dyn_base = (l->static_section + 15u) & ~15u;
    uint32_t sb = (l->static_bytes + 15u) & ~15u;
    if (sb > G.dyn_base) {
        snprintf(err, errn, "static section 0x%x smaller than the static variables (%u B)",
                 l->static_section, l->static_bytes);
        return -1;
    }
    G.static_start = G.dyn_base - sb;
    if ((size_t)l->static_bytes + l->dyn_smem > SMEM_MAX) {
        snprintf(err, errn, "launch needs %zu bytes of shared memory per CTA (> %d)",
                 l->static_bytes + l->dyn_smem, SMEM_MAX);
        return -1;
    }
    G.smem_size = G.dyn_base + (uint32_t)l->dyn_smem;
    G.smem = malloc(G.smem_size);
    G.tmem = malloc(sizeof(uint32_t) * 128 * 512);
    G.th = calloc(G.nthreads, sizeof *G.th);
    G.stacks = malloc((size_t)G.nthreads * STACK_SIZE);
    int rc = 0;
    if (!G.smem || !G.tmem || !G.th || !G.stacks) {
        snprintf(err, errn, "out of memory");
        rc = -1;
    }
    for (unsigned c = 0; c < l->num_ctas && rc == 0; c++) {
        G.cta = c;
        rc = run_cta();
        free_pending();
        G.st->ctas++;
    }
    free(G.smem);
    free(G.tmem);
    free(G.th);
    free(G.stacks);
    return rc;
}
