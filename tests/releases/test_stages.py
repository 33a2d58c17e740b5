"""The release pipeline's stage conventions (engine/release/stages/__init__.py), seen from outside: the
method name is looked up above the spec and still refused before anything is written, and the
guards stage refuses before the run lock, the run record or any other write."""

from __future__ import annotations

import pytest

from ppdp.engine.app import jobs
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.engine.release.stages import guards
from ppdp.errors import SpecError
from tests.conftest import load_adult, snapshot, write_spec


def with_method(path, name: str):
    path.write_text(path.read_text() + f'[method]\nname = "{name}"\n')
    return path


def test_an_unknown_method_is_refused_in_one_line_before_the_database_is_opened(tmp_path):
    """engine/core/spec.py no longer imports the methods; ``method_of`` refuses the name as the spec
    loader did, for a run and for a job registration, and no database file is created."""
    db = tmp_path / "absent.duckdb"
    spec_path = with_method(write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"]), "generalisation")
    spec = load_spec(spec_path)  # the spec itself is well formed
    with pytest.raises(SpecError, match=r"^method\.name: Unknown release method 'generalisation'\. "
                                        r"Did you mean 'generalization'\? Known: generalization, heterogeneous, "
                                        r"microaggregation\.$"):
        run_release(spec, progress=False)
    with pytest.raises(SpecError, match=r"^method\.name: Unknown release method 'generalisation'"):
        jobs.register_job(f"duckdb://{tmp_path / 'jobs.duckdb'}", spec_path)
    assert not db.exists() and not (tmp_path / "jobs.duckdb").exists()


def test_a_guard_refuses_before_anything_is_written(tmp_path, monkeypatch):
    """The guards stage runs right after validate, with the validated input and the method."""
    db = load_adult(tmp_path / "g.duckdb", rows=300)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"]))
    seen = []

    def refuse(ctx, prep, method):
        seen.append((ctx.release, prep.source_rows, method.name, ctx.key.run_key, ctx.version))
        raise SpecError("guarded: this combination is refused")

    monkeypatch.setattr(guards, "GUARDS", (refuse,))
    before = snapshot(db)
    with pytest.raises(SpecError, match="guarded"):
        run_release(spec, progress=False)
    assert seen == [('"published"."adult"', 300, "generalization", "", 0)]  # before identify and any version
    assert snapshot(db) == before  # no run record, no schema
