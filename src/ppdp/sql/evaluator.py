"""SQL of the DuckDB evaluator (engine/evaluator/duckdb_backend.py): one GROUP BY query per batch.

The evaluator loads its inputs into a private in-memory database under fixed names:

- ``hist``: one row per histogram row: ``row``, the leaf code ``c<q>`` of every QID, ``sa``, ``n``;
- ``lk<q>``: the level lookup table of QID q: ``key`` (= level * leaves + leaf), ``gen`` (the
  generalized code), ``w`` (1/|v_g|) and, with a single class key, ``scaled`` (the code times
  the QID's mixed-radix stride);
- ``qtab`` (``sa``, ``q``): the source SA distribution Q; ``consts``: ``qq``, ``n_pos``, ``n_records``;

and registers two frames per batch: ``pop`` (``ind``, ``o<q>`` = level offset into ``lk<q>``)
and ``ret`` (``ind``, ``row``, ``ret``: the retained count where it differs from ``n``). Every
name is internal and the builders take only counts, flags and model names, so the text is a
fixed template; identifiers are still quoted.
"""

from __future__ import annotations

from collections.abc import Sequence

from ppdp.sql.quoting import quote_ident

FRAME = "__ppdp_frame"  # name a frame is registered under while it is copied into a table

# AD expression of each model over the per-individual columns (an empty release gets the
# convention of the matching kernel in engine/evaluator/_kernels.py: k and l AD = inf, t AD = 0).
_AD_SQL = {
    "k-anonymity": "coalesce(CAST(i.\"k_ad\" AS DOUBLE), 'inf'::DOUBLE)",
    "t-closeness": "coalesce(i.\"t_ad\", 0.0)",
    "distinct-l-diversity": "coalesce(CAST(i.\"dl_ad\" AS DOUBLE), 'inf'::DOUBLE)",
    "entropy-l-diversity": "coalesce(i.\"el_ad\", 'inf'::DOUBLE)",
}
MODELS_WITH_SQL = frozenset(_AD_SQL)


def settings(threads: int | None) -> list[str]:
    """Connection settings: the thread cap (if any) and the join order the batch query wants."""
    out = [f"SET threads = {int(threads)}"] if threads is not None else []
    # The optimizer builds the S join's hash table on the big side (population x histogram)
    # rather than on the small frame of changed rows; joining as written is ~1.5x faster.
    out.append("SET disabled_optimizers = 'build_side_probe_side'")
    return out


def create_from_frame(table: str) -> str:
    """Copy the frame registered as ``FRAME`` into table ``table``."""
    return f"CREATE TABLE {quote_ident(table)} AS SELECT * FROM {FRAME}"


def class_columns(n_qids: int, single_key: bool) -> list[str]:
    """The columns identifying a class: one mixed-radix ``key``, or the generalized code of every QID."""
    return ['"key"'] if single_key else [quote_ident(f"g{q}") for q in range(n_qids)]


def _gen_select(n_qids: int, single_key: bool) -> str:
    """(individual, histogram row, SA, retained n, class, TD weight of one record)."""
    cls = class_columns(n_qids, single_key)
    if single_key:
        codes = ", " + (" + ".join(f'k{q}."scaled"' for q in range(n_qids)) or "0") + ' AS "key"'
    else:
        codes = "".join(f', k{q}."gen" AS {cls[q]}' for q in range(n_qids))
    w = " + ".join(f'k{q}."w"' for q in range(n_qids)) or "CAST(0 AS DOUBLE)"
    joins = "".join(f'\n    JOIN "lk{q}" AS k{q} ON k{q}."key" = p."o{q}" + h."c{q}"' for q in range(n_qids))
    return f"""
    SELECT p."ind", h."row", h."sa", coalesce(r."ret", h."n") AS "n"{codes}, {w} AS "w"
    FROM "pop" AS p
    CROSS JOIN "hist" AS h{joins}
    LEFT JOIN "ret" AS r ON r."ind" = p."ind" AND r."row" = h."row\""""


