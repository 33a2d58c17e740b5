"""What a review found leaking from releases and versions (each test failed before its fix).

The difference attack is tests/attack/test_attack.py; bad input is
tests/releases/test_input_validation.py; PostgreSQL is tests/adapters/test_postgres_*.py.
"""

from __future__ import annotations

import hashlib

import duckdb
import numpy as np
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import reverify, run_release
from ppdp.errors import VerificationError
from tests.conftest import load_adult, write_spec

K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
T = '[[privacy.models]]\nname = "t-closeness"\nt = {t}\n'
L2 = '[[privacy.models]]\nname = "distinct-l-diversity"\nl = 2\n'
QIDS = ["age", "sex", "race"]


def read(db, sql: str, params: list | None = None):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def test_finding2_rows_of_a_version_are_in_random_order(tmp_path):
    """Rows came out in source-key order (correlation 0.99996): position singled people out."""
    db = load_adult(tmp_path / "order.duckdb", rows=3000)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, qids=QIDS, models=K5, output="ordered"))
    run_release(spec, progress=False)
    rows = read(db, 'SELECT CAST(i.key AS BIGINT) FROM (SELECT ppdp_row_id, row_number() OVER () AS pos FROM published."ordered__v1") AS v '
                    'JOIN _ppdp.row_ids AS i ON i.row_id = v.ppdp_row_id AND i.release = \'"published"."ordered"\' ORDER BY v.pos')
    keys = np.array([r[0] for r in rows], dtype=float)
    assert len(keys) > 2500
    corr = np.corrcoef(np.arange(len(keys)), keys)[0, 1]
    assert abs(corr) < 0.1, f"row position correlates with the source key: {corr:.4f}"


def test_finding11_a_release_is_schema_and_name(tmp_path):
    """Two releases named alike in two schemas shared versions and row ids."""
    db = load_adult(tmp_path / "twins.duckdb", rows=2000)
    a = write_spec(tmp_path / "a.toml", db=db, qids=QIDS, models=K5, output="twin")
    b = write_spec(tmp_path / "b.toml", db=db, qids=QIDS[:2], models=K5, output="twin")
    b.write_text(b.read_text().replace('schema = "published"', 'schema = "other"'))
    ra = run_release(load_spec(a), progress=False)
    rb = run_release(load_spec(b), progress=False)
    assert (ra.run.version, rb.run.version) == (1, 1)
    assert (ra.run.release, rb.run.release) == ('"published"."twin"', '"other"."twin"')
    counts = dict(read(db, "SELECT release, COUNT(*) FROM _ppdp.row_ids GROUP BY release"))
    assert counts == {'"published"."twin"': 2000, '"other"."twin"': 2000}
    shared = read(db, "SELECT COUNT(*) FROM published.twin__v1 a JOIN other.twin__v1 b USING (ppdp_row_id)")[0][0]
    assert shared == 0  # independent random row ids
    con = connect(f"duckdb://{db}")
    try:
        with pytest.raises(Exception, match="Several releases are named 'twin'"):
            reverify(con, "twin")
        assert reverify(con, "other.twin")["passed"]
    finally:
        con.close()


def test_finding4_row_hashes_are_salted(tmp_path):
    """_ppdp.row_state held unsalted MD5s of whole source rows: a copy could be matched."""
    db = load_adult(tmp_path / "salt.duckdb", rows=500)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, qids=QIDS, models=K5, output="salted"))
    run_release(spec, progress=False)
    stored = dict(read(db, "SELECT key, row_hash FROM _ppdp.row_state"))
    con = duckdb.connect(str(db), read_only=True)
    cols = [c[0] for c in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'adult' ORDER BY ordinal_position").fetchall()]
    rows = con.execute("SELECT * FROM adult").fetchall()
    con.close()
    from ppdp.sql.queries import escaped_text

    unsalted = {str(r[0]): hashlib.md5("|".join(escaped_text(None if v is None else str(v)) for v in r).encode()).hexdigest()
                for r in rows}
    assert len(cols) == 10 and set(stored) == set(unsalted)
    assert not set(stored.values()) & set(unsalted.values())
    salts = read(db, "SELECT salt FROM _ppdp.releases")
    assert len(salts) == 1 and len(salts[0][0]) == 32


def _t_release_with_nulls(tmp_path, t: float = 0.3):
    db = load_adult(tmp_path / "nulls.duckdb", rows=3000)
    con = duckdb.connect(str(db))
    con.execute("UPDATE adult SET race = NULL WHERE id % 37 = 0")  # NULL QIDs, suppressed by policy
    con.close()
    spec_path = write_spec(tmp_path / "s.toml", db=db, qids=QIDS, models=K5 + T.format(t=t), output="tnull",
                           extra_source='null_policy = "suppress"')
    return db, load_spec(spec_path)


def test_finding6_null_policy_suppress_with_t_closeness_is_published_and_verified(tmp_path):
    """The optimizer's Q left out the NULL rows, the SQL check counted them: refused, and the run
    record kept verification = {}."""
    db, spec = _t_release_with_nulls(tmp_path)
    out = run_release(spec, progress=False)
    assert out.run.status == "succeeded" and out.run.verification["passed"]
    t_check = next(c for c in out.run.verification["checks"] if c["model"] == "t-closeness")
    ad = out.run.metrics["ad[t-closeness]"]
    assert t_check["ad"] == pytest.approx(ad, abs=1e-9)  # the search and the SQL check agree on Q
    q_rows = read(db, "SELECT SUM(q), COUNT(*) FROM _ppdp.distributions")[0]
    assert q_rows[0] == pytest.approx(1.0) and q_rows[1] == 2


def test_finding6_a_failed_verification_is_recorded_with_what_it_found(tmp_path, monkeypatch):
    """A refused version's run record stored verification = {}: the audit lost what failed."""
    import ppdp.engine.release.stages.verify as V

    db, spec = _t_release_with_nulls(tmp_path)
    original = V.check_models
    monkeypatch.setattr(V, "check_models", lambda *a, **kw: [c | {"passed": False} for c in original(*a, **kw)])
    with pytest.raises(VerificationError, match="t-closeness failed"):
        run_release(spec, progress=False)
    rec = read(db, "SELECT status, verification FROM _ppdp.runs")
    assert rec[0][0] == "failed" and '"checks"' in rec[0][1] and '"passed": false' in rec[0][1]
    assert read(db, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'")[0][0] == 0


def test_finding8_verify_checks_what_was_published_and_says_the_source_changed(tmp_path):
    """ppdp verify recomputed Q from today's source: an unchanged version FAILED after edits."""
    db = load_adult(tmp_path / "drift.duckdb", rows=3000)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, qids=QIDS, models=K5 + T.format(t=0.15), output="drift"))
    run_release(spec, progress=False)
    con = connect(f"duckdb://{db}")
    try:
        before = reverify(con, "drift")
    finally:
        con.close()
    assert before["passed"] and before["source_changed"] is False
    c = duckdb.connect(str(db))
    c.execute("UPDATE adult SET \"salary-class\" = '>50K' WHERE id % 2 = 0")  # a drastic, unrelated edit
    c.close()
    con = connect(f"duckdb://{db}")
    try:
        after = reverify(con, "drift")
    finally:
        con.close()
    assert after["passed"] and after["source_changed"] is True
    assert [c["ad"] for c in after["checks"]] == [c["ad"] for c in before["checks"]]


