"""Scenarios for the attack harness, and the adapter for ppdp's hierarchy release.

Crafted cases (records that appear, disappear or change between versions can be
singled out by differencing versions) and seeded random insert / delete / update sequences over a
small adult sample with four QIDs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ppdp.connectors.base import Connector
from ppdp.engine.core.catalog import list_runs, release_id
from ppdp.engine.core.spec import ReleaseSpec, load_spec
from ppdp.engine.release.run import run_release
from tests.attack.harness import (
    Backend,
    ModelCheck,
    QidPart,
    RowMatches,
    Scenario,
    SourceChange,
    Step,
    conjunction,
)
from tests.conftest import ADULT, toml_str, write_spec

QIDS = ["age", "sex", "race", "marital-status"]
SENSITIVE = ["salary-class"]
SA_VALUES = ("<=50K", ">50K")
K5 = (ModelCheck("k-anonymity", 5),)
L2 = (ModelCheck("k-anonymity", 5), ModelCheck("distinct-l-diversity", 2))
T = (ModelCheck("t-closeness", 0.4),)  # 0.2 and 0.3: every later version is refused, nothing to attack


def adult_base(rows: int) -> pl.DataFrame:
    """The first ``rows`` rows of adult with an Int64 key ``id`` (1..rows) in front."""
    frame = pl.read_csv(ADULT / "adult.csv", separator=";", n_rows=rows)
    return frame.with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64))


def _model_toml(models: Sequence[ModelCheck]) -> str:
    out = []
    for m in models:
        name = {"k-anonymity": "k", "distinct-l-diversity": "l", "entropy-l-diversity": "l", "t-closeness": "t"}[m.name]
        value = m.param if m.name == "t-closeness" else int(m.param)
        out.append(f'[[privacy.models]]\nname = "{m.name}"\n{name} = {value}\n')
    return "".join(out)


@dataclass
class GeneralizationRelease:
    """ppdp's full-domain generalization release (run_release with the default dynamic policy).

    The public generalization is the stored hierarchy (``_ppdp.hierarchies``) at the levels in
    the run record: a row covers raw values when every raw value maps to the row's label."""

    spec_dir: Path
    models: list[ModelCheck]
    qids: list[str]
    sensitive: list[str]
    output_schema: str = "published"
    output_name: str = "attacked"
    rows_widen: bool = False  # a published class label never changes for a row that stands unchanged
    # backend URL -> the spec ``spec_for`` wrote and loaded for it: the same at every publication
    specs: dict[str, ReleaseSpec] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def published_qids(self) -> list[str]:
        """The published QID columns: one label per QID."""
        return list(self.qids)

    @property
    def release_id(self) -> str:
        """ppdp's identity of the release (schema and name): the key of its private state."""
        return release_id(self.output_schema, self.output_name)

    def spec_for(self, backend: Backend) -> ReleaseSpec:
        path = self.spec_dir / f"{self.output_name}_{backend.name}.toml"
        placeholder = Path("/placeholder.duckdb")
        write_spec(path, db=placeholder, qids=self.qids, sensitive=self.sensitive, models=_model_toml(self.models),
                   output=self.output_name, schema_line=f"schema = {toml_str(backend.source_schema)}")
        text = path.read_text().replace(f"database = {toml_str('duckdb://' + str(placeholder))}",
                                        f"database = {toml_str(backend.url)}")
        path.write_text(text)
        return load_spec(path)

    def publish(self, backend: Backend) -> int | None:
        spec = self.specs.get(backend.url)
        if spec is None:
            spec = self.specs[backend.url] = self.spec_for(backend)
        out = run_release(spec, progress=False)
        return out.run.version if out.run.status == "succeeded" else None

    def row_matches(self, con: Connector, versions: Sequence[int]) -> RowMatches:
        levels = {r.version: r.solution["levels"] for r in list_runs(con, self.release_id)
                  if r.status == "succeeded" and r.version in set(versions)}
        frame = con.query("SELECT version, attribute, level, leaf, value FROM _ppdp.hierarchies WHERE release = ?",
                          [self.release_id])
        maps: dict[tuple[int, str], dict[str, str]] = {}
        for version, attribute, level, leaf, value in frame.rows():
            if version in levels and attribute in levels[version] and int(level) == int(levels[version][attribute]):
                maps.setdefault((version, attribute), {})[leaf] = value
        qids = list(self.qids)

        def part(i: int, q: str) -> QidPart:
            def maps_to(version: int, labels: tuple[Any, ...], raw_v: Any) -> bool:
                return raw_v is not None and maps[(version, q)].get(raw_v) == labels[i]
            return maps_to

        return conjunction([part(i, q) for i, q in enumerate(qids)])


# --- crafted steps ---------------------------------------------------------------------------

NEW_KEY = 10_000_000


