"""The digest of a record's own released columns, which the cross-version check of heterogeneous
releases compares across versions (stored in hetero_sources): distinct tuples of texts have
distinct digests, and the texts nearly every table holds keep the digest an earlier ppdp stored."""

from __future__ import annotations

import hashlib
import itertools

from ppdp.engine.methods.heterogeneous.method import _digest

# the separator, the NULL mark and the escape, beside two ordinary characters
ALPHABET = ["a", "1", "\x1f", "\x00", "\x1e"]
TEXTS: list[str | None] = [None] + ["".join(p) for n in range(3) for p in itertools.product(ALPHABET, repeat=n)]


def test_distinct_tuples_have_distinct_digests() -> None:
    for width in (1, 2):
        tuples = list(itertools.product(TEXTS, repeat=width))
        assert len({_digest(t) for t in tuples}) == len(tuples)
    # the collisions of the unescaped join
    assert _digest(("a\x1fb", "c")) != _digest(("a", "b\x1fc"))
    assert _digest((None,)) != _digest(("\x00",))


def test_ordinary_values_keep_their_earlier_digest() -> None:
    """Before the escape, the digest was md5 of the plain texts joined by \\x1f, NULL as \\x00: a
    version published then is compared with the same digests now."""
    for row in [("Private", 39, 77516.0, None), ("", "ü ß", "a|b", "x~y\\z"), (None, None)]:
        earlier = hashlib.md5("\x1f".join("\x00" if v is None else str(v) for v in row).encode()).hexdigest()
        assert _digest(row) == earlier
