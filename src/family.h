/* family.h - one kernel family per architecture: its validity rules, the parameters its
 * template is rendered with, and the host half of its dispatch (what the kernel reads from
 * the device-side blob). Code generation lives in templates/; choices live in heuristic.c. */
#ifndef NJ_FAMILY_H
#define NJ_FAMILY_H

#include "common.h"
#include "driver.h"
#include "template.h"

/* Launch geometry and the device blob a family's kernel reads. The kernel's signature is
 *   extern "C" __global__ void <KERNEL_NAME>(const unsigned char *blob)
 * and it is launched with grid (num_ctas,1,1), block (threads,1,1), dyn_smem bytes. */
typedef struct fam_launch {
    unsigned num_ctas;
    unsigned threads;
    size_t dyn_smem;
    /* optional first kernel <KERNEL_NAME>_prep(blob), launched before the main one on the
     * same stream: prep_ctas x prep_threads threads, no dynamic shared memory; 0 = none */
    unsigned prep_ctas;
    unsigned prep_threads;
} fam_launch;

/* The second parameter of the sm_90a act16/act16p kernels and of their prep kernel
 * (templates/sm90a_act16.cuh MoeArgs, 64 bytes): all zero for the grouped call (plan_run),
 * the per-call pointers of a MoE call (src/moe.c) otherwise. */
typedef struct nj_moe_args {
    uint64_t a, sfa, c, offsets, sf_offsets, status;
    int32_t max_rows, sf_rows;
    uint64_t barrier;
} nj_moe_args;
_Static_assert(sizeof(nj_moe_args) == 64, "nj_moe_args must match MoeArgs (64 bytes)");

typedef struct family {
    nvfp4jit_arch arch;
    const char *arch_name;     /* "sm_90a" */
    const char *template_name; /* "sm90a_grouped.cu" */
    /* Validity rules. @return 1 if valid, else 0 with the broken rule in why. */
    int (*check)(const nvfp4jit_variant *v, char *why, size_t why_n);
    int (*threads)(const nvfp4jit_variant *v);
    size_t (*dyn_smem)(const nvfp4jit_variant *v);
    /* Template parameters beyond the common ones (ARCH, BLOCK_M, BLOCK_N, BLOCK_K, STAGES,
     * SWAP_AB, THREADS, DYN_SMEM, KERNEL_NAME, which the caller sets). @return count. */
    int (*params)(const nvfp4jit_variant *v, tmpl_param *p, int cap);
    /* Enumerate the variant space: calls emit for every candidate (valid or not; the caller
     * filters with check). */
    void (*enumerate)(void (*emit)(const nvfp4jit_variant *v, void *u), void *u);
    /* Bytes of the device blob for this problem set. */
    size_t (*blob_size)(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n);
    /* Bytes of device workspace the kernels need for this problem set (NULL or 0: none). The
     * plan owns it (grow-only, freed with the plan); blob_fill gets its address. */
    size_t (*workspace_size)(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n);
    /* Fill the host copy of the blob. dev is the device address the blob will have (for
     * pointers inside it). May call the driver (tensor maps). Sets *launch.
     * @return NVFP4JIT_OK or an error recorded on ctx. */
    nvfp4jit_status (*blob_fill)(nvfp4jit_ctx *ctx, const drv_api *api,
                                 const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n,
                                 unsigned char *host, uint64_t dev, uint64_t workspace,
                                 fam_launch *launch);
    /* Tensor-memory columns one CTA allocates (tcgen05.alloc), or NULL where the arch has
     * no tensor memory. The heuristic's occupancy model reads it. */
    int (*tmem_cols)(const nvfp4jit_variant *v);
    /* Limits of a variant that depend on the problem set (NULL: none), checked at plan time
     * so that a forced or tuned variant the set exceeds is refused before anything is
     * compiled or allocated. @return 1 if the set fits, else 0 with the reason in why. */
    int (*fits)(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, char *why,
                size_t why_n);
} family;

/* The MoE entry of the sm_90a act16/act16p kernels (fam_sm90.c; layout there). */
size_t sm90_moe_blob_size(int experts);
size_t sm90_moe_dyn_smem(const nvfp4jit_variant *v, int experts);
/* @return 1 if v is act16/act16p and its MoE kernel fits shared memory with `experts`. */
int sm90_moe_fits(const nvfp4jit_variant *v, int experts);
nvfp4jit_status sm90_moe_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                   const nvfp4jit_variant *v, int experts, int64_t n, int64_t k,
                                   const uint64_t *b, const uint64_t *sfb, int64_t max_rows,
                                   uint64_t ws, unsigned char *host);

/* The MoE entry <KERNEL_NAME>_moe(blob, MoeArgs, __grid_constant__ CUtensorMap tokens) of
 * the sm_100a family (fam_sm100.c; layout there): the plan's constant blob, the per-call
 * token map, and the grid for the worst case of (weights, max rows). */
size_t sm100_moe_blob_size(int experts);
nvfp4jit_status sm100_moe_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, int experts, int64_t n, int64_t k,
                                    const uint64_t *b, const uint64_t *sfb, unsigned char *host);
nvfp4jit_status sm100_moe_token_map(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, uint64_t a, int64_t max_rows,
                                    int64_t k, void *map);
int64_t sm100_moe_grid(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows);
unsigned sm100_moe_threads(const nvfp4jit_variant *v);

extern const family fam_sm90a;
extern const family fam_sm100a;

/* @return the family of an arch, or NULL. */
const family *fam_get(nvfp4jit_arch arch);

#endif
