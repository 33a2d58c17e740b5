"""The previous run is read only under the run lock.

A run that finished while this one started (it held the lock; this one then took it) is this
run's previous run in every stage. Read before the lock, validate kept t-closeness's Q of the
version before it: the run published a version whose Q was not the one the rule asks for (the
previous version's while the models are unchanged, else the source's). Here the other run is
made to publish at the moment this one asks for the run lock, on DuckDB and on PostgreSQL
(whose run lock is a session's advisory lock, so the other run really holds it meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ppdp.connectors import connect
from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.spec import ReleaseSpec, load_spec
from ppdp.engine.release.run import run_release
from tests.conftest import load_adult, write_spec

QIDS = ["age", "sex", "race"]


T = '[[privacy.models]]\nname = "t-closeness"\nt = 0.95\n'
# the same model, its default distance spelled out: the [privacy] section differs, the check not
T_SPELLED_OUT = T + 'distance = "euclidean"\n'
# the changed records' classes are held back (their changes delayed), whatever their number
REPAIR = '[dynamic]\nmax_repair_fraction = 1.0\n'


class PublishesFirst:
    """A connector that, when its run asks for the run lock, first lets ``other`` run to its end
    (as if ``other`` had held the lock all along), and records the order in which the run took
    the lock and read the run catalog."""

    def __init__(self, inner: Connector, other: Callable[[], Any]) -> None:
        self.inner, self.other, self.events = inner, other, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def try_lock(self, name: str) -> bool:
        if name.startswith("ppdp:") and self.other is not None:
            self.other()
            self.other = None
        self.events.append(f"lock {name}")
        return self.inner.try_lock(name)

    def relation_columns(self, schema: str, name: str) -> Any:
        if (schema, name) == ("_ppdp", "runs"):
            self.events.append("read runs")
        return self.inner.relation_columns(schema, name)


def _race(url: str, first: ReleaseSpec, this: ReleaseSpec, other: ReleaseSpec) -> tuple[Any, list[str], Connector]:
    run_release(first, database=url, progress=False)
    con = connect(url)
    con.execute("UPDATE adult SET education = 'Bachelors' WHERE id % 13 = 0")  # another Q
    con.close()
    wrapped = PublishesFirst(connect(url), lambda: run_release(other, database=url, progress=False))
    out = run_release(this, database=url, progress=False, connector=wrapped)  # type: ignore[arg-type]
    return out, wrapped.events, connect(url)


def _specs(tmp_path: Path, db: Path) -> tuple[ReleaseSpec, ReleaseSpec]:
    specs = []
    for name, models in (("plain", T), ("spelled", T_SPELLED_OUT)):
        path = write_spec(tmp_path / f"{name}.toml", db=db, qids=QIDS, sensitive=["education"], output="lock", models=models)
        path.write_text(path.read_text() + REPAIR)
        specs.append(load_spec(path))
    return specs[0], specs[1]


def _check(out: Any, events: list[str], con: Connector) -> None:
    """v1 under one [privacy] section; v2, under another, by the run that published while this
    one (the first section again) waited; this run is v3. Its [privacy] differs from v2's, so
    v3's Q is the source's now, as v2's is; v1's (the source before the update), which the
    section of v1 would keep, is what a read before the lock gave."""
    release = out.run.release
    assert out.run.status == "succeeded" and out.run.version == 3
    q = {v: catalog.stored_distribution(con, release, v).sort("sa_key").select("sa_key", "q") for v in (1, 2, 3)}
    con.close()
    assert not q[1].equals(q[2])  # the update changed the source's Q
    assert q[3].equals(q[2])
    assert events[0].startswith("lock ppdp:"), events  # nothing of the catalog read before the lock


def test_a_run_published_while_waiting_for_the_lock_is_the_previous_run(tmp_path):
    db = load_adult(tmp_path / "lock.duckdb", rows=2000)
    plain, spelled = _specs(tmp_path, db)
    _check(*_race(f"duckdb://{db}", plain, plain, spelled))


@pytest.mark.postgres
def test_the_same_on_postgres_where_the_run_lock_is_an_advisory_lock(tmp_path, postgres_database):
    db = load_adult(tmp_path / "lock.duckdb", rows=2000)
    frame = connect(f"duckdb://{db}")
    rows = frame.query("SELECT * FROM adult")
    frame.close()
    con = connect(postgres_database)
    con.write_frame("public", "adult", rows)
    con.close()
    plain, spelled = _specs(tmp_path, db)
    _check(*_race(postgres_database, plain, plain, spelled))



def test_only_identify_reads_the_previous_run() -> None:
    """No other stage asks the catalog for the current version's run: the orchestrator reads it
    once under the lock (identify.previous_run) and hands it on."""
    import ast

    from tests.support import paths as PATHS

    stages = PATHS.PACKAGE / "engine" / "release" / "stages"
    readers = sorted(p.name for p in stages.glob("*.py")
                     if any(isinstance(n, ast.Attribute) and n.attr == "latest_success"
                            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))))
    assert readers == ["identify.py"]
