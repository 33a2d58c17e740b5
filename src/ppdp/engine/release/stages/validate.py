"""Stage 1: read and check every input before anything is written or searched.

The names the release will create, the source's columns, key, hierarchies, histogram and the
models' feasibility are checked here; any problem raises a PpdpError with one line, and the
database is left as it was.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.connectors.base import (
    IN_PROCESS_ROWS,
    PARALLEL_READS,
    ArrowRowsConnector,
    Connector,
    ParallelReadsConnector,
)
from ppdp.engine.core import catalog
from ppdp.engine.core import hierarchy as hier
from ppdp.engine.core import person as person_unit
from ppdp.engine.core.builders import Definition, build
from ppdp.engine.core.builders.auto import check, choose
from ppdp.engine.core.builders.profile import ColumnProfile, from_counts, profile_table
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.encoding import (
    EncodedTable,
    PopulationHistogram,
    encode_histogram,
    encode_population,
    encode_rows,
    joint_keys,
    joint_values,
)
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.core.spec import QuasiIdentifier, ReleaseSpec, spec_diff
from ppdp.engine.methods.base import ReleaseMethod
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared
from ppdp.engine.privacy import ModelContext, PrivacyModel, build_model, check_possible
from ppdp.engine.release.access import missing_roles
from ppdp.engine.release.columns import check_declared
from ppdp.engine.release.placement import check_output_apart_from_source
from ppdp.engine.release.stages.population import population_source
from ppdp.errors import DataError, SpecError, did_you_mean
from ppdp.sql import history as H
from ppdp.sql import inspect
from ppdp.sql import predicate as SP
from ppdp.sql import profile as PR
from ppdp.sql import queries as Q
from ppdp.sql.relations import delta_name, version_name


def _closest(name: str, options: list[str]) -> str:
    return did_you_mean(name, options)


# Names ppdp derives from a release's output name are checked against the database's identifier
# limit before anything is written: PostgreSQL truncates names at 63 bytes, so for a long name
# ``<name>__v1`` and ``<name>__v2`` became the same table.


def release_identifiers(schema: str, name: str, max_versions_digits: int = 6) -> list[tuple[str, str]]:
    """(what, identifier) of every name a release creates, the longest version table included."""
    return [("output.schema", schema), ("output.name", name),
            ("version table", version_name(name, int("9" * max_versions_digits))), ("delta table", delta_name(name))]


def check_release_identifiers(con: Connector, schema: str, name: str, max_versions_digits: int = 6) -> None:
    """Raise SpecError (one line, with a hint) when a name the release would create is longer
    than ``con.max_identifier_length`` UTF-8 bytes (the database would truncate or refuse it)."""
    limit = int(getattr(con, "max_identifier_length", 0) or 0)
    if limit <= 0:
        return
    for what, ident in release_identifiers(schema, name, max_versions_digits):
        size = len(ident.encode("utf-8"))
        if size > limit:
            room = limit - (len(ident.encode("utf-8")) - len(name.encode("utf-8"))) if what != "output.schema" else limit
            raise SpecError(
                f"The {what} {ident!r} is {size} bytes (UTF-8) but {con.dialect} keeps at most {limit}: "
                f"names would be truncated and versions would collide. Hint: shorten "
                f"{'output.schema' if what == 'output.schema' else f'output.name to at most {room} bytes'}."
            )


def research_of(models: list[PrivacyModel]) -> str | None:
    """The one research predicate the models ask for (delta-presence), or None; two different
    ones cannot both be the release's rows."""
    predicates = {p for p in (m.research_predicate() for m in models if m.requirements.research_subset) if p is not None}
    if len(predicates) > 1:
        raise SpecError("The privacy models name different research subsets; a release holds one. Hint: give one research predicate.")
    return next(iter(predicates), None)


