/* emu.h - a CPU emulator of the sm_100a data path, for running the RENDERED sm_100a kernel
 * (templates/sm100a_grouped.cu with EMU=1, compiled for the host by the system C++ compiler)
 * without a Blackwell GPU. Test-only: not part of the library.
 *
 * What it models, from the PTX ISA (each check fails the run with a message instead of
 * hanging or guessing):
 *  - the CTA's shared window as one byte array laid out like the cubin: 0..R reserved,
 *    the static variables, then the dynamic base at the size of .nv.shared.<kernel>;
 *  - cp.async.bulk.tensor.2d (TMA) from the tensor maps a recording cuTensorMapEncodeTiled
 *    stub wrote: 4-bit (16U4_ALIGN8B), 8-bit and 16-bit elements, out-of-bounds zero fill,
 *    32/64/128-byte swizzle computed from the absolute shared address bits, destinations that
 *    must be 128-byte aligned, complete_tx of the full box;
 *  - cp.async.bulk (1-D) with complete_tx; mbarrier init / arrive.expect_tx / try_wait.parity
 *    with phases and transaction counts; copies land eagerly or lazily (at the first wait on
 *    their barrier), so a consumer that reads before waiting sees stale data;
 *  - tensor memory (128 lanes x 512 columns x 32 bit): tcgen05.alloc/dealloc/relinquish,
 *    .cp.32x128b.warpx4, .mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 with the
 *    instruction and shared-memory descriptors decoded, .commit, .ld.16x256b, the warp /
 *    lane-quarter access rule;
 *  - the threads of a CTA as cooperative coroutines (one host thread), __syncthreads, elect;
 *    a state where every live thread waits is reported as a deadlock with the waits listed.
 * CTAs run one after another, each with fresh (poisoned) shared and tensor memory. */
#ifndef NJ_EMU_H
#define NJ_EMU_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* What the recording cuTensorMapEncodeTiled stub stores in a CUtensorMap (128 bytes). */
typedef struct emu_tmap {
    uint64_t magic;
    uint64_t addr;
    uint64_t dims[2];
    uint64_t stride1; /* bytes between rows (globalStrides[0]) */
    uint32_t dtype, rank, interleave, swizzle, l2, oob;
    uint32_t box[2], estride[2];
} emu_tmap;
#define EMU_TMAP_MAGIC 0x3150414d54554d45ULL /* "EMUTMAP1" */

/* The recording stub: checks the parameters the emulator relies on (rank 2, element type,
 * dims, 16-byte strides, box <= 256, inner box bytes vs swizzle span, no interleave, element
 * strides 1) and writes an emu_tmap. @return CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE. */
CUresult emu_encode_tiled(CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank,
                          void *addr, const cuuint64_t *dims, const cuuint64_t *strides,
                          const cuuint32_t *box, const cuuint32_t *estrides,
                          CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                          CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob);

/* The TMA tile model (shared with the H200 probe): copy one box of map at element
 * coordinates (x, y) into the shared window smem[0..smem_size) at byte address dst, as
 * cp.async.bulk.tensor.2d does. @return the bytes complete_tx counts (the full box), or -1
 * with the broken rule in err. */
long emu_tma_box_2d(const emu_tmap *map, int x, int y, uint8_t *smem, size_t smem_size,
                    uint32_t dst, char *err, size_t errn);
/* Physical shared address of logical address a under swizzle span 0 (none), 32, 64, 128. */
uint32_t emu_swizzle(uint32_t a, int span);

/* A host build of a kernel rendered with EMU=1. */
typedef struct emu_kernel {
    void *so;
    void (*fn)(const unsigned char *blob);
    /* <name>_moe, the sm_100a MoE entry, if the build has one (else NULL): the EMU render
     * takes its MoeArgs and token map by pointer (by value on the GPU) */
    void (*fn_moe)(const unsigned char *blob, const void *moe_args, const void *token_map);
} emu_kernel;
/* Compile source (C++ through tests/emu_prelude.h) into dir/tag.so with $CXX or c++ and load
 * it; `name` is the kernel's symbol. @return 0 or -1 with the compiler's log in err. */
int emu_kernel_build(const char *src, size_t len, const char *dir, const char *tag,
                     const char *name, emu_kernel *k, char *err, size_t errn);
void emu_kernel_close(emu_kernel *k);

/* A global buffer the kernel may read (bulk-copy sources and tensor-map extents are checked
 * against these when any are given). */
typedef struct emu_range {
    const void *p;
    size_t n;
} emu_range;

typedef struct emu_launch {
    unsigned num_ctas, threads;
    size_t dyn_smem;
    uint32_t static_section; /* size of .nv.shared.<kernel> in the cubin: the dynamic base */
    uint32_t static_bytes;   /* the kernel's own static shared bytes (resources) */
    int lazy;                /* 1: async copies land at the first wait on their barrier */
    const emu_range *ranges; /* readable global buffers (NULL: unchecked) */
    int nranges;
    uint64_t sched_seed;     /* != 0: each scheduling pass starts at a pseudo-random thread */
    /* != NULL: run the MoE entry with these (64-byte nj_moe_args, 128-byte CUtensorMap) */
    const void *moe_args, *token_map;
} emu_launch;

typedef struct emu_stats {
    unsigned long long ctas, tma, bulk, mma, cp, ld, switches;
} emu_stats;

/* Run the kernel over every CTA. @return 0, or -1 with the first violation in err
 * ("CTA 3 thread 160: cp.async.bulk.tensor destination 0x430 is not 128-byte aligned"). */
int emu_run(const emu_kernel *k, const emu_launch *l, const unsigned char *blob,
            emu_stats *st, char *err, size_t errn);

/* (tests/test_emu.c) Build the EMU render of an sm_100a variant (spec "sm100a:...") into dir
 * and read its MoE entry's layout from the variant's real cubin: *section = size of
 * .nv.shared.<kernel>_moe, *static_bytes = its static shared bytes. @return 0 or -1 (err). */
int emu_build_moe_variant(const char *spec, const char *dir, emu_kernel *k, uint32_t *section,
                          uint32_t *static_bytes, char *err, size_t errn);

/* Size of section `name` in an ELF64 image, or -1. */
long emu_elf_section_size(const void *elf, size_t n, const char *name);

/* The TMA probe (emu_probe.c): compiles everywhere; runs on a GPU of compute capability 9.0
 * and compares the shared bytes of real TMA loads with emu_tma_box_2d. Test bodies. */
void emu_probe_compile_test(void);
void emu_probe_run(void);

#endif
