"""Every figure the documentation quotes from a ``ppdp`` command is what the command prints
(probe 37, item 24). Each quote is found in its file by a pattern, and its figures are compared,
as printed, with the command's output; any other long decimal in README.md and docs/ (outside
the design notes) must be one of them, so a figure cannot be added without a check here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ADULT_QIDS, load_adult, write_spec
from tests.support.cli import assert_ok, ppdp
from tests.support.paths import REPO

NINE = [*ADULT_QIDS, "salary-class"]
# The checkout whose README.md and docs/ are read (``PPDP_DOCS_ROOT``: another one, e.g. 1175431's)
DOCS = Path(os.environ.get("PPDP_DOCS_ROOT", str(REPO)))


@pytest.fixture(scope="module")
def adult(tmp_path_factory) -> Path:
    return load_adult(tmp_path_factory.mktemp("figures") / "adult.duckdb")


def _risk(db: Path) -> dict:
    return json.loads(assert_ok(ppdp("risk", "--table", "main.adult", "--qids", ",".join(NINE), "--sampling-fraction", "0.1",
                                     "--json", "--db", f"duckdb://{db}")))


def risk_figures(db: Path, tmp: Path) -> tuple[str, ...]:
    r = _risk(db)
    u = r["population_uniques"]
    return repr(r["prosecutor"]["average"]), repr(r["sample_uniques"]), repr(u["dankar"]), u["dankar_model"].capitalize()


def lattice_figures(db: Path, tmp: Path) -> tuple[str, ...]:
    spec = write_spec(tmp / "k5.toml", db=db, budget=100_000)  # adult's 8 QIDs with the ARX hierarchies, k = 5
    out = assert_ok(ppdp("run", str(spec), "--no-progress"))
    evaluations = re.search(r"lattice \(budget [\d,]+, seed \d+\), ([\d,]+) evaluations in .* certified optimal", out)
    assert evaluations, out
    heights = [int(h) for h in re.findall(r"=\d+/(\d+)", re.search(r"levels \(G\)\s*: (.*)", out).group(1))]
    nodes = 1
    for h in heights:
        nodes *= h + 1
    return f"{int(evaluations.group(1).replace(',', '')):,}", f"{nodes:,}"


# (file, pattern whose groups are the quoted figures, the command's figures in the same order)
QUOTES: list[tuple[str, str, Callable[[Path, Path], tuple[str, ...]]]] = [
    ("docs/getting-started.md", r"it prints average (\S+), sample uniqueness\s+(\S+) and Dankar (\S+) by (\w+):",
     risk_figures),
    ("README.md", r"it proves the optimum after ([\d,]+) of ([\d,]+) nodes", lattice_figures),
]
# Figures quoted from other programs (not ppdp's output), with the ppdp figure they are compared to.
REFERENCES = {"0.27684993883653597": "ARX 3.9.2's test value of Dankar at f = 0.1 (RiskEstimateTest)"}


@pytest.mark.parametrize("file, pattern, figures", QUOTES, ids=[f"{f}:{i}" for i, (f, _, _) in enumerate(QUOTES)])
def test_a_quoted_figure_is_what_the_command_prints(adult, tmp_path, file, pattern, figures):
    text = " ".join((DOCS / file).read_text().split())
    found = re.search(pattern, text)
    assert found, f"{file} no longer quotes {pattern!r}"
    assert found.groups() == figures(adult, tmp_path)


def test_the_arx_value_quoted_beside_dankar_is_within_1e_11(adult):
    assert abs(_risk(adult)["population_uniques"]["dankar"] - float("0.27684993883653597")) < 1e-11


def test_every_long_decimal_in_the_docs_is_checked_here():
    files = [DOCS / "README.md", *(p for p in (DOCS / "docs").rglob("*.md") if "design" not in p.parts)]
    checked = set(REFERENCES)
    for file, pattern, _ in QUOTES:
        found = re.search(pattern, " ".join((DOCS / file).read_text().split()))
        checked |= set(found.groups()) if found else set()
    unchecked = {(str(p.relative_to(DOCS)), m) for p in files for m in re.findall(r"\d+\.\d{6,}", p.read_text())
                 if m not in checked}
    assert not unchecked, f"figures quoted without a check in this file: {sorted(unchecked)}"