def _flip(sa: str) -> str:
    return SA_VALUES[1] if sa == SA_VALUES[0] else SA_VALUES[0]


def insert_copies(donor: int, n: int, first_key: int = NEW_KEY) -> Step:
    """Insert ``n`` copies of the donor row under new keys (same QIDs, same everything)."""
    def step(state: dict[int, dict[str, Any]], rng: random.Random) -> SourceChange:
        return SourceChange(inserts=tuple(state[donor] | {"id": first_key + i} for i in range(n)))
    return step


def insert_random_qids(n: int, first_key: int = NEW_KEY) -> Step:
    """Insert ``n`` persons whose QIDs are drawn independently from the current values."""
    def step(state: dict[int, dict[str, Any]], rng: random.Random) -> SourceChange:
        keys = sorted(state)
        rows = []
        for i in range(n):
            row = dict(state[rng.choice(keys)]) | {"id": first_key + i}
            for q in QIDS:
                row[q] = state[rng.choice(keys)][q]
            rows.append(row)
        return SourceChange(inserts=tuple(rows))
    return step


def delete(key: int) -> Step:
    return lambda state, rng: SourceChange(deletes=(key,))


def flip_sensitive(key: int) -> Step:
    return lambda state, rng: SourceChange(updates=((key, (("salary-class", _flip(state[key]["salary-class"])),)),))


def move_class(key: int) -> Step:
    """Change age by 30 years and marital status: a different generalized class at any level
    below the hierarchy tops."""
    def step(state: dict[int, dict[str, Any]], rng: random.Random) -> SourceChange:
        row = state[key]
        age = row["age"] + 30 if row["age"] <= 50 else row["age"] - 30
        marital = "Divorced" if row["marital-status"] != "Divorced" else "Never-married"
        return SourceChange(updates=((key, (("age", age), ("marital-status", marital))),))
    return step


def reinsert_flipped(key: int, original: dict[str, Any]) -> Step:
    """Insert ``key`` again (after its deletion) with the other sensitive value."""
    return lambda state, rng: SourceChange(inserts=(original | {"salary-class": _flip(original["salary-class"])},))


def crafted_scenarios(base: pl.DataFrame) -> dict[str, Scenario]:
    """The difference attack, case by case (k = 5). Keys 1..6 are the first rows of adult."""
    row5 = base.filter(pl.col("id") == 5).row(0, named=True)
    return {
        "a-insert-one-copy": Scenario("a-insert-one-copy", (insert_copies(1, 1),)),
        "b-insert-120-random": Scenario("b-insert-120-random", (insert_random_qids(120),), seed=11),
        "c-delete-one": Scenario("c-delete-one", (delete(2),)),
        "d-update-sa-only": Scenario("d-update-sa-only", (flip_sensitive(3),)),
        "e-update-qid-class": Scenario("e-update-qid-class", (move_class(4),)),
        "f-delete-reinsert-new-sa": Scenario("f-delete-reinsert-new-sa", (delete(5), reinsert_flipped(5, row5))),
        "g-insert-k-minus-1": Scenario("g-insert-k-minus-1", (insert_copies(6, 4),)),
    }


# --- random sequences ------------------------------------------------------------------------


def random_step(step_index: int, max_each: int = 30) -> Step:
    """A random mix of inserts (new keys, QIDs drawn from existing rows), deletes, QID updates
    and SA updates, 0..max_each of each."""
    def step(state: dict[int, dict[str, Any]], rng: random.Random) -> SourceChange:
        keys = sorted(state)
        n_ins, n_del, n_qid, n_sa = (rng.randint(0, max_each) for _ in range(4))
        deletes = rng.sample(keys, n_del)
        gone = set(deletes)
        remaining = [k for k in keys if k not in gone]
        touched = rng.sample(remaining, n_qid + n_sa)
        updates = []
        for k in touched[:n_qid]:
            q = rng.choice(QIDS)
            updates.append((k, ((q, state[rng.choice(keys)][q]),)))
        for k in touched[n_qid:]:
            updates.append((k, (("salary-class", _flip(state[k]["salary-class"])),)))
        inserts = []
        for i in range(n_ins):
            row = dict(state[rng.choice(keys)]) | {"id": NEW_KEY + 1000 * step_index + i}
            row["salary-class"] = state[rng.choice(keys)]["salary-class"]
            inserts.append(row)
        return SourceChange(deletes=tuple(deletes), updates=tuple(updates), inserts=tuple(inserts))
    return step


def random_sequence(seed: int) -> tuple[Scenario, tuple[ModelCheck, ...]]:
    """Seeded: 3 or 4 versions; models k=5 mostly, k+distinct-l=2 or t-closeness for some seeds."""
    rng = random.Random(seed)
    n_steps = rng.choice((2, 3))
    models = L2 if seed % 5 == 3 else T if seed % 5 == 4 else K5
    return Scenario(f"random-seed{seed}", tuple(random_step(i + 1) for i in range(n_steps)), seed=seed), models


