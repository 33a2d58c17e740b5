"""The statements of a release, as SQL text for one dialect.

User names (tables, columns, schemas) only enter through ``quote_ident``/``quote_table`` or
sqlglot identifiers; user values (release names, attribute names) only as bound parameters or
sqlglot string literals. The one piece of user SQL we accept, ``source.query``, is parsed by
sqlglot and must be a single SELECT; it is then embedded as a subquery.
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.errors import build_error
from ppdp.sql.predicate import parse_predicate, predicate_sql, qualified
from ppdp.sql.quoting import (
    columns,
    count_star,
    ident,
    quote_ident,
    quote_table,
    render,
    slot,
    table_expr,
)
from ppdp.sql.relations import joint_column

PRIVATE_SCHEMA = "_ppdp"
COUNT_COLUMN = "__ppdp_n"  # the row count column of the histogram (engine.core.encoding reads it)
ROW_ID = "ppdp_row_id"  # the release row id column of every published version
STORAGE_ROW_ID = "__ppdp_storage_row"  # a source row's storage row id (text_rows_query)


@dataclass(frozen=True)
class Source:
    """The relation a release reads: a table or a user SELECT."""

    schema: str | None
    table: str | None
    query: str | None
    dialect: Dialect
    # Keys withheld from this release before optimization (cross-version repair): the name of
    # a private table with one VARCHAR column ``key``, and the key column it refers to.
    withheld: str | None = None
    key: str | None = None
    # The dialect source.query is written in, when SQL for another dialect is generated from it
    # (``ppdp sql``); None: ``dialect``.
    query_dialect: Dialect | None = None
    # A research subset (delta-presence, Nergiz et al. 2007): a user predicate over the source's
    # columns, parsed and checked by sql/predicate.py (never pasted); the release reads only the
    # rows it holds, while the population (the same source without it) is read separately.
    research: str | None = None

    def is_plain_table(self) -> bool:
        """A table read as it stands: no query, research subset or withheld keys around it."""
        return self.table is not None and self.withheld is None and self.research is None

    def sql(self) -> str:
        """FROM-clause text of the relation, aliased ``src``."""
        if self.table is not None:
            inner = quote_table(self.schema, self.table, self.dialect)
            if self.withheld is None and self.research is None:
                return f"{inner} AS src"
            inner = f"SELECT * FROM {inner}"
        else:
            inner = self.parsed_query().sql(dialect=self.dialect.name)
        if self.research is not None:
            tree = parse_predicate(self.research, "research", self.query_dialect or self.dialect)
            inner = f"SELECT * FROM ({inner}) AS r WHERE {predicate_sql(tree, 'r', self.dialect)}"
        if self.withheld is not None:
            # NOT EXISTS, not NOT IN: PostgreSQL plans NOT IN (subquery) as a per-row scan of the
            # subquery (NULL semantics forbid a hash anti-join); NOT EXISTS becomes Hash Anti Join.
            inner = (f"SELECT * FROM ({inner}) AS w WHERE NOT EXISTS (SELECT 1 FROM "
                     f"{quote_table(PRIVATE_SCHEMA, self.withheld, self.dialect)} AS wk "
                     f"WHERE wk.key = {text(self.key or '', 'w', self.dialect)})")
        return f"({inner}) AS src"

    def parsed_query(self) -> exp.Query:
        try:
            parsed = sqlglot.parse(self.query or "", read=(self.query_dialect or self.dialect).name)
        except sqlglot.errors.ParseError as exc:
            raise build_error(f"source.query is not valid SQL: {str(exc).splitlines()[0]}") from None
        if len(parsed) != 1 or not isinstance(parsed[0], exp.Query):
            raise build_error("source.query must be exactly one SELECT statement. Hint: one SELECT (or WITH ... SELECT), no trailing statements.")
        return parsed[0]

    def describe(self) -> str:
        return quote_table(self.schema, self.table, self.dialect) if self.table is not None else "source.query"


# The canonical text of a floating value is PostgreSQL's: the shortest digits that read back
# to the value, in fixed notation while the decimal exponent E of the first digit is in [-4, 15)
# ('39', '39.5', '10000000', '0.0001'), else as '<d>[.<ddd>]e<+|-><at least two digits>'
# ('1e+20', '1.5e-05'), and 'NaN', 'Infinity', '-Infinity'. Hierarchy leaves, suppressed keys and
# row ids are text, so a release published from one database and rebuilt on another, or the same
# table on two engines, match only if every engine writes this. The others' CAST is rewritten:
#
# * DuckDB writes the same digits, but '39.0' for an integral value, fixed notation up to E = 15
#   ('1000000000000000.0' where PostgreSQL writes '1e+15'), and 'nan' (or '-nan'), 'inf', '-inf'.
# * Spark writes Java's Double.toString ('39.0', '1.0E7', '1.5E-5') and is not rewritten yet: a
#   rewrite in its SQL is a 2.5 KB CASE per column wherever the column's type is not described
#   (the release's joins, verification, reports), which made the Spark tests half as slow again.
#   docs/reference/spec.md says what this means for a Spark table's DOUBLE columns.
#
# The rewrite is a template over a text column ``s`` (CAST of the value). D: the digits without
# sign, point and trailing zeros. It applies to DuckDB's DOUBLE and FLOAT columns only: typeof()
# of a column is a constant, so other types keep a plain CAST. REAL columns keep each engine's own
# text (PostgreSQL switches a REAL to an exponent from 1e6, DuckDB does not).
_FLOAT_TYPES = ("DOUBLE", "FLOAT")
_D_SIGN = "regexp_extract(s, '^(-?)', 1)"
_DUCKDB_D = "regexp_replace(regexp_replace(s, '[-.]', '', 'g'), '0+$', '')"
DUCKDB_FLOAT_TEXT = f"""CASE
  WHEN s IN ('nan', '-nan') THEN 'NaN' WHEN s = 'inf' THEN 'Infinity' WHEN s = '-inf' THEN '-Infinity'
  WHEN regexp_matches(s, '^-?[0-9]{{16}}[.]') THEN concat({_D_SIGN}, substr({_DUCKDB_D}, 1, 1),
    CASE WHEN length({_DUCKDB_D}) > 1 THEN concat('.', substr({_DUCKDB_D}, 2)) ELSE '' END, 'e+15')
  ELSE regexp_replace(s, '[.]0$', '')
