/* arch.c - the family table: which families exist, which compute capability runs which,
 * and the SM count the heuristic models. Everything else about an arch is in its family
 * (fam_sm90.c, fam_sm100.c), which implements the interface of family.h; this registry is
 * a file of its own so that the families do not depend on the file that lists them
 * (tools/depgraph.sh). */
#include "family.h"

#include <string.h>

static const family *const fam_table[] = {&fam_sm90a, &fam_sm100a};
#define FAM_COUNT (sizeof fam_table / sizeof *fam_table)

const family *fam_get(nvfp4jit_arch arch) {
    for (size_t i = 0; i < FAM_COUNT; i++)
        if (fam_table[i]->arch == arch) return fam_table[i];
    return NULL;
}

const family *fam_by_short_name(const char *s, size_t *len) {
    for (size_t i = 0; s && i < FAM_COUNT; i++) {
        size_t n = strlen(fam_table[i]->short_name);
        if (!strncmp(s, fam_table[i]->short_name, n) && s[n] == ':') {
            if (len) *len = n + 1;
            return fam_table[i];
        }
    }
    return NULL;
}

const family *fam_for_cc(int cc) {
    for (size_t i = 0; i < FAM_COUNT; i++)
        if (fam_table[i]->cc == cc) return fam_table[i];
    return NULL;
}

int fam_model_sms(const family *f) {
    int cc = 0, sms = 0;
    if (drv_device_query(&cc, &sms) == 0 && cc == f->cc && sms > 0) return sms;
    return f->default_sms;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_arch_for_cc(int cc, nvfp4jit_arch *arch) {
    if (!arch) return NVFP4JIT_ERR_INVALID_ARG;
    const family *f = fam_for_cc(cc);
    if (!f) return NVFP4JIT_ERR_UNSUPPORTED_ARCH;
    *arch = f->arch;
    return NVFP4JIT_OK;
}
