#!/usr/bin/env bash
# Issue 13: is the graph replay's slowdown on the long sets (dd6663b) the graph's, or the
# GPU's state when it was timed (after every eager call)? bench now times replay and eager
# alternately; here with nvidia-smi sampling clocks, power and throttle reasons every 50 ms,
# and the same variant timed three times in a row (--variant auto,auto,auto) to see any drift.
# Device tool: carry build/nvfp4jit, build/cache.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
mark() { echo "MARK $(date +%H:%M:%S.%N | cut -c1-12) $*" | tee -a $OUT/smi.csv; }
mark start; sleep 1
mark drift-prefill8-up
timeout 200 build/nvfp4jit bench --iters 200 --no-cublas --variant auto,auto,auto --problems problems/moe.txt --set prefill8-up,single-large > $OUT/drift.txt 2>&1
echo "drift rc $?"; grep -hE '^== |nvfp4jit sm|graph replay|rror' $OUT/drift.txt
mark cublas-moe
timeout 300 build/nvfp4jit bench --iters 50 --problems problems/moe.txt --set prefill8-up,single-large,skewed8-up > $OUT/moe.txt 2>&1
echo "moe rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|rror' $OUT/moe.txt
mark cublas-gpumode
timeout 300 build/nvfp4jit bench --iters 50 --problems problems/gpumode.txt --set 'bench*' > $OUT/gm.txt 2>&1
echo "gpumode rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|geomean|rror' $OUT/gm.txt
mark end; sleep 0.5; kill $SMI
python3 - $OUT/smi.csv <<'PY'
import sys
# per phase: samples, median / min / max SM clock, max power, reasons seen while busy
ph, rows = None, {}
for l in open(sys.argv[1]):
    if l.startswith('MARK'):
        ph = l.split()[2]; rows.setdefault(ph, []); continue
    f = [x.strip() for x in l.split(',')]
    if len(f) < 6 or ph is None: continue
    try: rows[ph].append((float(f[1].split()[0]), float(f[3].split()[0]), f[5]))
    except ValueError: pass
for ph, r in rows.items():
    busy = [x for x in r if x[1] > 150]
    if not busy: print(ph, 'samples', len(r), 'none busy'); continue
    c = sorted(x[0] for x in busy)
    print(f"{ph}: {len(r)} samples, {len(busy)} over 150 W: SM MHz median {c[len(c)//2]:.0f} min {c[0]:.0f} max {c[-1]:.0f}, "
          f"max W {max(x[1] for x in busy):.0f}, reasons {sorted(set(x[2] for x in busy))}")
PY
