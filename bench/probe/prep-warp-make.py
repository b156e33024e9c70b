# Renders for bench/probe/prep-warp-run.sh (issue 13): templates/ with the act16 template of
# fdc7693 (build/ab-base: before the staged C stores) and of 6eddf71 (build/ab-epi: staged C
# stores, the old prep lookup); the tree's templates (the prep's warp lookup) are the third arm.
# Run from the repo root.
import os, subprocess
for name, commit in (('base', 'fdc7693'), ('epi', '6eddf71')):
    d = 'build/ab-' + name
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        src = subprocess.run(['git', 'show', commit + ':templates/' + f], capture_output=True, text=True)
        open(d + '/' + f, 'w').write(src.stdout if src.returncode == 0 else open('templates/' + f).read())
