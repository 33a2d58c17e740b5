"""The release spec: what to anonymize, how, and where to publish it.

Loaded from TOML (``load_spec``) or from a plain dict (``spec_from_dict``; the JSON form used
by jobs stored in the database). Every field is documented in docs/reference/spec.md; unknown keys are
errors with a "did you mean" hint, so a typo never silently changes a release.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ppdp.engine.core.hierarchy import ARX_DUPLICATE_POLICIES
from ppdp.errors import SpecError, UnknownNameError, did_you_mean, known_names
from ppdp.redact import redact_value
from ppdp.registry import check_name, registry
from ppdp.sql.history import ROW_ID
from ppdp.sql.queries import PRIVATE_SCHEMA
from ppdp.sql.relations import DELTA_SUFFIX, VERSION_SEPARATOR

NULL_POLICIES = ("error", "suppress")
DYNAMIC_POLICIES = ("stable-levels", "reoptimize", "strict")
HIERARCHY_TYPES = ("arx", "intervals", "masking", "dates", "flat", "auto")
# { type = "auto", ... }: builder and parameters that replace the chosen ones (engine/core/builders/auto.py)
AUTO_OVERRIDES = ("builder", "method", "cuts", "ladder", "keep", "merged", "rebuild")


@dataclass(frozen=True)
class HierarchySpec:
    """How to get one QID's hierarchy: an ARX CSV file or a generator with options."""

    type: str
    file: str | None = None  # arx: path, relative to the spec file
    widths: tuple[float, ...] | None = None  # intervals
    levels: int | None = None  # intervals (auto widths), masking
    duplicates: str = "error"  # arx: a leaf on several differing rows -> "error", "keep-last" (ARX), "keep-first"
    auto: tuple[tuple[str, Any], ...] = ()  # auto: the overrides given (AUTO_OVERRIDES)


@dataclass(frozen=True)
class QuasiIdentifier:
    column: str
    hierarchy: HierarchySpec


@dataclass(frozen=True)
class ModelSpec:
    name: str
    params: tuple[tuple[str, Any], ...]

    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class ReleaseSpec:
    """A whole release job. See docs/reference/spec.md."""

    database: str | None  # None: given by --db or the job's database (release.database_url)
    key: str
    quasi_identifiers: tuple[QuasiIdentifier, ...]
    models: tuple[ModelSpec, ...]
    output_name: str
    table: str | None = None
    schema: str | None = None
    query: str | None = None
    identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    sensitive_hierarchy: str | None = None  # ARX hierarchy file of the sensitive column (hierarchical t-closeness)
    drop: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()  # released as they are; every source column must have a role
    # When QIDs plus kept columns single out records the QIDs alone do not: "refuse"
    # (default: the models' guarantee holds only for an attacker who knows the QIDs alone) or "warn".
    kept_columns: str = "refuse"
    null_policy: str = "error"
    objective: str = "td"
    report: tuple[str, ...] = ("td", "query_precision", "suppressed", "workload_error")
    workload_queries: int = 200
    workload_seed: int = 0
    optimizer: str = "lattice"
    budget: int = 100_000
    seed: int = 0
    optimizer_params: tuple[tuple[str, Any], ...] = ()
    evaluator: str = "numba"
    dynamic_policy: str = "stable-levels"
    max_repair_fraction: float = 0.05
    reader_roles: tuple[str, ...] = ()
    output_schema: str = "published"
    method: str = "generalization"
    method_params: tuple[tuple[str, Any], ...] = ()  # the release method's own options ([method] params)
    base_dir: str = "."
    # The privacy unit (docs/design/person_unit.md): a column naming the person each row is
    # about; None: the key (one row per person). Never published.
    person: str | None = None
    # quasi-identifiers that may differ between a person's rows (visit month, ward); the others
    # are constant per person, checked before any write
    person_varying: tuple[str, ...] = ()
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def holds_back_changes(self) -> bool:
        """Whether a step that would single someone out across versions may be repaired by
        holding records back (every policy but "strict", which refuses the step)."""
        return self.dynamic_policy != "strict"

    @property
    def person_column(self) -> str:
        """The column that names the privacy unit: ``person``, else the key."""
        return self.person or self.key

    @property
    def counts_persons(self) -> bool:
        """Whether rows and persons differ (a person column other than the key is declared)."""
        return self.person is not None and self.person != self.key

    @property
    def qid_columns(self) -> list[str]:
        return [q.column for q in self.quasi_identifiers]

    def to_json(self) -> str:
        """The spec as it was given (for the run record and jobs)."""
        return json.dumps(self.raw, sort_keys=True, default=str)


