"""Compile every Numba kernel into the cache before the first real run (``ppdp warm-up``).

Numba compiles a kernel on its first call and keeps it in its on-disk cache (``cache=True``);
a new installation's first release therefore pays for compiling every kernel it calls, which
takes far longer than the release itself (a first ``id-dga`` run, dozens of times a warm one). ``make demo`` and ``make test`` run this once
after installing, so users and CI meet warm kernels. It runs real releases of a 400-row sample
of the bundled adult through every release method, optimizer and privacy model on a temporary
DuckDB file: the kernels are compiled for exactly the argument types the releases use (a
hand-written call could compile another specialization and leave the real one cold).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parents[1] / "data"
QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]


def model_sets() -> dict[str, list[dict[str, Any]]]:
    """k-anonymity alone, and every other registered model with a warm-up example beside k = 2."""
    from ppdp.engine.privacy import MODELS
    from ppdp.engine.privacy.k_anonymity import KAnonymity

    out = {KAnonymity.name: [{"name": KAnonymity.name, "k": 3}]}
    for model in map(MODELS.get, MODELS):
        if model is not KAnonymity and model.warm_up_example is not None:
            out[model.name] = [{"name": KAnonymity.name, "k": 2}, {"name": model.name, **model.warm_up_example}]
    return out


def _spec(db: Path, output: str, models: list[dict[str, Any]], optimizer: str, method: dict[str, Any] | None,
          sensitive: str = "salary-class", budget: int = 300):
    from ppdp.engine.core.spec import spec_from_dict

    keep = [c for c in ("salary-class", "disease") if c != sensitive]
    raw: dict[str, Any] = {
        "source": {"database": f"duckdb://{db}", "table": "adult", "key": "id", "keep": keep},
        "quasi_identifiers": [{"column": q, "hierarchy": str(DATA / "adult" / f"adult_hierarchy_{q}.csv")} for q in QIDS],
        "sensitive": {"columns": [sensitive]},
        # a compile-only sample: its kept column may single out rows, which does not matter here
        "privacy": {"models": models, "kept_columns": "warn"},
        "optimizer": {"name": optimizer, "budget": budget, "seed": 1},
        "output": {"schema": "published", "name": output},
    }
    if method:
        raw["method"] = method
    return spec_from_dict(raw, base_dir=DATA)


def releases(db: Path) -> list[tuple[str, Any]]:
    """(label, spec) of every warm-up release on the sample in ``db``."""
    from ppdp.engine.methods.generalization.optimizers import optimizer_names
    from ppdp.engine.methods.heterogeneous.method import INITIAL
    from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
    from ppdp.engine.privacy.k_anonymity import KAnonymity

    sets = model_sets()
    k_only = sets.pop(KAnonymity.name)
    out: list[tuple[str, Any]] = []
    for name in optimizer_names():
        out.append((f"generalization, {name}, {KAnonymity.name}", _spec(db, f"w_{len(out)}", k_only, name, None)))
    for label, models in sets.items():
        for name in ("lattice", "id-dga+oracle"):
            out.append((f"generalization, {name}, {label}", _spec(db, f"w_{len(out)}", models, name, None)))
    for algorithm in ALGORITHMS:
        params: dict[str, Any] = {"algorithm": algorithm, "catalogue": "diseases32"}
        out.append((f"microaggregation, {algorithm}", _spec(db, f"w_{len(out)}", k_only,
                                                            "lattice", {"name": "microaggregation", "params": params},
                                                            sensitive="disease")))
    for initial in INITIAL:
        for objective in ("gcp", "sil"):
            params = {"initial": initial, "objective": objective, "seconds": 0.5}  # (dict[str, Any], as above)
            out.append((f"heterogeneous, {initial}, {objective}",
                        _spec(db, f"w_{len(out)}", k_only, "lattice",
                              {"name": "heterogeneous", "params": params}, budget=20_000)))
    return out


def warm_up(progress: Callable[[str], None] = print) -> int:
    """Run every warm-up release; returns how many ran. Failures propagate (a kernel that does
    not compile here would fail the user's release too)."""
    import duckdb

    from ppdp.engine.release.run import run_release
    from ppdp.errors import VerificationError
    from ppdp.sql import demo as demo_sql

    diseases = [line.split(";")[0] for line in (DATA / "catalogues" / "diseases32.csv").read_text().splitlines()]
    with tempfile.TemporaryDirectory(prefix="ppdp-warm-up-") as work:
        db = Path(work) / "warm.duckdb"
        con = duckdb.connect(str(db))
        con.execute(demo_sql.load_csv_sample_with_id("adult", 400), [str(DATA / "adult" / "adult.csv")])
        add_column, fill = demo_sql.add_catalogue_column("adult", "disease")
        con.execute(add_column)
        con.execute(fill, [diseases, diseases])
        con.close()
        todo = releases(db)
        for i, (label, spec) in enumerate(todo, start=1):
            t0 = time.perf_counter()
            try:
                run_release(spec, progress=False)
                note = ""
            except VerificationError:  # an ablation's tiny budget may end infeasible: refused, as it must be
                note = " (no k-anonymous solution within the warm-up budget: refused, kernels compiled)"
            progress(f"[{i}/{len(todo)}] {label}: {time.perf_counter() - t0:.1f} s{note}")
    return len(todo)
