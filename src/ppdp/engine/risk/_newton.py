"""The two-dimensional Newton-Raphson solver ARX's estimators use (de.linearbits.newtonraphson
0.0.1, ``NewtonRaphson2D._solve``), step for step, with ARX's solver configuration
(``ARXSolverConfiguration``: accuracy 1e-6, 1,000 iterations per try, 16 deterministic start
values after the given one). ARX also stops on wall-clock limits (100 ms a try, 1 s in all);
those are left out here so that the result does not depend on the machine's speed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

ACCURACY = 1e-6
ITERATIONS_PER_TRY = 1000


def _start_values() -> list[tuple[float, float]]:
    """ARX's ``getDefaultStartValues``: d1, d2 = 0, 0.33, 0.66, 0.99 (accumulated as in Java)."""
    out = []
    d1 = 0.0
    while d1 < 1.0:
        d2 = 0.0
        while d2 < 1.0:
            out.append((d1, d2))
            d2 += 0.33
        d1 += 0.33
    return out


START_VALUES = tuple(_start_values())

# f(x, y) -> (o1, o2, d11, d12, d21, d22): the object functions and the Jacobian
Master = Callable[[float, float], tuple[float, float, float, float, float, float]]


def solve(master: Master, start: tuple[float, float], constraint: Callable[[float, float], bool] | None = None) -> tuple[float, float]:
    """A root of ``master`` near ``start`` (then near ARX's start values), or (nan, nan)."""
    iterations_total = (len(START_VALUES) + 1) * ITERATIONS_PER_TRY
    total = 0
    offset = 0
    first = True
    f = np.float64
    with np.errstate(all="ignore"):
        while total <= iterations_total:
            iterations = 0
            if first:
                x, y = f(start[0]), f(start[1])
                first = False
            else:
                x, y = f(START_VALUES[offset][0]), f(START_VALUES[offset][1])
                offset += 1
            while True:
                total += 1
                o1, o2, x1, x2, y1, y2 = master(float(x), float(y))
                o1, o2 = f(o1), f(o2)
                if abs(o1) <= ACCURACY and abs(o2) <= ACCURACY:
                    return float(x), float(y)
                r = f(1.0) / (f(x1) * f(y2) - f(x2) * f(y1))
                i1, i2, j1, j2 = f(y2) * r, -f(x2) * r, -f(y1) * r, f(x1) * r
                x, y = x - (i1 * o1 + i2 * o2), y - (j1 * o1 + j2 * o2)
                if offset == len(START_VALUES):
                    return math.nan, math.nan
                if constraint is not None and not constraint(float(x), float(y)):
                    break
                if math.isnan(x) or math.isnan(y):
                    break
                if iterations >= ITERATIONS_PER_TRY:
                    break
                iterations += 1
    return math.nan, math.nan
