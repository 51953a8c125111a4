#!/usr/bin/env python3
"""Check a batch of newly gathered cases against the corpus, and append settled batches to it.

    python3 scripts/corpus_batch.py check BATCH.jsonl...
    python3 scripts/corpus_batch.py append SETTLED.jsonl... [--changes CHANGES.jsonl...]

`check` reports, per batch file: label counts, lines that do not parse, missing or extra fields,
labels other than retry/fail/ambiguous, ids not of the form own-NNNNN or already used, lone
surrogate escapes (which the Rust test cannot load), and texts (compared with whitespace and case
folded) or sources already in `own.jsonl` / `dev.jsonl` or in another of the given batches.
`append` adds the cases to `fixtures/corpus/own.jsonl` sorted by id, and the consistency pass's
changes (`{"id", "old", "new", "reason"}`; `new` may be "dropped") to
`fixtures/corpus/relabels.jsonl`, skipping those that change nothing. See
`fixtures/corpus/GATHERING.md` for how a batch is gathered and settled."""
import argparse, collections, json, os, re, sys

from corpus_share import case_number

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, 'fixtures', 'corpus')
FIELDS = ['id', 'exit_code', 'stderr_tail', 'label', 'category', 'why', 'source']


def load(path):
    return [json.loads(l) for l in open(path, encoding='utf-8') if l.strip()]


def check(paths):
    corpus = load(os.path.join(CORPUS, 'own.jsonl')) + load(os.path.join(CORPUS, 'dev.jsonl'))
    fold = lambda t: re.sub(r'\s+', ' ', t).strip().lower()
    ids = {c['id'] for c in corpus}
    texts = {fold(c['stderr_tail']): c['id'] for c in corpus}
    sources = collections.defaultdict(list)
    for c in corpus:
        sources[c['source'].split('#')[0].rstrip('/')].append(c['id'])
    seen_ids, seen_texts, problems = {}, {}, 0
    for path in paths:
        rows = []
        for n, line in enumerate(open(path, encoding='utf-8'), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f'{path}:{n}: not JSON: {e}')
                    problems += 1
        print(f'{path}: {len(rows)} cases {dict(collections.Counter(r.get("label") for r in rows))}')
        for r in rows:
            i = r.get('id')
            issues = []
            if sorted(r) != sorted(FIELDS):
                issues.append(f'fields {sorted(r)}')
            if r.get('label') not in ('retry', 'fail', 'ambiguous'):
                issues.append(f'label {r.get("label")!r}')
            if not re.fullmatch(r'own-\d{4,5}', i or ''):
                issues.append('id not own-NNNNN')
            if i in ids or i in seen_ids:
                issues.append('id already used')
            t = fold(r.get('stderr_tail', ''))
            if not t:
                issues.append('empty tail')
            if any(isinstance(v, str) and re.search('[\ud800-\udfff]', v) for v in r.values()):
                # A lone surrogate (a `\udcXX` escape of a byte that was not UTF-8) is valid
                # JSON to Python but not to serde_json: the corpus test could not load the file.
                issues.append('lone surrogate escape: replace it with U+FFFD')
            if t in texts or t in seen_texts:
                issues.append(f'text already in {texts.get(t) or seen_texts.get(t)}')
            src = r.get('source', '').split('#')[0].rstrip('/')
            if src in sources:
                issues.append(f'source already used by {sources[src][:3]}')
            seen_ids[i], seen_texts[t] = path, i
            for issue in issues:
                print(f'  {i}: {issue}')
            problems += len(issues)
    return problems


def append(paths, change_paths):
    rows = sorted((c for p in paths for c in load(p)), key=lambda c: case_number(c['id']))
    with open(os.path.join(CORPUS, 'own.jsonl'), 'a', encoding='utf-8') as out:
        for c in rows:
            out.write(json.dumps({k: c[k] for k in FIELDS}, ensure_ascii=False) + '\n')
    changes = [c for p in change_paths for c in load(p) if c['old'] != c['new']]
    changes.sort(key=lambda c: case_number(c['id']))
    with open(os.path.join(CORPUS, 'relabels.jsonl'), 'a', encoding='utf-8') as out:
        for c in changes:
            out.write(json.dumps({k: c[k] for k in ('id', 'old', 'new', 'reason')}, ensure_ascii=False) + '\n')
    print(f'{len(rows)} cases appended, {len(changes)} changes recorded')


ap = argparse.ArgumentParser()
ap.add_argument('command', choices=['check', 'append'])
ap.add_argument('files', nargs='+')
ap.add_argument('--changes', nargs='*', default=[])
a = ap.parse_args()
if a.command == 'check':
    sys.exit(1 if check(a.files) else 0)
append(a.files, a.changes)