def population_histogram(spec: ReleaseSpec, con: Connector, models: list[PrivacyModel],
                         table: EncodedTable) -> PopulationHistogram | None:
    """The population the models count persons of (``Requirements.population``): the source
    itself before any research subset, or a table named by the model; None when no model needs
    one. A missing table or quasi-identifier column is refused (DataError, one line)."""
    wanted = {m.population_table() for m in models if m.requirements.population}
    if not wanted:
        return None
    if len(wanted) > 1:
        raise SpecError("The privacy models count persons of different populations; a release has one. "
                        "Hint: name one population.")
    (name,) = wanted
    population = population_source(spec, name, con.dialect, con.default_schema)
    where = "the source" if name is None else name
    if name is not None:
        cols = con.relation_columns(population.schema or con.default_schema, population.table or "")
        if cols is None:
            raise DataError(f"The population table {name!r} does not exist in {con.url}. Hint: population = \"schema.table\".")
        missing = [c for c in spec.qid_columns if c not in {c for c, _ in cols}]
        if missing:
            raise DataError(f"The population table {name!r} lacks quasi-identifier column(s) {', '.join(map(repr, missing))}.")
    frame = con.query(Q.histogram_query(population, spec.qid_columns, []))
    return encode_population(frame, table, where)


# A CSV without a key column: docs/reference/spec.md (source.file) says the same.
_KEYLESS_HINT = (" Hint: give the file a column that identifies each person, or number its lines with row_number() "
                 "in a source.query over read_csv (docs/reference/spec.md, source.file).")


def describe_source(spec: ReleaseSpec, source: Q.Source) -> str:
    """The source as the user wrote it: a table, ``source.file 'x.csv'`` or ``source.query``
    (a file is read through a query that the user never wrote)."""
    file = (spec.raw.get("source") or {}).get("file")
    return f"source.file {file!r}" if isinstance(file, str) else source.describe()


def described_columns(spec: ReleaseSpec, con: Connector, source: Q.Source) -> dict[str, str | None]:
    """The source's columns in order, each with its SQL type as the database describes a table
    (None for the columns of a source.query: their types are not described)."""
    if spec.table is not None:
        schema = spec.schema or con.default_schema
        cols = con.relation_columns(schema, spec.table)
        if cols is None:
            raise DataError(f"Source table {source.describe()} does not exist in {con.url}. Hint: check source.schema and source.table.")
        return dict(cols)
    return dict.fromkeys(con.query(inspect.empty_select(source.sql())).columns)


# The most rows a DuckDB source may have to be read row by row and grouped by its encoding
# (encode_rows) instead of by a GROUP BY over its text: on an in-process table, moving a row's
# text costs less than grouping it, and the encoding maps every value to a leaf code anyway
# (adult, 30,162 rows: about half the time of the GROUP BY and the encoding of its 18,109 groups).
# Above it the database's parallel GROUP BY and the smaller transfer win, and a
# server's rows would cross the network: connectors without IN_PROCESS_ROWS keep the GROUP BY. One known
# difference: texts equal under a DuckDB collation (a VARCHAR column declared COLLATE NOCASE, or
# default_collation set) were one group of the GROUP BY, under whichever text DuckDB kept; here
# they stay apart when each is a leaf (when one is not, the GROUP BY path runs, as before).
ROWS_READ_LIMIT = 200_000


# Integer key types whose values DuckDB hands over as Arrow integers: distinct in Arrow exactly
# when distinct in SQL (no collation, no NaN, no float rounding).
_INTEGER_KEY_TYPES = frozenset({"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT"})


def key_counts(con: Connector, source: Q.Source, key: str, key_type: str | None) -> tuple[int, int, int]:
    """(rows, distinct non-NULL keys, NULL keys) of the source: COUNT(*), COUNT(DISTINCT key) and
    the NULLs of key_check_query. An integer key of a source read through a connector declaring
    IN_PROCESS_ROWS (DuckDB) is read and counted in Arrow when there are at most ROWS_READ_LIMIT
    rows (on a small table COUNT(DISTINCT)'s hash aggregate costs more than
    moving the keys); a larger source, another key type or another connector is counted by the
    database."""
    if (IN_PROCESS_ROWS in con.capabilities and key_type is not None
            and key_type.strip().upper() in _INTEGER_KEY_TYPES):
        read = cast(ArrowRowsConnector, con).query_arrow_upto(Q.key_rows_query(source, key), ROWS_READ_LIMIT)
        if read is not None:
            keys = read.column(0)
            return len(keys), _distinct_integers(keys), keys.null_count
    check = con.query(Q.key_check_query(source, key)).row(0, named=True)
    return int(check["n"]), int(check["distinct_keys"]), int(check["null_keys"])