END"""
# (the template, its dialect, the types it applies to as typeof() names them)
_FLOAT_REWRITES = {"duckdb": (DUCKDB_FLOAT_TEXT, "duckdb", _FLOAT_TYPES)}


@functools.lru_cache(maxsize=8)
def _float_template(form: str) -> exp.Expr:
    template, read, _ = _FLOAT_REWRITES[form]
    return sqlglot.parse_one(template, read=read)


def float_text_expr(text: exp.Expression, dialect: Dialect) -> exp.Expr:
    """The canonical text (above) of a floating value whose CAST to text is ``text``."""
    if dialect.float_text is None:
        return text
    return _float_template(dialect.float_text).transform(
        lambda node: text.copy() if isinstance(node, exp.Column) and node.name == "s" and not node.table else node)


def canonical_float_text(value: float) -> str:
    """The canonical text (above) of a double in Python: what ``text_expr`` writes on every
    dialect, PostgreSQL's own text of it (Python's repr is the same shortest digits). Where those
    digits lie exactly halfway between two doubles PostgreSQL writes one digit more, and Spark
    writes Java's text: docs/reference/spec.md."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign, digits, exponent = decimal.Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    d = "".join(map(str, digits)).rstrip("0") or "0"
    lead = len(digits) + exponent - 1 if d != "0" else 0  # E: the decimal exponent of the first digit
    minus = "-" if sign else ""
    if -4 <= lead < 15:
        if lead < 0:
            return f"{minus}0.{'0' * (-lead - 1)}{d}"
        return f"{minus}{d}{'0' * (lead + 1 - len(d))}" if len(d) <= lead + 1 else f"{minus}{d[:lead + 1]}.{d[lead + 1:]}"
    return f"{minus}{d[0]}{'.' + d[1:] if len(d) > 1 else ''}e{'-' if lead < 0 else '+'}{abs(lead):02d}"