def first_levels(db) -> dict:
    import json

    return json.loads(read(db, "SELECT solution FROM _ppdp.runs WHERE version = 1")[0][0])["levels"]


def _two_versions(tmp_path, models: str, change_sql: str, extra: str = ""):
    db = load_adult(tmp_path / "dyn.duckdb", rows=3000)
    path = write_spec(tmp_path / "s.toml", db=db, qids=QIDS, models=models, output="dyn")
    if extra:
        path.write_text(path.read_text() + extra)
    run_release(load_spec(path), progress=False)
    con = duckdb.connect(str(db))
    con.execute(change_sql)
    con.close()
    return db, path


@pytest.mark.parametrize("models", [K5 + L2, K5 + T.format(t=0.3)], ids=["l-diversity", "t-closeness"])
def test_finding12_l_and_t_releases_are_not_stuck_after_updates(tmp_path, models):
    """Repair existed only for k: l-diversity and t-closeness releases were refused after updates."""
    change = ("DELETE FROM adult WHERE id % 40 = 0; "
              "UPDATE adult SET \"salary-class\" = CASE WHEN \"salary-class\" = '>50K' THEN '<=50K' ELSE '>50K' END WHERE id % 53 = 0; "
              "UPDATE adult SET age = age + 1 WHERE id % 61 = 0 AND age < 80")
    db, path = _two_versions(tmp_path, models, change, extra="[dynamic]\nmax_repair_fraction = 0.2\n")
    out = run_release(load_spec(path), progress=False)
    assert out.run.status == "succeeded" and out.run.version == 2 and out.run.cross_version["passed"]
    held = out.run.cross_version["held_back"]
    assert sum(held.values()) > 0  # something had to wait, and the step was published anyway


def test_finding12_refusal_names_the_policy_in_force(tmp_path):
    """The refusal said policy 'strict' when the policy was stable-levels."""
    db, path = _two_versions(tmp_path, K5, "UPDATE adult SET age = age + 7 WHERE id % 3 = 0 AND age < 80",
                             extra='[dynamic]\nmax_repair_fraction = 0.0\n')
    with pytest.raises(VerificationError) as err:
        run_release(load_spec(path), progress=False)
    msg = str(err.value)
    assert "strict" not in msg and "more than dynamic.max_repair_fraction allows (0 of 3000)" in msg
    assert "Hint: raise dynamic.max_repair_fraction" in msg


def test_finding12_stable_levels_says_when_the_optimizer_changed(tmp_path):
    """An edited optimizer was silently ignored by stable-levels."""
    db, path = _two_versions(tmp_path, K5, "DELETE FROM adult WHERE id % 100 = 0")
    path.write_text(path.read_text().replace('name = "lattice"', 'name = "flash"'))
    out = run_release(load_spec(path), progress=False)
    notes = out.run.solution.get("notices", [])
    assert out.run.solution["levels"] == first_levels(db)
    assert notes == ["dynamic.policy 'stable-levels' kept v1's levels although the spec's optimizer changed since; "
                     'set dynamic.policy = "reoptimize" to search again']


def test_a_version_with_delayed_rows_is_not_rebuilt_from_the_source(tmp_path):
    """ppdp sql rebuilds a version from the source; a delayed deletion's row is not in the source
    any more, so the rebuild is refused with the reason instead of producing a different table."""
    from ppdp.engine.app.rebuild import rebuild_script
    from ppdp.errors import SpecError

    db, path = _two_versions(tmp_path, K5, "DELETE FROM adult WHERE id = 17")
    out = run_release(load_spec(path), progress=False)
    assert out.run.cross_version["held_back"]["deletes_delayed"] == 1
    con = connect(f"duckdb://{db}", read_only=True)
    try:
        with pytest.raises(SpecError, match="holds 1 row\\(s\\) held back from v1 .* Hint: copy the version table itself"):
            rebuild_script(con, "dyn", "duckdb")
    finally:
        con.close()
