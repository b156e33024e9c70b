/* hello.c - the smallest nvfp4jit program: list the sm_90a variants, choose one for a problem
 * set with the heuristic, compile it (or load it from the cache) and print its resources.
 * Needs no GPU. Build against an installed nvfp4jit with examples/c/CMakeLists.txt
 * (find_package) or with pkg-config:
 *   cc hello.c $(pkg-config --cflags --libs nvfp4jit) -o hello */
#include <stdio.h>
#include <stdlib.h>

#include <nvfp4jit.h>

static int fail(nvfp4jit_ctx *ctx, nvfp4jit_status s, const char *what) {
    fprintf(stderr, "%s: %s: %s\n", what, nvfp4jit_status_string(s), nvfp4jit_last_error(ctx));
    nvfp4jit_ctx_destroy(ctx);
    return 1;
}

int main(void) {
    if (nvfp4jit_version_number() != NVFP4JIT_VERSION_NUMBER) {
        fprintf(stderr, "header %s, library %s\n", NVFP4JIT_VERSION_STRING,
                nvfp4jit_version_string());
        return 1;
    }
    nvfp4jit_ctx *ctx;
    nvfp4jit_status s = nvfp4jit_ctx_create(NULL, &ctx);
    if (s != NVFP4JIT_OK) return fail(NULL, s, "nvfp4jit_ctx_create");

    size_t count = 0;
    s = nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, NULL, 0, &count);
    if (s != NVFP4JIT_OK) return fail(ctx, s, "nvfp4jit_variant_space");
    printf("nvfp4jit %s: %zu sm_90a variants\n", nvfp4jit_version_string(), count);

    /* two groups of a MoE layer: 80 and 176 tokens, N = 4096, K = 7168 (shapes only: plan
     * creation reads no pointers) */
    nvfp4jit_group g[2] = {{80, 4096, 7168, 0, 0, 0, 0, 0}, {176, 4096, 7168, 0, 0, 0, 0, 0}};
    nvfp4jit_plan *plan;
    s = nvfp4jit_plan_create(ctx, NVFP4JIT_ARCH_SM90A, g, 2, NULL, &plan);
    if (s != NVFP4JIT_OK) return fail(ctx, s, "nvfp4jit_plan_create");
    char name[96];
    nvfp4jit_variant_format(nvfp4jit_plan_variant(plan, NULL), name, sizeof name);
    nvfp4jit_resources r;
    nvfp4jit_kernel_resources(nvfp4jit_plan_kernel(plan), &r);
    printf("chosen %s: %d registers, %d threads, %d B dynamic shared memory (%s)\n", name,
           r.registers, r.threads, r.shared_dynamic_bytes,
           r.from_cache ? "from the cache" : "compiled");
    /* with device buffers: nvfp4jit_plan_run(plan, g, 2, stream); */
    nvfp4jit_plan_destroy(plan);
    nvfp4jit_ctx_destroy(ctx);
    return 0;
}
