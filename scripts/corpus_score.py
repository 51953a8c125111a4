#!/usr/bin/env python3
"""Score a subset of the labelled corpus with the built-in catalog, for tuning work.

    cargo test -p triage --test catalog_corpus --no-run
    python3 scripts/corpus_score.py [--bin TESTBIN] [--ids own-2200:own-2899]
                                    [--share tune|held|all] [--show|--verbose] [FILE]

FILE defaults to fixtures/corpus/own.jsonl. Prints the four figures of the subset (through the
catalog_corpus test binary's TRIAGE_CORPUS hook); --show adds every disagreement with the label,
--verbose every case's deciding entry. Both are refused for held-out cases of own.jsonl: the
held-out share (FNV-1a of the id % 100 < 30) is only ever scored in aggregate."""
import sys, json, subprocess, argparse, os, glob, re
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument('--bin'); ap.add_argument('--ids'); ap.add_argument('--share', default='all')
ap.add_argument('--show', action='store_true'); ap.add_argument('--verbose', action='store_true')
ap.add_argument('file', nargs='?', default=os.path.join(ROOT, 'fixtures/corpus/own.jsonl'))
a = ap.parse_args()
from corpus_share import case_number, held_out as held
rows = [json.loads(l) for l in open(a.file) if l.strip()]
if a.ids:
    lo, hi = (case_number(x) for x in a.ids.split(':'))
    rows = [r for r in rows if lo <= case_number(r['id']) <= hi]
if a.share == 'tune': rows = [r for r in rows if not held(r['id'])]
if a.share == 'held': rows = [r for r in rows if held(r['id'])]
if (a.show or a.verbose) and any(held(r['id']) for r in rows) and 'own' in a.file:
    sys.exit('refusing to show held-out cases')
tmp = '/tmp/score-subset-%d.jsonl' % os.getpid()
open(tmp, 'w').write(''.join(json.dumps(r) + '\n' for r in rows))
b = a.bin or sorted((p for p in glob.glob(os.path.join(os.environ.get('CARGO_TARGET_DIR', os.path.join(ROOT, 'target')), 'debug/deps/catalog_corpus-*')) if not p.endswith('.d')), key=os.path.getmtime)[-1]

env = dict(os.environ, TRIAGE_CORPUS=tmp)
if a.verbose: env['TRIAGE_CORPUS_VERBOSE'] = '1'
p = subprocess.run([b, 'builtin_catalog_scores_on_the_dev_corpus', '--nocapture', '--exact'], env=env, capture_output=True, text=True)
out = p.stderr + p.stdout
os.remove(tmp)
for line in out.splitlines():
    if re.match(r'(catalog |  (transient|permanent|coverage|ambiguous))', line): print(line)
    elif (a.show or a.verbose) and line.startswith('  ') and 'label' in line: print(line)
