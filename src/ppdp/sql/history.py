"""SQL of the difference-attack check: what someone holding every published version can group.

A published row is followed across versions by its ``ppdp_row_id``. Its *history* is, for each
version in which it is present, the version number, a hash of its generalized QID labels, and a
mark when its sensitive value differs from the last version it was present in. Rows with equal
histories form a *history class*: whoever holds all versions and knows when a person joined,
left or changed, and their QIDs, can narrow that person down to a union of history classes, no
further (docs/concepts/threat-model.md). Every history class must satisfy the privacy model
on its sensitive values in each version in which it is present; since k, distinct-l, entropy-l and
Euclidean t-closeness all survive taking unions of classes, this bounds every such attacker.

``states`` are UNION ALL of (rid, v, g, s, sa columns) over the versions; everything else is
GROUP BY / window queries over it, so the database does the work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from ppdp.sql.dialect import DUCKDB, Dialect
from ppdp.sql.queries import escaped_text, escaped_text_expr, text
from ppdp.sql.quoting import quote_ident, quote_literal

ROW_ID = "ppdp_row_id"


def _text(col: str, alias: str, d: Dialect) -> str:
    """A value's text, as the histogram and the hierarchy leaves see it."""
    return text(col, alias, d)


# The format of the keys below, stored with Q (_ppdp.distributions; engine/core/catalog.py
# rewrites a catalog's older ones from the stored values). 2: each text escaped as
# queries.escaped_text_expr says, an injective form; 1 doubled '|' only, and ('a|', 'b') and
# ('a', '|b') shared a key.
SA_KEY_FORMAT = 2


def tuple_hash(cols: list[str], alias: str, d: Dialect, texts: Mapping[str, str] | None = None) -> str:
    """md5 of an injective, NULL-safe text form of ``alias``'s ``cols`` (a class or SA key: each
    text escaped, joined by '|'). ``texts``: each column's text expression when already rendered
    (the same text)."""
    if not cols:
        return "md5('')"
    texts = texts or {}
    parts = " || '|' || ".join(escaped_text_expr(texts.get(c) or _text(c, alias, d)) for c in cols)
    return f"md5({parts})"


def tuple_key(texts: Sequence[str | None]) -> str:
    """``tuple_hash`` of values already in their text form, computed in Python: the same md5 of
    the same escaped text, for a distribution read from rows in process."""
    return hashlib.md5("|".join(escaped_text(t) for t in texts).encode("utf-8")).hexdigest()


def sa_key(sensitive: list[str], alias: str, d: Dialect) -> str:
    """The key of a sensitive value (joint over the sensitive columns), as stored with Q."""
    return tuple_hash(sensitive, alias, d)


def states(versions: list[tuple[int, str]], qids: list[str], sensitive: list[str], d: Dialect) -> str:
    """UNION ALL over (version, relation) of rid, v, g (QID label hash), s (SA key)."""
    rid = quote_ident(ROW_ID, d)
    parts = [f"SELECT t.{rid} AS rid, {int(v)} AS v, {tuple_hash(qids, 't', d)} AS g, {sa_key(sensitive, 't', d)} AS s "
             f"FROM {rel} AS t" for v, rel in versions]
    return " UNION ALL ".join(parts)


def signatures(versions: list[tuple[int, str]], qids: list[str], sensitive: list[str], current: int, d: Dialect) -> str:
    """rid, sig_prev (history before ``current``), sig_now (with ``current``), present_now,
    present_prev (in version ``current - 1``) and changed (labels or SA differ from the last
    presence) of every row id ever published: a CTE body named by the caller."""
    cur, prev = int(current), int(current) - 1
    return (
        f"WITH st AS ({states(versions, qids, sensitive, d)}), "
        "mk AS (SELECT rid, v, g, s, "
        "CASE WHEN LAG(s) OVER (PARTITION BY rid ORDER BY v) <> s THEN '*' ELSE '' END AS c, "
        "LAG(g) OVER (PARTITION BY rid ORDER BY v) AS g_last, LAG(s) OVER (PARTITION BY rid ORDER BY v) AS s_last FROM st) "
        "SELECT rid, "
        "md5(string_agg(CAST(v AS VARCHAR) || ':' || g || c, '|' ORDER BY v)) AS sig_now, "
        f"md5(COALESCE(string_agg(CASE WHEN v < {cur} THEN CAST(v AS VARCHAR) || ':' || g || c END, '|' ORDER BY v), '')) AS sig_prev, "
        f"MAX(CASE WHEN v = {cur} THEN 1 ELSE 0 END) AS present_now, "
        f"MAX(CASE WHEN v = {prev} THEN 1 ELSE 0 END) AS present_prev, "
        f"MAX(CASE WHEN v = {cur} AND (g_last <> g OR s_last <> s) THEN 1 ELSE 0 END) AS changed "
        "FROM mk GROUP BY rid"
    )


