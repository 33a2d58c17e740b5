"""Population uniqueness estimated from the sample's frequency of frequencies.

The estimators and Dankar's decision rule as ARX implements them (``RiskModelPopulationUniqueness``,
``ModelPitman``, ``ModelZayatz``, ``ModelSNB``; Dankar, El Emam, Neisa, Roffey: "Estimating the
re-identification risk of clinical data sets", BMC Med. Inform. Decis. Mak. 12:66, 2012):

- Zayatz (1991): the share of sample uniques that are population uniques, from hypergeometric
  probabilities, times the sample uniques scaled by 1/f;
- Pitman (1996): the two-parameter Poisson-Dirichlet model fitted by maximum likelihood
  (Hoshino 2001), solved by Newton-Raphson;
- SNB (Chen and Keller-McNulty 1998): the slide negative binomial model, solved the same way;
- Dankar's rule: Pitman when f <= 0.1 (Zayatz when Pitman does not converge), otherwise the
  smaller of Zayatz and SNB (Zayatz when SNB does not converge).

Each estimate is a number of population uniques; the fraction is that over the population size.
A model that does not converge gives NaN (reported as null).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.engine.risk import _newton
from ppdp.engine.risk._special import digamma, gamma, log_gamma, trigamma
from ppdp.engine.risk.base import RISK_ESTIMATORS, RiskEstimator, RiskInput

f64 = np.float64


@dataclass(frozen=True)
class Histogram:
    """Classes by size: ``sizes[i]`` records per class, ``counts[i]`` classes of that size (sorted)."""

    sizes: tuple[int, ...]
    counts: tuple[int, ...]

    @classmethod
    def of(cls, freq: Mapping[int, int]) -> Histogram:
        items = sorted((int(s), int(c)) for s, c in freq.items() if s > 0 and c > 0)
        return cls(tuple(s for s, _ in items), tuple(c for _, c in items))

    @property
    def records(self) -> int:
        return sum(s * c for s, c in zip(self.sizes, self.counts, strict=True))

    @property
    def classes(self) -> int:
        return sum(self.counts)

    def of_size(self, size: int) -> int:
        for s, c in zip(self.sizes, self.counts, strict=True):
            if s == size:
                return c
        return 0


@dataclass(frozen=True)
class PopulationUniques:
    """Estimated fractions of population uniques (None: the model did not converge)."""

    population: int
    sampling_fraction: float
    pitman: float | None
    zayatz: float | None
    snb: float | None
    dankar: float | None
    dankar_model: str | None


def population_size(records: int, sampling_fraction: float) -> int:
    """ARX's ``ARXPopulationModel(sampleSize, fraction)``: round(n / f)."""
    return int(math.floor(records / sampling_fraction + 0.5))


def _valid(v: float) -> bool:
    return not math.isnan(v) and v != 0.0


def zayatz(h: Histogram, population: float) -> float:
    """ARX's ``ModelZayatz``: c1 * P(unique | sample unique) / f, P from hypergeometric P(X = 1)."""
    n = float(h.records)
    u = float(h.classes)
    c1 = h.of_size(1)
    f = n / population
    p1 = _hyper_one(population, np.array(h.sizes + (1,)), n)
    temp = sum((c / u) * p1[i] for i, c in enumerate(h.counts))
    cond = ((c1 / u) * p1[-1]) / temp
    return c1 * cond / f


def _hyper_one(population: float, sizes: np.ndarray, n: float) -> list[float]:
    """P(X = 1) for X ~ Hypergeometric(N = population, m = size, n draws), each size, as the
    product m n / N * prod_{j < m-1} (N - n - j) / (N - 1 - j) (exact to rounding, unlike
    differences of log-gamma values of the population's size)."""
    big = int(min(population, 2**31 - 1))  # ARX casts to int the same way
    draws = int(min(n, 2**31 - 1))
    m_max = int(sizes.max())
    j = np.arange(max(m_max - 1, 0), dtype=np.float64)
    terms = np.clip((big - draws - j) / (big - 1 - j), 0.0, None)
    cum = np.concatenate(([1.0], np.cumprod(terms)))
    out = []
    for m in sizes:
        m = int(m)
        if m > big or draws > big:
            out.append(0.0)
            continue
        out.append(m * draws / big * float(cum[m - 1]))
    return out


