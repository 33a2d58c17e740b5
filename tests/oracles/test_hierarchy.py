import pytest

from ppdp.engine.core import hierarchy as H
from ppdp.errors import HierarchyError
from tests.conftest import ADULT


def test_arx_file_levels_and_leaf_counts():
    h = H.read_arx_csv(ADULT / "adult_hierarchy_age.csv", "age")
    assert h.height == 4
    assert len(h.rows) == 100  # leaves 1..100
    # |v_g| counts hierarchy leaves as the file gives them, not data rows: ARX's '0-4' holds
    # the leaves 1..5, and '*' all 100 leaves
    assert h.leaf_counts[1][h.level_codes[1][h.leaf_code["3"]]] == 5
    assert set(h.leaf_counts[4][h.level_codes[4]]) == {100}
    assert h.leaf_weights[0][h.leaf_code["39"]] == 1.0


def test_intervals_nest_and_cover():
    h = H.intervals("x", [str(v) for v in range(17, 91)], widths=[5, 10, 20])
    assert h.height == 4
    row = dict((r[0], r) for r in h.rows)["39"]
    assert row == ("39", "[35, 40)", "[30, 40)", "[20, 40)", "*")
    with pytest.raises(HierarchyError, match="do not nest"):
        H.intervals("x", ["1", "2"], widths=[5, 7])
    auto = H.intervals("x", [str(v) for v in range(0, 100)])
    assert auto.height == 4 and H.validate(auto) is auto


def test_masking_dates_flat():
    m = H.masking("zip", ["47677", "47602", "47905"])
    assert dict((r[0], r) for r in m.rows)["47677"] == ("47677", "4767*", "476**", "47***", "4****", "*")
    d = H.dates("d", ["2015-03-04", "2015-12-31"])
    assert d.rows[0] == ("2015-03-04", "2015-03", "2015", "*")
    f = H.flat("sex", ["M", "F"])
    assert f.height == 1 and {r[1] for r in f.rows} == {"*"}
    with pytest.raises(HierarchyError, match="not a date"):
        H.dates("d", ["yesterday"])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["a", "x", "*"], ["b", "*"]], "has 2 levels"),
        ([["a", "x", "*"], ["a", "y", "*"]], "appears twice"),
        ([["a", "x", "p", "*"], ["b", "x", "q", "*"]], "do not nest"),
        ([["a", "x"], ["b", "y"]], "top level"),
        ([["a", "", "*"]], "empty level"),
        ([["a"]], "only one level"),
    ],
)
def test_validation_errors(rows, message):
    with pytest.raises(HierarchyError, match=message):
        H.from_rows("attr", rows)


def test_arx_round_trip(tmp_path):
    h = H.read_arx_csv(ADULT / "adult_hierarchy_education.csv", "education")
    p = tmp_path / "h.csv"
    p.write_text(H.to_arx_csv(h))
    assert H.read_arx_csv(p, "education").rows == h.rows


def test_missing_file_message(tmp_path):
    with pytest.raises(HierarchyError, match="does not exist"):
        H.read_arx_csv(tmp_path / "nope.csv", "age")
