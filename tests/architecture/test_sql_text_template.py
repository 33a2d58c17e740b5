"""``queries.text`` fills a cached template: it must render exactly what sqlglot
renders for the column's own expression, on every dialect, for any identifier."""

import pytest
from sqlglot import exp

from ppdp.sql.dialect import dialect_named
from ppdp.sql.queries import text, text_expr

NAMES = ["age", "Age", "a b", 'we"ird', "a'b", "select", "x.y", "ünï", "", "1col", "ppdp_text_column_placeholder",
         "ppdp_text_column_placeholder_2"]


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark"])
@pytest.mark.parametrize("alias", ["src", "w", "t x"])
def test_text_matches_the_expression_rendering(dialect: str, alias: str) -> None:
    d = dialect_named(dialect)
    for name in NAMES:
        expected = text_expr(exp.column(name, alias, quoted=True), d).sql(dialect=dialect)
        assert text(name, alias, d) == expected, name