KEPT_COLUMNS_POLICIES = ("refuse", "warn")
# What the generalization optimizers can minimize (engine/methods/generalization/objectives.py).
OBJECTIVES = ("td", "loss", "nu-entropy", "aecs", "discernibility", "precision", "height")
# Which optimizers take an objective other than TD, and how, each optimizer declares itself
# (optimizers.takes_objectives).

_SCHEMA: dict[str, set[str]] = {
    "": {"source", "quasi_identifiers", "sensitive", "privacy", "utility", "optimizer", "output", "dynamic", "access", "method"},
    "method": {"name", "params"},
    "dynamic": {"policy", "max_repair_fraction"},
    "access": {"roles"},
    "source": {"database", "table", "schema", "query", "file", "key", "person", "person_varying", "identifiers", "drop", "keep", "null_policy"},
    "quasi_identifier": {"column", "hierarchy"},
    "hierarchy": {"type", "file", "widths", "levels", "duplicates", *AUTO_OVERRIDES},
    "sensitive": {"columns", "hierarchy"},
    "privacy": {"models", "kept_columns"},
    "utility": {"objective", "report", "workload_queries", "workload_seed"},
    "optimizer": {"name", "budget", "seed", "params", "evaluator"},
    "output": {"schema", "name"},
}


def is_private_schema(name: str) -> bool:
    """Whether ``name`` is ppdp's private schema; DuckDB (and unquoted SQL) fold identifier case."""
    return name.casefold() == PRIVATE_SCHEMA.casefold()


def _check_keys(section: str, table: dict[str, Any], where: str) -> None:
    known = _SCHEMA[section]
    for key in table:
        if key not in known:
            if not known:
                raise SpecError(f"Unknown key {key!r} in {where}: no keys are allowed there.")
            hint = did_you_mean(key, known) or known_names(known)
            raise SpecError(f"Unknown key {key!r} in {where}.{hint}")


