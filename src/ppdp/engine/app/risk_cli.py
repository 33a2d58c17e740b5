"""What ``ppdp risk`` measures and how it prints it (engine/app/cli.py stays a thin parser)."""

from __future__ import annotations

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.person import unit_label
from ppdp.engine.core.spec import spec_from_dict
from ppdp.engine.risk import RiskAssessment
from ppdp.engine.risk.base import estimators, values_of
from ppdp.errors import SpecError
from ppdp.sql import person as SP
from ppdp.sql import queries as Q
from ppdp.sql.quoting import quote_table
from ppdp.sql.relations import ReleaseRelation


def target(con: Connector, release: str | None, table: str | None, version: int | None, *,
           check_qids: bool = True) -> tuple[str, list[str]]:
    """The relation to measure (quoted) and its default QIDs: a release's version or a table
    (``check_qids``: refuse a version that does not publish the QIDs as columns)."""
    if (release is None) == (table is None):
        raise SpecError("give a release name or --table SCHEMA.TABLE (one of them). Hint: ppdp risk adult --db URL.")
    if table is not None:
        if version is not None:
            raise SpecError("--version names a published version of a release; it does not apply to --table. "
                            "Hint: ppdp risk RELEASE --version N, or --table SCHEMA.TABLE alone.")
        # a dot may be part of a name: the whole text in the default schema first, then each
        # split into SCHEMA.TABLE from the left
        default = getattr(con, "default_schema", "main")
        candidates = [(default, table)] + [(table[:i], table[i + 1:]) for i, ch in enumerate(table) if ch == "."]
        for schema, name in candidates:
            if schema and name and con.relation_columns(schema, name) is not None:
                return quote_table(schema, name, con.dialect), []
        raise SpecError(f"no table {table!r} in {con.url}.")
    assert release is not None
    rid = catalog.resolve_release(con, release)
    runs = catalog.published_runs(con, rid)
    if not runs:
        raise SpecError(f"release {release!r} has no published version.")
    run = runs[-1] if version is None else next((r for r in runs if r.version == version), None)
    if run is None:
        raise SpecError(f"release {release!r} has no published version {version}; published: {[r.version for r in runs]}.")
    out = run.spec.get("output", {})
    schema, name = out.get("schema", "published"), out["name"]
    qids = [q["column"] for q in run.spec.get("quasi_identifiers", [])]
    table = ReleaseRelation(schema, name, con.dialect).version_name(run.published_version)
    present = {c for c, _ in con.relation_columns(schema, table) or []}
    missing = [q for q in qids if q not in present]
    if missing and check_qids:
        raise SpecError(f"version {run.published_version} of {release!r} does not publish {', '.join(missing)} as columns "
                        "(heterogeneous releases publish ranges). Hint: --qids with the published columns.")
    return quote_table(schema, table, con.dialect), qids


def person_relation(con: Connector, release: str | None, relation: str, version: int | None, person: str | None,
                    columns: list[str]) -> tuple[str, str | None]:
    """The relation to measure per person and the person column counted (docs/design/person_unit.md).

    ``--person COL`` on a table: the table's rows projected onto distinct (person, ``columns``).
    A release counts the persons of its own ``source.person`` (or ``--person``, a source column),
    found through the private row ids and the source's key. Neither: ``relation`` itself, rows
    counted (one row per person assumed). The person's values stay inside the query."""
    if release is None:
        if person is None:
            return relation, None
        schema, _, name = relation.rpartition(".")
        cols = {c for c, _ in con.relation_columns(_unquote(schema) or getattr(con, "default_schema", "main"), _unquote(name)) or []}
        if person not in cols:
            raise SpecError(f"--person {person!r} is not a column of {relation}. Hint: the column naming each row's person.")
        return SP.as_relation(SP.table_persons(relation, person, columns, con.dialect)), person
    rid = catalog.resolve_release(con, release)
    runs = catalog.published_runs(con, rid)
    run = runs[-1] if version is None else next(r for r in runs if r.version == version)
    spec = spec_from_dict(run.spec)
    own = spec.person if spec.counts_persons else None
    if person is None or person == own:  # the release's own persons: its private map of row ids
        return (relation, None) if own is None else (SP.as_relation(SP.version_persons(relation, rid, columns, con.dialect)), own)
    source = Q.Source(spec.schema, spec.table, spec.query, con.dialect)
    schema = str(spec.schema or getattr(con, "default_schema", "main"))
    if source.table is not None and person not in {c for c, _ in con.relation_columns(schema, source.table) or []}:
        raise SpecError(f"--person {person!r} is not a column of release {release!r}'s source. Hint: the column naming each row's person.")
    return SP.as_relation(SP.version_persons(relation, rid, columns, con.dialect, source=source, key=spec.key, person=person)), person


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if len(name) > 1 and name[0] == name[-1] == '"' else name


def describe(a: RiskAssessment, person: str | None = None, relation: str | None = None) -> str:
    """The human-readable summary ``ppdp risk`` prints: a header, then each estimator's lines.
    ``person``: the person column counted (None: one row per person assumed)."""
    measured, basis = a.to_json(), a.basis()
    what = "persons" if person else "rows"
    lines = [f"risk of {relation or a.relation}: {a.rows:,} {what}, {a.classes:,} classes on {', '.join(a.columns)}",
             f"counted per: {unit_label(person)}"]
    for e in estimators():
        values = values_of(e, measured)
        if values:
            lines += e.lines(values, basis)
    return "\n".join(lines)