@dataclass
class MicroaggregationRelease(GeneralizationRelease):
    """ppdp's microaggregation release (DRASL groups and forged rows): a row covers raw values
    when each continuous QID lies in the row's ``[lo, hi]`` and each other QID's value has the
    row's label at some level of the stored hierarchy. Holding back is allowed to take every row
    (``max_repair_fraction = 1``): what is attacked is what gets published."""

    output_name: str = "attacked_micro"

    def spec_for(self, backend: Backend) -> ReleaseSpec:
        catalogue = self.spec_dir / "salary_catalogue.csv"
        catalogue.write_text("".join(f"{v};income-{i};*\n" for i, v in enumerate(SA_VALUES)))
        spec = super().spec_for(backend)
        path = self.spec_dir / f"{self.output_name}_{backend.name}.toml"
        k = next(int(m.param) for m in self.models if m.name == "k-anonymity")
        path.write_text(path.read_text() + f'[method]\nname = "microaggregation"\nparams = {{ catalogue = {toml_str(str(catalogue))}, '
                        f'k = {k} }}\n[dynamic]\nmax_repair_fraction = 1.0\n')
        assert spec.output_name == self.output_name
        return load_spec(path)

    def row_matches(self, con: Connector, versions: Sequence[int]) -> RowMatches:
        frame = con.query("SELECT version, attribute, leaf, value FROM _ppdp.hierarchies WHERE release = ?", [self.release_id])
        labels: dict[tuple[int, str, str], set[str]] = {}
        for version, attribute, leaf, value in frame.rows():
            labels.setdefault((int(version), attribute, leaf), set()).add(value)
        qids = list(self.qids)

        def covers(version: int, q: str, label: str, raw: Any) -> bool:
            if raw is None:
                return False
            if label.startswith("["):
                lo, hi = (float(x) for x in label[1:-1].split(", "))
                return lo <= float(raw) <= hi
            # the labels of the semantic QIDs' hierarchy are the same in every version
            return any(label in labels.get((v, q, str(raw)), ()) for v in versions)

        def part(i: int, q: str) -> QidPart:
            def covered(version: int, labels_: tuple[Any, ...], r: Any) -> bool:
                return covers(version, q, labels_[i], r)
            return covered

        return conjunction([part(i, q) for i, q in enumerate(qids)])


@dataclass
class HeterogeneousRelease(GeneralizationRelease):
    """ppdp's heterogeneous k-anonymity release (a k-regular graph, iterated local search): a row
    covers raw values when the numeric QID (age) lies in ``[age_min, age_max]`` and every other
    QID's value is in the row's ``|``-joined set. Its generalizations never narrow and may widen
    at every version (``rows_widen``: see the harness's threat model). Holding back may take a
    fifth of the rows (withheld inserts, ghosts of departed records, delayed changes)."""

    output_name: str = "attacked_het"
    rows_widen: bool = True
    numeric: tuple[str, ...] = ("age",)

    @property
    def published_qids(self) -> list[str]:
        out: list[str] = []
        for q in self.qids:
            out += [f"{q}_min", f"{q}_max"] if q in self.numeric else [q]
        return out

    def spec_for(self, backend: Backend) -> ReleaseSpec:
        spec = super().spec_for(backend)
        path = self.spec_dir / f"{self.output_name}_{backend.name}.toml"
        path.write_text(path.read_text() + '[method]\nname = "heterogeneous"\nparams = { initial = "k-member", seconds = 1 }\n'
                        '[dynamic]\nmax_repair_fraction = 0.2\n')
        assert spec.output_name == self.output_name
        return load_spec(path)

    def row_matches(self, con: Connector, versions: Sequence[int]) -> RowMatches:
        qids, numeric = list(self.qids), set(self.numeric)

        def part(q: str, at: int) -> QidPart:
            # the labels hold [lo, hi] for a numeric QID, a '|'-joined set for the others
            def covered(version: int, labels: tuple[Any, ...], r: Any) -> bool:
                if r is None:
                    return False
                if q in numeric:
                    return float(labels[at]) <= float(r) <= float(labels[at + 1])
                return str(r) in str(labels[at]).split("|")
            return covered

        parts, at = [], 0
        for q in qids:
            parts.append(part(q, at))
            at += 2 if q in numeric else 1
        return conjunction(parts)


def item21_scenarios() -> dict[str, Scenario]:
    """A heterogeneous release: a lone departure, then a step with nothing
    for it (the ghost is carried on); a lone change of a sensitive value, then another lone
    change of someone else."""
    return {
        "h21-lone-departure": Scenario("h21-lone-departure", (delete(2), insert_copies(1, 5))),
        "h21-lone-sa-change": Scenario("h21-lone-sa-change", (flip_sensitive(3), flip_sensitive(8))),
    }
