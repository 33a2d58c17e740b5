"""Database connectors behind one small protocol, selected by URL scheme.

``duckdb:///path/to.db`` (or a bare path ending in .duckdb/.db) -> embedded DuckDB;
``duckdb:///:memory:`` -> in-memory DuckDB. Further connectors register a scheme in
CONNECTORS and live in their own module.
"""

from __future__ import annotations

from ppdp.connectors.base import CONNECTORS, Connector, connect

__all__ = ["CONNECTORS", "Connector", "connect"]