def text_expr(column: exp.Expression, dialect: Dialect) -> exp.Expression:
    """``column`` as canonical text (see above), as a sqlglot expression for ``dialect``."""
    cast = exp.cast(column.copy(), exp.DataType.build("VARCHAR"))
    if dialect.float_text is None:
        return cast
    is_float = exp.In(this=exp.Anonymous(this="typeof", expressions=[column.copy()]),
                      expressions=[exp.Literal.string(t) for t in _FLOAT_REWRITES[dialect.float_text][2]])
    return exp.Case(ifs=[exp.If(this=is_float, true=float_text_expr(cast, dialect))], default=cast)


def text(col: str, alias: str, dialect: Dialect, sql_type: str | None = None) -> str:
    """A source column as text: the form in which it is compared with hierarchy leaves and keys
    (the same on every dialect, floating values included). ``sql_type``, the column's type as the
    database describes it, picks the one expression that type needs (typed_text_kind)."""
    kind = typed_text_kind(sql_type, dialect)
    template, placeholder = _text_template(alias, dialect, kind)
    return template.replace(placeholder, quote_ident(col, dialect))


# DuckDB types whose canonical text the type alone decides, so the histogram query can render
# them with one expression chosen here instead of the run-time ``CASE typeof`` of text_expr:
# DuckDB folds that CASE to the same expression, but binding and folding it was most of the
# planning of a small table's histogram query (8 columns: a large share of a 1,000-record
# prepare). typeof() of a column is its declared type, so the choice is the one the CASE makes:
# the float types strip '.0', the others are a plain CAST (VARCHAR: the column itself). Any type
# not listed (and every source.query column, whose types are not described) keeps text_expr.
_PLAIN_CAST_TYPES = frozenset({"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER",
                               "USMALLINT", "UTINYINT", "BOOLEAN", "DATE", "TIMESTAMP"})


def typed_text_kind(sql_type: str | None, dialect: Dialect) -> str | None:
    """How a column of ``sql_type`` becomes canonical text on ``dialect``: "bare" (VARCHAR),
    "float" (the float rewrite), "cast" (a plain CAST), or None (not known, or a dialect whose
    CAST is the canonical text: the general expression)."""
    if sql_type is None or dialect.float_text is None:
        return None
    t = sql_type.strip().upper()
    if t == "VARCHAR":
        return "bare"
    if t in _FLOAT_TYPES:
        return "float"
    if t in _PLAIN_CAST_TYPES or (t.startswith("DECIMAL(") and t.endswith(")")):
        return "cast"
    return None


_TEXT_PLACEHOLDER = "ppdp_text_column_placeholder"


@functools.lru_cache(maxsize=64)
def _text_template(alias: str, dialect: Dialect, kind: str | None = None) -> tuple[str, str]:
    """``text`` of a placeholder column, rendered by sqlglot once per (alias, dialect, kind), and
    the placeholder's quoted form: ``text`` puts the quoted column in its place. The same SQL as
    rendering ``text_expr`` per column, at the cost of quoting one identifier: the expression
    tree's build, copies and generation were the largest part of preparing a 1,000-record release
    (over a third of it, for the histogram query's 8 columns). ``kind`` "float"/"cast": the branch
    of text_expr that a column of a known type takes, "bare" the column itself (typed_text_kind)."""
    column = exp.column(_TEXT_PLACEHOLDER, alias, quoted=True)
    cast = exp.cast(column, exp.DataType.build("VARCHAR"))
    if kind == "bare":
        tree: exp.Expr = column
    elif kind == "cast":
        tree = cast
    elif kind == "float":
        tree = float_text_expr(cast, dialect)
    else:
        tree = text_expr(column, dialect)
    return tree.sql(dialect=dialect.name), quote_ident(_TEXT_PLACEHOLDER, dialect)


def histogram_query(source: Source, qids: list[str], sensitive: list[str], types: Mapping[str, str] | None = None) -> str:
    """The one GROUP BY that compresses the source into (QID text, SA text, count) rows.
    ``types`` (column -> SQL type, when described): see typed_text_kind."""
    d = source.dialect
    types = types or {}
    cols = [f"{text(c, 'src', dialect=d, sql_type=types.get(c))} AS {quote_ident(c, d)}" for c in qids + sensitive]
    keys = ", ".join(str(i + 1) for i in range(len(cols)))
    return f"SELECT {', '.join(cols)}, COUNT(*) AS {quote_ident(COUNT_COLUMN, d)} FROM {source.sql()} GROUP BY {keys}"


