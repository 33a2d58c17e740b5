"""Another distribution extends ppdp through entry points alone (docs/extending.md).

A throwaway distribution is installed into a folder of this test (its module and its
``.dist-info`` with ``entry_points.txt``, which is what installing a wheel writes; the shared
environment is not touched) and put on PYTHONPATH of a ``ppdp run`` subprocess, so that real
``importlib.metadata`` discovery finds it. The distribution adds one object of each kind: a
privacy model, a release method, an optimizer, an evaluator backend, a utility metric, a risk
estimator and a connector (URL scheme ``toyduck://`` over DuckDB); one release names all seven,
and its published view, its run's JSON and its run record show each was used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.conftest import ADULT, load_adult, toml_str
from tests.support import paths as PATHS

MODULE = '''
"""A toy extension of ppdp: one object of each kind."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ppdp.connectors.duckdb_connector import DuckDBConnector
import numpy as np

from ppdp.engine.kernels import classes as K
from ppdp.engine.methods.generalization.evaluators.numba_backend import NumbaEvaluator
from ppdp.engine.methods.generalization.method import Generalization
from ppdp.engine.methods.generalization.optimizers import Tracker, checks_params
from ppdp.engine.privacy import ClassStats, PrivacyModel
from ppdp.engine.risk.base import RiskEstimator
from ppdp.errors import SpecError
from ppdp.sql import queries as Q


@dataclass(frozen=True)
class ToyMinClass(PrivacyModel):
    """Every class holds at least m records (k-anonymity's AD under another name)."""

    m: int
    name: ClassVar[str] = "toy-min-class"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> "ToyMinClass":
        if set(params) != {"m"} or not isinstance(params["m"], int) or params["m"] < 1:
            raise SpecError(f"toy-min-class takes m = a positive integer, got {params}.")
        return cls(params["m"])

    def params(self) -> dict[str, Any]:
        return {"m": self.m}

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_k_anonymity(stats.size))

    def reference_ad(self, classes, q) -> float:
        return min((sum(c.values()) for c in classes.values()), default=math.inf)

    def feasible(self, ad: float) -> bool:
        return ad >= self.m

    def violation(self, ad: float) -> float:
        return 0.0 if ad >= self.m else (self.m - ad) / self.m

    def version_sql(self, relation, qids, sensitive, q_relation, d) -> str:
        return Q.verify_k_query(relation, qids, d)


class ToyMethod(Generalization):
    """Generalization under another name."""

    name = "toy-method"


def toy_top(problem, *, budget, seed, params, progress=None):
    """The top of the lattice: every QID at its highest level."""
    tracker = Tracker(problem, budget, name="toy-top", progress=progress)
    g = problem.heights.astype("int64")[None, :]
    retained, evaluation = problem.evaluate_optimal(g)
    tracker.offer(g, retained, evaluation)
    return tracker.result()


@checks_params("toy-top")
def _no_params(params):
    if params:
        raise SpecError(f"toy-top takes no params, got {sorted(params)}.")


class CountingEvaluator(NumbaEvaluator):
    """The numba backend, counting the solutions it evaluated."""

    name = "counting"
    evaluated = 0

    def evaluate(self, G, retained):
        CountingEvaluator.evaluated += len(G)
        return super().evaluate(G, retained)


def kept_share(table, g, retained) -> float:
    """Share of the source's records that the release keeps."""
    return float(np.sum(retained)) / (table.n_records + table.excluded_null_rows)


class LargestClass(RiskEstimator):
    name = "toy-largest-class"
    keys = {"toy_largest_class": {"type": "integer", "minimum": 0}}

    def estimate(self, inp):
        return {"toy_largest_class": int(max(inp.histogram.sizes))}

    def lines(self, values, basis):
        return [f"  largest class  : {values['toy_largest_class']}"]

    def summary(self, values):
        return f"largest class {values['toy_largest_class']}"


class ToyDuck(DuckDBConnector):
    """DuckDB under the scheme toyduck://; leaves a mark beside the file it opened."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        Path(self.path + ".toyduck").touch()
'''

ENTRY_POINTS = """\
[ppdp.models]
toy-min-class = ppdp_toy_ext:ToyMinClass

[ppdp.methods]
toy-method = ppdp_toy_ext:ToyMethod

[ppdp.optimizers]
toy-top = ppdp_toy_ext:toy_top

[ppdp.evaluators]
counting = ppdp_toy_ext:CountingEvaluator

[ppdp.metrics]
kept_share = ppdp_toy_ext:kept_share

[ppdp.risk_estimators]
toy-largest-class = ppdp_toy_ext:LargestClass

[ppdp.connectors]
toyduck = ppdp_toy_ext:ToyDuck
"""


def install_toy_distribution(site: Path) -> None:
    """What ``pip install --target site`` of the toy distribution writes: the module and its
    dist-info (METADATA, entry_points.txt, RECORD)."""
    site.mkdir()
    (site / "ppdp_toy_ext.py").write_text(MODULE)
    info = site / "ppdp_toy_ext-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ppdp-toy-ext\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("ppdp_toy_ext.py,,\n" + "".join(f"ppdp_toy_ext-0.1.dist-info/{n},,\n"
                                                                    for n in ("METADATA", "entry_points.txt", "RECORD")))


def test_a_release_uses_an_extension_of_every_kind_from_another_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_toy_distribution(site)
    db = load_adult(tmp_path / "toy.duckdb", rows=200)
    spec = tmp_path / "toy.toml"
    spec.write_text("\n".join([
        "[source]", f"database = {toml_str('toyduck://' + str(db))}", 'table = "adult"', 'key = "id"',
        'drop = ["race", "marital-status", "education", "native-country", "workclass", "occupation"]',
        "[[quasi_identifiers]]", 'column = "age"', f"hierarchy = {toml_str(str(ADULT / 'adult_hierarchy_age.csv'))}",
        "[[quasi_identifiers]]", 'column = "sex"', f"hierarchy = {toml_str(str(ADULT / 'adult_hierarchy_sex.csv'))}",
        "[sensitive]", 'columns = ["salary-class"]',
        "[[privacy.models]]", 'name = "toy-min-class"', "m = 5",
        "[optimizer]", 'name = "toy-top"', "budget = 10", 'evaluator = "counting"',
        "[utility]", 'report = ["td", "kept_share"]',
        "[method]", 'name = "toy-method"',
        "[output]", 'schema = "published"', 'name = "toy"',
    ]) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(PATHS.PACKAGE.parent)])}
    done = subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", "run", str(spec), "--json", "--no-progress"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "published" and out["version"] == 1
    assert [(m["model"], m["passed"]) for m in out["models"]] == [("toy-min-class", True)]
    # the toy risk estimator's key, measured on the source and on the release
    assert out["risk"]["release"]["toy_largest_class"] == 200
    assert 5 <= out["risk"]["source"]["toy_largest_class"] < 200
    assert (tmp_path / "toy.duckdb.toyduck").exists()  # opened through the toy connector
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute('SELECT "age", "sex", COUNT(*) FROM published.toy GROUP BY ALL').fetchall()
        spec_json, metrics = map(json.loads, con.execute("SELECT spec, metrics FROM _ppdp.runs WHERE status = 'succeeded'").fetchone())
    finally:
        con.close()
    assert rows == [("*", "*", 200)]  # the toy optimizer's top of the lattice: one class of every row
    assert spec_json["method"]["name"] == "toy-method" and spec_json["optimizer"]["evaluator"] == "counting"
    assert metrics["kept_share"] == 1.0  # the toy metric, computed for the release
