"""Stage 5: the candidate rows of the new version, written aside (not visible before the commit).

``reserve_version`` picks the version number (the orchestrator puts it into the context); then
``materialize``: before the method's SELECT runs, every source key gets its random row id (stable
across versions), the method stores its private state, and the source's sensitive distribution
Q of this version is stored (t-closeness is verified against it, now and later).

What a failed run leaves behind where the database cannot roll it back (Spark): with
transactional DDL a failed run's writes vanish with its transaction. Without it (a connector that
does not declare ``transactional_ddl``) they stay: the unverified version table ``<name>__v<N>``
and the private rows of version N (hierarchies, suppressed keys, Q, the methods' state). N is
never a published version, and the next run reuses it (the last succeeded version plus one): its
version table is dropped and written again, but private rows would be appended to the failed
run's, and a hierarchy leaf stored twice would duplicate released rows. So before a run writes
version N, every private row of versions >= N of its release goes
(``discard_unpublished_versions``).
"""

from __future__ import annotations

from ppdp.connectors.base import TRANSACTIONAL_DDL, Connector
from ppdp.engine.core import catalog
from ppdp.engine.methods.base import METHODS, ReleaseMethod, ReleasePlan
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Candidate, Prepared
from ppdp.errors import PpdpError
from ppdp.sql import catalog as C
from ppdp.sql import person as SP
from ppdp.sql import publish as P
from ppdp.sql import queries as Q


def reserve_version(ctx: RunContext) -> int:
    """The version this run writes (inside the run's transaction): one past the last one numbered,
    with whatever a failed run left under that number removed. The private schema is there:
    ``record.record_running`` made it and committed the run's row in it before the search."""
    version = catalog.next_version(ctx.con, ctx.release)
    # without transactions (Spark) a failed run's private rows of this version number remain
    discard_unpublished_versions(ctx.con, ctx.release, version)
    return version


def discard_unpublished_versions(con: Connector, release: str, version: int) -> list[str]:
    """Delete ``release``'s private rows of versions >= ``version`` (none was published: the
    caller passes the next version number); return the tables that had some (a check first:
    a DELETE on Spark rewrites the whole table, a COUNT reads it). Nothing to do
    when the connector rolls failed runs back."""
    if TRANSACTIONAL_DDL in con.capabilities:
        return []
    cleaned = []
    # every method's tables, not only this run's: a failed run may have used another method
    tables = dict.fromkeys([*C.VERSIONED_TABLES, *(t for name in METHODS for t in METHODS.get(name).private_tables)])
    for table in tables:
        if con.relation_columns(C.PRIVATE_SCHEMA, table) is None:
            continue
        if not int(con.query(C.count_unpublished_versions(table, con.dialect), [release, version])["n"][0]):
            continue
        con.execute(C.delete_unpublished_versions(table, con.dialect), [release, version])
        cleaned.append(table)
    return cleaned


def materialize(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan) -> Candidate:
    """The candidate rows of version ``ctx.version``, written as its version table; refused when
    their number is not the plan's."""
    con, d, spec = ctx.con, ctx.dialect, ctx.spec
    con.execute(P.create_schema(spec.output_schema, d))
    salt = catalog.release_salt(con, ctx.release, spec.output_schema, spec.output_name)
    full = Q.Source(spec.schema, spec.table, spec.query, d, research=prep.source.research)
    method.write_private_state(ctx, prep, plan)
    ctx.clock.mark("private_state")
    con.execute(C.new_row_ids(C.source_keys(full.sql(), spec.key, d), d), [ctx.release, ctx.release])
    if spec.counts_persons:  # each row id's person, kept for the cross-version rule per person
        con.execute(SP.person_rows_ddl(d))
        con.execute(SP.record_person_rows(full, spec.key, spec.person_column), [ctx.release, ctx.release, ctx.release])
    ctx.clock.mark("row_ids")
    if prep.distribution is not None:
        catalog.store_distribution(con, ctx.release, ctx.version, prep.distribution, ctx.run_id)
    changes: dict[str, int] = {}
    state = C.salted_state_select(full.sql(), spec.key, prep.columns, d, prep.types)
    if ctx.previous is not None:
        row = con.query(C.changes(state, d), [salt, ctx.release]).row(0, named=True)
        changes = {k: int(v) for k, v in row.items()}
    delete, insert = C.replace_row_state(state, d)
    con.execute(delete, [ctx.release])
    con.execute(insert, [ctx.release, salt])
    ctx.clock.mark("row_state")
    # The candidate is written as the version table itself, shuffled, inside the run's
    # transaction (invisible until the commit); it is rewritten only if the history stage holds
    # records back, so a step without held-back records writes its rows once.
    relation = ctx.published.version_table(ctx.version)
    con.execute(P.drop_table(relation))
    con.execute(P.create_as(relation, P.shuffled(method.candidate_select(ctx, prep, plan))))
    rows = int(con.query(P.count_rows(relation))["n"][0])
    cols = tuple(c for c, _ in con.relation_columns(spec.output_schema, ctx.published.version_name(ctx.version)) or [])
    ctx.clock.mark("materialization")
    # a person release's plan counts persons: the verify stage compares the persons it projects
    # (docs/design/person_unit.md)
    if not spec.counts_persons and rows != plan.released_rows:
        raise PpdpError(f"The candidate rows ({rows}) differ from the plan's ({plan.released_rows}); nothing was published.")
    return Candidate(relation, rows, cols, changes)
