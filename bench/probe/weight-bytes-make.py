# Renders of templates/ for bench/probe/weight-bytes-run.sh (issue 13, 2026-12-07): the act16
# producer without its weight copy (build/probe-w-none: the consumers decode whatever the ring
# slot held; results garbage) and without its weight-scale copies (build/probe-sf-none). After
# the token-width patches showed that the size of a TMA copy matters on this kernel (four 4 KB
# token boxes cost more than one 16 KB box): the weight box has BLOCK_K/2-byte rows (32 bytes at
# BLOCK_K 64), the scales come as 512-byte boxes. Written against the templates of 7fab090.
import os
src = open('templates/sm90a_act16.cuh').read()
exp = "          mbar_expect_tx(full, ${TX});\n"
wcp = "          tma_2d(base + ${W_OFF} + slot * ${W_BYTES}, w_map, kt * ${W_ROW}, x0, full);\n"
scp = """          tma_2d(base + ${SF_OFF} + slot * ${SF_BYTES} + ${j * SF_SUB + b * 512}, sf_map, 0,
                 (x0 / 128 + min(${b}, sfb_last)) * nk + ${KB}, full);
"""
for s in (exp, wcp, scp):
    assert src.count(s) == 1, s
arms = {
    'w-none': src.replace(exp, exp.replace("${TX}", "${TX - W_BYTES}")).replace(wcp, ""),
    'sf-none': src.replace(exp, exp.replace("${TX}", "${TX - SF_BYTES}")).replace(scp, ""),
}
for name, text in arms.items():
    d = f'build/probe-{name}'
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        open(d + '/' + f, 'w').write(text if f == 'sm90a_act16.cuh' else open('templates/' + f).read())
