"""Every registered privacy model against its own declarations.

For each model with a warm-up example: the kernel ``ad`` equals the plain-Python twin
``reference_ad`` on random releases; ``class_ad`` is each class's AD alone; a model declared
``union_closed`` keeps every union of classes that each satisfy it feasible (the cross-version
check rests on this); a model with a fused kernel kind or a DuckDB term is evaluated alike on
every path (tests/oracles/test_evaluator_agreement.py covers the numbers).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.engine.privacy import MODELS, PrivacyModel
from tests.support.class_stats import class_stats as _stats

# The models with an exact suppression oracle (k-anonymity, the l-diversities, t-closeness):
# every check, a kernel twin and an evaluator term. Models without one (risk, population,
# beta-likeness, ...) are warmed up too; their own test files cover them.
BUILT_IN = [name for name in MODELS if MODELS.get(name).warm_up_example is not None
            and MODELS.get(name).kernel_kind is not None and MODELS.get(name).from_params(dict(MODELS.get(name).warm_up_example)).oracle() is not None]


def _model(name: str) -> PrivacyModel:
    cls = MODELS.get(name)
    assert cls.warm_up_example is not None
    return cls.from_params(dict(cls.warm_up_example))


def _random_release(rng: np.random.Generator, n_sa: int) -> dict[int, dict[int, int]]:
    return {c: {v: int(rng.integers(1, 6)) for v in rng.choice(n_sa, size=int(rng.integers(1, n_sa + 1)), replace=False)}
            for c in range(int(rng.integers(1, 7)))}




@pytest.mark.parametrize("name", BUILT_IN)
def test_the_kernel_equals_the_plain_twin(name: str) -> None:
    model = _model(name)
    rng = np.random.default_rng(list(name.encode()))
    for _ in range(200):
        n_sa = int(rng.integers(1, 6))
        q = rng.random(n_sa)
        q /= q.sum()
        classes = _random_release(rng, n_sa)
        stats = _stats(classes, q)
        assert model.ad(stats) == pytest.approx(model.reference_ad(classes, q.tolist()), rel=1e-12, abs=1e-12)
        one_by_one = [model.reference_ad({c: classes[c]}, q.tolist()) for c in range(len(classes))]
        assert np.allclose(model.class_ad(stats), one_by_one, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in BUILT_IN if MODELS.get(n).union_closed])
def test_a_union_closed_model_keeps_unions_of_feasible_classes_feasible(name: str) -> None:
    model = _model(name)
    rng = np.random.default_rng([7, *name.encode()])
    checked = 0
    for _ in range(3000):
        n_sa = int(rng.integers(1, 5))
        q = rng.random(n_sa)
        q /= q.sum()
        classes = _random_release(rng, n_sa)
        feasible = [c for c in classes if model.feasible(model.reference_ad({c: classes[c]}, q.tolist()))]
        if len(feasible) < 2:
            continue
        union: dict[int, int] = {}
        for c in feasible:
            for v, n in classes[c].items():
                union[v] = union.get(v, 0) + n
        assert model.feasible(model.reference_ad({0: union}, q.tolist())), (name, [classes[c] for c in feasible], q)
        checked += 1
    assert checked >= 50, f"only {checked} unions of feasible classes were drawn for {name}"


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_empty_release_is_feasible(name: str) -> None:
    model = _model(name)
    ad = model.reference_ad({}, [1.0])
    assert model.feasible(ad) and (math.isinf(ad) if model.higher_is_safer else ad == 0.0)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_built_in_model_provides_every_check(name: str) -> None:
    model = _model(name)
    assert model.has_version_check and model.has_history_check and model.oracle() is not None
    assert model.kernel_kind is not None and model.evaluator_term() is not None