def small_classes_k(sig: str, k: int) -> str:
    """History classes with fewer than k rows: sig_now, n."""
    return f"SELECT sig_now, COUNT(*) AS n FROM ({sig}) AS sg GROUP BY sig_now HAVING COUNT(*) < {int(k)}"


def class_values(sig: str, versions: list[tuple[int, str]], qids: list[str], sensitive: list[str], version: int, d: Dialect) -> str:
    """Per history class present in ``version``: (sig_now, s, n) counts of sensitive values."""
    st = states([(v, r) for v, r in versions if v == version], qids, sensitive, d)
    return (f"SELECT sg.sig_now AS sig_now, st.s AS s, COUNT(*) AS n FROM ({sig}) AS sg "
            f"JOIN ({st}) AS st ON st.rid = sg.rid GROUP BY sg.sig_now, st.s")


def failing_distinct_l(values: str, l_min: int) -> str:
    return f"SELECT sig_now, COUNT(*) AS ad FROM ({values}) AS cv GROUP BY sig_now HAVING COUNT(*) < {int(l_min)}"


def failing_entropy_l(values: str, l_min: float) -> str:
    """exp(entropy) below l (natural logarithm, as the version check)."""
    return (f"SELECT sig_now, EXP(-SUM(p * LN(p))) AS ad FROM (SELECT sig_now, n * 1.0 / SUM(n) OVER (PARTITION BY sig_now) AS p "
            f"FROM ({values}) AS cv) AS x GROUP BY sig_now HAVING EXP(-SUM(p * LN(p))) < {float(l_min)!r} - 1e-9")


def failing_t(values: str, q_relation: str, t: float) -> str:
    """Euclidean distance (HAEF eq. 2-4) to Q above t; ``q_relation`` has columns sa_key, q."""
    return (
        f"WITH cv AS (SELECT sig_now, s, n * 1.0 / SUM(n) OVER (PARTITION BY sig_now) AS p FROM ({values}) AS x), "
        f"qq AS (SELECT SUM(qd.q * qd.q) AS s2 FROM {q_relation} AS qd), "
        f"part AS (SELECT cv.sig_now, SUM((cv.p - COALESCE(q.q, 0)) * (cv.p - COALESCE(q.q, 0)) - COALESCE(q.q, 0) * COALESCE(q.q, 0)) AS d "
        f"FROM cv LEFT JOIN {q_relation} AS q ON q.sa_key = cv.s GROUP BY cv.sig_now) "
        f"SELECT sig_now, SQRT(GREATEST(d + (SELECT s2 FROM qq), 0)) AS ad FROM part "
        f"WHERE SQRT(GREATEST(d + (SELECT s2 FROM qq), 0)) > {float(t)!r} + 1e-9"
    )


def rows_of_classes(sig: str, classes_table: str, column: str) -> str:
    """Rows (rid, sig_prev, sig_now, present_now, present_prev, changed) whose ``column``
    (sig_now or sig_prev) is listed in ``classes_table`` (one column ``sig``)."""
    return (f"SELECT sg.rid, sg.sig_prev, sg.sig_now, sg.present_now, sg.present_prev, sg.changed FROM ({sig}) AS sg "
            f"WHERE EXISTS (SELECT 1 FROM {classes_table} AS c WHERE c.sig = sg.{column})")


def class_count(sig: str) -> str:
    """Number of history classes, rows ever published, and the smallest class's size."""
    return ("SELECT COUNT(*) AS classes, SUM(n) AS rows_ever, MIN(n) AS smallest FROM "
            f"(SELECT sig_now, COUNT(*) AS n FROM ({sig}) AS sg GROUP BY sig_now) AS c")