def batch_query(n_qids: int, single_key: bool, models: Sequence[str], needs_pairs: bool) -> str:
    """One row per individual of ``pop``, in order: ``ind``, ``td``, ``suppressed`` and ``ad<j>``
    for the j-th of ``models`` (names in MODELS_WITH_SQL). ``needs_pairs``: some model reads
    the SA values of each class (l-diversity, t-closeness)."""
    cls = class_columns(n_qids, single_key)
    g = ", ".join(['"ind"'] + cls)
    names = set(models)
    t_on = "t-closeness" in names
    ctes = [f'"gen" AS ({_gen_select(n_qids, single_key)}\n)']
    if needs_pairs:
        # (individual, class, SA value) with its retained count; TD rides along. For t, the
        # class size comes with each pair (a window over the aggregate), so the distance is
        # summed term by term in the next GROUP BY.
        size = f', sum(sum("n")) OVER (PARTITION BY {g}) AS "size"' if t_on else ""
        ctes.append(f""""pairs" AS (
    SELECT {g}, "sa", sum("n") AS "n", sum("n" * "w") AS "td"{size}
    FROM "gen" WHERE "n" > 0 GROUP BY {g}, "sa"
)""")
        stats = ['sum(pr."n") AS "size"', 'sum(pr."td") AS "td"', 'count(*) AS "distinct"']
        if "entropy-l-diversity" in names:
            stats.append('sum(pr."n" * ln(pr."n")) AS "nlogn"')
        source = '"pairs" AS pr'
        if t_on:
            # Euclidean distance to Q over every SA value: present values term by term;
            # absent ones add q_v^2, exactly 0 when every value with q_v > 0 is present,
            # else qq - (sum of q_v^2 over the present values).
            stats += ['sum(power(CAST(pr."n" AS DOUBLE) / pr."size" - qt."q", 2)) AS "d2"',
                      'sum(qt."q" * qt."q") AS "qp"', 'count(*) FILTER (WHERE qt."q" > 0) AS "npos"']
            source += ' JOIN "qtab" AS qt ON qt."sa" = pr."sa"'
        group = ", ".join(f"pr.{col}" for col in ['"ind"'] + cls)
        ctes.append(f""""classes" AS (
    SELECT {group}, {', '.join(stats)}
    FROM {source} GROUP BY {group}
)""")
    else:
        ctes.append(f""""classes" AS (
    SELECT {g}, sum("n") AS "size", sum("n" * "w") AS "td"
    FROM "gen" WHERE "n" > 0 GROUP BY {g}
)""")
    per_ind = ['sum(c."size") AS "kept"', 'sum(c."td") AS "td"']
    if "k-anonymity" in names:
        per_ind.append('min(c."size") AS "k_ad"')
    if "distinct-l-diversity" in names:
        per_ind.append('min(c."distinct") AS "dl_ad"')
    if "entropy-l-diversity" in names:
        # exp of the class entropy ln N - sum n ln n / N, as _kernels.ad_entropy_l.
        per_ind.append('min(exp(ln(c."size") - c."nlogn" / c."size")) AS "el_ad"')
    if t_on:
        per_ind.append('max(sqrt(c."d2" + CASE WHEN c."npos" = k."n_pos" THEN 0.0 '
                       'ELSE greatest(k."qq" - c."qp", 0.0) END)) AS "t_ad"')
    ctes.append(f""""per_ind" AS (
    SELECT c."ind", {', '.join(per_ind)} FROM "classes" AS c CROSS JOIN "consts" AS k GROUP BY c."ind"
)""")
    ads = "".join(f', {_AD_SQL[name]} AS "ad{j}"' for j, name in enumerate(models))
    return f"""WITH {', '.join(ctes)}
SELECT p."ind", coalesce(i."td", 0.0) AS "td", k."n_records" - coalesce(i."kept", 0) AS "suppressed"{ads}
FROM "pop" AS p CROSS JOIN "consts" AS k
LEFT JOIN "per_ind" AS i ON i."ind" = p."ind"
ORDER BY p."ind\""""


def class_sizes_query(n_qids: int, single_key: bool) -> str:
    """(histogram row, size of its class) for the one individual of ``pop``; rows with nothing
    retained are absent."""
    part = ", ".join(class_columns(n_qids, single_key))
    return f"""WITH "gen" AS ({_gen_select(n_qids, single_key)}\n)
SELECT "row", sum("n") OVER (PARTITION BY {part}) AS "size" FROM "gen" WHERE "n" > 0"""