def text_rows_query(source: Source, columns: list[str], types: Mapping[str, str] | None = None, limit: int | None = None,
                    *, storage_row_id: bool = False) -> str:
    """Every source row's ``columns`` as the canonical text of histogram_query, not grouped: a
    small in-process table is grouped faster by its encoding than by the database.
    ``limit``: at most that many rows. ``storage_row_id``: then each row's storage row id
    (``Dialect.storage_row_id``) as a last column, STORAGE_ROW_ID; only for a source that is a
    base table as it stands (no query, research subset or withheld keys)."""
    d = source.dialect
    types = types or {}
    cols = [f"{text(c, 'src', dialect=d, sql_type=types.get(c))} AS {quote_ident(c, d)}" for c in columns]
    if storage_row_id:
        if d.storage_row_id is None or not source.is_plain_table():
            raise ValueError(f"no storage row id for {source.describe()} in {d}")
        cols.append(f"src.{d.storage_row_id} AS {quote_ident(STORAGE_ROW_ID, d)}")
    tail = "" if limit is None else f" LIMIT {int(limit)}"
    return f"SELECT {', '.join(cols)} FROM {source.sql()}{tail}"


def _src_column(column: str) -> exp.Column:
    """``src.<column>``, the column quoted (the alias ``src`` as Source.sql writes it)."""
    return exp.Column(this=ident(column), table=exp.to_identifier("src"))


def distinct_values_query(source: Source, column: str) -> str:
    d = source.dialect
    tree = (exp.select(exp.alias_(text_expr(exp.column(column, "src", quoted=True), d), "v")).distinct().from_(slot("source"))
            .where(_src_column(column).is_(exp.null()).not_()))
    return render(tree, d, {"source": source.sql()})


def key_rows_query(source: Source, key: str) -> str:
    """The key of every source row, as stored (a small in-process source's key is counted
    where it is read: engine.release.stages.validate.key_counts)."""
    tree = exp.select(_src_column(key)).from_(slot("source"))
    return render(tree, source.dialect, {"source": source.sql()})


def key_check_query(source: Source, key: str) -> str:
    """Rows, distinct keys and NULL keys: the key must identify rows."""
    k = _src_column(key)
    tree = exp.select(count_star("n"), exp.alias_(exp.Count(this=exp.Distinct(expressions=[k])), "distinct_keys"),
                      exp.alias_(exp.Sub(this=exp.Count(this=exp.Star()), expression=exp.Count(this=k.copy())), "null_keys"))
    return render(tree.from_(slot("source")), source.dialect, {"source": source.sql()})


def null_safe_eq(a: str, b: str) -> str:
    """``a IS NOT DISTINCT FROM b`` for two text expressions, written as equalities so that every
    database can hash-join on it (PostgreSQL only nested-loops on IS NOT DISTINCT FROM)."""
    return f"COALESCE({a}, '') = COALESCE({b}, '') AND ({a} IS NULL) = ({b} IS NULL)"


def combination_hash(columns: list[str], alias: str, d: Dialect) -> str:
    """md5 of the canonical texts of ``columns`` (of relation ``alias``): one join key per (QID,
    SA) combination, unambiguous (each value length-prefixed, NULL as 'N')."""
    parts = []
    for c in columns:
        t = text(c, alias, d)
        parts.append(f"COALESCE(CAST(LENGTH({t}) AS VARCHAR) || ':' || {t}, 'N')")
    return f"MD5({' || '.join(parts)})"