def _distinct_integers(keys: pa.ChunkedArray) -> int:
    """Distinct non-NULL values of an integer column, as COUNT(DISTINCT) counts them: marked in
    a table of the values' span when the span is small (keys numbered from some start, the
    usual case: no hash of every key), else Arrow's count_distinct."""
    values = keys.drop_null()
    if len(values) == 0:
        return 0
    low, high = (int(v.as_py()) for v in pc.min_max(values).values())
    span = high - low + 1
    if span > 4 * len(values) + 1024:
        return int(pc.count_distinct(values).as_py())
    offsets = np.subtract(values.to_numpy(), low, dtype=np.int64) if low >= -(1 << 62) and high < (1 << 62) else None
    if offsets is None:
        return int(pc.count_distinct(values).as_py())
    present = np.zeros(span, dtype=np.bool_)
    present[offsets] = True
    return int(np.count_nonzero(present))


# The fewest rows of a source whose columns are read in two halves at once (PARALLEL_READS):
# below it the second read's fixed cost, the row ids both halves carry and the query that asks
# whether the source is a table cost more than the halving saves. Where that turns depends on
# the texts' length: DuckDB samples of adult (9 columns), mach2019 and creditcard (8), one read
# against the split, interleaved: 12,000 rows 1.16-1.27 times the time, 24,000 rows 0.79 (adult)
# to 1.09, and from 30,000 rows 0.71-0.83.
SPLIT_READ_MIN_ROWS = 28_000


def read_rows(con: Connector, source: Q.Source, columns: list[str], n_rows: int | None,
              types: dict[str, str] | None = None) -> pa.Table | None:
    """The text rows (sql.queries.text_rows_query) of ``columns`` that read_encoded groups in
    process, as Arrow: read when the source is read through a connector declaring
    IN_PROCESS_ROWS (DuckDB) and has at most ROWS_READ_LIMIT rows (``n_rows``, counted by the
    caller); None where the database groups them. A base table of SPLIT_READ_MIN_ROWS rows or
    more, on a connector declaring PARALLEL_READS, is read in two halves of its columns at once
    (read_split)."""
    if IN_PROCESS_ROWS in con.capabilities and n_rows is not None and n_rows <= ROWS_READ_LIMIT:
        if PARALLEL_READS in con.capabilities and n_rows >= SPLIT_READ_MIN_ROWS and len(columns) >= 2:
            rows = read_split(cast(ParallelReadsConnector, con), source, columns, types)
            if rows is not None:
                return rows
        return cast(ArrowRowsConnector, con).query_arrow(Q.text_rows_query(source, columns, types))
    return None


def read_split(con: ParallelReadsConnector, source: Q.Source, columns: list[str],
               types: dict[str, str] | None = None) -> pa.Table | None:
    """``columns`` of a base table's rows read by two queries at once, each half of the columns
    with each row's storage row id, and put side by side: the text_rows_query table. The two
    reads are two snapshots, so they are used only when they list the same row ids in the same
    order (a table changed between them, or a plan that reorders rows: None, and the caller
    reads once). None too where the source is not a base table as it stands, a column of the
    relation has the row id's name (``types``, every column of the relation: the database
    would read that column for the row ids), or the connector cannot read in parallel now.
    Whether the source is a base table is asked of the catalog: a refused pair of reads would
    also be what an interrupted one raises, and an interruption must end the run."""
    row_id = source.dialect.storage_row_id
    if not source.is_plain_table() or row_id is None or types is None:
        return None
    if any(c.lower() == row_id.lower() for c in types):
        return None  # the database resolves the name to this column, not to the row ids
    assert source.table is not None
    if not con.is_table(source.schema or con.default_schema, source.table):
        return None  # a view: no row ids
    half = (len(columns) + 1) // 2
    parts = con.query_arrow_parallel([Q.text_rows_query(source, part, types, storage_row_id=True)
                                      for part in (columns[:half], columns[half:])])
    if parts is None:
        return None
    first, second = parts
    if not first.column(half).equals(second.column(len(columns) - half)):  # unequal lengths too
        return None
    return pa.Table.from_arrays([*first.columns[:half], *second.columns[: len(columns) - half]], names=list(columns))


