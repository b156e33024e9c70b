# Renders of templates/ for bench/probe/token-bytes-run.sh (issue 13): build/probe-tok-half,
# whose act16 producer copies only the first 64-k token box of each BLOCK_K 128 stage (half the
# token bytes, results garbage), and build/probe-tok-none (no token copies at all). Written
# against the templates of 1f9cd80; run from the repo root.
import os
src = open('templates/sm90a_act16.cuh').read()
old = """          mbar_expect_tx(full, ${TX});
% for j = 0, KSUB - 1 do
%   local KB = KSUB == 1 and "kt" or ("min(kt * " .. KSUB .. " + " .. j .. ", nk - 1)")
          tma_2d(base + slot * ${TOK_BYTES} + ${j * TOK_SUB}, tok_map, ${KB} * 64, y0, full);
% end"""
assert old in src
half = old.replace("mbar_expect_tx(full, ${TX});", "mbar_expect_tx(full, ${TX - (KSUB - 1) * TOK_SUB});").replace(
    "% for j = 0, KSUB - 1 do", "% for j = 0, 0 do")
none = old.replace("mbar_expect_tx(full, ${TX});", "mbar_expect_tx(full, ${TX - TOK_BYTES});").replace(
    "% for j = 0, KSUB - 1 do", "% for j = 0, -1 do")
for name, rep in (('half', half), ('none', none)):
    d = f'build/probe-tok-{name}'
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        s = open('templates/' + f).read()
        if f == 'sm90a_act16.cuh':
            s = s.replace(old, rep)
        open(d + '/' + f, 'w').write(s)