def suppressed_keys_query(source: Source, key: str, qids: list[str], sensitive: list[str], retained_table: str) -> str:
    """Keys of the rows to suppress, chosen per (QID, SA) combination by key order.

    ``retained_table`` (private schema) holds, per combination, how many rows to keep; rows
    beyond that rank — and rows of combinations not in it (NULL QIDs) — are suppressed.

    Only combinations kept in part are ranked, and combinations are matched by one hash column:
    ranking every row by all QID and SA texts, and joining on 2 conditions per column, made
    PostgreSQL sort the whole source to disk several times (most of a 1M-row release).
    """
    d = source.dialect
    cols = qids + sensitive
    k = quote_ident(key, d)
    n = quote_ident(COUNT_COLUMN, d)
    return (
        f"WITH s AS (SELECT src.{k} AS {k}, {combination_hash(cols, 'src', d)} AS combo FROM {source.sql()}), "
        f"r AS (SELECT {combination_hash(cols, 'rt', d)} AS combo, rt.{n} AS keep "
        f"FROM {quote_table(PRIVATE_SCHEMA, retained_table, d)} AS rt), "
        f"j AS (SELECT s.{k} AS {k}, s.combo AS combo, COALESCE(r.keep, 0) AS keep FROM s LEFT JOIN r ON r.combo = s.combo), "
        f"p AS (SELECT combo, MIN(keep) AS keep FROM j WHERE keep > 0 GROUP BY combo HAVING COUNT(*) > MIN(keep)) "
        f"SELECT {text(key, 'j', d)} AS key FROM j WHERE keep = 0 "
        f"UNION ALL "
        f"SELECT {text(key, 'ranked', d)} AS key FROM (SELECT j.{k} AS {k}, p.keep AS keep, "
        f"ROW_NUMBER() OVER (PARTITION BY j.combo ORDER BY j.{k}) AS rn FROM j JOIN p ON p.combo = j.combo) AS ranked "
        f"WHERE ranked.rn > ranked.keep"
    )


def release_select(
    source: Source,
    *,
    release: str,
    version: int,
    columns: list[str],
    levels: dict[str, int],
    key: str,
    row_ids: bool = True,
    private_schema: str = PRIVATE_SCHEMA,
) -> exp.Select:
    """SELECT of the released rows, ``columns`` in order: QIDs (those in ``levels``) generalized
    by joins to the stored hierarchies, other columns as they are, suppressed keys removed."""
    d = source.dialect
    from_: exp.Table | exp.Subquery
    if source.table is not None:
        from_ = table_expr(source.schema, source.table, alias="src")
    else:
        from_ = exp.Subquery(this=source.parsed_query(), alias=exp.TableAlias(this=ident("src")))
    select = exp.select().from_(from_)
    projections: list[exp.Expr] = []
    for i, col in enumerate(columns):
        if col not in levels:
            projections.append(exp.column(col, "src", quoted=True))
            continue
        level = levels[col]
        alias = f"h{i}"
        cond = exp.and_(
            exp.column("release", alias, quoted=True).eq(exp.Literal.string(release)),
            exp.column("version", alias, quoted=True).eq(exp.Literal.number(version)),
            exp.column("attribute", alias, quoted=True).eq(exp.Literal.string(col)),
            exp.column("level", alias, quoted=True).eq(exp.Literal.number(level)),
            exp.column("leaf", alias, quoted=True).eq(text_expr(exp.column(col, "src", quoted=True), d)),
        )
        # LEFT JOIN: PostgreSQL estimates each inner join on leaf from the leaf count of the
        # whole hierarchies table, so after a few QIDs it expects 1 row and nests loops over the
        # source (slow on 1M rows); an outer join keeps the estimate at the source's size. Same
        # rows: a row whose QID matches no leaf (NULL) is a suppressed key, removed below.
        select = select.join(table_expr(private_schema, "hierarchies", alias=alias), on=cond, join_type="left")
        projections.append(exp.alias_(exp.column("value", alias, quoted=True), ident(col)))
    if row_ids:
        # Random surrogate per source key, stable across versions (never derived from the key).
        cond = exp.and_(
            exp.column("release", "rid", quoted=True).eq(exp.Literal.string(release)),
            exp.column("key", "rid", quoted=True).eq(text_expr(exp.column(key, "src", quoted=True), d)),
        )
        select = select.join(table_expr(private_schema, "row_ids", alias="rid"), on=cond)
        projections.insert(0, exp.alias_(exp.column("row_id", "rid", quoted=True), ident(ROW_ID)))
    select = select.select(*projections)
    # Suppressed keys leave by a correlated NOT EXISTS: PostgreSQL hash-anti-joins it, while
    # NOT IN (subquery) is a per-row subplan there (its NULL semantics forbid the hash plan).
    key_text = text_expr(exp.column(key, "src", quoted=True), d)
    suppressed = (
        exp.select(exp.Literal.number(1))
        .from_(table_expr(private_schema, "suppressed", alias="s"))
        .where(
            exp.and_(
                exp.column("release", "s", quoted=True).eq(exp.Literal.string(release)),
                exp.column("version", "s", quoted=True).eq(exp.Literal.number(version)),
                exp.column("key", "s", quoted=True).eq(key_text),
            )
        )
    )
    select = select.where(exp.not_(exp.Exists(this=suppressed)), dialect=d.name)
    if source.research is not None:  # delta-presence: only the research subset is released
        tree = parse_predicate(source.research, "research", source.query_dialect or d)
        select = select.where(qualified(tree, "src"), dialect=d.name)
    return select


