"""Toy privacy models and methods that declare nothing beyond the base class's safe defaults
(engine/privacy/base.py): for the tests that the defaults fail closed.

``ToyMinClass`` has k-anonymity's AD (smallest class, feasible when >= k) but no fused kernel
kind, no DuckDB evaluator term, no exact suppression oracle, no history check and no
union-closed declaration; only an SQL check of a version (so a first version can be published).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from ppdp.engine.kernels import classes as K
from ppdp.engine.privacy import MODELS, ClassStats, PrivacyModel
from ppdp.sql import queries as Q
from ppdp.sql.dialect import Dialect

TOY_NAME = "toy-min-class"


@dataclass(frozen=True)
class ToyMinClass(PrivacyModel):
    k: int
    name: ClassVar[str] = TOY_NAME

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ToyMinClass:
        return cls(int(params["k"]))

    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_k_anonymity(stats.size))

    def reference_ad(self, classes, q) -> float:
        return min((sum(c.values()) for c in classes.values()), default=math.inf)

    def feasible(self, ad: float) -> bool:
        return ad >= self.k

    def violation(self, ad: float) -> float:
        return 0.0 if ad >= self.k else (self.k - ad) / self.k

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        return Q.verify_k_query(relation, qids, d)


@dataclass(frozen=True)
class ToyUnchecked(ToyMinClass):
    """As ToyMinClass, without even a version check."""

    name: ClassVar[str] = "toy-unchecked"

    version_sql = PrivacyModel.version_sql  # type: ignore[assignment]  # back to the base's None


@contextmanager
def registered(registry: Any, name: str, obj: Any) -> Iterator[Any]:
    """``obj`` registered as ``name`` in ``registry`` for the duration of the block."""
    registry.register(name)(obj)
    try:
        yield obj
    finally:
        registry._items.pop(name, None)


def toy_models() -> Iterator[None]:
    """Register both toy models (use with ``contextlib.ExitStack`` or as a fixture body)."""
    with registered(MODELS, ToyMinClass.name, ToyMinClass), registered(MODELS, ToyUnchecked.name, ToyUnchecked):
        yield
