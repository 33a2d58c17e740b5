"""The fast reading of prepare gives the table of the general one, field by field:
encode_rows (a small DuckDB source's rows grouped by leaf codes) against encode_histogram of the
same rows' GROUP BY, the typed text expressions against the general ``CASE typeof`` one on every
DuckDB type, and stages.validate.read_encoded against the histogram query on DuckDB tables of
every column type, NULLs, values with spaces and quotes, and "01" against 1."""

from __future__ import annotations

import datetime
import decimal

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from ppdp.connectors.duckdb_connector import DuckDBConnector
from ppdp.engine.core.encoding import COUNT_COLUMN, EncodedTable, encode_histogram, encode_rows
from ppdp.engine.core.hierarchy import from_rows
from ppdp.engine.release.stages.validate import read_encoded
from ppdp.errors import DataError, HierarchyError
from ppdp.sql import queries as Q
from ppdp.sql.dialect import DUCKDB, dialect_named
from tests.oracles.test_flash import random_hierarchy


def assert_same_table(a: EncodedTable, b: EncodedTable) -> None:
    """Every field the evaluator, the optimizers and the release read."""
    assert a.qids == b.qids and a.sensitive == b.sensitive and a.hierarchies == b.hierarchies
    for name in ("codes", "sa", "counts"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.flags.c_contiguous and y.flags.c_contiguous, name
        assert np.array_equal(x, y), name
    assert a.sa_values == b.sa_values
    assert a.values.schema == b.values.schema and a.values.rows() == b.values.rows()
    assert a.excluded_null_rows == b.excluded_null_rows
    assert (a.reference_q is None) == (b.reference_q is None)
    if a.reference_q is not None:
        assert np.array_equal(a.reference_q, b.reference_q)


def random_rows(seed: int, sensitive: list[str], nulls: bool = False):
    """Ungrouped rows (repeats likely) over random hierarchies; SA values include NULL, QIDs too
    when ``nulls``."""
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 6))
    names = [f"q{q}" for q in range(nq)]
    hs = [random_hierarchy(rng, n, int(rng.integers(1, 9)), int(rng.integers(1, 4))) for n in names]
    n = int(rng.integers(1, 400))
    data: dict[str, list] = {name: [None if nulls and rng.random() < 0.05 else h.leaves[int(rng.integers(len(h.leaves)))]
                                    for _ in range(n)] for name, h in zip(names, hs, strict=True)}
    data["s1"] = [None if rng.random() < 0.1 else str(int(rng.integers(4))) for _ in range(n)]
    data["s2"] = [["x", "y", "it's"][int(rng.integers(3))] for _ in range(n)]
    frame = pl.DataFrame(data, schema={c: pl.String for c in data})
    return frame.sample(fraction=1.0, shuffle=True, seed=seed), names, hs