# --- verification: independent checks of a materialized release ----------------------------


def _group(cols: list[str], d: Dialect) -> str:
    return ", ".join(quote_ident(c, d) for c in cols)


def verify_k_query(relation: str, qids: list[str], d: Dialect) -> str:
    """Smallest class size of the released table (NULL when empty)."""
    sizes = exp.select(count_star("n")).from_(slot()).group_by(*columns(qids))
    tree = exp.select(exp.alias_(exp.Min(this=exp.column("n")), "ad"), count_star("classes")).from_(sizes.subquery("c"))
    return render(tree, d, {"relation": relation})


def verify_t_query(relation: str, source: Source, qids: list[str], sensitive: list[str]) -> str:
    """Largest Euclidean distance (HAEF eq. 2-4) between a class's SA distribution and Q,
    Q taken over the whole source table (docs/design/paper_notes.md §2)."""
    d = source.dialect
    sa_src = ", ".join(f"{text(c, 'src', dialect=d)} AS {quote_ident(c, d)}" for c in sensitive)
    sa_g = ", ".join(str(i + 1) for i in range(len(sensitive)))
    sa_match = " AND ".join(
        f"{text(c, 'p', d)} IS NOT DISTINCT FROM q.{quote_ident(c, d)}" for c in sensitive
    )
    cls_on = " AND ".join(f"p.{quote_ident(c, d)} = c.{quote_ident(c, d)}" for c in qids)
    g = _group(qids, d)
    pg = ", ".join(f"p.{quote_ident(c, d)}" for c in qids)
    return (
        f"WITH q AS (SELECT {sa_src}, COUNT(*) * 1.0 / (SELECT COUNT(*) FROM {source.sql()}) AS q "
        f"FROM {source.sql()} GROUP BY {sa_g}), "
        f"qq AS (SELECT SUM(q * q) AS s FROM q), "
        f"c AS (SELECT {g}, COUNT(*) AS n FROM {relation} GROUP BY {g}), "
        f"p AS (SELECT {g}, {_group(sensitive, d)}, COUNT(*) AS nv FROM {relation} GROUP BY {g}, {_group(sensitive, d)}), "
        f"dist AS (SELECT {pg}, SUM((p.nv * 1.0 / c.n - q.q) * (p.nv * 1.0 / c.n - q.q) - q.q * q.q) AS part "
        f"FROM p JOIN c ON {cls_on} JOIN q ON {sa_match} GROUP BY {pg}) "
        f"SELECT MAX(SQRT(GREATEST(part + (SELECT s FROM qq), 0))) AS ad, COUNT(*) AS classes FROM dist"
    )


