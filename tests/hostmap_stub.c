/* hostmap_stub.c - a cuTensorMapEncodeTiled that records its parameters (lint.h). */
#include <string.h>

#include "lint.h"

#define HOSTMAP_CAP 4096
static hostmap_rec recs[HOSTMAP_CAP];
static int nrecs;

static CUresult stub_encode(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                            void *addr, const cuuint64_t *dims, const cuuint64_t *strides,
                            const cuuint32_t *box, const cuuint32_t *es,
                            CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                            CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    if (nrecs == HOSTMAP_CAP || rank < 1 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
    hostmap_rec *r = &recs[nrecs];
    memset(r, 0, sizeof *r);
    r->type = type;
    r->rank = rank;
    r->addr = (uint64_t)(uintptr_t)addr;
    for (unsigned i = 0; i < rank; i++) {
        r->dims[i] = dims[i];
        r->box[i] = box[i];
        r->es[i] = es[i];
        if (i + 1 < rank) r->strides[i] = strides[i];
    }
    r->interleave = il;
    r->swizzle = sw;
    r->l2 = l2;
    r->oob = oob;
    r->where = map;
    memset(map, 0, sizeof *map);
    memcpy(map, "NJMAP", 5);
    int idx = nrecs;
    memcpy((unsigned char *)map + 8, &idx, sizeof idx);
    nrecs++;
    return CUDA_SUCCESS;
}

static drv_api api = {.cuTensorMapEncodeTiled = stub_encode};

const drv_api *hostmap_api(void) { return &api; }
void hostmap_reset(void) { nrecs = 0; }
int hostmap_count(void) { return nrecs; }
const hostmap_rec *hostmap_get(int i) { return i >= 0 && i < nrecs ? &recs[i] : NULL; }

int hostmap_index_of(const void *map) {
    if (memcmp(map, "NJMAP", 5) != 0) return -1;
    int idx;
    memcpy(&idx, (const unsigned char *)map + 8, sizeof idx);
    return idx >= 0 && idx < nrecs ? idx : -1;
}

int hostmap_elem_bits(CUtensorMapDataType t) {
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 8;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 16;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: return 32;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 64;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B:
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: return 4;
    default: return 0;
    }
}

uint64_t hostmap_box_bytes(const hostmap_rec *r) {
    uint64_t n = 1;
    for (unsigned i = 0; i < r->rank; i++) n *= r->box[i];
    return n * (uint64_t)hostmap_elem_bits(r->type) / 8;
}

unsigned hostmap_dst_align(const hostmap_rec *r) {
    switch (r->swizzle) {
    case CU_TENSOR_MAP_SWIZZLE_128B: return 1024;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 512;
    case CU_TENSOR_MAP_SWIZZLE_32B: return 256;
    default: return 128;
    }
}
