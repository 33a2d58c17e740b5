"""Publish a ppdp release from a dbt-duckdb Python model, on dbt's own DuckDB connection.

A dbt project adds a Python model such as::

    import ppdp.dbt

    def model(dbt, session):
        dbt.config(materialized="table")
        return ppdp.dbt.release(dbt, session, spec="ppdp/adult.toml", source=dbt.ref("stg_adult"))

The release runs in-process on ``session`` (no second connection, so no lock on dbt's file),
publishes its view, ``__vN`` and ``__delta`` tables and run record exactly like ``ppdp run``, and
the model returns the published view: dbt's model table then holds what analysts may see and
nothing else. A refusal (privacy model, cross-version rule, bad spec) raises, so the model
fails and ``dbt build`` exits 1. The generic tests of the dbt package ``dbt_ppdp``
(``package_path()``) check any relation as plain SQL.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ppdp.errors import SpecError

__all__ = ["package_path", "release"]


def package_path() -> Path:
    """The folder of the dbt package ``dbt_ppdp`` (for ``packages.yml``: ``local: <this>``)."""
    return Path(__file__).with_name("dbt_ppdp")


def release(dbt: Any, session: Any, *, spec: str | Path | dict[str, Any], source: Any = None) -> Any:
    """Run the release ``spec`` (a TOML path relative to the dbt project folder, or its dict)
    on dbt's connection ``session`` and return the published view as a DuckDB relation.

    ``source`` overrides ``[source] schema/table``: a ``dbt.ref(...)`` relation (so dbt also
    records the dependency) or a table name ``"schema.table"``. ``[source] database`` is
    ignored: the release reads and writes the database dbt is connected to.
    """
    import duckdb

    from ppdp.connectors.duckdb_connector import DuckDBConnector
    from ppdp.engine.core.spec import read_spec_file, spec_from_dict
    from ppdp.engine.release.run import run_release

    if isinstance(spec, dict):
        raw, base_dir = dict(spec), Path.cwd()
    else:
        raw, base_dir = read_spec_file(spec), Path(spec).resolve().parent
    connector = DuckDBConnector.over(session)
    src = dict(raw.get("source") or {})
    src["database"] = connector.url
    if source is not None:
        for field in ("table", "query", "file", "schema"):
            src.pop(field, None)
        schema, table = _table_of(source)
        src["table"] = table
        if schema is not None:
            src["schema"] = schema
    raw["source"] = src
    outcome = run_release(spec_from_dict(raw, base_dir=base_dir), connector=connector, progress=False)
    run = outcome.run
    print(f"ppdp: {run.release} {run.status} (version {run.version}, run {run.run_id})", file=sys.stderr)
    assert outcome.view is not None  # published or skipped: both have the current view
    relation: duckdb.DuckDBPyRelation = session.sql(f"SELECT * FROM {outcome.view}")
    return relation


def _table_of(source: Any) -> tuple[str | None, str]:
    """(schema, table) of a ``dbt.ref()`` relation or of a ``"schema.table"`` string."""
    from ppdp.sql.dialect import DUCKDB
    from ppdp.sql.inspect import scanned_table

    if isinstance(source, str):
        schema, _, table = source.rpartition(".")
        return (schema or None, table)
    query = getattr(source, "sql_query", None)
    found = scanned_table(query(), DUCKDB) if callable(query) else None  # dbt-duckdb's relation
    if found is None:
        raise SpecError("ppdp.dbt.release: source must be dbt.ref('model') of a table or a 'schema.table' name.")
    return found
