"""sdcMicro's information loss of a numeric release: IL1s, the eigenvalue loss and the
deviations of ``summary.micro`` (docs/concepts/utility.md), computed as sdcMicro computes them.

``x`` is the original (records x numeric attributes), ``xm`` the released values of the same
records in the same order. R's conventions are kept: ``sd``, ``var`` and ``cov`` divide by n - 1,
``mad`` is 1.4826 times the median absolute deviation from the median, ``median`` averages the two
middle values, Spearman's correlation ranks ties by their average rank.

Sources (sdcMicro, R/dUtility.R and R/microaggregation.R):

- IL1s (dUtility.R, ``method == "IL1s"``): sum over records i and attributes j of
  |x_ij - xm_ij| / (sd(x_j) * sqrt(2)), not divided by n p (Mateo-Sanz et al. 2004).
- eigen (dUtility.R, ``method == "eigen"``): e1, e2 the eigenvalues, decreasing, of the
  covariance of the standardized data (``var(scale(x))``, the correlation matrix);
  sum_k |e1_k - e2_k| / e1_k.
- ``summary.micro`` (microaggregation.R): amean, amedian, aonestep, devvar, amad, acov, acor,
  acors, adlm, atotals, pmtotals, as defined there. The release's totals are its own sums
  (``fot`` = 1; sdcMicro sets ``fot`` to 0 for most methods, which makes ``atotals`` the number of
  attributes whatever the data).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

SQRT2 = np.sqrt(2.0)
MAD_CONSTANT = 1.4826  # R's mad(): consistency constant for the normal distribution


def _sums(a: np.ndarray) -> np.ndarray:
    """Column sums correctly rounded (math.fsum): R accumulates in extended precision, and a
    microaggregated column's total equals the original's, which a float64 running sum misses by
    an ulp or so."""
    return np.array([math.fsum(a[:, j].tolist()) for j in range(a.shape[1])])


def _means(a: np.ndarray) -> np.ndarray:
    return _sums(a) / a.shape[0]


def _matrix(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[:, None] if a.ndim == 1 else a


def _mad(a: np.ndarray) -> np.ndarray:
    med = np.median(a, axis=0)
    return MAD_CONSTANT * np.median(np.abs(a - med), axis=0)


def il1s(x: Any, xm: Any) -> float:
    """sdcMicro's IL1s: sum |x - xm| / (sd(x_j) sqrt 2) over all cells (NaN cells left out)."""
    a, b = _matrix(x), _matrix(xm)
    sd = np.nanstd(a, axis=0, ddof=1)
    return float(np.nansum(np.abs(a - b) / (sd * SQRT2)))


def il1(x: Any, xm: Any) -> float:
    """sdcMicro's IL1: sum of 100 |x - xm| / |x| over cells, cells with x = 0 left out."""
    a, b = _matrix(x), _matrix(xm)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = 100.0 * np.abs(a - b) / np.abs(a)
    return float(np.nansum(np.where(np.isinf(r), np.nan, r)))


def _scaled_cov_eigen(a: np.ndarray) -> np.ndarray:
    """Eigenvalues (decreasing) of var(scale(a)): the covariance of the centred columns divided
    by their standard deviations."""
    z = (a - a.mean(axis=0)) / a.std(axis=0, ddof=1)
    c = np.atleast_2d(np.cov(z, rowvar=False, ddof=1))
    return np.sort(np.linalg.eigvalsh(c))[::-1]


def eigen(x: Any, xm: Any) -> float:
    """sdcMicro's eigenvalue loss: sum_k |e1_k - e2_k| / e1_k; NaN where sdcMicro's ``try``
    fails (a constant column)."""
    a, b = _matrix(x), _matrix(xm)
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            e1, e2 = _scaled_cov_eigen(a), _scaled_cov_eigen(b)
        except np.linalg.LinAlgError:
            return float("nan")
        return float(np.sum(np.abs(e1 - e2) / e1))


def _onestep(a: np.ndarray) -> np.ndarray:
    """summary.micro's ``onestep``: each column clipped to median +- (3/1.486) mad."""
    m, s = np.median(a, axis=0), _mad(a)
    c = 3.0 / 1.486
    return np.clip(a, m - c * s, m + c * s)


def _ranks(col: np.ndarray) -> np.ndarray:
    order = np.argsort(col, kind="stable")
    s = col[order]
    r = np.empty(len(col))
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return r


def _slopes(a: np.ndarray) -> np.ndarray:
    """The slopes of lm(a[, 1] ~ a[, -1]) (least squares with an intercept)."""
    design = np.column_stack([np.ones(len(a)), a[:, 1:]])
    coef, *_ = np.linalg.lstsq(design, a[:, 0], rcond=None)
    return coef[1:]


@dataclass(frozen=True)
class MicroSummary:
    """The deviations of sdcMicro's ``summary.micro`` with IL1s and the eigenvalue loss."""

    columns: tuple[str, ...]
    records: int
    il1s: float
    eigen: float
    amean: float
    amedian: float
    aonestep: float
    devvar: float
    amad: float
    acov: float
    acor: float
    acors: float
    adlm: float
    atotals: float
    pmtotals: float

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["columns"] = list(self.columns)
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in out.items()}

    def lines(self) -> list[str]:
        return [f"sdcMicro's measures on {', '.join(self.columns)} ({self.records:,} records)",
                f"  IL1s {self.il1s:.6g}, eigenvalue loss {self.eigen:.6g}",
                f"  deviations: mean {self.amean:.6g}, median {self.amedian:.6g}, one-step {self.aonestep:.6g}, "
                f"variance {self.devvar:.6g}, mad {self.amad:.6g}",
                f"              covariance {self.acov:.6g}, correlation {self.acor:.6g}, Spearman {self.acors:.6g}, "
                f"regression {self.adlm:.6g}, totals {self.atotals:.6g} ({self.pmtotals:+.6g})"]