def read_encoded(con: Connector, source: Q.Source, qids: list[str], sensitive: list[str], hierarchies: list[Hierarchy], *,
                 n_rows: int | None = None, types: dict[str, str] | None = None, null_policy: str = "error",
                 reference: dict[tuple, float] | None = None, rows: pa.Table | None = None) -> EncodedTable:
    """The source's encoded histogram: its rows read (``read_rows``, or ``rows`` when the caller
    read them so) and grouped by encode_rows, else (and whenever encode_rows needs the general
    path: values not in a hierarchy, no rows) the histogram query and encode_histogram.
    ``types``: the columns' SQL types when described (sql.queries.typed_text_kind). The same
    EncodedTable either way."""
    if rows is None:
        rows = read_rows(con, source, qids + sensitive, n_rows, types)
    if rows is not None:
        table = encode_rows(rows, qids, sensitive, hierarchies, null_policy=null_policy, reference=reference)
        if table is not None:
            return table
    histogram = con.query(Q.histogram_query(source, qids, sensitive, types))
    return encode_histogram(histogram, qids, sensitive, hierarchies, null_policy=null_policy, reference=reference)


def validate(ctx: RunContext, method: ReleaseMethod, previous: RunRecord | None) -> Prepared:
    """The stage: the method's parameters and its database preconditions, then everything
    ``prepare`` checks. Writes nothing. ``previous``: the run that published the current version,
    read by the orchestrator under the run lock (identify.previous_run)."""
    method.check_params(ctx.spec)
    method.check_database(ctx.spec, ctx.con)
    check_output_apart_from_source(ctx.spec, ctx.con)  # never publish beside the source
    return prepare(ctx.spec, ctx.con, previous)


def prepare(spec: ReleaseSpec, con: Connector, previous: RunRecord | None = None) -> Prepared:
    """Read and validate the source, hierarchies and models (what every method needs). Writes
    nothing. ``previous``: the run that published the release's current version (its stored Q is
    kept while the models are unchanged); None reads the release as if it had no version yet."""
    check_release_identifiers(con, spec.output_schema, spec.output_name)
    missing = missing_roles(con, spec.reader_roles)
    if missing:
        raise SpecError(f"access.roles names role(s) that do not exist: {', '.join(missing)}. "
                        "Hint: CREATE ROLE them or fix [access] roles.")
    models = [build_model(m.name, m.param_dict()) for m in spec.models]
    source = Q.Source(spec.schema, spec.table, spec.query, con.dialect)
    described = described_columns(spec, con, source)
    columns = list(described)
    types = {c: t for c, t in described.items() if t is not None}
    research = research_of(models)
    if research is not None:
        SP.check_columns(SP.parse_predicate(research, "research", con.dialect), "research", columns)
        source = Q.Source(spec.schema, spec.table, spec.query, con.dialect, research=research)
    for role, names in (("key", [spec.key]), ("person", [spec.person_column]), ("identifier", spec.identifiers), ("quasi-identifier", spec.qid_columns),
                        ("sensitive attribute", spec.sensitive), ("dropped column", spec.drop)):
        for name in names:
            if name not in columns:
                raise DataError(f"The {role} column {name!r} is not in {describe_source(spec, source)}.{_closest(name, columns)} "
                                f"Its columns: {', '.join(columns)}."
                                + (_KEYLESS_HINT if role == "key" and spec.raw.get("source", {}).get("file") else ""))
    check_declared(spec, columns)

    n_rows, distinct_keys, null_keys = key_counts(con, source, spec.key, described.get(spec.key))
    if n_rows == 0:
        subset = " (its research subset)" if research is not None else ""
        raise DataError(f"Source {describe_source(spec, source)}{subset} is empty: there is nothing to release.")
    if null_keys:
        raise DataError(f"Key column {spec.key!r} has {null_keys} NULL value(s). Hint: the key must identify every row.")
    if distinct_keys != n_rows:
        raise DataError(f"Key column {spec.key!r} is not unique ({distinct_keys} distinct values in {n_rows} rows). Hint: choose a primary key.")

    profiles = auto_profiles(spec, source, con, described)
    hierarchies = [load_hierarchy(spec, q, source, con, profiles, previous) for q in spec.quasi_identifiers]
    persons, n_persons, read_from = None, None, source
    if spec.counts_persons:  # every count below is of persons (docs/design/person_unit.md)
        found = person_unit.check_person_column(spec, con, source)
        reading = [m.name for m in models if m.requirements.sensitive_counts]
        if found.varying_sensitive and reading:
            raise DataError(f"{found.varying_sensitive} person(s) have rows with differing sensitive values, which "
                            f"{' and '.join(reading)} cannot count per person yet (docs/design/person_unit.md); nothing was "
                            "written. Hint: a sensitive attribute constant per person, or k-anonymity alone.")
        if not spec.person_varying:  # QIDs constant per person: the search counts persons
            persons = person_unit.person_source(spec, source)
            n_persons, read_from = found.persons, persons
    # a small in-process source's rows are read once: t-closeness's Q and the histogram are both made of them
    rows = read_rows(con, read_from, spec.qid_columns + list(spec.sensitive), n_rows if n_persons is None else n_persons, types)
    distribution = reference_distribution(spec, con, read_from, previous, types, rows)
    reference = None if distribution is None else {
        tuple(json.loads(v)): float(q) for v, q in zip(distribution["sa_value"].to_list(), distribution["q"].to_list(), strict=True)}
    table = read_encoded(con, read_from, spec.qid_columns, list(spec.sensitive), hierarchies,
                         n_rows=n_rows if n_persons is None else n_persons, types=types,
                         null_policy=spec.null_policy, reference=reference, rows=rows)
    population = population_histogram(spec, con, models, table)
    if population is not None:
        table = replace(table, population=population)
    needs_sensitive = [m.name for m in models if m.requirements.sensitive_counts]
    if needs_sensitive and not spec.sensitive:
        raise SpecError(f"{' and '.join(needs_sensitive)} need(s) sensitive attributes. Hint: [sensitive] columns = [\"...\"].")
    # bound to the table before anything is searched or written (a ground distance over its
    # sensitive values, a hierarchy file): errors are one line and nothing is written
    context = ModelContext(table.sensitive, table.sa_values, spec.base_dir, spec.sensitive_hierarchy,
                           n_rows if n_persons is None else n_persons)
    models = [m.bind(context) for m in models]
    check_possible(table, models)
    dropped = {spec.key, spec.person_column, *spec.identifiers, *spec.drop}  # the person column is never published
    released = [c for c in columns if c not in dropped]
    return Prepared(spec, source, columns, released, hierarchies, table, models, n_rows, distribution, persons, n_persons,
                    types)