def pitman(h: Histogram, population: float) -> float:
    """ARX's ``ModelPitman``: Hoshino's MLE of the Pitman model, population uniques
    Gamma(t+1)/Gamma(t+a) * N^a (the larger of the two evaluations ARX makes)."""
    c1 = float(h.of_size(1))
    c2 = float(h.of_size(2))
    u = float(h.classes)
    p = float(population)
    n = float(h.records)
    c2 = c2 if c2 != 0 else 1.0
    with np.errstate(all="ignore"):
        c = f64(c1 * (c1 - 1)) / c2
        t = ((n * u * c) - (c1 * (n - 1) * ((2 * u) + c))) / (((2 * c1 * u) + (c1 * c)) - (n * c))
        a = ((t * (c1 - n)) + ((n - 1) * c1)) / (n * u)
    keys = np.array([s for s in h.sizes if s != 1], dtype=np.float64)
    vals = np.array([c for s, c in zip(h.sizes, h.counts, strict=True) if s != 1], dtype=np.float64)
    start = (float(t), float(a))

    def constraint(x: float, y: float) -> bool:
        return x >= 0

    def closed(t: float, a: float):
        with np.errstate(all="ignore"):
            t, a = f64(t), f64(a)
            val0 = f64(u - 1.0)
            val1 = digamma(val0 + (t / a) + 1.0)
            val2 = trigamma((a + t + (a * val0)) / a)
            val3 = trigamma((t / a) + 1.0)
            val4 = digamma((t / a) + 1.0)
            val5 = a * a
            d1 = (val3 - val2) / val5
            d5 = (((a * val1) + (t * val2)) - (a * val4) - (t * val3)) / (val5 * a)
            d3 = (((((val5 * val0) - (t * t * val2)) + (t * t * val3)) - (2.0 * a * t * val1)) + (2.0 * a * t * val4)) / (val5 * val5)
            o1 = (val1 - val4) / a
            o3 = ((-t * val1) + (a * val0) + (t * val4)) / (a * a)
            o2 = digamma(n + t) - digamma(t + 1.0)
            d2 = trigamma(t + 1.0) - trigamma(n + t)
            d4 = f64(0.0)
            o4 = f64(0.0)
            val6 = digamma(1.0 - a)
            val7 = trigamma(1.0 - a)
            for key, value in zip(keys, vals, strict=True):
                d4 += value * (val7 - trigamma(key - a))
                o4 += value * (digamma(key - a) - val6)
            return o1 - o2, o3 - o4, d2 - d1, 0.0 - d5, 0.0 - d5, 0.0 - d3 - d4

    i_u = np.arange(1, int(math.ceil(u)), dtype=np.float64)
    i_n = np.arange(1, int(math.ceil(n)), dtype=np.float64)
    inner = [np.arange(1, int(k), dtype=np.float64) for k in keys]

    def objects(t: float, a: float):
        with np.errstate(all="ignore"):
            val0 = t + i_u * a
            v1 = 1.0 / val0
            o1 = float(v1.sum())
            o3 = float((i_u * v1).sum())
            o4 = 0.0
            d4 = 0.0
            for value, js in zip(vals, inner, strict=True):
                v3 = js - a
                o4 += value * float((1.0 / v3).sum())
                d4 += value * float((1.0 / (v3 * v3)).sum())
            v0 = t + i_n
            o2 = float((1.0 / v0).sum())
            d2 = float((1.0 / (v0 * v0)).sum())
            d1 = float((1.0 / (val0 * val0)).sum())
            d5 = float((i_u / (val0 * val0)).sum())
            d3 = float((i_u * i_u / (val0 * val0)).sum())
            return o1 - o2, o3 - o4, d2 - d1, 0.0 - d5, 0.0 - d5, 0.0 - d3 - d4

    x, y = _newton.solve(closed, start, constraint)
    if math.isnan(x) or math.isnan(y):
        x, y = _newton.solve(objects, start, constraint)
    else:
        ox, oy = objects(x, y)[:2]
        if math.isnan(ox) or math.isnan(oy) or abs(ox) > _newton.ACCURACY or abs(oy) > _newton.ACCURACY:
            x, y = _newton.solve(objects, start, constraint)
    return _pitman_result(x, y, p)


def _pitman_result(t: float, a: float, p: float) -> float:
    if math.isnan(a) or math.isnan(t) or a == 0:
        return math.nan
    with np.errstate(all="ignore"):
        lg = log_gamma(t + 1.0) - log_gamma(t + a)
        v1 = float(np.exp(f64(lg)) * np.power(f64(p), f64(a)))
        v1 = v1 if 0.0 <= v1 <= p else math.nan
        g1, g2 = gamma(t + 1.0), gamma(t + a)
        v2 = float((f64(g1) / f64(g2)) * np.power(f64(p), f64(a)))
        v2 = v2 if 0.0 <= v2 <= p else math.nan
    if math.isnan(v1) and math.isnan(v2):
        return math.nan
    if not math.isnan(v1) and not math.isnan(v2):
        return max(v1, v2)
    return v2 if math.isnan(v1) else v1


