"""spec_diff: the one rule for "did this part of the spec change" between versions.

validate (keep the previous version's Q while [privacy] and [sensitive] are unchanged), history
(check only the classes a step reveals anew while [privacy] is unchanged) and the generalization
method (say that the levels were kept although [optimizer], [privacy] or [utility] changed) all
ask it. Each compared the run record's stored spec with the new one its own way; the stored
spec has its credentials masked and went through JSON, so a rule by ``==`` saw a change where
there was none.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid

from ppdp.connectors import connect
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import SpecDiff, spec_diff

BASE = {
    "source": {"database": "postgresql://ann:secret@db.example/x", "table": "t", "key": "id"},
    "privacy": {"models": [{"name": "k-anonymity", "k": 5}, {"name": "delta-presence", "research": "token='a'"}]},
    "optimizer": {"name": "lattice", "budget": 100, "params": {"mode": "exhaustive"}},
    "output": {"name": "x"},
}


def changed(**sections):
    return dict(BASE) | sections


def test_the_same_spec_differs_nowhere():
    diff = spec_diff(BASE, dict(BASE))
    assert diff == SpecDiff() and not diff.changed("privacy", "source") and diff.among(("privacy",)) == ()


def test_a_nested_value_is_named_by_its_path():
    diff = spec_diff(BASE, changed(optimizer={"name": "lattice", "budget": 200, "params": {"mode": "heuristic"}}))
    assert diff.keys == ("optimizer.budget", "optimizer.params.mode") and diff.sections == ("optimizer",)
    assert diff.changed("privacy", "optimizer") and not diff.changed("privacy")


def test_a_list_is_one_value_and_a_key_on_one_side_is_a_change():
    models = [{"name": "k-anonymity", "k": 6}, BASE["privacy"]["models"][1]]
    diff = spec_diff(BASE, changed(privacy={"models": models}, utility={"objective": "td"}))
    assert diff.keys == ("privacy.models", "utility") and diff.sections == ("privacy", "utility")
    assert diff.among(("optimizer", "utility", "privacy")) == ("utility", "privacy")
    assert spec_diff(changed(utility={"objective": "td"}), BASE).keys == ("utility",)
    assert spec_diff(None, {"output": {"name": "x"}}).sections == ("output",)


def test_values_compare_as_stored_nan_tuples_and_datetimes_included():
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    old = {"privacy": {"x": [1, 2], "when": str(when), "v": math.nan}}
    new = {"privacy": {"x": (1, 2), "when": when, "v": math.nan}}
    assert spec_diff(old, new) == SpecDiff()


def test_a_spec_read_back_from_the_run_record_is_unchanged(tmp_path):
    """Masked credentials (the database URL's password, a ``token=`` in a research predicate) and
    the JSON round trip: the stored spec is the one given, section by section."""
    con = connect(f"duckdb://{tmp_path / 'c.duckdb'}")
    try:
        catalog.ensure_schema(con)
        now = dt.datetime(2026, 1, 1)
        catalog.insert_run(con, RunRecord(uuid.uuid4().hex, "r", 1, "succeeded", now, now, 10, BASE, {}, {}, {}, None, None,
                                          "key", "fp", {}, {}))
        stored = catalog.latest_success(con, "r")
    finally:
        con.close()
    assert stored is not None and stored.spec != BASE  # the password and the token are masked
    assert stored.spec["privacy"] != BASE["privacy"]  # what a comparison by == saw as a change
    assert spec_diff(stored.spec, BASE) == SpecDiff()