def reference_distribution(spec: ReleaseSpec, con: Connector, source: Q.Source,
                           previous: RunRecord | None, types: dict[str, str] | None = None,
                           rows: pa.Table | None = None) -> pl.DataFrame | None:
    """t-closeness's Q for this run: the distribution stored with the release's previous version
    while its privacy models and sensitive columns are unchanged (a class that a version left
    as it was must not start failing because the population drifted: the release would be stuck),
    else the whole source's (NULL-QID rows included, as the SQL check counts them)."""
    if not spec.sensitive:
        return None
    release = catalog.release_id(spec.output_schema, spec.output_name)
    if previous is not None and not spec_diff(previous.spec, spec.raw).changed("privacy", "sensitive"):
        stored = catalog.stored_distribution(con, release, previous.published_version)
        if stored.height:
            return stored
    frame = None if rows is None else distribution_of_rows(rows, list(spec.sensitive))  # rows already read (read_rows)
    if frame is None:
        frame = con.query(H.distribution_query(source.sql(), list(spec.sensitive), con.dialect, types))
    values = [json.dumps(list(t)) for t in frame.select(list(spec.sensitive)).iter_rows()]
    return frame.select("sa_key", "q").with_columns(pl.Series("sa_value", values, dtype=pl.String))


def distribution_of_rows(rows: pa.Table, sensitive: list[str]) -> pl.DataFrame | None:
    """What the distribution query (sql.history.distribution_query) returns for these text rows
    (every row of the source, NULL quasi-identifiers included): each joint sensitive value's
    texts, its sa_key (history.tuple_key, the md5 the query computes) and its share q, the
    count divided by the rows in IEEE double as the query's COUNT(*) * 1.0 / COUNT(*) is.
    Grouped by one dictionary encoding per column and a count of the joint codes (an Arrow
    group_by would start Acero, a cost a fresh process pays once per run). None when the joint
    codes would not fit 62 bits (the query counts them)."""
    n = rows.num_rows
    joint = joint_keys(rows, sensitive, limit=1 << 62)
    if joint is None:
        return None
    key, distinct = joint
    space = math.prod(len(values) for values in distinct)
    if space <= 4 * n + 1024:  # counted over the key space: np.unique's result without a sort of every key
        per_key = np.bincount(key, minlength=space)
        combos = np.flatnonzero(per_key)
        counts = per_key[combos]
    else:
        combos, counts = np.unique(key, return_counts=True)
    tuples = joint_values(combos, distinct)
    data = [pl.Series(c, [t[i] for t in tuples], dtype=pl.String) for i, c in enumerate(sensitive)]
    data.append(pl.Series("sa_key", [H.tuple_key(t) for t in tuples], dtype=pl.String))
    data.append(pl.Series("q", [k / n for k in counts.tolist()], dtype=pl.Float64))
    return pl.DataFrame(data)