def summary_micro(x: Any, xm: Any, columns: tuple[str, ...] | None = None) -> MicroSummary:
    """summary.micro's deviations of ``xm`` from ``x`` (microaggregation.R), with IL1s and eigen."""
    a, b = _matrix(x), _matrix(xm)
    if a.shape != b.shape or a.shape[0] < 2:
        raise ValueError("x and xm must have the same shape and at least 2 records")
    p = a.shape[1]
    names = columns or tuple(f"x{j + 1}" for j in range(p))
    with np.errstate(divide="ignore", invalid="ignore"):
        m1, m2 = _means(a), _means(b)
        amean = float(np.sum(np.abs(m1 - m2) / np.abs(m1)))
        d1, d2 = np.median(a, axis=0), np.median(b, axis=0)
        amedian = float(np.nansum(np.abs(d1 - d2) / np.abs(d1)))
        o1, o2 = _means(_onestep(a)), _means(_onestep(b))
        aonestep = float(np.nansum(np.abs(o1 - o2) / np.abs(o1)))
        v1 = np.atleast_2d(np.cov(a, rowvar=False, ddof=1))
        v2 = np.atleast_2d(np.cov(b, rowvar=False, ddof=1))
        devvar = float(np.sum(np.abs(v1 - v2) / np.abs(v1)) / p)
        s1, s2 = _mad(a), _mad(b)
        amad = float(np.nansum(np.abs(s1 - s2) / np.abs(s1)))
        acov = float(np.sum(np.abs(v1 - v2) / np.abs(v1)) / (2 * p))
        c1 = np.atleast_2d(np.corrcoef(a, rowvar=False))
        c2 = np.atleast_2d(np.corrcoef(b, rowvar=False))
        acor = float(np.sum(np.abs(c1 - c2) / np.abs(c1)) / (2 * p))
        r1 = np.atleast_2d(np.corrcoef(np.column_stack([_ranks(a[:, j]) for j in range(p)]), rowvar=False))
        r2 = np.atleast_2d(np.corrcoef(np.column_stack([_ranks(b[:, j]) for j in range(p)]), rowvar=False))
        acors = float(np.sum(np.abs(r1 - r2) / np.abs(r1)) / (2 * p))
        adlm = float(np.nansum(np.abs(_slopes(a) - _slopes(b)))) if p > 1 else 0.0
        t1, t2 = _sums(a), _sums(b)
        atotals = float(np.sum(np.abs((t1 - t2) / t1)))
        pmtotals = float(np.sum((t2 - t1) / t1))
    return MicroSummary(columns=tuple(names), records=a.shape[0], il1s=il1s(a, b), eigen=eigen(a, b), amean=amean,
                        amedian=amedian, aonestep=aonestep, devvar=devvar, amad=amad, acov=acov, acor=acor, acors=acors,
                        adlm=adlm, atotals=atotals, pmtotals=pmtotals)


_NUMERIC = re.compile(r"(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|INT\d*|DOUBLE|FLOAT\d*|REAL|DECIMAL|NUMERIC|LONG|SHORT|BYTE)",
                      re.IGNORECASE)
_RANGE = re.compile(r"^\s*[\[(]\s*([-+0-9.eE]+)\s*[,;]\s*([-+0-9.eE]+)\s*[\])]\s*$")


def released_number(value: Any) -> float:
    """The number a released value stands for: itself, or the midpoint of a published range
    ``[lo, hi]`` (``[lo, hi)``): the value an analyst without the records would use. NaN for a
    label that is neither."""
    if value is None:
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        m = _RANGE.match(str(value))
        return (float(m.group(1)) + float(m.group(2))) / 2.0 if m else float("nan")


def measure_version(con: Any, release: str, *, version: int | None = None,
                    columns: tuple[str, ...] | None = None) -> MicroSummary | None:
    """sdcMicro's measures of a published version against its source, on the QIDs that both
    publish as numbers (a microaggregated release); None when there are none. The records are
    matched by the source key; the matrices are read here and only the measures come out."""
    from ppdp.engine.utility.version import published_version
    from ppdp.sql.analysis import paired_numbers

    pv = published_version(con, release, version)
    source = pv.source(con)
    src_types = dict(con.relation_columns(source.schema or getattr(con, "default_schema", "main"), source.table) or []) \
        if source.table is not None else {}
    cols = columns or tuple(q for q in pv.qids if _NUMERIC.search(src_types.get(q, "")) and pv.released(q) is not None)
    released = [pv.released(c) for c in cols]
    if not cols or any(r is None for r in released):
        return None
    f = con.query(paired_numbers(source.sql(), pv.release, pv.table, pv.key, cols, [r for r in released if r is not None],
                                 con.dialect))
    if f.height < 2:
        return None
    x = np.column_stack([f[f"x{i}"].to_numpy() for i in range(len(cols))])
    xm = np.column_stack([[released_number(v) for v in f[f"m{i}"].to_list()] for i in range(len(cols))])
    if np.isnan(xm).all(axis=0).any():
        return None  # a column released as labels, not numbers or ranges
    return summary_micro(x, xm, tuple(cols))
