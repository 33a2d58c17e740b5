"""The privacy model: the unit of extension (after ARX's ``PrivacyCriterion`` and its requirements).

A model is one module that subclasses ``PrivacyModel`` and registers it in ``MODELS``. It says
what it needs (``Requirements``), computes its disclosure value AD from class statistics (a
kernel, ``ad``) and from plain dicts (``reference_ad``, the plain-Python twin the tests compare
against), tells feasible from infeasible, and, where it can, supplies the independent SQL check
of a published version, its history check across versions, its term of the DuckDB evaluator's
query and its parameters of the exact suppression oracle S*(G). A model that needs more of the
run than its parameters (an order or a hierarchy of the sensitive values) gets it once the
source is encoded (``bind``).

Every default is the safe one, so a model that fills in nothing can never be reported as more
than it is:

- no ``oracle()``: S*(G) ignores the model, so no optimizer result is certified optimal, and the
  run record says which model is why (``models.oracle.plan_oracle``);
- no ``version_sql``: nothing is published under it by a method that publishes classes (the
  release guards refuse before any write);
- ``union_closed = False`` (or no ``history_failures``): a second version of a release under it
  is refused before any write, because the cross-version check rests on "a union of classes
  that each satisfy the model satisfies it";
- ``monotone = False``: optimizers that prune by monotonicity (Flash) refuse it;
- no ``kernel_kind`` / ``evaluator_term``: the general evaluator paths (one ``ad`` call per
  solution; the DuckDB evaluator refuses the model).

Model names are compared nowhere outside the model modules (tests/architecture enforces it):
code that needs a property of a model asks the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.registry import Registry, registry
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable
    from ppdp.engine.privacy.oracle import OracleParams
    from ppdp.sql.evaluator import AdTerm

# A release as plain dicts, for the reference twins: {class: {SA code: retained records}}.
ReferenceClasses = Mapping[Any, Mapping[int, int]]


@dataclass(frozen=True)
class ClassStats:
    """Equivalence classes of retained records: size per class, counts per (class, SA value)."""

    size: np.ndarray
    pair_class: np.ndarray
    pair_sa: np.ndarray
    pair_n: np.ndarray
    q: np.ndarray  # source distribution of the joint SA
    # Persons of the population per class (aligned with ``size``) and the number of population
    # classes that hold no retained record: only when a model requires them
    # (``Requirements.population``; engine/kernels/population.py).
    population: np.ndarray | None = None
    unmatched_population: int = 0


@dataclass(frozen=True)
class ModelContext:
    """What a model may read of the run beyond its spec parameters, once the source is encoded
    (``PrivacyModel.bind``): the sensitive columns and the (text) value of each sensitive code of
    the encoded table (for an order or a hierarchy over them; ``reverify`` gives the values of
    the stored Q), the spec's folder (relative paths) and the ``[sensitive] hierarchy`` file."""

    sensitive: tuple[str, ...]
    sa_values: tuple[tuple, ...]
    base_dir: str = "."
    sensitive_hierarchy: str | None = None
    # Records of the source (all rows, as ARX's data length; the research subset's when there is
    # one): k-map's estimators derive their threshold from the sampling fraction. None: unknown.
    source_rows: int | None = None


@dataclass(frozen=True)
class Requirements:
    """The statistics a model reads (ARX: ``getRequirements``). The evaluators compute what the
    models of a problem need together; the spec reader refuses a model whose input is missing
    (sensitive counts without a sensitive column)."""

    class_sizes: bool = True
    sensitive_counts: bool = False  # counts per (class, sensitive value)
    # The release holds only the records of a research subset of the source (``research_predicate``).
    research_subset: bool = False
    # Persons of a population per class (``ClassStats.population``): the population is the
    # source itself (before the research subset) or a table (``population_table``).
    population: bool = False