def auto_profiles(spec: ReleaseSpec, source: Q.Source, con: Connector,
                  described: dict[str, str | None]) -> dict[str, ColumnProfile]:
    """The profiles of the QIDs whose hierarchy is ``auto``, in one statement over the source (a
    source.query's columns have no described type: they are profiled from their value counts)."""
    cols = {q.column: described[q.column] for q in spec.quasi_identifiers
            if q.hierarchy.type == "auto" and described.get(q.column) is not None}
    return profile_table(con, source.sql(), cols) if cols else {}


def load_hierarchy(spec: ReleaseSpec, qid: QuasiIdentifier, source: Q.Source, con: Connector,
                   profiles: dict[str, ColumnProfile] | None = None, previous: RunRecord | None = None) -> hier.Hierarchy:
    """A QID's hierarchy: its ARX file, or generated from the column's distinct values, or built
    from the data (``auto``). An ``auto`` hierarchy keeps the definition the release's published
    version stored (the same builder and parameters, applied to this version's values) unless
    its spec says ``rebuild = true`` or gives an override the stored definition does not have."""
    h = qid.hierarchy
    if h.type == "auto":
        if profiles and qid.column in profiles:
            check(profiles[qid.column])
        frame = con.query(PR.value_counts_query(source.sql(), qid.column, con.dialect))
        counts = dict(zip(frame["v"].to_list(), (int(n) for n in frame["n"].to_list()), strict=True))
        overrides = dict(h.auto)
        stored = ((previous.solution or {}).get("hierarchies") or {}).get(qid.column) if previous is not None else None
        kept = Definition.from_json(stored) if stored is not None and not overrides.get("rebuild", False) else None
        if kept is not None and all(kept.builder == v if k == "builder" else kept.param(k) == v
                                    for k, v in overrides.items() if k != "rebuild"):
            definition = kept  # the published definition, unless an override of the spec now says otherwise
        else:
            profile = (profiles or {}).get(qid.column)
            if profile is None:
                profile = from_counts(qid.column, None, counts, sum(counts.values()))
            definition = choose(profile, counts, overrides)
        return build(definition, qid.column, list(counts), counts)
    if h.type == "arx":
        path = Path(h.file or "")  # the spec requires a file for type "arx"
        if not path.is_absolute():
            path = Path(spec.base_dir) / path
        return hier.read_arx_csv(path, qid.column, duplicates=h.duplicates)
    values = con.query(Q.distinct_values_query(source, qid.column))["v"].to_list()
    if not values:
        raise DataError(f"Column {qid.column!r} has only NULL values; a hierarchy cannot be generated.")
    if h.type == "intervals":
        return hier.intervals(qid.column, values, widths=h.widths, levels=h.levels or 4)
    if h.type == "masking":
        return hier.masking(qid.column, values, levels=h.levels)
    return hier.GENERATORS[h.type](qid.column, values)


def source_fingerprint(con: Connector, source: Q.Source, key: str, columns: list[str],
                       types: dict[str, str] | None = None) -> str:
    """Row count and an order-free sum of row hashes of the whole source (SQL, in the database).
    ``types``: the columns' described SQL types (the same fingerprint, planned faster)."""
    row = con.query(Q.fingerprint_query(source, key, columns, types)).row(0, named=True)
    return f"{row['n']}:{row['s']}"
