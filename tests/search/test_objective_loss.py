"""objective = "loss": the lattice minimizes ARX's Loss (MetricMDNMLoss, gs-factor 0.5) over every
node, certified when the lattice fits the budget; other optimizers and unknown objectives are
refused before anything is written. (ARX's own choice: benchmarks/vs_arx.py --objective loss.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import load_spec
from ppdp.engine.methods.generalization.objectives import loss_scorer, search
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.release.run import run_release
from ppdp.engine.release.stages.validate import prepare
from ppdp.errors import SpecError
from tests.conftest import load_adult, snapshot, write_spec

QIDS = ["age", "sex", "race", "education"]


def with_objective(path, db, objective: str, optimizer: str = "lattice"):
    p = write_spec(path, db=db, qids=QIDS, optimizer=optimizer)
    p.write_text(p.read_text() + f'\n[utility]\nobjective = "{objective}"\n')
    return p


def test_loss_is_minimal_over_every_node_and_certified(tmp_path):
    db = load_adult(tmp_path / "a.duckdb", rows=800)
    spec = load_spec(with_objective(tmp_path / "s.toml", db, "loss"))
    con = connect(f"duckdb://{db}", read_only=True)
    try:
        prep = prepare(spec, con, None)
    finally:
        con.close()
    problem = Problem(prep.table, prep.models)
    result = search(problem, "loss", budget=10**6, optimizer="lattice")
    assert result.certified and result.feasible and result.info["objective"] == "loss"
    # the same minimum by a second, independent pass: one node at a time
    score = loss_scorer(prep.table)
    best = np.inf
    for g in itertools.product(*(range(int(h) + 1) for h in problem.heights)):
        retained, ev = Problem(prep.table, prep.models).evaluate_optimal(np.array([g]))
        if ev.feasible[0]:
            best = min(best, score(np.array(g), retained[0]))
    assert result.info["objective_value"] == pytest.approx(best, abs=1e-12)
    # a smaller budget scores part of the lattice and says why it is not certified
    partial = search(Problem(prep.table, prep.models), "loss", budget=7, optimizer="lattice")
    assert not partial.certified and "is not proved optimal" in partial.not_certified_because[0]


def test_a_release_with_objective_loss_records_it(tmp_path):
    db = load_adult(tmp_path / "a.duckdb", rows=400)
    out = run_release(load_spec(with_objective(tmp_path / "s.toml", db, "loss")), progress=False)
    assert out.run.solution["certified"] and out.run.solution["info"]["objective"] == "loss"


@pytest.mark.parametrize(("objective", "optimizer", "message"), [
    ("loss", "descent", r"runs with optimizer flash, lattice \(certified\) or an evolutionary one \(.*\bga\b.*\), not 'descent'"),
    ("entropy", "lattice", "utility.objective 'entropy' is not available. Known: td, loss, nu-entropy"),
])
def test_unavailable_objectives_are_refused_before_any_write(tmp_path, objective, optimizer, message):
    db = load_adult(tmp_path / "a.duckdb", rows=200)
    before = snapshot(db)
    with pytest.raises(SpecError, match=message):
        run_release(load_spec(with_objective(tmp_path / "s.toml", db, objective, optimizer)), progress=False)
    assert snapshot(db) == before


@pytest.mark.parametrize("limit", [0.0, 0.05])
def test_limited_loss_search_equals_brute_force(tmp_path, limit):
    """With a zero limit the search reads Flash's tags (one check per path step, not one per node);
    with a positive one it scores in the bound's order. Both equal the minimum over every node."""
    db = load_adult(tmp_path / "a.duckdb", rows=600)
    spec = load_spec(with_objective(tmp_path / "s.toml", db, "loss"))
    con = connect(f"duckdb://{db}", read_only=True)
    try:
        prep = prepare(spec, con, None)
    finally:
        con.close()
    problem = Problem(prep.table, prep.models)
    result = search(problem, "loss", budget=10**6, optimizer="lattice", params={"suppression_limit": limit})
    assert result.certified and result.feasible
    score = loss_scorer(prep.table)
    cap = int(np.floor(limit * prep.table.n_records))
    best = np.inf
    nodes = list(itertools.product(*(range(int(h) + 1) for h in problem.heights)))
    for g in nodes:
        retained, ev = Problem(prep.table, prep.models).evaluate_optimal(np.array([g]))
        if ev.feasible[0] and int(ev.suppressed[0]) <= cap:
            best = min(best, score(np.array(g), retained[0]))
    assert result.info["objective_value"] == best
    if limit == 0.0:
        assert result.info["mode"] == "flash-tags" and result.evaluations < len(nodes)
