"""Design card: ``sql/`` holds SQL text and dialect handling and imports nothing from ``engine/``
(nor from ``connectors/``, which imports engine). Checked on the source, by import statements."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support import paths as PATHS

SQL = PATHS.PACKAGE / "sql"


def imported_modules(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


@pytest.mark.parametrize("path", sorted(SQL.glob("*.py")), ids=lambda p: p.name)
def test_sql_module_imports_nothing_from_engine(path: Path) -> None:
    bad = [m for m in imported_modules(path) if m.startswith(("ppdp.engine", "ppdp.connectors"))]
    assert bad == [], f"{path.name} imports {bad}"


def test_sql_build_errors_are_spec_errors() -> None:
    from ppdp.errors import PpdpError, SpecError
    from ppdp.sql import queries as Q
    from ppdp.sql.dialect import DUCKDB
    from ppdp.sql.errors import SqlBuildError

    with pytest.raises(SpecError, match="exactly one SELECT") as info:
        Q.Source(None, None, "SELECT 1; SELECT 2", DUCKDB).parsed_query()
    assert isinstance(info.value, SqlBuildError) and isinstance(info.value, PpdpError)


# --- the dialect is an object every builder is given, never a string default ------------------

DIALECT_NAMES = frozenset({"duckdb", "postgres", "postgresql", "spark", "snowflake", "bigquery"})
DIALECT_PARAMS = frozenset({"d", "dialect"})


def dialect_defaults(path: Path) -> list[str]:
    """``function(parameter=default)`` of every parameter in ``path`` whose default is a dialect
    name, or that is named like a dialect and has any default."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
        pairs += [(a, dflt) for a, dflt in zip(args.kwonlyargs, args.kw_defaults, strict=True) if dflt is not None]
        name = getattr(node, "name", "<lambda>")
        for arg, default in pairs:
            named = isinstance(default, ast.Constant) and isinstance(default.value, str) and default.value.lower() in DIALECT_NAMES
            if named or arg.arg in DIALECT_PARAMS:
                out.append(f"{name}({arg.arg}={ast.unparse(default)})")
    return out


@pytest.mark.parametrize("path", sorted(SQL.glob("*.py")), ids=lambda p: p.name)
def test_no_builder_defaults_the_dialect(path: Path) -> None:
    assert dialect_defaults(path) == []


# --- one place names a release's relations ----------------------------------------------------

# A version table is ``<name>__v<N>``: the text "__v" followed by a formatted number appears in
# ReleaseRelation (sql/relations.py) alone. The joint-QID columns of the cross-version check
# (``<qid>__v<i>``) are named by their own helper there too, so the scan below has no exceptions.
VERSION_FORMAT = re.compile(r"""__v\{|__v["']\s*(?:\+|%)|__delta["'{]|["']__delta""")


def test_version_table_names_are_formatted_in_one_place() -> None:
    hits = []
    for path in sorted(PATHS.PACKAGE.rglob("*.py")):
        if path == SQL / "relations.py":
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if VERSION_FORMAT.search(line):
                hits.append(f"{path.relative_to(PATHS.PACKAGE)}:{no}: {line.strip()}")
    assert hits == []


def test_dialects_are_registered_singletons() -> None:
    import pickle

    from ppdp.errors import SpecError
    from ppdp.sql.dialect import DIALECTS, POSTGRES, dialect_named

    assert dialect_named("postgresql") is POSTGRES and str(POSTGRES) == "postgres"
    for d in DIALECTS.values():  # one object per dialect, across a process boundary too
        assert pickle.loads(pickle.dumps(d)) is d
    with pytest.raises(SpecError, match="Unknown dialect 'oracle'"):
        dialect_named("oracle")


def test_release_relation_names_every_published_relation() -> None:
    from ppdp.sql.dialect import DUCKDB, SPARK
    from ppdp.sql.relations import ReleaseRelation, joint_column

    rel = ReleaseRelation("pub", 'ad"ult', DUCKDB)
    assert (rel.version_name(3), rel.delta_name()) == ('ad"ult__v3', 'ad"ult__delta')
    assert (rel.version_table(3), rel.delta_table(), rel.view()) == ('"pub"."ad""ult__v3"', '"pub"."ad""ult__delta"', '"pub"."ad""ult"')
    assert ReleaseRelation("pub", "adult", SPARK).version_table(1) == "`pub`.`adult__v1`"
    assert rel.version_expr(2).sql(dialect="postgres") == '"pub"."ad""ult__v2"'
    assert joint_column("age", 0) == "age__v0"


@pytest.mark.parametrize("relation", ['"pub"."t__v1"', '"src_1"."adult" AS src',
                                      "(SELECT * FROM (SELECT a FROM t WHERE x = 'it''s ?') AS r WHERE r.a > 1) AS src"])
def test_builders_put_a_relation_given_as_text_verbatim(relation: str) -> None:
    """A builder composing a sqlglot tree around a relation it is handed as text (a quoted table,
    or a source's FROM item with its alias) neither parses nor requotes that text."""
    from ppdp.sql import figures, risk
    from ppdp.sql import queries as Q
    from ppdp.sql.dialect import DUCKDB, POSTGRES

    for d in (DUCKDB, POSTGRES):
        for sql in (figures.class_counts(relation, ["a b"], d), risk.class_sizes(relation, ["a b"], d),
                    risk.sample_uniques_check(relation, ["a b"], d), Q.verify_k_query(relation, ["a b"], d)):
            assert f"FROM {relation} GROUP BY" in sql and "ppdp_relation_slot" not in sql