class PrivacyModel:
    """Base class of every privacy model; see the module docstring for the safe defaults."""

    name: ClassVar[str]
    requirements: ClassVar[Requirements] = Requirements()
    higher_is_safer: ClassVar[bool] = True  # True when a larger AD is closer to feasible (k, l)
    # Holds for any union of classes that each satisfy it; the cross-version check needs it.
    union_closed: ClassVar[bool] = False
    # Once feasible at G with at most s suppressed, feasible at every G' >= G with at most s
    # suppressed (ARX's monotonic with generalization and suppression); Flash needs it.
    monotone: ClassVar[bool] = False
    # AD is the size of the smallest class (so a record's AD is its class size: the ID-DGA
    # improvement operator and the fused k-anonymity generation use that).
    ad_is_smallest_class: ClassVar[bool] = False
    # Code of this model's AD in the fused Numba kernels (engine/kernels/kinds.py), or None.
    kernel_kind: ClassVar[int | None] = None
    # Spec parameters that ``ppdp warm-up`` releases the sample under (None: not warmed up).
    warm_up_example: ClassVar[dict[str, Any] | None] = None
    # Spec parameters that are themselves about individuals (delta-presence's research rule, the
    # membership the model hides): stored in the run record, never in a shareable output.
    private_params: ClassVar[frozenset[str]] = frozenset()

    # -- the spec ------------------------------------------------------------------------
    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PrivacyModel:
        """Validate spec parameters (SpecError with one line) and build the model."""
        raise NotImplementedError(f"{cls.__name__} does not read spec parameters")

    def params(self) -> dict[str, Any]:
        """The model's parameters as the spec writes them (stored in the run record)."""
        raise NotImplementedError

    def query_names_values(self) -> bool:
        """True when the model's verification query holds source values as literals (a sensitive
        domain, a predicate over the source): a value held only by suppressed rows would leave
        the database with it, so shareable outputs (report, certificate, ``--json``) leave the
        query text out. The query stays in the private run record."""
        return bool(self.private_params)

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Why no non-empty release of ``table`` can satisfy the model, or None if one can."""
        return None

    def bind(self, ctx: ModelContext) -> PrivacyModel:
        """The model ready for this run's table (a ground distance over its sensitive codes, a
        hierarchy read from a file, a threshold derived from the source's size); SpecError/DataError
        with one line, before any write. Most models need nothing of the table and return themselves."""
        return self

    def research_predicate(self) -> str | None:
        """The user's SQL predicate of the research subset (``Requirements.research_subset``)."""
        return None

    def population_table(self) -> str | None:
        """"schema.table" of the population (``Requirements.population``); None: the source
        itself, before the research subset."""
        return None

    # -- AD: kernel and plain-Python twin --------------------------------------------------
    def ad(self, stats: ClassStats) -> float:
        """The disclosure value of a release from its class statistics."""
        raise NotImplementedError

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        """``ad`` straight from the definition, over plain dicts (tests compare the two)."""
        raise NotImplementedError

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        """AD of each class alone (the AD of a one-class release); the ID-DGA improvement
        operator ranks records by it. Models override it with a vectorized form."""
        size = stats.size
        out = np.empty(len(size))
        for c in range(len(size)):
            sel = stats.pair_class == c
            one = ClassStats(size[c: c + 1], np.zeros(int(sel.sum()), dtype=stats.pair_class.dtype), stats.pair_sa[sel],
                             stats.pair_n[sel], stats.q)
            out[c] = self.ad(one)
        return out

    def kernel_params(self) -> np.ndarray:
        """This model's parameters as the fused kernels read them (one float64 row; layouts in
        engine/kernels/distributions.py); empty for the kinds without parameters."""
        return np.zeros(0)

    def feasible(self, ad: float) -> bool:
        raise NotImplementedError

    def kernel_feasibility(self) -> tuple[int, float] | None:
        """``feasible`` as a fused kernel tests it: (comparison code of engine/kernels/kinds.py,
        threshold), where ``feasible(ad)`` is ``ad >= threshold`` (AT_LEAST) or ``ad <=
        threshold`` (AT_MOST) for every float, NaN and infinities included. None (the default):
        only ``feasible`` decides, and a search that tests feasibility inside a kernel leaves
        this model's nodes to Python."""
        return None

    def violation(self, ad: float) -> float:
        """Normalized distance to feasibility (0 when feasible); ranks like AD does."""
        raise NotImplementedError

    def describe(self, ad: float) -> str:
        return f"{self.name}: AD {ad:g} ({self.params()})"

    def min_class_size(self) -> int:
        """The fewest records a class that satisfies the model can hold (bounds, methods)."""
        return 1

    # -- exact suppression -----------------------------------------------------------------
    def oracle(self) -> OracleParams | None:
        """This model's constraints for S*(G) (models/oracle.py), or None: no exact oracle."""
        return None

    # -- SQL -------------------------------------------------------------------------------
    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str | None:
        """The independent SQL check of a version: one row (ad, classes); None if the model has none."""
        return None

    def check_result(self, frame: Any) -> tuple[float | None, int]:
        """(ad, classes) from the result of ``version_sql`` (a Polars frame); by default its one
        row. A model whose AD is an estimate over the class-size histogram (population
        uniqueness) returns the histogram from SQL and computes AD here."""
        row = frame.row(0, named=True)
        return (None if row["ad"] is None else float(row["ad"])), int(row["classes"])

    def achieved_value(self, frame: Any, ad: float | None) -> float | None:
        """The value reported as the model's achieved value (``achieved`` of --json, the
        certificate) from the result of ``version_sql``: AD unless the model's parameter bounds
        another figure (beta-likeness: the largest gain)."""
        return ad

    def population_version_sql(self, relation: str, qids: list[str], population: str, d: Dialect) -> str | None:
        """The independent SQL check of a version for a model that reads population counts:
        ``population`` is a FROM-able subquery of the population's classes of that version (the
        QID columns generalized as the version's rows are, and ``persons``); one row (ad,
        classes). None if the model has none."""
        return None

    def history_failures(self, sig: str, values_at: Callable[[int], str], q_at: Callable[[int], str],
                         versions: list[int], d: Dialect) -> list[str] | None:
        """Queries returning the ``sig_now`` of history classes that fail (sql/history.py);
        None if the model has no history check."""
        return None

    def evaluator_term(self) -> AdTerm | None:
        """This model's AD in the DuckDB evaluator's batch query (sql/evaluator.py), or None."""
        return None

    # -- what the model provides (the release guards read these) ----------------------------
    @property
    def has_version_check(self) -> bool:
        """The model supplies an independent SQL check of a published version."""
        return (type(self).version_sql is not PrivacyModel.version_sql
                or type(self).population_version_sql is not PrivacyModel.population_version_sql)

    @property
    def has_history_check(self) -> bool:
        """The model supplies the SQL check of history classes across versions."""
        return type(self).history_failures is not PrivacyModel.history_failures


# built-ins: every module of this package; other packages: entry points of group ``ppdp.models``
MODELS: Registry[type[PrivacyModel]] = registry("model")


def build_model(name: str, params: dict[str, Any]) -> PrivacyModel:
    """Instantiate a registered model from spec parameters (validated by the model)."""
    return MODELS.get(name).from_params(params)


def distinct_sensitive_values(table: EncodedTable) -> int:
    """Distinct (joint) sensitive values among the table's records."""
    return int(np.count_nonzero(np.bincount(table.sa, weights=table.counts, minlength=table.n_sa)))


def empty_ad(model: PrivacyModel) -> float:
    """AD of the empty release: feasible by convention (docs/design/paper_notes.md §2)."""
    return math.inf if model.higher_is_safer else 0.0
