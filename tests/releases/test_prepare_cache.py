"""A run that reads its hierarchy files again in the same process reuses what it parsed
(engine/core/hierarchy.py ``_PARSED``, keyed by the files' content): an edited hierarchy line or
an edited source value must give the release a cold run gives, never the stale one."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import duckdb

from ppdp.engine.core import hierarchy as H
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from tests.conftest import ADULT, load_adult, write_spec

QIDS = ["age", "sex", "race"]
# age is generalized to its first level: where a leaf sits in its hierarchy decides the release
K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n[optimizer.params]\nsuppression_limit = 0.05\n'


def _published(db: Path) -> Counter:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute('SELECT "age", "sex", "race", "salary-class" FROM published."cached"').fetchall()
    finally:
        con.close()
    return Counter(rows)


def _release(db: Path, folder: Path, spec_path: Path) -> tuple[Counter, dict]:
    """A release of the source in ``db`` on a fresh copy of it (version 1), its rows and levels."""
    fresh = spec_path.parent / f"run-{len(list(spec_path.parent.glob('run-*.duckdb')))}.duckdb"
    shutil.copyfile(db, fresh)
    write_spec(spec_path, db=fresh, qids=QIDS, hierarchies={q: str(folder / f"adult_hierarchy_{q}.csv") for q in QIDS},
               models=K5, output="cached", budget=100000)
    outcome = run_release(load_spec(spec_path), progress=False)
    return _published(fresh), dict(outcome.run.solution["levels"])


def _edit_one_line(path: Path, leaf: str, under: str) -> None:
    """Move ``leaf`` under ``under``'s groups: its line takes the other leaf's generalizations
    (still a tree: the path of an existing leaf)."""
    rows = [line.split(";") for line in path.read_text().splitlines()]
    tail = next(r[1:] for r in rows if r[0] == under)
    path.write_text("".join(";".join([leaf, *tail] if r[0] == leaf else r) + "\n" for r in rows))


def test_edited_hierarchy_or_source_value_gives_the_cold_release(tmp_path):
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    for q in QIDS:
        shutil.copyfile(ADULT / f"adult_hierarchy_{q}.csv", folder / f"adult_hierarchy_{q}.csv")
    db = load_adult(tmp_path / "source.duckdb", rows=2000)
    spec_path = tmp_path / "spec.toml"

    first = _release(db, folder, spec_path)
    age = folder / "adult_hierarchy_age.csv"
    parsed = H.read_arx_csv(age, "age")
    assert H.read_arx_csv(age, "age") is parsed  # read again: the parse is reused

    _edit_one_line(age, "30", "50")
    edited = H.read_arx_csv(age, "age")
    assert edited is not parsed and edited.digest() != parsed.digest()
    warm = _release(db, folder, spec_path)  # the unedited files' parses are still cached
    H._PARSED.clear()
    cold = _release(db, folder, spec_path)
    assert warm == cold and cold != first

    con = duckdb.connect(str(db))
    con.execute("UPDATE main.adult SET age = 90 WHERE id = (SELECT MIN(id) FROM main.adult WHERE age <> 90)")
    con.close()
    warm = _release(db, folder, spec_path)
    H._PARSED.clear()
    assert warm == _release(db, folder, spec_path)


def test_an_unchanged_stamp_skips_the_read_and_any_write_parses_again(tmp_path, monkeypatch):
    """A file whose stat stamp (device, inode, size, mtime_ns, ctime_ns) is the one it was read
    with is not read again; a rewrite of the same size with its mtime set back still changes
    ctime, and a replaced file has another inode: both are parsed afresh. A file written within
    RACY_NS is read every time (a coarse file system's clock could give its next write the same
    stamp)."""
    import os
    import time

    age = tmp_path / "age.csv"
    shutil.copyfile(ADULT / "adult_hierarchy_age.csv", age)
    reads: list[Path] = []
    real_read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real_read(self))

    first = H.read_arx_csv(age, "age")
    assert H.read_arx_csv(age, "age") is first and len(reads) == 2  # written just now: read again

    monkeypatch.setattr(H, "RACY_NS", 0)
    H.read_arx_csv(age, "age")
    assert H.read_arx_csv(age, "age") is first and len(reads) == 3  # stamp kept: no read

    time.sleep(0.05)  # past a coarse clock tick, so ctime moves
    before = os.stat(age)
    _edit_one_line(age, "30", "50")  # same size: one leaf's generalizations swapped for another's
    os.utime(age, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(age).st_size == before.st_size and os.stat(age).st_mtime_ns == before.st_mtime_ns
    edited = H.read_arx_csv(age, "age")
    assert edited.digest() != first.digest() and len(reads) == 4

    replaced = tmp_path / "age.new"
    shutil.copyfile(ADULT / "adult_hierarchy_age.csv", replaced)
    os.replace(replaced, age)
    assert H.read_arx_csv(age, "age").digest() == first.digest() and len(reads) == 5
