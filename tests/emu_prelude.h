/* emu_prelude.h - force-included (-include) when the emu tests compile a kernel rendered with
 * EMU=1 for the host (g++, C++17): the CUDA keywords the template uses, and the emu_* calls
 * its helpers make, forwarded to the emulator (tests/emu.c) through the table emu_bind gets.
 * Nothing here models hardware: that is all in emu.c. */
#include "emu_api.h"

static const emu_api *emu_;
extern "C" __attribute__((visibility("default"))) void emu_bind(const emu_api *a) { emu_ = a; }

struct emu_uint3 {
    unsigned x, y, z;
};
#define threadIdx (emu_uint3{emu_->tid(), 0u, 0u})
#define blockIdx (emu_uint3{emu_->ctaid(), 0u, 0u})
#define __global__ __attribute__((visibility("default")))
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __syncthreads() emu_->syncthreads()

template <class T> static inline T min(T a, T b) { return a < b ? a : b; }
static inline unsigned long long __cvta_generic_to_shared(const void *p) {
    return emu_->cvta_shared(p);
}
static inline void *emu_static_shared(unsigned size, unsigned align) {
    return emu_->static_shared(size, align);
}
static inline char *emu_dynamic_shared() { return emu_->dynamic_shared(); }
static inline unsigned emu_elect_sync() { return emu_->elect_sync(); }
static inline void emu_mbarrier_init(int a, int c) { emu_->mbarrier_init(a, c); }
static inline void emu_mbarrier_try_wait_parity_loop(int a, int p) { emu_->mbarrier_wait(a, p); }
static inline void emu_mbarrier_arrive_expect_tx(int a, int b) {
    emu_->mbarrier_arrive_expect_tx(a, b);
}
static inline void emu_fence_mbarrier_init() { emu_->fence_mbarrier_init(); }
static inline void emu_cp_async_bulk_g2s(int d, const void *s, int n, int m,
                                         unsigned long long p) {
    emu_->bulk_g2s(d, s, n, m, p);
}
static inline void emu_cp_async_bulk_tensor_2d_g2s(int d, const void *t, int x, int y, int m,
                                                   unsigned long long p) {
    emu_->tma_2d_g2s(d, t, x, y, m, p);
}
static inline void emu_tcgen05_alloc(int d, int n) { emu_->tmem_alloc(d, n); }
static inline void emu_tcgen05_relinquish_alloc_permit() { emu_->tmem_relinquish(); }
static inline void emu_tcgen05_dealloc(int t, int n) { emu_->tmem_dealloc(t, n); }
static inline void emu_tcgen05_fence_before_thread_sync() { emu_->fence_before(); }
static inline void emu_tcgen05_fence_after_thread_sync() { emu_->fence_after(); }
static inline void emu_tcgen05_cp_32x128b_warpx4(int t, unsigned long long s) {
    emu_->cp_32x128b_warpx4(t, s);
}
static inline void emu_tcgen05_mma_mxf4nvf4_block16(int d, unsigned long long a,
                                                    unsigned long long b, unsigned i, int sa,
                                                    int sb, bool en) {
    emu_->mma_mxf4nvf4(d, a, b, i, sa, sb, en ? 1 : 0);
}
static inline void emu_tcgen05_commit(int m) { emu_->commit(m); }
static inline void emu_tcgen05_ld_16x256b(float *t, int nrep, int taddr) {
    emu_->ld_16x256b(t, nrep, taddr);
}
static inline void emu_tcgen05_wait_ld() { emu_->wait_ld(); }
static inline unsigned emu_cvt_rn_f16x2_f32(float hi, float lo) {
    return emu_->cvt_rn_f16x2_f32(hi, lo);
}
/* global atomics of the MoE entry's status word: the emulated CTAs run one after another on
 * one host thread, so plain read-modify-writes are atomic */
static inline int atomicOr(int *p, int v) {
    int o = *p;
    *p = o | v;
    return o;
}
static inline int atomicMin(int *p, int v) {
    int o = *p;
    *p = o < v ? o : v;
    return o;
}
