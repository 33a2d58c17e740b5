"""Compile every Numba kernel into the cache before the first real run (``ppdp warm-up``).

Numba compiles a kernel on its first call and keeps it in its on-disk cache (``cache=True``);
a new installation's first release therefore pays for compiling every kernel it calls, which
takes far longer than the release itself (a first ``id-dga`` run, dozens of times a warm one). ``make demo`` and ``make test`` run this once
after installing, so users and CI meet warm kernels. It runs real releases of a 400-row sample
of the bundled adult through every release method, optimizer and privacy model on a temporary
DuckDB file: the kernels are compiled for exactly the argument types the releases use (a
hand-written call could compile another specialization and leave the real one cold). A command
other than a release that calls a kernel of its own runs once too, on one of those releases
(``ppdp utility --classify``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppdp.engine.methods.base import WarmUp

DATA = Path(__file__).parents[1] / "data"
QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
EVERY_MODEL = "every model"  # the label of the set of every model with a warm-up example


def model_sets() -> dict[str, list[dict[str, Any]]]:
    """k-anonymity alone; every other registered model with a warm-up example beside k = 2; and
    all of them together (``EVERY_MODEL``): a set holding a model without a fused kernel kind is
    evaluated one solution at a time through each model's own ``ad``, a kernel per model
    (evaluators/numba_backend.py ``evaluate_per_solution``)."""
    from ppdp.engine.privacy import MODELS
    from ppdp.engine.privacy.k_anonymity import KAnonymity

    k2 = {"name": KAnonymity.name, "k": 2}
    examples = [{"name": model.name, **model.warm_up_example} for model in map(MODELS.get, MODELS)
                if model is not KAnonymity and model.warm_up_example is not None]
    out = {KAnonymity.name: [{"name": KAnonymity.name, "k": 3}]}
    out |= {example["name"]: [k2, example] for example in examples}
    out[EVERY_MODEL] = [k2, *examples]
    return out


def _spec(db: Path, output: str, method: str, w: WarmUp):
    from ppdp.engine.core.spec import spec_from_dict

    keep = [c for c in ("salary-class", "disease") if c != w.sensitive]
    raw: dict[str, Any] = {
        "source": {"database": f"duckdb://{db}", "table": "adult", "key": "id", "keep": keep},
        "quasi_identifiers": [{"column": q, "hierarchy": str(DATA / "adult" / f"adult_hierarchy_{q}.csv")} for q in QIDS],
        "sensitive": {"columns": [w.sensitive]},
        # a compile-only sample: its kept column may single out rows, which does not matter here
        "privacy": {"models": [dict(m) for m in w.models], "kept_columns": "warn"},
        "optimizer": {"name": w.optimizer, "budget": w.budget, "seed": 1,
                      **({"params": dict(w.optimizer_params)} if w.optimizer_params else {})},
        "output": {"schema": "published", "name": output},
        **({"utility": {"objective": w.objective}} if w.objective != "td" else {}),
        "method": {"name": method, **({"params": dict(w.method_params)} if w.method_params else {})},
    }
    return spec_from_dict(raw, base_dir=DATA)


def releases(db: Path) -> list[tuple[str, Any]]:
    """(label, spec) of every warm-up release on the sample in ``db``: what each registered
    release method declares (``ReleaseMethod.warm_ups``)."""
    from ppdp.engine.methods import METHODS
    from ppdp.engine.methods.base import WarmUpModels

    sets = model_sets()
    base_name = next(iter(sets))
    base = tuple(sets.pop(base_name))
    models = WarmUpModels(base_name, base, tuple((label, tuple(ms)) for label, ms in sets.items()))
    out: list[tuple[str, Any]] = []
    for name in METHODS:
        method = METHODS.get(name)
        for w in (method() if isinstance(method, type) else method).warm_ups(models):
            out.append((w.label, _spec(db, f"w_{len(out)}", name, w)))
    return out


def classification(db: Path, release: str) -> None:
    """``ppdp utility --classify``'s classification of ``release`` (published on the sample in
    ``db``, its QIDs as columns): ARX's folds are drawn by a kernel (engine/kernels/shuffle.py),
    whose arguments are the same for any number of folds, so two folds do. Needs scikit-learn
    (``ppdp[utility]``), as the command does."""
    from ppdp.connectors import connect
    from ppdp.engine.utility.classify import classify

    con = connect(f"duckdb://{db}", read_only=True)
    try:
        classify(con, release, "salary-class", folds=2)
    finally:
        con.close()


def warm_up(progress: Callable[[str], None] = print) -> int:
    """Run every warm-up release, then ``classification`` of the first one published whose method
    generalizes by levels (its QIDs published as columns); returns how many releases ran.
    Failures propagate (a kernel that does not compile here would fail the user's release too)."""
    import duckdb

    from ppdp.engine.methods import method_of
    from ppdp.engine.release.run import run_release
    from ppdp.engine.utility import classify as classify_module
    from ppdp.errors import PrivacyRefusal, VerificationError
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
        classified: tuple[str, Any] | None = None  # (label, spec) of the release to classify
        for i, (label, spec) in enumerate(todo, start=1):
            t0 = time.perf_counter()
            try:
                run_release(spec, progress=False)
                note = ""
                if classified is None and method_of(spec).generalizes_by_levels:
                    classified = (label, spec)
            except (VerificationError, PrivacyRefusal):  # an ablation's tiny budget may end infeasible: refused, as it must be
                note = " (no k-anonymous solution within the warm-up budget: refused, kernels compiled)"
            progress(f"[{i}/{len(todo)}] {label}: {time.perf_counter() - t0:.1f} s{note}")
        if classified is not None and not classify_module.available():
            progress("utility --classify: skipped, it needs scikit-learn (ppdp[utility])")
        elif classified is not None:
            t0 = time.perf_counter()
            classification(db, classified[1].output_name)
            progress(f"utility --classify of {classified[0]}: {time.perf_counter() - t0:.1f} s")
    return len(todo)
