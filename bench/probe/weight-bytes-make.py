# Renders of templates/ for bench/probe/weight-bytes-run.sh (issue 13, 2026-12-07): the act16
# producer without its weight copy (build/probe-w-none: the consumers decode whatever the ring
# slot held; results garbage) and without its weight-scale copies (build/probe-sf-none). After
# the token-width patches showed that the size of a TMA copy matters on this kernel (four 4 KB
# token boxes cost more than one 16 KB box): the weight box has BLOCK_K/2-byte rows (32 bytes at
# BLOCK_K 64), the scales come as 512-byte boxes. Third render (build/probe-w-flat): the same
# weight bytes per stage as ONE contiguous bulk copy from inside the weight array (what a
# pre-tiled weight layout would read; results garbage): is it the bytes or the copy's shape?
# Written against the templates of 7fab090.
import os
src = open('templates/sm90a_act16.cuh').read()
exp = "          mbar_expect_tx(full, ${TX});\n"
wcp = "          tma_2d(base + ${W_OFF} + slot * ${W_BYTES}, w_map, kt * ${W_ROW}, x0, full);\n"
scp = """          tma_2d(base + ${SF_OFF} + slot * ${SF_BYTES} + ${j * SF_SUB + b * 512}, sf_map, 0,
                 (x0 / 128 + min(${b}, sfb_last)) * nk + ${KB}, full);
"""
flat = """          {  // probe: W_BYTES contiguous bytes of the weight array, 16-aligned, inside it
            const unsigned long long wtot = (unsigned long long)g.n * (unsigned long long)(g.k / 2);
            const unsigned long long wlim = (wtot - ${W_BYTES}) / 16 * 16 + 16;
            unsigned long long off = ((unsigned long long)(x0 / ${BLOCK_M}) * 7919ull + (unsigned long long)kt) * ${W_BYTES};
            off %= wlim;
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(base + ${W_OFF} + slot * ${W_BYTES}), "l"(g.b + off), "r"(${W_BYTES}), "r"(full) : "memory");
          }
"""
for s in (exp, wcp, scp):
    assert src.count(s) == 1, s
arms = {
    'w-none': src.replace(exp, exp.replace("${TX}", "${TX - W_BYTES}")).replace(wcp, ""),
    'sf-none': src.replace(exp, exp.replace("${TX}", "${TX - SF_BYTES}")).replace(scp, ""),
    'w-flat': src.replace(wcp, flat),
    # 2026-12-07: w-flat ran 30-36 % SLOWER than "as is" (H100), bench3 (weights in L2) too; its
    # offsets are only 16-byte aligned. This arm: W_BYTES-aligned offsets (256 B at least).
    'w-flat-al': src.replace(wcp, flat.replace(
        "            off %= wlim;\n",
        "            off = off / ${W_BYTES} % (wtot / ${W_BYTES}) * ${W_BYTES};\n")),
}
assert arms['w-flat-al'] != arms['w-flat']
for name, text in arms.items():
    d = f'build/probe-{name}'
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        open(d + '/' + f, 'w').write(text if f == 'sm90a_act16.cuh' else open('templates/' + f).read())
