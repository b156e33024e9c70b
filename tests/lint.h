/* lint.h - reading the compiled artifacts of a variant (tests/lint_ptx.c) for the lint area
 * (tests/test_lint.c) and the host-side tensor-map tests (tests/test_hostmap.c).
 *
 * The analysis is a flow-insensitive known-bits abstract interpretation over the PTX of the
 * kernel entry: every register gets a "tnum" (value, mask): the bits not in mask are known to
 * equal value's (the BPF verifier's tracked numbers). Each register's tnum is the join over
 * ALL its definitions, iterated to a fixpoint, so it holds on every path and every loop
 * iteration. What it starts from:
 *   - the dynamic shared-memory symbol (.extern .shared): the byte offset where the cubin
 *     places dynamic shared memory, i.e. the size of the static `.nv.shared.<kernel>` section
 *     rounded up to the symbol's declared alignment (NVRTC + nvJitLink: the static section,
 *     which includes the 1 KB reserved area, comes first; review sm100a-2026-12-03),
 *     rounded up to 16 - NOT to the declaration's .align, which nvJitLink does not honour;
 *   - other .shared symbols: their declared alignment only;
 *   - immediates: exact; loads, special registers and everything not modelled: unknown.
 * Generic <-> shared conversions keep the low 10 bits (NOTE: the shared window of the generic
 * address space is aligned far beyond 1024 bytes), higher bits become unknown. */
#ifndef NJ_LINT_H
#define NJ_LINT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tnum {
    uint64_t v, m; /* known bits: ~m, with values v (v & m == 0) */
} tnum;

/* One PTX instruction of the entry (guards dropped). */
typedef struct lint_insn {
    char op[192];
    int nops;
    char ops[8][160];
    int line; /* 1-based line in the PTX */
} lint_insn;

/* An affine form c + sum coef_i * atom_i over registers whose value is not itself affine in
 * other registers (loads, multi-definition loop variables, and/or results...). Expansion
 * assumes no wraparound (the byte counts and offsets involved are far below 2^31). */
#define LINT_MAX_TERMS 12
typedef struct lint_affine {
    int64_t c;
    int n;
    int atom[LINT_MAX_TERMS];
    int64_t coef[LINT_MAX_TERMS];
    int ok; /* 0: too many terms */
} lint_affine;

typedef struct lint_prog {
    lint_insn *in;
    int n;
    /* registers */
    char (*reg)[32];
    int nreg;
    tnum *val;
    unsigned char *has; /* val defined yet */
    int *ndef, *def;    /* number of definitions, index of the (last) defining insn */
    /* the dynamic shared symbol and its residue */
    char dyn_sym[96];
    int dyn_align;
    long long dyn_base; /* -1: unknown (no section found) */
    long long static_shared; /* .nv.shared.<kernel> size from the cubin, -1 if none */
} lint_prog;

/* Size of the ELF section `name` of a cubin, or -1. */
long long lint_elf_section_size(const unsigned char *elf, size_t n, const char *name);

/* Parse the entry `entry` of ptx and run the analysis with the cubin's static section size.
 * @return 0, or -1 with a message in err. */
int lint_load(lint_prog *p, const char *ptx, const char *entry, const unsigned char *cubin,
              size_t cubin_n, char *err, size_t err_n);
void lint_free(lint_prog *p);

/* Register index of name, or -1. */
int lint_reg(const lint_prog *p, const char *name);
/* tnum of an operand ("%r5", "42", "[%r5+16]": the address), unknown for anything else. */
tnum lint_operand(const lint_prog *p, const char *op);
/* Affine expansion of an operand (an address "[%r5+16]" included). */
lint_affine lint_affine_of(const lint_prog *p, const char *op);
/* tnum of an affine atom (a register; an iteration count is unknown). */
tnum lint_atom_val(const lint_prog *p, int atom);
int lint_affine_eq(const lint_affine *a, const lint_affine *b);
void lint_affine_add(lint_affine *a, const lint_affine *b, int64_t scale);
void lint_affine_str(const lint_prog *p, const lint_affine *a, char *buf, size_t n);

/* 1 if the low log2(align) bits of t are known to be 0 (align a power of two). */
int tnum_aligned(tnum t, uint64_t align);
/* 1 if all bits below 2^bits are known; *r = their value. */
int tnum_low_known(tnum t, int bits, uint64_t *r);
tnum tnum_const(uint64_t c);
tnum tnum_mul(tnum a, tnum b);
void tnum_str(tnum t, int bits, char *buf, size_t n);

/* The address a shared-memory matrix descriptor operand (a 64-bit register) was built from:
 * follows or/cvt/and/shr-by-4 back to the 32-bit address register. *hi receives the constant
 * or-ed into the descriptor (the fields above the start address), 0 if not found; *off (if
 * not NULL) the bytes added to the start field after the shift (an add of an immediate, in
 * 16-byte units: a k-step advance), 0 if none. @return the address register's index, or -1. */
int lint_desc_addr(const lint_prog *p, const char *desc_op, uint64_t *hi, uint64_t *off);

/* ---- a recording stub of cuTensorMapEncodeTiled (tests/test_hostmap.c) ----
 * hostmap_api() is a drv_api whose cuTensorMapEncodeTiled records every parameter, writes
 * "NJMAP" and the record's index into the 128-byte map (so a blob slot can be traced back to
 * its record) and returns CUDA_SUCCESS. Everything else in the table is NULL. */
#include "driver.h"

typedef struct hostmap_rec {
    CUtensorMapDataType type;
    unsigned rank;
    uint64_t addr;
    uint64_t dims[5], strides[5]; /* strides[0..rank-2] as passed (bytes of dims 1..) */
    uint32_t box[5], es[5];
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
    CUtensorMapL2promotion l2;
    CUtensorMapFloatOOBfill oob;
    const void *where;
} hostmap_rec;

const drv_api *hostmap_api(void);
void hostmap_reset(void);
int hostmap_count(void);
const hostmap_rec *hostmap_get(int i);
/* Index of the record whose map was written at `map` (128 bytes), or -1. */
int hostmap_index_of(const void *map);
/* Bits per element of a tensor-map data type (4 for 16U4_ALIGN8B), 0 if not handled. */
int hostmap_elem_bits(CUtensorMapDataType t);
/* Bytes one box delivers (out-of-bounds elements included: TMA zero-fills and counts them). */
uint64_t hostmap_box_bytes(const hostmap_rec *r);
/* The shared-memory alignment a box's destination needs: the swizzle pattern's repeat
 * (128B: 1024, 64B: 512, 32B: 256) or 128 without swizzle (PTX ISA cp.async.bulk.tensor). */
unsigned hostmap_dst_align(const hostmap_rec *r);

/* the host-side map tests (tests/test_hostmap.c), run in the lint area */
void hostmap_test_sm100a(void);
void hostmap_test_sm90a(void);

#endif
