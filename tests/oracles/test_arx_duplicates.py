"""ARX hierarchy files that repeat a leaf.

ARX's benchmark files do this: fars ``iage`` repeats a row identically, four cup hierarchies give
33 leaves two differing rows, which ARX resolves silently by keeping the last one (its
GeneralizationHierarchy overwrites a leaf's row as it reads them). ppdp merges identical repeats,
refuses differing ones with the lines, and keeps the last (or first) one when the spec says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from ppdp.engine.core import hierarchy as H
from ppdp.engine.core.spec import load_spec, spec_from_dict
from ppdp.engine.release.run import run_release
from ppdp.errors import HierarchyError, SpecError
from tests.conftest import load_adult, write_spec
from tests.support import paths as PATHS

# CI keeps the shared data beside the clone (../shared/data); a checkout elsewhere (a git
# worktree) can point PPDP_ARX_DATA at the arx folder.
SHARED_ARX = Path(os.environ.get("PPDP_ARX_DATA") or PATHS.SHARED / "data" / "arx") / "genetic-benchmark"
if not SHARED_ARX.is_dir():  # a fresh clone outside /work (CI): the machine's shared data, as for SPARCS
    SHARED_ARX = Path("/work/shared/data/arx/genetic-benchmark")


def write(tmp_path: Path, text: str, name: str = "h.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# --- reading files ----------------------------------------------------------------------------


def test_identical_repeats_are_merged_and_counted(tmp_path):
    p = write(tmp_path, "a;x;*\nb;x;*\na;x;*\nc;y;*\na;x;*\n")
    h = H.read_arx_csv(p, "q")
    assert h.leaves == ["a", "b", "c"]
    assert h.repeated_rows == 2 and h.conflicting_leaves == 0
    # The same content as the file without the repeats: |v_g| counts 'a' once, and the digest
    # (hence the run key) does not change.
    clean = H.read_arx_csv(write(tmp_path, "a;x;*\nb;x;*\nc;y;*\n", "clean.csv"), "q")
    assert h.digest() == clean.digest()
    assert list(h.leaf_counts[1]) == [2, 1]


def test_a_trailing_separator_does_not_make_a_repeat_differ(tmp_path):
    h = H.read_arx_csv(write(tmp_path, "a;x;*\nb;x;*\na;x;*;\n"), "q")
    assert h.repeated_rows == 1 and h.conflicting_leaves == 0


def test_conflicting_repeats_are_refused_with_lines_and_the_option(tmp_path):
    # Lines: 1 a, 2 b, 3 (blank), 4 a (differs), 5 c, 6 b (differs), 7 a (same as line 4).
    p = write(tmp_path, "a;x;*\nb;x;*\n\na;y;*\nc;y;*\nb;y;*\na;y;*\n")
    with pytest.raises(HierarchyError) as err:
        H.read_arx_csv(p, "zip")
    msg = str(err.value)
    assert "\n" not in msg
    assert str(p) in msg and "'zip'" in msg
    assert "gives 2 leaves several rows that differ" in msg
    assert "leaf 'a' on lines 1, 4, 7" in msg and "leaf 'b' on lines 2, 6" in msg
    assert 'duplicates = "keep-last"' in msg


def test_only_three_conflicts_are_listed(tmp_path):
    text = "".join(f"{v};x;*\n" for v in "abcde") + "".join(f"{v};y;*\n" for v in "abcde")
    with pytest.raises(HierarchyError, match=r"gives 5 leaves .*leaf 'c' on lines 3, 8 and 2 more\)"):
        H.read_arx_csv(write(tmp_path, text), "q")


def test_keep_last_and_keep_first_choose_the_row(tmp_path):
    p = write(tmp_path, "a;x;*\nb;x;*\na;y;*\nc;y;*\n")
    last = H.read_arx_csv(p, "q", duplicates="keep-last")
    first = H.read_arx_csv(p, "q", duplicates="keep-first")
    assert dict((r[0], r) for r in last.rows)["a"] == ("a", "y", "*")
    assert dict((r[0], r) for r in first.rows)["a"] == ("a", "x", "*")
    assert (last.repeated_rows, last.conflicting_leaves) == (1, 1)
    assert (first.repeated_rows, first.conflicting_leaves) == (1, 1)
    assert last.leaves == ["a", "b", "c"]  # the kept row stands where the leaf first appeared
    assert last.digest() != first.digest()  # choosing the other row changes the run key


def test_keep_last_is_the_last_row_even_after_a_return(tmp_path):
    # a: x, then y, then x again: ARX overwrites row by row, so x wins.
    p = write(tmp_path, "a;x;*\na;y;*\nb;y;*\na;x;*\n")
    h = H.read_arx_csv(p, "q", duplicates="keep-last")
    assert dict((r[0], r) for r in h.rows)["a"] == ("a", "x", "*")
    assert (h.repeated_rows, h.conflicting_leaves) == (2, 1)


def test_a_tree_still_broken_after_keeping_the_last_row_is_named(tmp_path):
    # Keeping a's last row puts 'x' under both 'p' and 'q'.
    p = write(tmp_path, "a;y;p;*\na;x;q;*\nb;x;p;*\n")
    with pytest.raises(HierarchyError, match=r"After keeping the last row of each of 1 repeated leaves, .*do not nest"):
        H.read_arx_csv(p, "q", duplicates="keep-last")
    assert H.read_arx_csv(p, "q", duplicates="keep-first").leaves == ["a", "b"]


def test_unknown_policy_in_the_reader(tmp_path):
    with pytest.raises(HierarchyError, match="keep-last"):
        H.read_arx_csv(write(tmp_path, "a;*\n"), "q", duplicates="last")


def test_inline_rows_still_refuse_a_repeated_leaf():
    # Only ARX files are resolved; rows given in code keep the strict check.
    with pytest.raises(HierarchyError, match="appears twice"):
        H.from_rows("q", [["a", "*"], ["a", "*"]])


# --- the spec option --------------------------------------------------------------------------


def spec_with(hierarchy) -> dict:
    return {
        "source": {"database": "duckdb://:memory:", "table": "t", "key": "id"},
        "quasi_identifiers": [{"column": "q", "hierarchy": hierarchy}],
        "privacy": {"models": [{"name": "k-anonymity", "k": 2}]},
        "output": {"schema": "published", "name": "t"},
    }


def test_spec_duplicates_option():
    spec = spec_from_dict(spec_with({"type": "arx", "file": "h.csv", "duplicates": "keep-last"}))
    assert spec.quasi_identifiers[0].hierarchy.duplicates == "keep-last"
    assert spec_from_dict(spec_with("h.csv")).quasi_identifiers[0].hierarchy.duplicates == "error"
    assert spec_from_dict(spec_with({"type": "arx", "file": "h.csv", "duplicates": "keep-first"})
                          ).quasi_identifiers[0].hierarchy.duplicates == "keep-first"


@pytest.mark.parametrize(
    ("hierarchy", "message"),
    [
        ({"type": "arx", "file": "h.csv", "duplicates": "keep_last"}, r"not a choice\. Did you mean 'keep-last'\? Known: error, keep-last, keep-first"),
        ({"type": "arx", "file": "h.csv", "duplicates": "newest"}, r"Known: error, keep-last, keep-first"),
        ({"type": "arx", "file": "h.csv", "duplicates": True}, r"duplicates must be"),
        ({"type": "flat", "duplicates": "keep-last"}, r"applies to ARX files only"),
    ],
)
def test_spec_duplicates_option_is_validated(hierarchy, message):
    with pytest.raises(SpecError, match=message):
        spec_from_dict(spec_with(hierarchy))


# --- through the release (load_hierarchy passes the option to the reader) ----------------------


def test_release_refuses_then_keeps_the_last_row(tmp_path):
    db = load_adult(tmp_path / "small.duckdb", rows=500)
    race = write(tmp_path, "White;Group-A;*\nBlack;Group-B;*\nAsian-Pac-Islander;Group-B;*\n"
                           "Amer-Indian-Eskimo;Group-B;*\nOther;Group-B;*\nWhite;Group-B;*\n", "race.csv")
    refused = write_spec(tmp_path / "refused.toml", db=db, qids=["age", "sex", "race"], output="dup",
                         hierarchies={"race": str(race)})
    with pytest.raises(HierarchyError, match=r"leaf 'White' on lines 1, 6"):
        run_release(load_spec(refused), progress=False)
    with duckdb.connect(str(db)) as con:  # nothing written before the error
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema <> 'main'").fetchone()[0] == 0

    hv = '{ type = "arx", file = "' + str(race) + '", duplicates = "keep-last" }'
    spec = write_spec(tmp_path / "last.toml", db=db, qids=["age", "sex", "race"], output="dup", hierarchies={"race": hv})
    out = run_release(load_spec(spec), progress=False)
    assert out.run.verification["passed"]
    with duckdb.connect(str(db)) as con:
        level1 = con.execute("SELECT leaf, value, leaf_count FROM _ppdp.hierarchies "
                             "WHERE attribute = 'race' AND level = 1 ORDER BY leaf").fetchall()
    # White's last row puts it in Group-B with the four others: Group-A is gone.
    assert {v for _, v, _ in level1} == {"Group-B"}
    assert len(level1) == 5 and {c for _, _, c in level1} == {5}


# --- ARX's own benchmark files, unchanged -------------------------------------------------------

# What ARX needs to load these files as it does: keep-last for the four cup files with conflicts.
ARX_KEEPS_LAST = {"cup_int_hierarchy_AGE.csv", "cup_int_hierarchy_MINRAMNT.csv",
                  "cup_int_hierarchy_NGIFTALL.csv", "cup_int_hierarchy_RAMNTALL.csv"}


@pytest.mark.skipif(not SHARED_ARX.is_dir(), reason=f"ARX benchmark hierarchies not found at {SHARED_ARX}")
def test_arx_benchmark_hierarchies_load_unchanged():
    files = sorted(f for ds in ("fars", "cup", "mach2019", "creditcard")
                   for f in SHARED_ARX.glob(f"{ds}_int_hierarchy_*.csv"))
    assert len(files) == 8 + 7 + 16 + 24
    report = {}
    for f in files:
        attribute = f.stem.split("_hierarchy_", 1)[1]
        if f.name in ARX_KEEPS_LAST:
            with pytest.raises(HierarchyError, match="keep-last"):
                H.read_arx_csv(f, attribute)
            h = H.read_arx_csv(f, attribute, duplicates="keep-last")
        else:
            h = H.read_arx_csv(f, attribute)
        # One row per distinct leaf of the file: an independent count from its first column.
        leaves = {line.split(";", 1)[0] for line in f.read_text(encoding="utf-8-sig").splitlines() if line.strip()}
        assert len(h.rows) == len(leaves)
        if h.repeated_rows:
            report[f.name] = (h.repeated_rows, h.conflicting_leaves)
    print("\nrepeated rows, conflicting leaves:", report)
    assert sum(c for _, c in report.values()) == 33  # 33 conflicting rows in four cup files
    assert {n for n, (_, c) in report.items() if c} == ARX_KEEPS_LAST
    assert report["fars_int_hierarchy_iage.csv"] == (1, 0)
