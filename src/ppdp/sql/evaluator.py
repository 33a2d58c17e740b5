"""SQL of the DuckDB evaluator (engine/methods/generalization/evaluators/duckdb_backend.py): one GROUP BY query per batch.

The evaluator loads its inputs into a private in-memory database under fixed names:

- ``hist``: one row per histogram row: ``row``, the leaf code ``c<q>`` of every QID, ``sa``, ``n``;
- ``lk<q>``: the level lookup table of QID q: ``key`` (= level * leaves + leaf), ``gen`` (the
  generalized code), ``w`` (1/|v_g|) and, with a single class key, ``scaled`` (the code times
  the QID's mixed-radix stride);
- ``qtab`` (``sa``, ``q``): the source SA distribution Q; ``consts``: ``qq``, ``n_pos``, ``n_records``;
- ``phist`` (only when a model reads population counts): one row per leaf combination of the
  population with persons: ``c<q>`` and ``persons``;

and registers two frames per batch: ``pop`` (``ind``, ``o<q>`` = level offset into ``lk<q>``)
and ``ret`` (``ind``, ``row``, ``ret``: the retained count where it differs from ``n``). Every
name is internal and the builders take only counts, flags and fixed terms, so the text is a
fixed template; identifiers are still quoted. A privacy model picks its AD computation from
the terms below (``AdTerm``); the builders know computations, not models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppdp.sql.dialect import DUCKDB
from ppdp.sql.quoting import quote_ident

FRAME = "__ppdp_frame"  # name a frame is registered under while it is copied into a table

# Class statistics a term may read, beyond "size" and "td": "distinct" (distinct SA values),
# "nlogn" (sum of n ln n over SA values), "t" (the Euclidean distance terms against Q),
# "persons" (the population's persons in the class, c."persons", and the individual's number of
# population classes without a retained record, u."unmatched").
CLASS_STATISTICS = frozenset({"distinct", "nlogn", "t", "persons"})
PAIR_STATISTICS = frozenset({"distinct", "nlogn", "t"})


@dataclass(frozen=True)
class AdTerm:
    """One model's AD in the batch query: an aggregate over the individual's classes (``c``),
    the AD of an empty release (the convention of the matching kernel in
    engine/kernels/classes.py: smallest-type AD = inf, distance AD = 0), and the class
    statistics the aggregate reads."""

    aggregate: str
    empty: str
    reads: frozenset[str] = frozenset()


def smallest_class() -> AdTerm:
    """The smallest class size (k-anonymity)."""
    return AdTerm('min(c."size")', "'inf'::DOUBLE")


def fewest_distinct() -> AdTerm:
    """The fewest distinct SA values of a class (distinct l-diversity)."""
    return AdTerm('min(c."distinct")', "'inf'::DOUBLE", frozenset({"distinct"}))


def smallest_exp_entropy() -> AdTerm:
    """The smallest exp(entropy) of a class, ln N - sum n ln n / N as _kernels.ad_entropy_l."""
    return AdTerm('min(exp(ln(c."size") - c."nlogn" / c."size"))', "'inf'::DOUBLE", frozenset({"nlogn"}))


def largest_euclidean_distance() -> AdTerm:
    """The largest Euclidean distance of a class's SA distribution to Q (HAEF eq. 2-4)."""
    return AdTerm('max(sqrt(c."d2" + CASE WHEN c."npos" = k."n_pos" THEN 0.0 '
                  'ELSE greatest(k."qq" - c."qp", 0.0) END))', "0.0", frozenset({"t"}))


def fewest_persons() -> AdTerm:
    """The fewest persons of the population in a released class (k-map against a table)."""
    return AdTerm('min(c."persons")', "'inf'::DOUBLE", frozenset({"persons"}))


def share_outside(dmin: float, dmax: float) -> AdTerm:
    """The largest distance of a class's share of the population's persons (released / persons)
    outside [dmin, dmax], and dmin for population classes without released records when
    dmin > 0 (delta-presence, as DeltaPresence.ad computes it)."""
    lo, hi = repr(float(dmin)), repr(float(dmax))
    share = 'CAST(c."size" AS DOUBLE) / c."persons"'
    unmatched = f'CASE WHEN max(u."unmatched") > 0 AND {lo} > 0 THEN {lo} ELSE 0.0 END'
    return AdTerm(f"greatest(max(greatest({lo} - {share}, {share} - {hi}, 0.0)), {unmatched})",
                  f"CAST({lo} AS DOUBLE)", frozenset({"persons"}))


