"""Risk-based privacy models in a release: average-risk 0.05 on adult is found by the
search, verified in SQL and measured at most 0.05 by ``ppdp risk``; a threshold no release can
meet is refused before anything is written."""

from __future__ import annotations

import json

import pytest

from ppdp.engine.app.cli import main
from tests.conftest import snapshot, write_spec


def test_average_risk_release_is_verified_and_measured(adult_db, tmp_path, capsys):
    spec = write_spec(tmp_path / "avg.toml", db=adult_db,
                      models='[[privacy.models]]\nname = "average-risk"\nthreshold = 0.05\n')
    assert main(["run", str(spec), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "verified (SQL) : average-risk" in out and "PASS" in out
    assert main(["risk", "adult", "--db", f"duckdb://{adult_db}", "--json"]) == 0
    risk = json.loads(capsys.readouterr().out)
    assert 0 < risk["prosecutor"]["average"] <= 0.05


def test_infeasible_average_risk_is_refused_before_any_write(adult_db, tmp_path, capsys):
    before = snapshot(adult_db)
    spec = write_spec(tmp_path / "bad.toml", db=adult_db,
                      models='[[privacy.models]]\nname = "average-risk"\nthreshold = 0.00001\n')
    assert main(["run", str(spec), "--no-progress"]) == 3  # REFUSED: a privacy refusal, not bad input (docs/reference/exit-codes.md)
    assert "No release can satisfy average-risk" in capsys.readouterr().err
    assert snapshot(adult_db) == before


@pytest.mark.parametrize("models", ['[[privacy.models]]\nname = "sample-uniqueness"\nthreshold = 0.01\n',
                                    '[[privacy.models]]\nname = "population-uniqueness"\nthreshold = 0.01\nsampling_fraction = 0.1\n'])
def test_uniqueness_models_release_and_verify(adult_db, tmp_path, capsys, models):
    spec = write_spec(tmp_path / "u.toml", db=adult_db, models=models)
    assert main(["run", str(spec), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "-> PASS" in out and "NOT certified optimal" in out


def test_second_version_under_a_risk_model_is_refused_before_any_write(adult_db, tmp_path, capsys):
    """No history check for the risk models yet: a later version cannot be protected across
    versions, so it is refused (guards), not published unchecked."""
    import duckdb

    spec = write_spec(tmp_path / "s.toml", db=adult_db, models='[[privacy.models]]\nname = "sample-uniqueness"\nthreshold = 0.05\n')
    assert main(["run", str(spec), "--no-progress"]) == 0
    con = duckdb.connect(str(adult_db))
    con.execute("INSERT INTO adult SELECT id + 100000, * EXCLUDE (id) FROM adult WHERE id <= 10")
    con.close()
    capsys.readouterr()
    before = snapshot(adult_db)
    assert main(["run", str(spec), "--no-progress"]) == 3  # refused by the cross-version rule
    assert "sample-uniqueness is not declared to hold for a union of classes" in capsys.readouterr().err
    assert snapshot(adult_db) == before