def _registered(kind: str, name: str, where: str) -> str:
    """``name`` if an object of ``kind`` (a key of ppdp/registry.py ``KINDS``: optimizer,
    evaluator, metric) is registered under it, built-in or from another package; a SpecError
    with "did you mean" otherwise. The spec imports none of them. (Release methods are looked
    up by engine/methods ``method_of``, once the spec is read.)"""
    try:
        return check_name(kind, name)
    except UnknownNameError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _need(table: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if key not in table:
        raise SpecError(f"Missing {where}.{key}. Hint: see the spec reference, docs/reference/spec.md.")
    return _typed(table[key], f"{where}.{key}", kind)


def _typed(value: Any, where: str, kind: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise SpecError(f"{where} must be {_kind_name(kind)}, got {value!r}.")
    if not isinstance(value, kind):
        raise SpecError(f"{where} must be {_kind_name(kind)}, got {value!r}.")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({str: "a string", int: "an integer", float: "a number", list: "a list", dict: "a table", bool: "true/false"}[k] for k in kinds)


def _names(value: Any, where: str) -> tuple[str, ...]:
    _typed(value, where, list)
    for v in value:
        _typed(v, f"an entry of {where}", str)
    return tuple(value)


def _hierarchy(raw: Any, where: str) -> HierarchySpec:
    if isinstance(raw, str):  # shorthand: a file path or a generator name
        raw = {"type": raw} if raw in HIERARCHY_TYPES else {"type": "arx", "file": raw}
    _typed(raw, where, dict)
    _check_keys("hierarchy", raw, where)
    kind = _need(raw, "type", where, str)
    if kind not in HIERARCHY_TYPES:
        hint = did_you_mean(kind, HIERARCHY_TYPES)
        raise SpecError(f"{where}.type {kind!r} is not a hierarchy type.{hint} Known: {', '.join(HIERARCHY_TYPES)}.")
    file = raw.get("file")
    if kind == "arx" and not isinstance(file, str):
        raise SpecError(f"{where} of type 'arx' needs file = \"path/to/hierarchy.csv\".")
    widths = raw.get("widths")
    if widths is not None:
        _typed(widths, f"{where}.widths", list)
        for w in widths:
            _typed(w, f"an entry of {where}.widths", (int, float))
            if not math.isfinite(w) or w <= 0:
                raise SpecError(f"{where}.widths must be positive finite numbers, got {w!r}. Hint: widths = [5, 10, 20].")
        widths = tuple(float(w) for w in widths)
    levels = raw.get("levels")
    if levels is not None and (_typed(levels, f"{where}.levels", int) < 1):
        raise SpecError(f"{where}.levels must be >= 1, got {levels}.")
    duplicates = raw.get("duplicates", "error")
    _typed(duplicates, f"{where}.duplicates", str)
    if duplicates not in ARX_DUPLICATE_POLICIES:
        hint = did_you_mean(duplicates, ARX_DUPLICATE_POLICIES)
        raise SpecError(f"{where}.duplicates {duplicates!r} is not a choice.{hint} Known: {', '.join(ARX_DUPLICATE_POLICIES)}.")
    if "duplicates" in raw and kind != "arx":
        raise SpecError(f"{where}.duplicates applies to ARX files only, not to type {kind!r}. Hint: remove it.")
    auto = tuple((k, _frozen(raw[k])) for k in AUTO_OVERRIDES if k in raw)
    if auto and kind != "auto":
        raise SpecError(f"{where}.{auto[0][0]} applies to type \"auto\" only, not to type {kind!r}. Hint: remove it.")
    _check_auto(dict(auto), where)
    return HierarchySpec(kind, file, widths, levels, duplicates, auto)


def _frozen(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


_BUILDERS = ("numeric", "temporal", "codes", "priority")


def _check_auto(o: dict[str, Any], where: str) -> None:
    """The overrides' types (the builder checks their values against the data)."""
    if "builder" in o and o["builder"] not in _BUILDERS:
        raise SpecError(f"{where}.builder {o['builder']!r} is not a builder.{did_you_mean(str(o['builder']), _BUILDERS)} "
                        f"Known: {', '.join(_BUILDERS)}.")
    if "method" in o and o["method"] not in ("width", "depth"):
        raise SpecError(f"{where}.method must be \"width\" or \"depth\", got {o['method']!r}.")
    for key, kind in (("cuts", (int, float)), ("ladder", str), ("keep", int), ("merged", int)):
        if key in o:
            if not isinstance(o[key], tuple) or not all(isinstance(x, kind) and not isinstance(x, bool) for x in o[key]):
                raise SpecError(f"{where}.{key} must be a list of {_kind_name(kind)} values, got {list(o[key]) if isinstance(o[key], tuple) else o[key]!r}.")
    if "rebuild" in o and not isinstance(o["rebuild"], bool):
        raise SpecError(f"{where}.rebuild must be true or false, got {o['rebuild']!r}.")


def spec_from_dict(raw: dict[str, Any], *, base_dir: str | Path = ".") -> ReleaseSpec:
    """Validate a spec given as nested dicts (TOML or JSON) and build a ReleaseSpec."""
    _typed(raw, "the spec", dict)
    _check_keys("", raw, "the spec")
    src = _need(raw, "source", "the spec", dict)
    _check_keys("source", src, "[source]")
    # optional: `ppdp run --db` and a job (the database storing it) give the database instead
    database = _typed(src["database"], "source.database", str) if "database" in src else None
    table = src.get("table")
    query = src.get("query")
    file = src.get("file")
    if sum(x is not None for x in (table, query, file)) != 1:
        raise SpecError("Give exactly one of source.table, source.query and source.file.")
    if file is not None:
        query = _file_query(_typed(file, "source.file", str), Path(base_dir))
    if table is not None:
        _typed(table, "source.table", str)
    if query is not None:
        _typed(query, "source.query", str)
    schema = src.get("schema")
    if schema is not None:
        _typed(schema, "source.schema", str)
    key = _need(src, "key", "source", str)
    person = src.get("person")
    if person is not None and not _typed(person, "source.person", str):
        raise SpecError("source.person is empty. Hint: person = \"person_id\" (the column naming each row's person).")
    null_policy = _typed(src.get("null_policy", "error"), "source.null_policy", str)
    if null_policy not in NULL_POLICIES:
        raise SpecError(f"source.null_policy must be one of {', '.join(NULL_POLICIES)}, got {null_policy!r}.")

    qraw = _need(raw, "quasi_identifiers", "the spec", list)
    if not qraw:
        raise SpecError("quasi_identifiers is empty. Hint: name at least one column with a hierarchy.")
    qids = []
    for i, q in enumerate(qraw):
        where = f"quasi_identifiers[{i}]"
        _typed(q, where, dict)
        _check_keys("quasi_identifier", q, where)
        col = _need(q, "column", where, str)
        if "hierarchy" not in q:
            raise SpecError(f"Missing {where}.hierarchy for column {col!r}. Hint: hierarchy = \"hierarchies/{col}.csv\" or {{ type = \"intervals\" }}.")
        qids.append(QuasiIdentifier(col, _hierarchy(q["hierarchy"], f"{where}.hierarchy")))

    sens = raw.get("sensitive", {})
    _typed(sens, "[sensitive]", dict)
    _check_keys("sensitive", sens, "[sensitive]")
    sensitive = _names(sens.get("columns", []), "sensitive.columns")
    sensitive_hierarchy = sens.get("hierarchy")
    if sensitive_hierarchy is not None and (not isinstance(sensitive_hierarchy, str) or not sensitive_hierarchy.strip()):
        raise SpecError(f"sensitive.hierarchy must be a file path, got {sensitive_hierarchy!r}. Hint: hierarchy = \"hierarchies/salary.csv\".")
    if sensitive_hierarchy is not None and len(sensitive) != 1:
        raise SpecError(f"sensitive.hierarchy is the hierarchy of one sensitive column; {len(sensitive)} are given.")

    priv = _need(raw, "privacy", "the spec", dict)
    _check_keys("privacy", priv, "[privacy]")
    mraw = _need(priv, "models", "privacy", list)
    if not mraw:
        raise SpecError("privacy.models is empty. Hint: [[privacy.models]] name = ... with the model's parameters "
                        f"(known models: {', '.join(registry('model').names())}).")
    kept_policy = _typed(priv.get("kept_columns", "refuse"), "privacy.kept_columns", str)
    if kept_policy not in KEPT_COLUMNS_POLICIES:
        raise SpecError(f"privacy.kept_columns must be one of {', '.join(KEPT_COLUMNS_POLICIES)}, got {kept_policy!r}. "
                        "Hint: kept_columns = \"refuse\".")
    models = []
    for i, m in enumerate(mraw):
        where = f"privacy.models[{i}]"
        _typed(m, where, dict)
        name = _need(m, "name", where, str)
        params = tuple(sorted((k, v) for k, v in m.items() if k != "name"))
        registry("model").get(name).from_params(dict(params))  # the model validates its name and parameters now
        models.append(ModelSpec(name, params))

    util = raw.get("utility", {})
    _typed(util, "[utility]", dict)
    _check_keys("utility", util, "[utility]")
    objective = _typed(util.get("objective", "td"), "utility.objective", str)
    if objective not in OBJECTIVES:
        raise SpecError(f"utility.objective {objective!r} is not available. Known: {', '.join(OBJECTIVES)}. "
                        "Hint: objective = \"td\" (the default), or one of ARX's metrics: \"loss\" (gs-factor 0.5), \"nu-entropy\", \"aecs\", \"discernibility\", \"precision\", \"height\".")

    opt = raw.get("optimizer", {})
    _typed(opt, "[optimizer]", dict)
    _check_keys("optimizer", opt, "[optimizer]")
    budget = _typed(opt.get("budget", 100_000), "optimizer.budget", int)
    if budget < 1:
        raise SpecError(f"optimizer.budget must be >= 1 evaluation, got {budget}.")
    oparams = _typed(opt.get("params", {}), "optimizer.params", dict)

    dyn = _typed(raw.get("dynamic", {}), "[dynamic]", dict)
    _check_keys("dynamic", dyn, "[dynamic]")
    policy = _typed(dyn.get("policy", "stable-levels"), "dynamic.policy", str)
    if policy not in DYNAMIC_POLICIES:
        raise SpecError(f"dynamic.policy must be one of {', '.join(DYNAMIC_POLICIES)}, got {policy!r}.")
    repair = _typed(dyn.get("max_repair_fraction", 0.05), "dynamic.max_repair_fraction", (int, float))
    if not 0 <= repair <= 1:
        raise SpecError(f"dynamic.max_repair_fraction must be in [0, 1], got {repair}.")
    access = _typed(raw.get("access", {}), "[access]", dict)
    _check_keys("access", access, "[access]")
    method = _typed(raw.get("method", {}), "[method]", dict)
    _check_keys("method", method, "[method]")
    # the name is looked up where the methods are known (engine/methods ``method_of``): the spec
    # sits below them and imports none
    method_name = _typed(method.get("name", "generalization"), "method.name", str)
    method_params = _typed(method.get("params", {}), "method.params", dict)

    out = _need(raw, "output", "the spec", dict)
    _check_keys("output", out, "[output]")
    out_name = _need(out, "name", "output", str)
    if not out_name.strip():
        raise SpecError(f"output.name is empty ({out_name!r}). Hint: name = \"patients_k5\" names the published view.")
    _check_output_name(out_name)
    report = _names(util.get("report", list(ReleaseSpec.report)), "utility.report")
    for metric in report:
        _registered("metric", metric, "utility.report")
    workload_queries = _typed(util.get("workload_queries", 200), "utility.workload_queries", int)
    if workload_queries < 1:
        raise SpecError(f"utility.workload_queries must be >= 1, got {workload_queries}. Hint: workload_queries = 200.")
    optimizer = _registered("optimizer", _typed(opt.get("name", "lattice"), "optimizer.name", str), "optimizer.name")
    evaluator = _registered("evaluator", _typed(opt.get("evaluator", "numba"), "optimizer.evaluator", str), "optimizer.evaluator")
    out_schema = _typed(out.get("schema", "published"), "output.schema", str)
    if is_private_schema(out_schema):
        raise SpecError(f"output.schema cannot be {out_schema!r}: schema '_ppdp' (any letter case) holds ppdp's private state. "
                        "Hint: schema = \"published\".")

    spec = ReleaseSpec(
        database=database, table=table, schema=schema, query=query, key=key,
        identifiers=_names(src.get("identifiers", []), "source.identifiers"),
        drop=_names(src.get("drop", []), "source.drop"),
        keep=_names(src.get("keep", []), "source.keep"), kept_columns=kept_policy,
        null_policy=null_policy, quasi_identifiers=tuple(qids), sensitive=sensitive, models=tuple(models),
        sensitive_hierarchy=sensitive_hierarchy,
        objective=objective,
        report=report, workload_queries=workload_queries,
        workload_seed=_typed(util.get("workload_seed", 0), "utility.workload_seed", int),
        optimizer=optimizer, budget=budget,
        seed=_typed(opt.get("seed", 0), "optimizer.seed", int),
        optimizer_params=tuple(sorted(oparams.items())),
        evaluator=evaluator,
        dynamic_policy=policy, max_repair_fraction=float(repair),
        reader_roles=_names(access.get("roles", []), "access.roles"),
        output_schema=out_schema, output_name=out_name, method=method_name,
        method_params=tuple(sorted(method_params.items())), base_dir=str(base_dir), person=person,
        person_varying=_names(src.get("person_varying", []), "source.person_varying"), raw=raw,
    )
    _check_columns_disjoint(spec)
    _check_reserved_columns(spec)
    return spec


def _file_query(file: str, base: Path) -> str:
    """A Parquet or CSV file as a source: a DuckDB reader over it (the path is an escaped literal)."""
    from ppdp.sql.files import file_query

    path = Path(file) if Path(file).is_absolute() else base / file
    if not path.exists():
        raise SpecError(f"source.file {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    reader = {".parquet": "read_parquet", ".csv": "read_csv", ".tsv": "read_csv"}.get(suffix)
    if reader is None:
        raise SpecError(f"source.file must be .parquet or .csv, got {path.name!r}.")
    return file_query(reader, str(path.resolve()))


def _check_output_name(name: str) -> None:
    """A release ``name`` owns ``name__v<N>`` and ``name__delta`` (sql/relations.py): a name that
    ends like one of those is another release's version table or delta (letter case aside, as
    DuckDB compares names)."""
    if re.search(rf"({re.escape(VERSION_SEPARATOR)}[0-9]+|{re.escape(DELTA_SUFFIX)})$", name, re.IGNORECASE):
        raise SpecError(f"output.name {name!r} ends like a version table or a delta ('<name>{VERSION_SEPARATOR}<N>', "
                        f"'<name>{DELTA_SUFFIX}'), which belong to the release they are named after. "
                        "Hint: choose a name without that ending.")


def _check_reserved_columns(spec: ReleaseSpec) -> None:
    """ppdp adds the column ROW_ID to every published row (the row's id across versions), so no
    published column of the source may be named so."""
    for role, cols in (("quasi-identifier", spec.qid_columns), ("sensitive attribute", spec.sensitive),
                       ("kept column", spec.keep)):
        for c in cols:
            if c.lower() == ROW_ID:
                raise SpecError(f"The {role} {c!r} has the name of the column ppdp adds to every published row "
                                f"({ROW_ID!r}). Hint: rename it in a source.query (SELECT ..., {c} AS ...).")


def _check_columns_disjoint(spec: ReleaseSpec) -> None:
    """Each column has one role; a column named twice would reach the SQL as a raw binder error."""
    seen: dict[str, str] = {}
    for role, cols in (("key", [spec.key]), ("identifier", spec.identifiers), ("quasi-identifier", spec.qid_columns),
                       ("sensitive attribute", spec.sensitive), ("dropped column", spec.drop),
                       ("kept column", spec.keep)):
        for c in cols:
            if c in seen:
                what = f"listed twice as {role}" if seen[c] == role else f"both {seen[c]} and {role}"
                raise SpecError(f"Column {c!r} is {what}. Hint: give each column exactly one role "
                                "(key, identifiers, quasi_identifiers, sensitive, drop or keep).")
            seen[c] = role
    if spec.person_varying and not spec.counts_persons:
        raise SpecError("source.person_varying needs source.person (the column naming each row's person).")
    for c in spec.person_varying:
        if c not in spec.qid_columns:
            raise SpecError(f"source.person_varying names {c!r}, which is not a quasi-identifier. "
                            "Hint: list the QIDs that may differ between a person's rows.")
    # the person column is never published: it may also be listed as an identifier or dropped
    if spec.person is not None and spec.person != spec.key:
        person_role = seen.get(spec.person)
        if person_role in ("quasi-identifier", "sensitive attribute", "kept column"):
            raise SpecError(f"source.person {spec.person!r} is also a {person_role}: the person column is never published. "
                            "Hint: name a column that only identifies the person.")


def load_spec(path: str | Path) -> ReleaseSpec:
    """Read and validate a TOML spec; relative paths inside it are relative to its folder."""
    path = Path(path)
    return spec_from_dict(read_spec_file(path), base_dir=path.resolve().parent)


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The raw TOML of a spec file (not yet validated), or a one-line SpecError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not TOML
    except FileNotFoundError:
        raise SpecError(f"Spec file {str(path)!r} does not exist.") from None
    except IsADirectoryError:
        raise SpecError(f"Spec path {str(path)!r} is a directory. Hint: give the path of a .toml file.") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"Spec file {str(path)!r} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}). "
                        "Hint: save it as UTF-8.") from None
    except OSError as exc:
        raise SpecError(f"Spec file {str(path)!r} cannot be read: {exc.strerror or exc}.") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"Spec file {str(path)!r} is not valid TOML: {exc}.") from None
    return raw


def spec_summary(spec: ReleaseSpec) -> dict[str, Any]:
    return asdict(spec) | {"raw": None}


@dataclass(frozen=True)
class SpecDiff:
    """What differs between two specs as given (``ReleaseSpec.raw``, or a run record's stored
    spec): ``keys``, the dotted paths of the values that differ (a table is followed key by key;
    a list, like ``privacy.models``, is one value; a key on one side only is a path), sorted;
    ``sections``, their top-level sections, in the same order."""

    sections: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()

    def changed(self, *sections: str) -> bool:
        """Whether any of ``sections`` differs."""
        return any(s in self.sections for s in sections)

    def among(self, sections: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """Those of ``sections`` that differ, in the order given."""
        return tuple(s for s in sections if s in self.sections)


def _stored_form(raw: Any) -> Any:
    """``raw`` as the run record stores a spec: credentials masked, then JSON (datetimes as
    text, tuples as lists)."""
    return json.loads(json.dumps(redact_value(raw), sort_keys=True, default=str))


def _differing(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else key
            out += _differing(old[key], new[key], where) if key in old and key in new else [where]
        return out
    same = json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)  # NaN equals NaN here
    return [] if same else [path]


def spec_diff(old: dict[str, Any] | None, new: dict[str, Any] | None) -> SpecDiff:
    """What changed from the spec ``old`` to ``new`` (either None: no spec, every section of the
    other differs). The one rule for "did this part of the spec change" between versions: both
    sides are compared in the form the run record stores, so a spec read back from
    ``_ppdp.runs`` equals the one it was stored from."""
    keys = tuple(_differing(_stored_form(old or {}), _stored_form(new or {}), ""))
    return SpecDiff(tuple(dict.fromkeys(k.split(".", 1)[0] for k in keys)), keys)