def snb(h: Histogram, population: float) -> float:
    """ARX's ``ModelSNB``: the slide negative binomial model, uniques k * b^a."""
    c1 = float(h.of_size(1))
    c2 = float(h.of_size(2))
    n = float(h.records)
    f = n / population
    with np.errstate(all="ignore"):
        var1 = var2 = var3 = var4 = f64(0.0)
        var5 = f64(f) * f
        for size, count in zip(h.sizes, h.counts, strict=True):
            v0, v1 = f64(size), f64(count)
            v2 = np.power(1 - f64(f), v0) * v1
            var1 += v0 * var5 * np.power(1 - var5, v0 - 1) * v1
            var2 += v2 * np.power(1 + f64(f), v0) - 1  # ARX subtracts 1 per class size (sic)
            var3 += v2
            var4 += v0 * f * np.power(1 - f64(f), v0 - 1) * v1
        k = f64(h.classes) + c1 * (var1 / var2) * (var3 / var4) * (var3 / var4)

    def master(a: float, b: float):
        with np.errstate(all="ignore"):
            a, b = f64(a), f64(b)
            dividend = (1 - f64(f)) * (1 - b)
            o1 = k * f * np.power(b / (1 - dividend), a) * (((a * dividend) / (1 - dividend)) + 1) - c1
            o2 = k * a * np.power(b, a) * (f * f) * (1 - b) / 2 * np.power(1 - dividend, a + 2) * (2 - (1 - a) * dividend) - c2
            val0 = (b - 1.0) * (f - 1.0)
            val1 = val0 - 1.0
            val2 = 1.0 - val0
            val3 = a * val0 / val1 - 1.0
            val4 = np.power(-b / val1, a)
            val6 = np.power(f64(f), 2.0)
            val7 = np.power(b, a)
            val8 = val7 * val6 * k
            val9 = a * val8
            val10 = 2.0 * np.power(val2, a + 2.0)
            val11 = np.power(val1, 2.0)
            val13 = f * k
            val14 = f - 1.0
            val15 = a - 1.0
            val16 = b - 1.0
            val17 = val15 * val0
            val18 = val6 * k
            val19 = val17 + 2.0
            val20 = val18 * val19
            x1 = -val13 * np.log(-b / val1) * val3 * val4 - (val13 * val4 * val0) / val1
            x2 = (a * val13 * (1.0 / val1 - (b * val14) / val11) * val3 * np.power(-b / val1, val15)
                  - val13 * val4 * ((a * val14) / val1 - (a * val16 * np.power(val14, 2.0)) / val11))
            y1 = ((val9 * np.log(val2) * val19 * val16) / val10 - (val9 * np.power(val16, 2.0) * val14) / val10
                  - (val7 * val20 * val16) / val10 - (a * val7 * val18 * np.log(b) * val19 * val16) / val10)
            y2 = (-(val9 * val19) / val10 - (np.power(a, 2.0) * np.power(b, val15) * val20 * val16) / val10
                  - (a * val7 * val18 * val17) / val10 - (a * val7 * val20 * (a + 2.0) * val0) / (2.0 * np.power(val2, a + 3.0)))
            return o1, o2, x1, x2, y1, y2

    a, b = _newton.solve(master, (1.0, 1.0))
    with np.errstate(all="ignore"):
        return float(k * np.power(f64(b), f64(a)))


def estimate(h: Histogram, population: int, *, zayatz_fallback: bool = True) -> PopulationUniques:
    """All four estimates as fractions of the population, as ARX's ``RiskModelPopulationUniqueness``."""
    n = h.records
    f = n / population
    if h.of_size(1) == 0:
        return PopulationUniques(population, f, 0.0, 0.0, 0.0, 0.0, "dankar")
    num = {"pitman": pitman(h, population), "zayatz": zayatz(h, population), "snb": snb(h, population)}
    model: str | None
    if f <= 0.1:
        if _valid(num["pitman"]):
            model = "pitman"
        elif zayatz_fallback:
            model = "zayatz"
        else:
            model = None
    elif _valid(num["snb"]):
        model = "zayatz" if num["zayatz"] < num["snb"] else "snb"
    else:
        model = "zayatz"
    fr = {k: (v / population if _valid(v) else None) for k, v in num.items()}
    dankar = fr[model] if model is not None else None
    return PopulationUniques(population, f, fr["pitman"], fr["zayatz"], fr["snb"], dankar, model)


def _r(x: float | None) -> str:
    return "n/a (no convergence)" if x is None else f"{x:.6f}"


class PopulationUniqueness(RiskEstimator):
    """The four estimates of population uniques for the assessment's population size."""

    name = "population-uniques"
    keys = {"population_uniques": {"type": "object", "required": ["pitman", "zayatz", "snb", "dankar", "dankar_model"]}}
    order = 40

    def estimate(self, inp: RiskInput) -> dict[str, Any]:
        pu = estimate(inp.histogram, inp.population)
        return {"population_uniques": {"pitman": pu.pitman, "zayatz": pu.zayatz, "snb": pu.snb, "dankar": pu.dankar,
                                       "dankar_model": pu.dankar_model}}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        pu = values["population_uniques"]
        return [f"  population uniques (f = {basis['sampling_fraction']:.6g}, N = {basis['population']:,}): Pitman "
                f"{_r(pu['pitman'])}, Zayatz {_r(pu['zayatz'])}, SNB {_r(pu['snb'])}; Dankar {_r(pu['dankar'])} "
                f"({pu['dankar_model']})"]

    def rows(self) -> tuple[tuple[str, str], ...]:
        return (("population uniques: Pitman", "population_uniques.pitman"), ("population uniques: Zayatz", "population_uniques.zayatz"),
                ("population uniques: SNB", "population_uniques.snb"), ("population uniques: Dankar", "population_uniques.dankar"),
                ("population uniques: Dankar's model", "population_uniques.dankar_model"))


RISK_ESTIMATORS.register(PopulationUniqueness.name)(PopulationUniqueness())
