"""The labelled corpus's split into a tuning share and a held-out share, for the corpus scripts.

A case of `fixtures/corpus/own.jsonl` is held out when the FNV-1a hash of its id, modulo 100, is
below 30: the same rule as `triage/tests/catalog_corpus.rs`, which reports the held-out figures as
the catalog's honest score. Entries are written against the tuning share only. `case_number`
orders ids by number (`own-10000` sorts before `own-2200` as text)."""


def case_number(case_id):
    """The number of `case_id` (`own-12345` -> 12345), or -1 when it has none."""
    tail = case_id.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else -1


def held_out(case_id):
    """True when `case_id` (e.g. `own-12345`) belongs to the held-out share."""
    h = 0xcbf29ce484222325
    for b in case_id.encode():
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h % 100 < 30
