#!/usr/bin/env python3
"""Count how the labelled corpus labels the tails a regex finds, for writing catalog entries.

    python3 scripts/corpus_grep.py REGEX [--show]

Searches every line of `fixtures/corpus/dev.jsonl` and of the tuning share of
`fixtures/corpus/own.jsonl` (Python `re` syntax, case-sensitive unless the pattern says
`(?i)`), and prints the label counts of the cases with a matching line; `--show` adds each case's
id, label and last matching line. The held-out share (FNV-1a of the id % 100 < 30) is skipped:
entries are written against the tuning share only, and its figures stay the honest score."""
import argparse, collections, json, os, re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, 'fixtures', 'corpus')

from corpus_share import held_out


ap = argparse.ArgumentParser()
ap.add_argument('regex')
ap.add_argument('--show', action='store_true')
a = ap.parse_args()
rx = re.compile(a.regex)
counts = collections.Counter()
for name in ('dev.jsonl', 'own.jsonl'):
    for line in open(os.path.join(CORPUS, name), encoding='utf-8'):
        case = json.loads(line)
        if name == 'own.jsonl' and held_out(case['id']):
            continue
        hits = [l for l in case['stderr_tail'].splitlines() if rx.search(l)]
        if hits:
            counts[case['label']] += 1
            if a.show:
                print(case['id'], case['label'], '|', hits[-1][:200])
print(dict(counts))
