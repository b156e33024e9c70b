# Renders of templates/ for bench/probe/epi-prep-run.sh (issue 13): the act16 template of fdc7693
# (build/ab-base), with only the coalesced epilogue (build/ab-epi: hunks 3-4 of
# bench/probe/epi-prep.patch) and with only the prep's group table in shared memory (build/ab-prep:
# hunks 1-2). The tree's own templates (both changes) are the fourth arm. Run from the repo root.
import os, re, subprocess
base = subprocess.run(['git', 'show', 'fdc7693:templates/sm90a_act16.cuh'], capture_output=True,
                      text=True, check=True).stdout
patch = open('bench/probe/epi-prep.patch').read()
head, *hunks = re.split(r'(?m)^(?=@@ )', patch)
for name, pick in (('base', []), ('epi', [2, 3]), ('prep', [0, 1])):
    d = 'build/ab-' + name
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        if f != 'sm90a_act16.cuh':
            open(d + '/' + f, 'w').write(open('templates/' + f).read())
    open(d + '/sm90a_act16.cuh', 'w').write(base)
    if pick:
        p = head.replace('a/templates/', 'a/').replace('b/templates/', 'b/') + ''.join(hunks[i] for i in pick)
        subprocess.run(['patch', '-s', '-p1', '-d', d], input=p, text=True, check=True)