def distribution_query(source_from: str, sensitive: list[str], d: Dialect, types: Mapping[str, str] | None = None) -> str:
    """The source's joint sensitive distribution: each column's text, sa_key and share q, over
    every row of ``source_from`` (a FROM-clause text aliased ``src``), NULL QIDs included.
    ``types`` (column -> SQL type, when described): the typed text of queries.typed_text_kind,
    the same text as the general expression without its binding."""
    types = types or {}
    texts = {c: text(c, "src", d, sql_type=types.get(c)) for c in sensitive}
    key = tuple_hash(sensitive, "src", d, texts)
    cols = ", ".join(f"{texts[c]} AS {quote_ident(c, d)}" for c in sensitive)
    groups = ", ".join(texts[c] for c in sensitive)
    return (f"SELECT {cols}, {key} AS sa_key, COUNT(*) * 1.0 / (SELECT COUNT(*) FROM {source_from}) AS q "
            f"FROM {source_from} GROUP BY {groups}")


def fresh(sig: str, new_history: str) -> str:
    """The rows of ``sig`` in history classes this step reveals anew: classes with a record that
    appears or changes now, classes of records never published before, and the parts of a class
    of the previous version that this step splits. A class this step leaves whole and unchanged
    shows nothing that earlier versions did not (it was checked then), so it is not checked again."""
    lit = quote_literal(new_history, DUCKDB)  # hex digits: the same text in every dialect
    return (
        "SELECT x.rid, x.sig_prev, x.sig_now, x.present_now, x.present_prev, x.changed FROM (SELECT sg.*, "
        "MAX(CASE WHEN sg.present_now = 1 AND (sg.present_prev = 0 OR sg.changed = 1) THEN 1 ELSE 0 END) OVER (PARTITION BY sg.sig_now) AS ev, "
        "COUNT(*) OVER (PARTITION BY sg.sig_prev) AS n_prev, COUNT(*) OVER (PARTITION BY sg.sig_now) AS n_now "
        f"FROM ({sig}) AS sg) AS x WHERE x.sig_prev = {lit} OR x.ev = 1 OR x.n_prev <> x.n_now"
    )


def prefix_select(previous: list[tuple[int, str]], qids: list[str], sensitive: list[str], last_version: int, d: Dialect) -> str:
    """Per row id ever published before this step: sig_prev (its history up to ``last_version``),
    its labels hash and SA key at its last presence, and whether it is in ``last_version``.
    Computed once per run; each round of the history stage then only joins the new version."""
    return (
        f"WITH st AS ({states(previous, qids, sensitive, d)}), "
        "mk AS (SELECT rid, v, g, s, CASE WHEN LAG(s) OVER (PARTITION BY rid ORDER BY v) <> s THEN '*' ELSE '' END AS c, "
        "ROW_NUMBER() OVER (PARTITION BY rid ORDER BY v DESC) AS back FROM st) "
        "SELECT rid, md5(string_agg(CAST(v AS VARCHAR) || ':' || g || c, '|' ORDER BY v)) AS sig_prev, "
        "MAX(CASE WHEN back = 1 THEN g END) AS last_g, MAX(CASE WHEN back = 1 THEN s END) AS last_s, "
        f"MAX(CASE WHEN v = {int(last_version)} THEN 1 ELSE 0 END) AS present_prev FROM mk GROUP BY rid"
    )


def step_signatures(prefix_table: str, current: tuple[int, str], qids: list[str], sensitive: list[str],
                    new_history: str, d: Dialect) -> str:
    """The same columns as ``signatures`` for this step, from the stored prefix and the new
    version alone: sig_now extends sig_prev by the new version's entry (a hash chain: the same
    partition into history classes as ``signatures``' hash of the whole history)."""
    new = quote_literal(new_history, d)
    cur = f"({states([current], qids, sensitive, d)})"
    v = int(current[0])
    return (
        f"SELECT COALESCE(p.rid, e.rid) AS rid, COALESCE(p.sig_prev, {new}) AS sig_prev, "
        f"CASE WHEN e.rid IS NULL THEN p.sig_prev ELSE md5(COALESCE(p.sig_prev, {new}) || '|{v}:' || e.g || "
        "CASE WHEN p.last_s IS NOT NULL AND e.s <> p.last_s THEN '*' ELSE '' END) END AS sig_now, "
        "CASE WHEN e.rid IS NULL THEN 0 ELSE 1 END AS present_now, COALESCE(p.present_prev, 0) AS present_prev, "
        "CASE WHEN e.rid IS NOT NULL AND p.rid IS NOT NULL AND (p.last_g <> e.g OR p.last_s <> e.s) THEN 1 ELSE 0 END AS changed "
        f"FROM {prefix_table} AS p FULL OUTER JOIN {cur} AS e ON e.rid = p.rid"
    )