def verify_l_query(relation: str, qids: list[str], sensitive: list[str], *, entropy: bool, d: Dialect) -> str:
    """Smallest distinct count (or exp(entropy)) of sensitive values over classes."""
    rel = slot()
    if not entropy:
        pairs = exp.select(*columns(qids), *columns(sensitive)).distinct().from_(rel)
        per_class = exp.select(*columns(qids), count_star("dv")).from_(pairs.subquery("x")).group_by(*columns(qids))
        return render(exp.select("MIN(dv) AS ad", "COUNT(*) AS classes").from_(per_class.subquery("c")), d, {"relation": relation})
    count = exp.Count(this=exp.Star())
    # typed: the dialect's own '/' (the numerator is a decimal already), no emulating cast
    share = exp.Div(this=exp.Mul(this=count, expression=exp.Literal.number("1.0")),
                    expression=exp.Window(this=exp.Sum(this=count.copy()), partition_by=columns(qids)), typed=True)
    shares = exp.select(*columns(qids), exp.alias_(share, "p")).from_(rel).group_by(*columns(qids), *columns(sensitive))
    per_class = exp.select(*columns(qids), "SUM(p * LN(p)) AS h").from_(shares.subquery("x")).group_by(*columns(qids))
    return render(exp.select("MIN(EXP(-h)) AS ad", "COUNT(*) AS classes").from_(per_class.subquery("c")), d, {"relation": relation})


# --- dynamic publishing ----------------------------------------------------------------------


# A value's text within a row's or a tuple's text: '~' written '~0' first, then '|' '~1' and '\'
# '~2', NULL as '\N'; the texts joined by '|'. No escaped text holds a '|' or a '\', or a '~'
# but an escape's, so the joined text spells exactly one tuple (the hashes of sql/history.py and
# of a row's change are injective up to md5). A text without '~', '|' and '\' is itself, and
# NULL '\N', as under the earlier escape that only doubled '|' (not injective: ('a|', 'b') and
# ('a', '|b') were one text), so only texts holding those characters changed their hash.
def escaped_text_expr(expr: str) -> str:
    """SQL of ``expr``'s escaped text (above). The backslash is CHR(92): Spark reads a backslash in
    a literal as an escape (its '\\N' is 'N', a NULL there was the text 'N')."""
    return f"COALESCE(REPLACE(REPLACE(REPLACE({expr}, '~', '~0'), '|', '~1'), CHR(92), '~2'), CHR(92) || 'N')"


def escaped_text(value: str | None) -> str:
    """``escaped_text_expr`` in Python, for texts read into the process."""
    return "\\N" if value is None else value.replace("~", "~0").replace("|", "~1").replace("\\", "~2")


def row_text_expr(columns: list[str], d: Dialect, types: Mapping[str, str] | None = None) -> str:
    """A row's text, NULL-safe and injective (each value's ``escaped_text_expr``, joined by '|').
    ``types`` (column -> SQL type, when described): each column's typed text (typed_text_kind),
    the same text as the general expression's, which on DuckDB is a CASE on typeof() with the
    float rewrite for every column."""
    types = types or {}
    return " || '|' || ".join(escaped_text_expr(text(c, 'src', dialect=d, sql_type=types.get(c))) for c in columns)


def row_hash_expr(columns: list[str], d: Dialect, types: Mapping[str, str] | None = None) -> str:
    """md5 of a row's text (``row_text_expr``)."""
    return f"MD5({row_text_expr(columns, d, types)})"


def hex_prefix_bigint(expr: str, d: Dialect) -> str:
    """The first 12 hex digits of an md5 as a BIGINT (for an order-free sum fingerprint)."""
    return d.hex_bigint.format(expr)


def fingerprint_query(source: Source, key: str, columns: list[str], types: Mapping[str, str] | None = None) -> str:
    """Row count and an order-independent sum of row hashes: changes when any row changes.
    ``types``: see row_text_expr."""
    d = source.dialect
    h = row_hash_expr([key] + [c for c in columns if c != key], d, types)
    if d.narrow_bigint_sum:
        # 48-bit terms overflow Spark's BIGINT SUM (an error under ANSI) past ~65,000 rows, where
        # DuckDB sums into HUGEINT and PostgreSQL into numeric: sum DECIMAL(38, 0), exact to
        # 10^38 (~3 * 10^23 rows), and return its digits as text (the connector reads DECIMAL as
        # float64, which would round the fingerprint)
        return (f"SELECT COUNT(*) AS n, CAST(SUM(CAST({hex_prefix_bigint(h, d)} AS DECIMAL(38, 0))) AS STRING) AS s "
                f"FROM {source.sql()}")
    return f"SELECT COUNT(*) AS n, SUM({hex_prefix_bigint(h, d)}) AS s FROM {source.sql()}"


