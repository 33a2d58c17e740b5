"""verify checks the history classes across versions with SQL of its own (sql/verify.py).

The history stage holds records back so that every history class satisfies the models; verify
derives the classes again from the published version tables, without the history stage's
hashed histories, and checks all of them. Here: the two derivations give the same partition on
random versions; verify's count of classes is the history stage's; and with the history stage
switched off, verify alone refuses a version whose history classes are too small.
"""

from __future__ import annotations

import random

import duckdb
import pytest

from ppdp.engine.core.spec import load_spec
from ppdp.engine.methods.results import HistoryOutcome
from ppdp.engine.release.run import run_release
from ppdp.errors import VerificationError
from ppdp.sql import history as H
from ppdp.sql import verify as V
from ppdp.sql.dialect import DUCKDB
from tests.conftest import load_adult, snapshot, write_spec

K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
QIDS = ["age", "sex", "race"]


def _partition(con: duckdb.DuckDBPyConnection, sql: str) -> set[frozenset[str]]:
    rows = con.sql(f"SELECT rid, sig_now FROM ({sql}) AS x").fetchall()
    classes: dict[object, set[str]] = {}
    for rid, sig in rows:
        classes.setdefault(sig, set()).add(rid)
    return {frozenset(c) for c in classes.values()}


def _versions(con: duckdb.DuckDBPyConnection, rows: dict[int, list[tuple]]) -> list[tuple[int, str]]:
    out = []
    for v, data in rows.items():
        con.execute(f"CREATE TABLE v{v} (ppdp_row_id VARCHAR, a VARCHAR, b VARCHAR, s VARCHAR)")
        if data:
            con.executemany(f"INSERT INTO v{v} VALUES (?, ?, ?, ?)", data)
        out.append((v, f"v{v}"))
    return out


def test_history_classes_of_a_small_example() -> None:
    """Present alike in both versions (r1, r5); a sensitive change (r2); gone (r3); new (r4); a
    NULL label (r6); r7 and r8 end alike, but r7 changed its value in v2 and r8, absent from v2,
    in v3 (a change is against the last presence)."""
    con = duckdb.connect()
    versions = _versions(con, {
        1: [("r1", "x", "1", "s"), ("r2", "x", "1", "s"), ("r3", "x", "1", "t"), ("r5", "x", "1", "s"), ("r6", None, "1", "s"),
            ("r7", "y", "1", "s"), ("r8", "y", "1", "s")],
        2: [("r1", "x", "1", "s"), ("r2", "x", "1", "t"), ("r4", "x", "1", "s"), ("r5", "x", "1", "s"), ("r6", None, "1", "s"),
            ("r7", "y", "1", "t")],
        3: [("r1", "x", "1", "s"), ("r2", "x", "1", "t"), ("r4", "x", "1", "s"), ("r5", "x", "1", "s"), ("r6", None, "1", "s"),
            ("r7", "y", "1", "t"), ("r8", "y", "1", "t")],
    })
    got = _partition(con, V.history_classes(versions, ["a", "b"], ["s"], DUCKDB))
    assert got == {frozenset({"r1", "r5"}), frozenset({"r2"}), frozenset({"r3"}), frozenset({"r4"}), frozenset({"r6"}),
                   frozenset({"r7"}), frozenset({"r8"})}
    classes = con.sql(f"SELECT * FROM ({V.history_classes(versions, ['a', 'b'], ['s'], DUCKDB)}) AS x").pl()
    con.register("hc", classes.to_arrow())
    (sizes,) = con.sql(V.history_class_sizes("hc")).fetchall()
    assert sizes == (7, 8, 1)
    values = con.sql(f"SELECT n FROM ({V.history_class_values('hc', 'v3', ['s'], DUCKDB)}) AS x ORDER BY n DESC").fetchall()
    assert values[0] == (2,) and sum(n for (n,) in values) == 7  # r1 and r5 together; 7 rows in v3


@pytest.mark.parametrize("seed", range(5))
def test_the_same_partition_as_the_history_stage_on_random_versions(seed: int) -> None:
    rnd = random.Random(seed)
    con = duckdb.connect()
    data: dict[int, list[tuple]] = {}
    for v in range(1, 5):
        data[v] = [(f"r{i}", rnd.choice(["x", "y", None]), rnd.choice(["1", "2"]), rnd.choice(["s", "t", "u"]))
                   for i in range(60) if rnd.random() < 0.8]
    versions = _versions(con, data)
    ours = _partition(con, V.history_classes(versions, ["a", "b"], ["s"], DUCKDB))
    theirs = _partition(con, H.signatures(versions, ["a", "b"], ["s"], 4, DUCKDB))
    assert ours == theirs and len(ours) > 10


def _spec(tmp_path, db, extra: str = ""):
    path = write_spec(tmp_path / "s.toml", db=db, qids=QIDS, models=K5, output="small")
    path.write_text(path.read_text() + extra)
    return load_spec(path)


def test_verify_counts_the_history_stages_classes(tmp_path):
    db = load_adult(tmp_path / "count.duckdb", rows=3000)
    spec = _spec(tmp_path, db, '[dynamic]\nmax_repair_fraction = 0.5\n')
    run_release(spec, progress=False)
    con = duckdb.connect(str(db))
    con.execute("UPDATE adult SET age = age + 7 WHERE id % 3 = 0 AND age < 80")  # held back, in part
    con.close()
    out = run_release(spec, progress=False)
    cross = out.run.cross_version
    assert out.run.version == 2 and cross["held_back"]["changes_delayed"] > 0
    assert cross["checks"] == {"versions": 2, "history_classes": cross["history_classes"], "failing_classes": {}}


def test_verify_alone_refuses_what_the_history_stage_let_through(tmp_path, monkeypatch):
    """The history stage switched off: the joint classes of v1 and v2 are too small, and only
    verify's own derivation of the classes stands between them and the readers."""
    from ppdp.engine.release.stages import history

    db = load_adult(tmp_path / "off.duckdb", rows=3000)
    spec = _spec(tmp_path, db)
    run_release(spec, progress=False)
    con = duckdb.connect(str(db))
    con.execute("UPDATE adult SET age = age + 7 WHERE id % 3 = 0 AND age < 80")
    con.close()
    monkeypatch.setattr(history, "check_history", lambda *a: HistoryOutcome(None))
    before = snapshot(db)
    with pytest.raises(VerificationError, match=r"k-anonymity \{'k': 5\} fails on \d+ history class\(es\) across versions"):
        run_release(spec, progress=False)
    after = snapshot(db)
    assert [t for t in after[1] if "small__v2" in str(t)] == [t for t in before[1] if "small__v2" in str(t)] == []
