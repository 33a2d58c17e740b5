"""Independent checks of a materialized version (SQL of its own, nothing shared with the search).

t-closeness is checked against the source distribution Q stored when the version was published
(``_ppdp.distributions``), so a version's check does not drift when the source changes later.
"""

from __future__ import annotations

from ppdp.sql.catalog import private
from ppdp.sql.history import sa_key
from ppdp.sql.quoting import quote_ident, quote_literal


def stored_q(release: str, version: int, d: str = "duckdb") -> str:
    """FROM-able subquery (sa_key, q) of version ``version``'s stored Q (values as escaped literals)."""
    lit = quote_literal(release, d)
    return f"(SELECT sa_key, q FROM {private('distributions', d)} WHERE release = {lit} AND version = {int(version)})"


def verify_t_stored(relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: str = "duckdb") -> str:
    """Largest Euclidean distance (HAEF eq. 2-4) between a class's SA distribution and Q."""
    g = ", ".join(quote_ident(c, d) for c in qids)
    key = sa_key(sensitive, "r", d)
    return (
        f"WITH p AS (SELECT {', '.join(f'r.{quote_ident(c, d)}' for c in qids)}, {key} AS s, COUNT(*) AS nv FROM {relation} AS r "
        f"GROUP BY {', '.join(f'r.{quote_ident(c, d)}' for c in qids)}, {key}), "
        f"c AS (SELECT {g}, s, nv * 1.0 / SUM(nv) OVER (PARTITION BY {g}) AS p FROM p), "
        f"qq AS (SELECT SUM(qd.q * qd.q) AS s2 FROM {q_relation} AS qd), "
        f"dist AS (SELECT {', '.join(f'c.{quote_ident(x, d)}' for x in qids)}, "
        "SUM((c.p - COALESCE(q.q, 0)) * (c.p - COALESCE(q.q, 0)) - COALESCE(q.q, 0) * COALESCE(q.q, 0)) AS part "
        f"FROM c LEFT JOIN {q_relation} AS q ON q.sa_key = c.s GROUP BY {', '.join(f'c.{quote_ident(x, d)}' for x in qids)}) "
        "SELECT MAX(SQRT(GREATEST(part + (SELECT s2 FROM qq), 0))) AS ad, COUNT(*) AS classes FROM dist"
    )