def settings(threads: int | None) -> list[str]:
    """Connection settings: the thread cap (if any) and the join order the batch query wants."""
    out = [f"SET threads = {int(threads)}"] if threads is not None else []
    # The optimizer builds the S join's hash table on the big side (population x histogram)
    # rather than on the small frame of changed rows; joining as written is ~1.5x faster.
    out.append("SET disabled_optimizers = 'build_side_probe_side'")
    return out


def create_from_frame(table: str) -> str:
    """Copy the frame registered as ``FRAME`` into table ``table``."""
    return f"CREATE TABLE {quote_ident(table, DUCKDB)} AS SELECT * FROM {FRAME}"


def class_columns(n_qids: int, single_key: bool) -> list[str]:
    """The columns identifying a class: one mixed-radix ``key``, or the generalized code of every QID."""
    return ['"key"'] if single_key else [quote_ident(f"g{q}", DUCKDB) for q in range(n_qids)]


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


def _population_ctes(n_qids: int, single_key: bool) -> list[str]:
    """(individual, class, persons) of the population, generalized as the histogram's rows."""
    cls = class_columns(n_qids, single_key)
    if single_key:
        codes = ", " + (" + ".join(f'k{q}."scaled"' for q in range(n_qids)) or "0") + ' AS "key"'
    else:
        codes = "".join(f', k{q}."gen" AS {cls[q]}' for q in range(n_qids))
    joins = "".join(f'\n    JOIN "lk{q}" AS k{q} ON k{q}."key" = p."o{q}" + ph."c{q}"' for q in range(n_qids))
    g = ", ".join(['"ind"'] + cls)
    pgen = f'"pgen" AS (\n    SELECT p."ind"{codes}, ph."persons"\n    FROM "pop" AS p\n    CROSS JOIN "phist" AS ph{joins}\n)'
    pclasses = f'"pclasses" AS (\n    SELECT {g}, sum("persons") AS "persons" FROM "pgen" GROUP BY {g}\n)'
    return [pgen, pclasses]


def batch_query(n_qids: int, single_key: bool, terms: Sequence[AdTerm], needs_pairs: bool,
                needs_population: bool = False) -> str:
    """One row per individual of ``pop``, in order: ``ind``, ``td``, ``suppressed`` and ``ad<j>``
    for the j-th of ``terms``. ``needs_pairs``: some model reads the SA values of each class
    (l-diversity, t-closeness); a term that reads class statistics needs it. ``needs_population``:
    some model reads the population's persons per class (``phist`` is loaded)."""
    reads: set[str] = set().union(*(term.reads for term in terms)) if terms else set()
    unknown = reads - CLASS_STATISTICS
    if unknown:
        raise ValueError(f"unknown class statistics {sorted(unknown)}")
    if reads & PAIR_STATISTICS and not needs_pairs:
        raise ValueError("terms that read class statistics need the (class, SA) pairs")
    if "persons" in reads and not needs_population:
        raise ValueError("terms that read persons need the population")
    cls = class_columns(n_qids, single_key)
    g = ", ".join(['"ind"'] + cls)
    t_on = "t" in reads
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
        if "nlogn" in reads:
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
    unmatched_join = ""
    if needs_population:
        # The released classes with their persons (0 when none), and per individual the number
        # of population classes that hold no retained record.
        ctes[-1] = ctes[-1].replace('"classes" AS (', '"rclasses" AS (', 1)
        ctes += _population_ctes(n_qids, single_key)
        on = " AND ".join(f"pc.{col} = rc.{col}" for col in ['"ind"'] + cls)
        ctes.append(f'"classes" AS (\n    SELECT rc.*, coalesce(pc."persons", 0) AS "persons" FROM "rclasses" AS rc '
                    f'LEFT JOIN "pclasses" AS pc ON {on}\n)')
        ctes.append(f'"unmatched" AS (\n    SELECT pc."ind", count(*) AS "unmatched" FROM "pclasses" AS pc\n'
                    f'    WHERE NOT EXISTS (SELECT 1 FROM "rclasses" AS rc WHERE {on}) GROUP BY pc."ind"\n)')
        unmatched_join = ' LEFT JOIN "unmatched" AS u ON u."ind" = c."ind"'
    per_ind = ['sum(c."size") AS "kept"', 'sum(c."td") AS "td"']
    per_ind += [f'{term.aggregate} AS "a{j}"' for j, term in enumerate(terms)]
    ctes.append(f""""per_ind" AS (
    SELECT c."ind", {', '.join(per_ind)} FROM "classes" AS c CROSS JOIN "consts" AS k{unmatched_join} GROUP BY c."ind"
)""")
    ads = "".join(f', coalesce(CAST(i."a{j}" AS DOUBLE), {term.empty}) AS "ad{j}"' for j, term in enumerate(terms))
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