def grouped(rows: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    return rows.group_by(columns).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("sensitive", [[], ["s1"], ["s2", "s1"]])
@pytest.mark.parametrize("with_reference", [False, True])
@pytest.mark.parametrize("use_kernels", [True, False])
def test_encode_rows_is_encode_histogram_of_the_grouped_rows(seed, sensitive, with_reference, use_kernels):
    rows, names, hs = random_rows(seed, sensitive, nulls=seed % 3 == 0)
    reference = None
    if with_reference and sensitive:
        # values the rows hold and one they do not (coded after them, as a stored Q's)
        seen = sorted({tuple(r) for r in rows.select(sensitive).iter_rows()}, key=str)
        reference = {t: 1.0 / (len(seen) + 1) for t in seen} | {tuple("zz" for _ in sensitive): 1.0 / (len(seen) + 1)}
    arrow = rows.to_arrow()
    if seed % 2:  # DuckDB hands large results over in several record batches
        arrow = pa.concat_tables([arrow.slice(0, arrow.num_rows // 2), arrow.slice(arrow.num_rows // 2)])
    histogram = grouped(rows, names + sensitive)
    n_null = rows.filter(pl.any_horizontal([pl.col(c).is_null() for c in names])).height
    if n_null:
        with pytest.raises(DataError) as fast_error:
            encode_rows(arrow, names, sensitive, hs, reference=reference, use_kernels=use_kernels)
        with pytest.raises(DataError) as general_error:
            encode_histogram(histogram, names, sensitive, hs, reference=reference)
        assert str(fast_error.value) == str(general_error.value) and f"{n_null} source rows" in str(fast_error.value)
    if n_null == rows.height:  # nothing left: the general path says so
        assert encode_rows(arrow, names, sensitive, hs, null_policy="suppress", reference=reference,
                           use_kernels=use_kernels) is None
        return
    fast = encode_rows(arrow, names, sensitive, hs, null_policy="suppress", reference=reference, use_kernels=use_kernels)
    assert fast is not None
    assert_same_table(fast, encode_histogram(histogram, names, sensitive, hs, null_policy="suppress", reference=reference))
    assert fast.n_records + fast.excluded_null_rows == rows.height and fast.excluded_null_rows == n_null


@pytest.mark.parametrize("use_kernels", [True, False])
def test_encode_rows_leaves_non_leaves_and_empty_tables_to_the_general_path(use_kernels):
    rows, names, hs = random_rows(3, [])
    not_leaf = rows.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("nope")).otherwise(pl.col(names[0]))
                                 .alias(names[0]))
    assert encode_rows(not_leaf.to_arrow(), names, [], hs, use_kernels=use_kernels) is None
    assert encode_rows(rows.head(0).to_arrow(), names, [], hs, use_kernels=use_kernels) is None


# One column per DuckDB type the typed text covers, and values where text is delicate: integral
# and negative-zero doubles, exponents, NaN and infinities, decimals' trailing zeros, leading
# zeros kept as text, spaces and quotes, dates and timestamps, NULL in every column.
TYPED_COLUMNS: dict[str, tuple[str, list]] = {
    "v": ("VARCHAR", ["01", "1", "a b", "it's", '"q"', "trail ", " lead", "ü", None]),
    "i64": ("BIGINT", [1, -1, 0, 2**62, None, 7, 7, 8, 9]),
    "i32": ("INTEGER", [1, 2, 3, -4, None, 5, 6, 7, 8]),
    "i16": ("SMALLINT", [1, 2, 3, -4, None, 5, 6, 7, 8]),
    "i8": ("TINYINT", [1, 2, 3, -4, None, 5, 6, 7, 8]),
    "i128": ("HUGEINT", [1, 2, 3, -(2**70), None, 5, 6, 7, 8]),
    "u64": ("UBIGINT", [1, 2, 3, 2**63, None, 5, 6, 7, 8]),
    "u32": ("UINTEGER", [1, 2, 3, 4, None, 5, 6, 7, 8]),
    "u16": ("USMALLINT", [1, 2, 3, 4, None, 5, 6, 7, 8]),
    "u8": ("UTINYINT", [1, 2, 3, 4, None, 5, 6, 7, 8]),
    "b": ("BOOLEAN", [True, False, None, True, True, False, False, True, None]),
    "d": ("DOUBLE", [39.0, 39.5, -0.0, 0.0, 1e20, 1e-7, float("nan"), float("inf"), None]),
    "f": ("FLOAT", [39.0, 39.5, -0.0, 0.0, 1e20, 0.1, float("nan"), float("-inf"), None]),
    "dec": ("DECIMAL(10,2)", [decimal.Decimal("1.50"), decimal.Decimal("2"), decimal.Decimal("-0.05"), None,
                              decimal.Decimal("1.5"), decimal.Decimal("0"), decimal.Decimal("3.10"), decimal.Decimal("4"),
                              decimal.Decimal("5")]),
    "dec0": ("DECIMAL(18,0)", [decimal.Decimal(v) for v in ("1", "20", "300", "4", "5", "6", "7", "8")] + [None]),
    "dt": ("DATE", [datetime.date(2024, 1, 2), datetime.date(1999, 12, 31), None] + [datetime.date(2020, 1, d) for d in range(1, 7)]),
    "ts": ("TIMESTAMP", [datetime.datetime(2024, 1, 2, 3, 4, 5), datetime.datetime(2024, 1, 2), None]
           + [datetime.datetime(2020, 1, 1, 0, 0, s) for s in range(6)]),
}


@pytest.fixture()
def typed_table():
    con = duckdb.connect()
    cols = ", ".join(f"{Q.quote_ident(c, DUCKDB)} {t}" for c, (t, _) in TYPED_COLUMNS.items())
    con.execute(f"CREATE TABLE typed (id INTEGER, {cols})")
    n = len(next(iter(TYPED_COLUMNS.values()))[1])
    marks = ", ".join("?" for _ in range(len(TYPED_COLUMNS) + 1))
    con.executemany(f"INSERT INTO typed VALUES ({marks})",
                    [[i, *(vals[i] for _, vals in TYPED_COLUMNS.values())] for i in range(n)])
    yield DuckDBConnector.over(con)
    con.close()


def test_every_typed_text_is_the_general_text(typed_table):
    described = dict(typed_table.relation_columns("main", "typed"))
    for column in TYPED_COLUMNS:
        assert Q.typed_text_kind(described[column], DUCKDB) is not None, (column, described[column])
        typed, general = Q.text(column, "src", DUCKDB, sql_type=described[column]), Q.text(column, "src", DUCKDB)
        assert typed != general
        frame = typed_table.query(f"SELECT {typed} AS typed, {general} AS general FROM main.typed AS src ORDER BY src.id")
        assert frame["typed"].to_list() == frame["general"].to_list(), column
    # the float rule is the one the data needs: integral doubles lose '.0', -0.0 stays apart from 0.0
    d = typed_table.query(f"SELECT {Q.text('d', 'src', DUCKDB, sql_type='DOUBLE')} AS t FROM main.typed AS src ORDER BY src.id")["t"].to_list()
    assert d[:4] == ["39", "39.5", "-0", "0"]


def test_types_without_a_known_text_keep_the_general_expression():
    for sql_type in (None, "ENUM('a', 'b')", "STRUCT(a INTEGER)", "INTEGER[]", "TIME", "INTERVAL", "BLOB", "DECIMAL"):
        assert Q.typed_text_kind(sql_type, DUCKDB) is None
        assert Q.text("c", "src", DUCKDB, sql_type=sql_type) == Q.text("c", "src", DUCKDB)
    postgres = dialect_named("postgres")  # whose CAST is the canonical text: the type changes nothing
    assert Q.text("c", "src", postgres, sql_type="DOUBLE") == Q.text("c", "src", postgres)


@pytest.mark.parametrize("sensitive", [["v"], ["d", "b"], ["dt", "f", "dec0"]])
def test_distribution_query_with_types_is_the_general_one(typed_table, sensitive):
    """t-closeness's Q read with the columns' described types (typed text) has the texts, keys and
    shares of the general query, on every type and with NULLs."""
    from ppdp.sql import history as H

    types = dict(typed_table.relation_columns("main", "typed"))
    source = Q.Source("main", "typed", None, DUCKDB)
    typed = H.distribution_query(source.sql(), sensitive, DUCKDB, types)
    general = H.distribution_query(source.sql(), sensitive, DUCKDB)
    assert typed != general
    want = typed_table.query(general).sort("sa_key")
    assert typed_table.query(typed).sort("sa_key").equals(want) and want.height > 2


def typed_hierarchy(con: DuckDBConnector, column: str, extra: list[str] = ()) -> object:
    """A two-level hierarchy whose leaves are the column's canonical texts (and ``extra``)."""
    leaves = [v for v in con.query(f"SELECT DISTINCT {Q.text(column, 'src', DUCKDB)} AS v FROM main.typed AS src ORDER BY 1")["v"].to_list()
              if v is not None]
    return from_rows(column, [[v, "*"] for v in [*extra, *leaves] if v is not None], source=f"test: {column}")


def general_table(con: DuckDBConnector, qids, sensitive, hierarchies, **kw) -> EncodedTable:
    source = Q.Source("main", "typed", None, DUCKDB)
    return encode_histogram(con.query(Q.histogram_query(source, qids, sensitive)), qids, sensitive, hierarchies, **kw)


@pytest.mark.parametrize("sensitive", [[], ["v"], ["d", "b"]])
def test_read_encoded_is_the_histogram_path_on_every_type(typed_table, sensitive):
    con = typed_table
    types = dict(con.relation_columns("main", "typed"))
    source = Q.Source("main", "typed", None, DUCKDB)
    # NULL-free quasi-identifiers of each type ("01" and "1" are two leaves; 39.0 is the leaf "39")
    qids = ["i64", "dec", "f", "dt"]
    kept = " AND ".join(f"src.{Q.quote_ident(c, DUCKDB)} IS NOT NULL" for c in qids)
    con.execute(f"DELETE FROM main.typed AS src WHERE NOT ({kept})")
    hs = [typed_hierarchy(con, c, extra=["01", "unused"]) for c in qids]
    expected = general_table(con, qids, sensitive, hs)
    n_rows = int(con.query("SELECT COUNT(*) AS n FROM main.typed")["n"][0])
    for n, t in ((n_rows, types), (n_rows, None), (None, types), (None, None)):  # rows path, histogram path
        assert_same_table(read_encoded(con, source, qids, sensitive, hs, n_rows=n, types=t), expected)
    assert encode_rows(con.query_arrow(Q.text_rows_query(source, qids + sensitive, types)), qids, sensitive, hs) is not None


def test_read_encoded_refuses_or_withholds_nulls_and_names_non_leaves_as_the_histogram_path(typed_table):
    con = typed_table
    types = dict(con.relation_columns("main", "typed"))
    source = Q.Source("main", "typed", None, DUCKDB)
    qids = ["v", "i32"]  # each has one NULL row
    hs = [typed_hierarchy(con, c) for c in qids]
    with pytest.raises(DataError, match="2 source rows have NULL"):
        read_encoded(con, source, qids, ["d"], hs, n_rows=9, types=types)
    assert_same_table(read_encoded(con, source, qids, ["d"], hs, n_rows=9, types=types, null_policy="suppress"),
                      general_table(con, qids, ["d"], hs, null_policy="suppress"))
    short = [from_rows("v", [[v, "*"] for v in ("01", "1")], source="short.csv"), hs[1]]
    with pytest.raises(HierarchyError) as fast:
        read_encoded(con, source, qids, [], short, n_rows=9, types=types, null_policy="suppress")
    with pytest.raises(HierarchyError) as general:
        general_table(con, qids, [], short, null_policy="suppress")
    assert str(fast.value) == str(general.value) and "short.csv" in str(fast.value)


def test_the_text_values_are_made_when_first_read_and_travel_to_workers():
    import pickle

    from ppdp.engine.core.encoding import GroupTexts
    from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec
    from ppdp.engine.methods.generalization.problem import Problem
    from ppdp.engine.privacy import build_model

    rows, names, hs = random_rows(5, ["s1"], nulls=False)
    table = encode_rows(rows.to_arrow(), names, ["s1"], hs)
    assert table is not None and isinstance(table.values_source, GroupTexts) and "values" not in table.__dict__
    expected = encode_histogram(grouped(rows, names + ["s1"]), names, ["s1"], hs).values
    assert table.values.rows() == expected.rows() and table.values.schema == expected.schema
    # a worker process gets the table pickled (GroupTexts holds Arrow arrays and NumPy codes),
    # and a ProblemSpec ships it without its text
    assert pickle.loads(pickle.dumps(table)).values.rows() == expected.rows()
    spec = ProblemSpec.of(Problem(table, [build_model("k-anonymity", {"k": 2})]))
    assert spec.table.values.height == 0 and spec.table.values.columns == names + ["s1"]
    assert np.array_equal(spec.table.codes, table.codes)


def test_read_encoded_reads_rows_through_a_connector_declaring_in_process_rows(typed_table, monkeypatch):
    """The rows path is chosen by the declared capability (no histogram query is run), and a
    connector without it gets the histogram query whatever its dialect."""
    from ppdp.connectors.base import IN_PROCESS_ROWS

    con = typed_table
    assert IN_PROCESS_ROWS in con.capabilities
    types = dict(con.relation_columns("main", "typed"))
    source = Q.Source("main", "typed", None, DUCKDB)
    qids = ["i64", "dt"]
    con.execute("DELETE FROM main.typed AS src WHERE src.i64 IS NULL OR src.dt IS NULL")
    hs = [typed_hierarchy(con, c) for c in qids]
    expected = general_table(con, qids, [], hs)
    queries: list[str] = []
    real_query = con.query
    monkeypatch.setattr(con, "query", lambda sql, params=None: queries.append(sql) or real_query(sql, params))
    assert_same_table(read_encoded(con, source, qids, [], hs, n_rows=100, types=types), expected)
    assert queries == []  # rows path: query_arrow only
    monkeypatch.setattr(con, "capabilities", con.capabilities - {IN_PROCESS_ROWS})
    assert_same_table(read_encoded(con, source, qids, [], hs, n_rows=100, types=types), expected)
    assert len(queries) == 1 and "GROUP BY" in queries[0]


@pytest.mark.parametrize("seed", range(10))
def test_struct_order_is_polars_sort_of_a_string_struct(seed):
    """_struct_order sorts tuples of texts (NULL, empty, prefixes, non-ASCII) as Polars sorts the
    struct of them, which encode_histogram's SA codes follow."""
    from ppdp.engine.core.encoding import _struct_order

    rng = np.random.default_rng(seed)
    alphabet = ["", "a", "ab", "b", "B", "é", "z", "ß", "日本", "a b", "10", "9", "\U0001f600", None]
    width = int(rng.integers(1, 4))
    tuples = list({tuple(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=width)) for _ in range(60)})
    names = [f"c{j}" for j in range(width)]
    frame = pl.DataFrame(tuples, schema=dict.fromkeys(names, pl.String), orient="row")
    want = [tuple(d[c] for c in names) for d in frame.select(pl.struct(names).alias("s")).to_series().unique().sort().to_list()]
    assert sorted(tuples, key=_struct_order) == want


@pytest.mark.parametrize("seed", range(8))
def test_key_counts_read_in_arrow_are_the_sql_key_check(seed, monkeypatch):
    """validate.key_counts (an integer key read and counted in Arrow) gives the rows, distinct
    non-NULL keys and NULL keys of key_check_query, with repeats, NULLs, every integer type,
    a research subset, and a source above ROWS_READ_LIMIT (the database counts it)."""
    from ppdp.engine.release.stages import validate as VAL

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    sql_type = ["BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UTINYINT", "VARCHAR", "DOUBLE"][seed]
    keys = [None if rng.random() < 0.05 * (seed % 3) else int(rng.integers(0, 120 if seed % 2 or sql_type in ("SMALLINT", "TINYINT", "UTINYINT") else 10**6)) - (50 if sql_type in ("BIGINT", "INTEGER") else 0) for _ in range(n)]
    con = DuckDBConnector.over(duckdb.connect())
    con.con.execute(f"CREATE TABLE t (k {sql_type}, v VARCHAR)")
    if n:
        con.con.executemany("INSERT INTO t VALUES (?, ?)", [[k, str(i % 7)] for i, k in enumerate(keys)])
    queries: list[str] = []
    real_query = con.query
    monkeypatch.setattr(con, "query", lambda sql, params=None: queries.append(sql) or real_query(sql, params))
    for research in (None, "v <> '3'"):
        source = Q.Source(None, "t", None, DUCKDB, research=research)
        check = real_query(Q.key_check_query(source, "k")).row(0, named=True)
        want = (int(check["n"]), int(check["distinct_keys"]), int(check["null_keys"]))
        queries.clear()
        assert VAL.key_counts(con, source, "k", sql_type) == want
        assert (queries == []) == (sql_type not in ("VARCHAR", "DOUBLE"))  # read in Arrow, or counted by SQL
        monkeypatch.setattr(VAL, "ROWS_READ_LIMIT", max(n // 2, 1) if n > 2 else 0)
        assert VAL.key_counts(con, source, "k", sql_type) == want
        monkeypatch.setattr(VAL, "ROWS_READ_LIMIT", 200_000)


@pytest.mark.parametrize("values, arrow_type", [
    ([3, 1, 2, 3, None, 1], pa.int64()), ([-5, -5, 7, None, None], pa.int32()), ([], pa.int64()), ([None], pa.int16()),
    ([-(2**63), 2**63 - 1, 0, 0], pa.int64()), ([2**64 - 1, 0, 2**64 - 1], pa.uint64()),
    (list(range(0, 3000, 3)) * 2, pa.int64()), ([10**12 + i % 7 for i in range(50)], pa.int64())])
def test_distinct_integers_is_arrow_count_distinct(values, arrow_type):
    """The span-marking count of validate._distinct_integers is count_distinct's (non-NULL), at
    the integer extremes too (where it falls back to count_distinct)."""
    from ppdp.engine.release.stages.validate import _distinct_integers

    keys = pa.chunked_array([pa.array(values[: len(values) // 2], arrow_type), pa.array(values[len(values) // 2:], arrow_type)])
    assert _distinct_integers(keys) == pa.compute.count_distinct(keys).as_py()


@pytest.mark.parametrize("seed", range(12))
def test_distribution_of_rows_is_the_distribution_query(seed):
    """t-closeness's Q made of the rows read in process (validate.distribution_of_rows) has the
    texts, sa_key (md5 in Python) and q (bit for bit) of the SQL distribution query: values with
    '|', '~' and '\\', the text \\N, NULLs, non-ASCII, one to three sensitive columns, a research subset."""
    from ppdp.engine.release.stages.validate import distribution_of_rows
    from ppdp.sql import history as H

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    pool = ["a", "a|b", "|", "||", "\\N", "", "é", "x y", "it's", None, "1", "01", "~", "a~1", "\\"]
    sensitive = ["s1", "s2", "s3"][: 1 + seed % 3]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, s1 VARCHAR, s2 VARCHAR, s3 VARCHAR, q1 VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                    [[i, *(pool[int(rng.integers(len(pool) - (seed % 2) * 8))] for _ in range(3)), None if i % 7 == 0 else "v"]
                     for i in range(n)])
    dc = DuckDBConnector.over(con)
    types = dict(dc.relation_columns("main", "t"))
    for research in (None, "id % 3 <> 0"):
        source = Q.Source("main", "t", None, DUCKDB, research=research)
        order = ["sa_key", *sensitive]
        want = dc.query(H.distribution_query(source.sql(), sensitive, DUCKDB, types)).sort(order, nulls_last=True)
        rows = dc.query_arrow(Q.text_rows_query(source, ["q1", *sensitive], types))
        got = distribution_of_rows(rows, sensitive).sort(order, nulls_last=True)
        assert got.schema == want.schema and got.rows() == want.rows()
        assert got["q"].to_numpy().tobytes() == want["q"].to_numpy().tobytes()


def _short_texts(rng, n: int, alphabet: list[str]) -> list[str]:
    return ["".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=int(rng.integers(0, 7))))
            for _ in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_leaf_kernel_is_the_dict_lookup(seed):
    """kernels/leaves.py (a table of signatures, no byte comparison) gives each text the code the
    dict of the leaves gives, and stops at the first text that is no leaf: texts of 0 to 6 bytes
    (the longest a signature covers is 5), multi-byte UTF-8, texts equal but for one inner byte,
    sliced arrays and the offsets of large strings."""
    from ppdp.engine.core.encoding import _string_buffers
    from ppdp.engine.kernels import leaves as LV
    from tests.support.reference import leaf_codes

    rng = np.random.default_rng(seed)
    alphabet = ["a", "b", "ab", "\u00fc", "0", "1"] if seed % 2 else ["a", "b"]
    leaves = sorted({t for t in _short_texts(rng, int(rng.integers(1, 60)), alphabet) if len(t.encode()) <= LV.SHORT})
    leaves = leaves or [""]
    values = [leaves[int(i)] for i in rng.integers(0, len(leaves), size=int(rng.integers(1, 500)))]
    if seed % 3 == 0:  # a text that is no leaf: one byte changed inside a leaf, or a longer one
        at = int(rng.integers(len(values)))
        values[at] = "aXb" if seed % 2 else "abcdefg"
    want = leaf_codes(values, leaves)
    offsets, data = _string_buffers(pa.array(leaves, type=pa.string()))
    sigs, codes = LV.leaf_table(offsets, data.copy())
    arr = pa.array(["pad"] + values, type=pa.large_string() if seed % 4 == 1 else pa.string()).slice(1)
    offsets, data = _string_buffers(arr)
    radix = len(leaves) + int(rng.integers(0, 3))
    key = np.arange(len(values), dtype=np.int64)
    stop = LV.add_leaf_codes(offsets, data, sigs, codes, radix, key)
    first_missing = next((i for i, c in enumerate(want) if c is None), -1)
    assert stop == first_missing
    upto = len(values) if stop < 0 else stop
    assert key[:upto].tolist() == [i * radix + c for i, c in enumerate(want[:upto])]


@pytest.mark.parametrize("rows", [None, 1000])
def test_read_encoded_on_adult_is_the_histogram_path(adult_db_template, rows):
    """adult (its age a BIGINT, read as text; short leaves by the kernel, long ones by index_in)
    and a 1,000-row subset, with salary-class: the rows read and grouped in process give the
    table of the GROUP BY query and encode_histogram, field by field."""
    from ppdp.engine.core.hierarchy import read_arx_csv
    from tests.conftest import ADULT, ADULT_QIDS

    con = DuckDBConnector.over(duckdb.connect(str(adult_db_template), read_only=True))
    try:
        hs = [read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q) for q in ADULT_QIDS]
        source = Q.Source(None, "adult", None, DUCKDB, research=None if rows is None else f"id <= {rows}")
        types = dict(con.relation_columns("main", "adult") or [])
        sensitive = ["salary-class"]
        fast = read_encoded(con, source, ADULT_QIDS, sensitive, hs, n_rows=rows or 30162, types=types)
        from ppdp.engine.core.encoding import GroupTexts

        assert isinstance(fast.values_source, GroupTexts)  # grouped in process, not by the query
        histogram = con.query(Q.histogram_query(source, ADULT_QIDS, sensitive, types))
        general = encode_histogram(histogram, ADULT_QIDS, sensitive, hs)
        assert_same_table(fast, general)
        assert fast.n_records == (rows or 30162)
        text = con.query_arrow(Q.text_rows_query(source, ADULT_QIDS + sensitive, types))
        for use_kernels in (True, False):  # the kernels and their plain twins
            assert_same_table(encode_rows(text, ADULT_QIDS, sensitive, hs, use_kernels=use_kernels), general)
    finally:
        con.close()


@pytest.mark.parametrize("seed", range(20))
def test_grouping_kernels_are_np_unique(seed):
    """kernels/grouping.py: the radix sort is np.sort (0 to 62 used bits: no pass, odd and even
    numbers of passes), and one pass over the sorted keys gives np.unique's groups, counts and
    each field decoded."""
    from ppdp.engine.kernels import grouping as GR

    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 9))
    field_bits = rng.integers(0, max(1, 62 // k) + 1, size=k).astype(np.int64)
    if seed == 0:
        field_bits[:] = 0
    n = int(rng.integers(1, 5000))
    fields = np.stack([rng.integers(0, 1 << int(b), size=n) for b in field_bits.tolist()])
    if seed % 3 == 1:  # many repeats
        fields = fields[:, rng.integers(0, max(n // 20, 1), size=n)]
    key = np.zeros(n, dtype=np.int64)
    for f, b in zip(fields, field_bits.tolist(), strict=True):
        key = (key << b) | f
    want = np.sort(key)
    got = GR.sort_keys(key.copy(), int(field_bits.sum()))
    assert got.dtype == np.int64 and np.array_equal(got, want)
    distinct, first, counts = np.unique(key, return_index=True, return_counts=True)
    codes, last, got_counts = GR.group_sorted(got, np.left_shift(1, field_bits), field_bits)
    assert np.array_equal(got_counts, counts) and codes.flags.c_contiguous
    assert np.array_equal(codes, fields[:-1, first].T.astype(np.int32)) and np.array_equal(last, fields[-1, first])


@pytest.mark.parametrize("seed", range(12))
def test_mixed_radix_grouping_kernel_is_np_unique(seed):
    """group_sorted on keys in mixed radix (products near 2**62) gives np.unique's groups,
    counts and each code decoded."""
    from ppdp.engine.kernels import grouping as GR

    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 9))
    radices = np.maximum(rng.integers(1, int((2**62) ** (1 / k)), size=k), 1).astype(np.int64)
    n = int(rng.integers(1, 3000))
    fields = np.stack([rng.integers(0, r, size=n) for r in radices.tolist()])
    key = np.zeros(n, dtype=np.int64)
    for f, r in zip(fields, radices.tolist(), strict=True):
        key = key * r + f
    used = (int(np.prod(radices.astype(object))) - 1).bit_length()
    got = GR.sort_keys(key.copy(), used)
    assert np.array_equal(got, np.sort(key))
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    codes, last, got_counts = GR.group_sorted(got, radices, np.full(k, -1, dtype=np.int64))
    assert np.array_equal(got_counts, counts)
    assert np.array_equal(codes, fields[:-1, first].T.astype(np.int32)) and np.array_equal(last, fields[-1, first])


def test_a_fresh_process_encodes_without_starting_the_jit():
    """encode_rows in a process that has loaded no kernel uses the plain twins (a skipped run
    never waits for Numba's JIT to start), and the kernels once one is loaded: the same table."""
    import subprocess
    import sys

    code = """
import numpy as np, pyarrow as pa
from numba.core.dispatcher import Dispatcher
import ppdp.engine.release.stages.validate
from ppdp.engine.core.encoding import encode_rows
from ppdp.engine.core.hierarchy import from_rows
from ppdp.engine.kernels import grouping as GR
h = from_rows("q", [["a", "*"], ["b", "*"]])
rows = pa.table({"q": ["a", "b", "a"]})
plain = encode_rows(rows, ["q"], [], [h])
import sys
loaded = [n for n, m in list(sys.modules.items()) if n.startswith("ppdp.engine.kernels.") and m is not None
          and any(isinstance(v, Dispatcher) and v.signatures for v in vars(m).values())]
assert not loaded and not GR.jit_started(), loaded
GR.sort_keys(np.zeros(1, dtype=np.int64), 1)
assert GR.jit_started()
fast = encode_rows(rows, ["q"], [], [h])
assert np.array_equal(fast.codes, plain.codes) and np.array_equal(fast.counts, plain.counts)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize("use_kernels", [True, False])
def test_leaf_keys_in_two_threads_are_the_one_thread_keys(adult_db_template, monkeypatch, use_kernels):
    """From PARALLEL_LEAF_ROWS rows the second half of the QIDs is keyed in a helper thread: the
    same table as one thread, and a value that is no leaf in either half still sends the rows
    to the general path (None)."""
    from ppdp.engine.core import encoding as E
    from ppdp.engine.core.hierarchy import read_arx_csv
    from tests.conftest import ADULT, ADULT_QIDS

    con = DuckDBConnector.over(duckdb.connect(str(adult_db_template), read_only=True))
    try:
        hs = [read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q) for q in ADULT_QIDS]
        rows = con.query_arrow(Q.text_rows_query(Q.Source(None, "adult", None, DUCKDB), ADULT_QIDS + ["salary-class"]))
    finally:
        con.close()
    assert rows.num_rows >= E.PARALLEL_LEAF_ROWS
    monkeypatch.setattr(E, "PARALLEL_LEAF_ROWS", 10**9)
    one = encode_rows(rows, ADULT_QIDS, ["salary-class"], hs, use_kernels=use_kernels)
    monkeypatch.setattr(E, "PARALLEL_LEAF_ROWS", 1)
    two = encode_rows(rows, ADULT_QIDS, ["salary-class"], hs, use_kernels=use_kernels)
    assert one is not None and two is not None
    assert_same_table(one, two)
    for spoiled in (ADULT_QIDS[0], ADULT_QIDS[-1]):  # the first half, the helper's half
        column = rows.column(spoiled).to_pylist()
        column[-1] = "no such leaf"
        bad = rows.set_column(rows.schema.get_field_index(spoiled), spoiled, pa.array(column, type=pa.string()))
        assert encode_rows(bad, ADULT_QIDS, ["salary-class"], hs, use_kernels=use_kernels) is None
