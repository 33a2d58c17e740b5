"""The risk estimator: the unit of extension of ``ppdp risk`` and of each release's stored risk.

An estimator is one module that registers a ``RiskEstimator`` in ``RISK_ESTIMATORS`` (built-ins:
ppdp/registry.py ``KINDS``; other packages: entry points of group ``ppdp.risk_estimators``). It
declares the keys it adds to the ``ppdp risk --json`` object with their JSON schema (``keys``),
computes them from what ``assess`` counted (``estimate``), and says how they render: lines of
``ppdp risk``'s text (``lines``), rows of the report's risk table (``rows``), a phrase of a run's
summary (``summary``) and a bar chart of the report (``chart``). Nothing else names its keys:
the run record, the report, the summary and the JSON schema read them from the estimators.

Every default is the quiet one: an estimator that renders nothing is still measured, stored
and printed by ``--json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ppdp.registry import Registry, registry

if TYPE_CHECKING:
    from ppdp.connectors.base import Connector
    from ppdp.engine.risk.population import Histogram


@dataclass(frozen=True)
class RiskInput:
    """What every estimator may read: the connection and the (quoted) relation, the attacker's
    columns, the frequency of frequencies on them (counted once, in the database), the
    population and the options of ``ppdp risk``."""

    con: Connector
    relation: str
    columns: tuple[str, ...]
    histogram: Histogram
    population: int
    sampling_fraction: float
    threshold: float
    population_table: str | None = None  # quoted relation of the population, or None
    weight: str | None = None  # a sampling-weight column, or None
    attributes: bool = True  # False: leave out the measures of column combinations (one GROUP BY each)


@dataclass(frozen=True)
class Chart:
    """A bar chart of one side (source or release) of the report: (label, value) bars."""

    title: str
    x_label: str
    y_label: str
    bars: tuple[tuple[str, float], ...]


class RiskEstimator:
    """Base class of every risk estimator; ``name``, ``keys`` and ``estimate`` are required."""

    name: ClassVar[str]
    # The keys this estimator adds to the ``ppdp risk --json`` object, each with its JSON schema.
    keys: ClassVar[Mapping[str, dict[str, Any]]]
    # Place among the estimators (text lines, report rows, JSON keys); ties by name.
    order: ClassVar[int] = 100

    def estimate(self, inp: RiskInput) -> dict[str, Any] | None:
        """Values of ``keys`` (JSON-ready: numbers, strings, lists, dicts), or None when the
        estimator does not apply to this input (e.g. no weight column)."""
        raise NotImplementedError

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        """Lines of ``ppdp risk``'s text (``basis``: the assessment's rows, classes,
        sampling_fraction, population, threshold and weight)."""
        return []

    def rows(self) -> tuple[tuple[str, str], ...]:
        """Rows of the report's risk table: (label, key path such as ``"prosecutor.average"``)."""
        return ()

    def summary(self, values: Mapping[str, Any]) -> str | None:
        """A short phrase for a run's summary (``ppdp run``, ``ppdp show``), or None."""
        return None

    def chart(self, values: Mapping[str, Any]) -> Chart | None:
        """A bar chart of the report's risk section, or None."""
        return None


RISK_ESTIMATORS: Registry[RiskEstimator | type[RiskEstimator]] = registry("risk estimator")


def estimators() -> list[RiskEstimator]:
    """Every registered estimator (an entry point may name the class or an instance), in order."""
    found = [RISK_ESTIMATORS.get(name) for name in RISK_ESTIMATORS]
    made = [e() if isinstance(e, type) else e for e in found]
    return sorted(made, key=lambda e: (e.order, e.name))


def values_of(estimator: RiskEstimator, measured: Mapping[str, Any] | None) -> dict[str, Any]:
    """The estimator's keys present in ``measured`` (a ``ppdp risk --json`` object; a stored one
    may predate the estimator)."""
    return {k: measured[k] for k in estimator.keys if k in measured} if measured else {}


# The keys of the assessment itself (not of an estimator): what the report's table starts with.
BASE_ROWS = (("rows", "rows"), ("classes", "classes"), ("sampling fraction", "sampling_fraction"), ("threshold", "threshold"))


def risk_rows() -> tuple[tuple[str, str], ...]:
    """Rows of the report's risk table: the assessment's own, then each estimator's."""
    return BASE_ROWS + tuple(row for e in estimators() for row in e.rows())


def json_schema_properties() -> dict[str, dict[str, Any]]:
    """The estimators' keys with their JSON schemas (a ``ppdp risk --json`` object may hold any
    of them: an estimator that does not apply leaves its keys out)."""
    return {k: v for e in estimators() for k, v in e.keys.items()}
