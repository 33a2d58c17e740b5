"""Without transactional DDL (Spark) a failed run's private rows stay; before a run reuses the
version number, every shared private table and every release method's own tables
(``ReleaseMethod.private_tables``) lose their rows of that version and later ones."""

from __future__ import annotations

from pathlib import Path

from ppdp.connectors.duckdb_connector import DuckDBConnector
from ppdp.engine.core import catalog
from ppdp.engine.methods import METHODS
from ppdp.engine.release.stages.materialize import discard_unpublished_versions
from ppdp.sql import catalog as C
from ppdp.sql import heterogeneous as HS
from ppdp.sql import microaggregation as M


class NoRollback(DuckDBConnector):
    capabilities = frozenset()  # as Spark: a failed run's writes are not rolled back


def test_the_shared_and_every_methods_tables_lose_the_unpublished_versions(tmp_path: Path) -> None:
    con = NoRollback(f"duckdb://{tmp_path / 'l.duckdb'}")
    try:
        catalog.ensure_schema(con)
        for stmt in [*M.ddl(con.dialect), *HS.ddl(con.dialect)]:
            con.execute(stmt)
        method_tables = {t for name in METHODS for t in METHODS.get(name).private_tables}
        assert {"micro_groups", "hetero_edges"} <= method_tables
        for table in ("suppressed", "micro_groups", "hetero_edges"):
            cols = [c for c, _ in con.relation_columns(C.PRIVATE_SCHEMA, table) or []]
            for version in (1, 2, 3):
                values = ", ".join({"release": "'r'", "version": str(version)}.get(c, "'0'") for c in cols)
                con.execute(f"INSERT INTO _ppdp.{table} VALUES ({values})")
        assert sorted(discard_unpublished_versions(con, "r", 2)) == ["hetero_edges", "micro_groups", "suppressed"]
        for table in ("suppressed", "micro_groups", "hetero_edges"):
            assert con.query(f"SELECT DISTINCT version FROM _ppdp.{table}")["version"].to_list() == [1]
    finally:
        con.close()
