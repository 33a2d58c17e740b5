"""Names ppdp derives from a release's output name, checked against the database's identifier
limit before anything is written (finding 14: PostgreSQL truncates names at 63 bytes, so for a
long name ``<name>__v1`` and ``<name>__v2`` became the same table)."""

from __future__ import annotations

from ppdp.connectors.base import Connector
from ppdp.errors import SpecError
from ppdp.sql.relations import delta_name, version_name


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
