"""A privacy model or method that declares nothing fails closed.

A toy model without an exact suppression oracle is released feasible but not certified, and the
run record says why; the same model, not declared union-closed, makes a second version refuse
before any write; a model without an SQL check, or a toy method that publishes no classes and
covers no model, is refused before any write (tests/support/toy_models.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import duckdb
import pytest

from ppdp.engine.core.spec import load_spec
from ppdp.engine.methods import METHODS
from ppdp.engine.privacy import PrivacyModel
from ppdp.engine.release.run import run_release
from ppdp.errors import CrossVersionRefusal, SpecError
from tests.conftest import load_adult, snapshot, write_spec
from tests.support.toy_models import ToyMinClass, registered, toy_models

QIDS = ["age", "sex", "race", "education"]
TOY = f'[[privacy.models]]\nname = "{ToyMinClass.name}"\nk = 4\n'
K4 = '[[privacy.models]]\nname = "k-anonymity"\nk = 4\n'


@pytest.fixture
def toys() -> Iterator[None]:
    yield from toy_models()


@pytest.fixture
def small_db(tmp_path: Path) -> Path:
    return load_adult(tmp_path / "small.duckdb", rows=1500)


def _spec(tmp_path: Path, db: Path, models: str, *, method: str | None = None):
    path = write_spec(tmp_path / "spec.toml", db=db, qids=QIDS, models=models, optimizer="lattice", budget=5000)
    if method:
        path.write_text(path.read_text() + f'[method]\nname = "{method}"\n')
    return load_spec(path)


def test_a_model_without_an_oracle_is_feasible_but_never_certified(tmp_path: Path, small_db: Path, toys) -> None:
    # The same search under k-anonymity (an exact oracle) certifies: the lattice would have.
    k_out = run_release(_spec(tmp_path, small_db, K4), progress=False)
    assert k_out.run.solution["certified"] is True and "not_certified_because" not in k_out.run.solution
    db2 = load_adult(tmp_path / "toy.duckdb", rows=1500)
    out = run_release(_spec(tmp_path, db2, TOY), progress=False)
    sol = out.run.solution
    assert sol["feasible"] is True and sol["certified"] is False
    assert any(ToyMinClass.name in why and "no exact suppression oracle" in why for why in sol["not_certified_because"])
    assert all(c["passed"] for c in out.run.verification["checks"])
    # The reason is in the stored run record, not only in the returned object.
    con = duckdb.connect(str(db2), read_only=True)
    stored = con.execute("SELECT solution FROM _ppdp.runs WHERE status = 'succeeded'").fetchone()[0]
    con.close()
    assert "no exact suppression oracle" in stored


def test_a_model_not_declared_union_closed_refuses_a_second_version_before_any_write(tmp_path: Path, small_db: Path,
                                                                                    toys) -> None:
    spec = _spec(tmp_path, small_db, TOY)
    assert run_release(spec, progress=False).run.version == 1
    con = duckdb.connect(str(small_db))
    con.execute("DELETE FROM main.adult WHERE id % 50 = 0")
    con.close()
    before = snapshot(small_db)
    with pytest.raises(CrossVersionRefusal, match=rf"{ToyMinClass.name} is not declared to hold for a union of classes.*nothing was written"):
        run_release(spec, progress=False)
    assert snapshot(small_db) == before


def test_a_model_without_an_sql_check_is_refused_before_any_write(tmp_path: Path, small_db: Path, toys) -> None:
    before = snapshot(small_db)
    with pytest.raises(SpecError, match="toy-unchecked has no SQL verification of a published version"):
        run_release(_spec(tmp_path, small_db, '[[privacy.models]]\nname = "toy-unchecked"\nk = 4\n'), progress=False)
    assert snapshot(small_db) == before


@dataclass(frozen=True)
class ClasslessToyMethod:
    """A method that publishes no equivalence classes and whose own checks cover no model."""

    name: ClassVar[str] = "toy-classless"
    publishes_classes: ClassVar[bool] = False
    generalizes_by_levels: ClassVar[bool] = False

    def check_params(self, spec) -> None:
        pass

    def check_database(self, spec, con) -> None:
        pass

    def covers(self, model: PrivacyModel) -> bool:
        return False

    def plan(self, ctx, prep, *, progress: bool):
        raise AssertionError("the guards must refuse before the method plans")


def test_a_method_that_publishes_no_classes_and_covers_no_model_is_refused_before_any_write(tmp_path: Path,
                                                                                          small_db: Path) -> None:
    with registered(METHODS, ClasslessToyMethod.name, ClasslessToyMethod()):
        spec = _spec(tmp_path, small_db, K4, method=ClasslessToyMethod.name)
        before = snapshot(small_db)
        with pytest.raises(SpecError, match="'toy-classless' publishes no equivalence classes.*do not cover k-anonymity"):
            run_release(spec, progress=False)
    assert snapshot(small_db) == before