def row_state_select(source: Source, key: str, columns: list[str]) -> str:
    """(key text, row hash) of every source row."""
    d = source.dialect
    return f"SELECT {text(key, 'src', dialect=d)} AS key, {row_hash_expr(columns, d)} AS row_hash FROM {source.sql()}"


def new_row_ids_statement(source: Source) -> str:
    """Give every source key without a release row id a random one (params: release, release)."""
    d = source.dialect
    k = text(source.key or "", 'src', dialect=d)
    # A correlated NOT EXISTS (hash anti-join on PostgreSQL); NOT IN (subquery) made a
    # million-row rerun scan row_ids once per source row.
    return (
        f"INSERT INTO {quote_table(PRIVATE_SCHEMA, 'row_ids', d)} (release, key, row_id) "
        f"SELECT ?, {k}, CAST(gen_random_uuid() AS VARCHAR) FROM {source.sql()} "
        f"WHERE NOT EXISTS (SELECT 1 FROM {quote_table(PRIVATE_SCHEMA, 'row_ids', d)} AS known "
        f"WHERE known.release = ? AND known.key = {k})"
    )


def changes_query(source: Source, key: str, columns: list[str]) -> str:
    """Inserted, deleted and updated source rows since the last release (param: release)."""
    d = source.dialect
    return (
        f"SELECT COALESCE(SUM(CASE WHEN o.key IS NULL THEN 1 ELSE 0 END), 0) AS inserted, "
        f"COALESCE(SUM(CASE WHEN n.key IS NULL THEN 1 ELSE 0 END), 0) AS deleted, "
        f"COALESCE(SUM(CASE WHEN o.key IS NOT NULL AND n.key IS NOT NULL AND o.row_hash <> n.row_hash THEN 1 ELSE 0 END), 0) AS updated "
        f"FROM ({row_state_select(source, key, columns)}) AS n FULL OUTER JOIN "
        f"(SELECT key, row_hash FROM {quote_table(PRIVATE_SCHEMA, 'row_state', d)} WHERE release = ?) AS o ON n.key = o.key"
    )


def joint_classes_relation(current: str, previous: list[str], qids: list[str], sensitive: list[str], d: Dialect) -> str:
    """Records of ``current`` that also appear in a previous version, with their generalized
    QIDs in every version side by side (NULL where absent): the joint grouping an adversary who
    holds all versions can form. Columns: row id, joint QID columns ``q__vI``, sensitive columns."""
    rid = quote_ident(ROW_ID, d)
    cols = [f"c.{rid} AS {rid}"] + [f"c.{quote_ident(q, d)} AS {quote_ident(q + '__now', d)}" for q in qids]
    cols += [f"c.{quote_ident(s, d)} AS {quote_ident(s, d)}" for s in sensitive]
    joins, present = [], []
    for i, rel in enumerate(previous):
        a = f"p{i}"
        cols += [f"{a}.{quote_ident(q, d)} AS {quote_ident(joint_column(q, i), d)}" for q in qids]
        joins.append(f"LEFT JOIN {rel} AS {a} ON {a}.{rid} = c.{rid}")
        present.append(f"{a}.{rid} IS NOT NULL")
    return f"(SELECT {', '.join(cols)} FROM {current} AS c {' '.join(joins)} WHERE {' OR '.join(present)}) AS joint"


def joint_columns(qids: list[str], n_previous: int) -> list[str]:
    return [q + "__now" for q in qids] + [joint_column(q, i) for i in range(n_previous) for q in qids]


def small_joint_classes_query(joint: str, cols: list[str], k: int, d: Dialect) -> str:
    """Row ids in joint classes smaller than k (k is an int from a validated spec)."""
    part = ", ".join(quote_ident(c, d) for c in cols)
    rid = quote_ident(ROW_ID, d)
    return f"SELECT {rid} AS row_id FROM (SELECT {rid}, COUNT(*) OVER (PARTITION BY {part}) AS n FROM {joint}) AS x WHERE n < {int(k)}"
