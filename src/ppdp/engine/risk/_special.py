"""Digamma and trigamma exactly as ARX's ``org.deidentifier.arx.risk.Gamma`` computes them.

ARX's population estimators (Pitman's) are defined by these implementations, including their
quirks (trigamma applies the asymptotic tail only from 12 on although it reduces the argument
only to 8), so the estimates match ARX to the last digits only with the same functions. Negative
arguments use the reflection formulas (Jeffrey 11.1.6 and its derivative), as ARX. Arithmetic is IEEE (NumPy scalars, errors
ignored) as in Java: a division by zero is an infinity, not an exception.
"""

from __future__ import annotations

import math

import numpy as np

_B10, _B2, _B4, _B6, _B8 = 5.0 / 66.0, 1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0
_DIGAMMA_1 = -0.57721566490153286060651209008240243104215933593992
_LARGE_DIGAMMA, _LARGE_TRIGAMMA = 12.0, 8.0
_S3, _S4, _S5, _S6, _S7 = 1.0 / 12.0, 1.0 / 120.0, 1.0 / 252.0, 1.0 / 240.0, 1.0 / 132.0
_SMALL_DIGAMMA, _SMALL_TRIGAMMA = 1e-6, 1e-4
_TETRAGAMMA_1 = -2.0 * 1.202056903159594285399738161511449990764986292
_TRIGAMMA_1 = (math.pi * math.pi) / 6.0

f64 = np.float64


def digamma(x: float) -> float:
    """ARX's ``Gamma.digamma``."""
    x = f64(x)
    with np.errstate(all="ignore"):
        if np.isinf(x) or np.isnan(x):
            return math.nan
        if x == 0.0:
            return -math.inf
        if x < 0.0:  # digamma(-x) = digamma(x + 1) + pi cot(pi x)
            return float(f64(digamma(1.0 - x)) + (f64(math.pi) / np.tan(-math.pi * x)))
        if x <= _SMALL_DIGAMMA:
            return float((_DIGAMMA_1 - (f64(1.0) / x)) + (_TRIGAMMA_1 * x))
        result = f64(0.0)
        while x < _LARGE_DIGAMMA:
            result -= f64(1.0) / x
            x += 1
        r = f64(1.0) / x
        result += np.log(x) - (0.5 * r)
        r *= r
        result -= r * (_S3 - (r * (_S4 - (r * (_S5 - (r * (_S6 - (r * _S7))))))))
        return float(result)


def trigamma(x: float) -> float:
    """ARX's ``Gamma.trigamma`` (with its tail applied only when the argument reaches 12)."""
    x = f64(x)
    with np.errstate(all="ignore"):
        if np.isinf(x) or np.isnan(x):
            return math.nan
        if x == 0.0:
            return -math.inf
        if x < 0.0:  # -trigamma(-x) = trigamma(x + 1) - (pi csc(pi x))^2
            r = f64(math.pi) / np.sin(-math.pi * x)
            return float(-f64(trigamma(1.0 - x)) + (r * r))
        if x <= _SMALL_TRIGAMMA:
            return float((f64(1.0) / (x * x)) + _TRIGAMMA_1 + (_TETRAGAMMA_1 * x))
        result = f64(0.0)
        while x < _LARGE_TRIGAMMA:
            result += f64(1.0) / (x * x)
            x += 1
        if x >= _LARGE_DIGAMMA:
            r = f64(1.0) / (x * x)
            result += (0.5 * r) + ((1.0 + (r * (_B2 + (r * (_B4 + (r * (_B6 + (r * (_B8 + (r * _B10)))))))))) / x)
        return float(result)


def log_gamma(x: float) -> float:
    """Apache Commons Math's ``Gamma.logGamma``: NaN for x <= 0."""
    if math.isnan(x) or x <= 0:
        return math.nan
    try:
        return math.lgamma(x)
    except (OverflowError, ValueError):
        return math.inf


def gamma(x: float) -> float:
    """Gamma function with Java's overflow behaviour (infinity, NaN at poles)."""
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan
