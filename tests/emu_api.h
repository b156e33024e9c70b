/* emu_api.h - the calls between a kernel rendered with EMU=1 (compiled for the host through
 * tests/emu_prelude.h) and the CPU emulator of the sm_100a data path (tests/emu.c). One entry
 * per PTX instruction the template uses, same operands. Plain C: included by both sides. */
#ifndef NJ_EMU_API_H
#define NJ_EMU_API_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emu_api {
    unsigned (*tid)(void);   /* %tid.x of the running emulated thread */
    unsigned (*ctaid)(void); /* %ctaid.x */
    void (*syncthreads)(void);
    unsigned (*cvta_shared)(const void *p); /* generic -> shared-window address */
    /* the next static __shared__ variable (declaration order) in the emulated static section */
    void *(*static_shared)(unsigned size, unsigned align);
    char *(*dynamic_shared)(void); /* the dynamic shared base, where the cubin puts it */
    unsigned (*elect_sync)(void);
    void (*mbarrier_init)(int addr, int count);
    void (*mbarrier_wait)(int addr, int parity); /* try_wait.parity loop */
    void (*mbarrier_arrive_expect_tx)(int addr, int bytes);
    void (*fence_mbarrier_init)(void);
    void (*bulk_g2s)(int dst, const void *src, int size, int mbar, unsigned long long policy);
    void (*tma_2d_g2s)(int dst, const void *tmap, int x, int y, int mbar,
                       unsigned long long policy);
    void (*tmem_alloc)(int dst, int ncols);
    void (*tmem_relinquish)(void);
    void (*tmem_dealloc)(int taddr, int ncols);
    void (*fence_before)(void);
    void (*fence_after)(void);
    void (*cp_32x128b_warpx4)(int taddr, unsigned long long sdesc);
    void (*mma_mxf4nvf4)(int d, unsigned long long adesc, unsigned long long bdesc,
                         unsigned idesc, int sfa, int sfb, int enable_input_d);
    void (*commit)(int mbar);
    void (*ld_16x256b)(float *t, int nrep, int taddr);
    void (*wait_ld)(void);
    unsigned (*cvt_rn_f16x2_f32)(float hi, float lo); /* cvt.rn.f16x2.f32 d, hi, lo */
} emu_api;

#ifdef __cplusplus
}
#endif

#endif
