"""``ppdp suggest``: profile a table in its database and write a commented release spec.

One aggregate statement profiles every column (engine/core/builders/profile.py); one statement
counts the class sizes of each candidate column and pair (``ppdp risk``'s distinction and
separation, engine/risk/attributes.py). The decisions, each written with its reason:

- the key: the first column that is unique and never NULL, preferring id-like names;
- direct identifiers: the other columns unique or nearly unique per row (at least
  ``NEAR_UNIQUE`` of the non-NULL values distinct), and the columns named like names, e-mails,
  phone or social security numbers, addresses: listed in ``identifiers`` (never released);
- a person column: a column named like a person's id (``PERSON_WORDS`` with an id-like ending) whose values repeat across rows (one person,
  several rows): proposed for ``[source] person`` and kept out of the release as an identifier;
- quasi-identifier candidates: the remaining columns with at most ``MAX_QID_VALUES`` values,
  ranked first by whether an attacker plausibly knows them (``QID_WORDS``: age, sex, ZIP, ...)
  and then by their separation (on a block sample of about ``RANK_ROWS`` rows above that size); the
  first ``MAX_QIDS`` known ones become QIDs with ``auto`` hierarchies (or the top-ranked ones when
  no name says so), and the pairs of the chosen ones are measured too;
- sensitive candidates (``SENSITIVE_WORDS``: diagnosis, income, ...): ``[sensitive]``;
- every other column is dropped (fail closed: a kept column is published as it is).

The privacy model is k-anonymity with k = ceil(1 / max_risk) (the prosecutor's highest risk is
1/k). The preview runs the written spec on a copy (a sample above ``PREVIEW_ROWS`` rows) in a
throwaway DuckDB and reports its risk and utility; nothing is written to the source database.
"""

from __future__ import annotations

import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.builders.auto import MAX_LEAVES
from ppdp.engine.core.builders.profile import ColumnProfile, profile_table
from ppdp.engine.privacy.k_anonymity import KAnonymity
from ppdp.engine.risk import assess
from ppdp.engine.risk.population import Histogram
from ppdp.engine.risk.prosecutor import separation
from ppdp.errors import DataError, SpecError
from ppdp.sql import profile as P
from ppdp.sql import risk as R
from ppdp.sql.quoting import quote_table

NEAR_UNIQUE = 0.9
MAX_QID_VALUES = 5_000
MAX_QIDS = 6
PREVIEW_ROWS = 50_000
RANK_ROWS = 1_000_000
ID_NAME = re.compile(r"(^|[^a-z])(id|uuid|guid|key|pk|record|row)([^a-z]|$)|_id$|^id_", re.I)
IDENTIFIER_WORDS = re.compile(r"e-?mail|phone|mobile|ssn|social.?security|passport|(^|[^a-z])(first|last|full|sur|given|family)[ _-]?name"
                              r"|^name$|street|address|ip.?addr|iban|credit.?card", re.I)
PERSON_WORDS = re.compile(r"person|patient|member|customer|client|subject|individual|participant|citizen|pid|mrn", re.I)
PERSON_NUMBER = re.compile(r"(no|num|number|nr|code)$", re.I)
QID_WORDS = re.compile(r"age|birth|dob|sex|gender|zip|postal|post.?code|race|ethnic|marital|country|county|nation|citizen"
                       r"|education|occupation|job|region|city|state|language", re.I)
SENSITIVE_WORDS = re.compile(r"diagnos|disease|icd|ccs|drg|procedure|drug|medic(at|in)|salary|income|wage|charge|cost"
                             r"|mortality|severity|illness|condition|hiv|religio|sexual|disorder", re.I)


@dataclass
class Decision:
    column: str
    role: str  # key, identifier, person, qid, sensitive, drop
    why: str
    score: tuple[float, float] = (0.0, 0.0)  # (distinction, separation) of the column alone


@dataclass
class Suggestion:
    table: str
    rows: int
    decisions: list[Decision]
    pairs: list[tuple[tuple[str, ...], float, float]]
    k: int
    max_risk: float
    null_qids: list[str]
    ranked_on: int  # rows the ranking was measured on; negative: about that many, a block sample above RANK_ROWS
    preview: dict[str, Any] = field(default_factory=dict)
    person_varying: list[str] = field(default_factory=list)  # QIDs whose value differs between a person's rows
    source_risk: dict[str, Any] = field(default_factory=dict)

    def of(self, role: str) -> list[Decision]:
        return [d for d in self.decisions if d.role == role]

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "rows": self.rows, "ranked_on_rows": self.ranked_on, "k": self.k, "max_risk": self.max_risk,
                "columns": [{"column": d.column, "role": d.role, "why": d.why, "distinction": d.score[0], "separation": d.score[1]}
                            for d in self.decisions],
                "pairs": [{"columns": list(c), "distinction": a, "separation": b} for c, a, b in self.pairs],
                "person_varying": self.person_varying, "source_risk": self.source_risk, "preview": self.preview}


def suggest(con: Connector, table: str, *, max_risk: float = 0.2) -> Suggestion:
    """Profile ``table`` (SCHEMA.TABLE or TABLE) and decide every column's role."""
    if not (isinstance(max_risk, int | float) and 0 < max_risk <= 1):
        raise SpecError(f"--max-risk must be in (0, 1], got {max_risk!r}. Hint: --max-risk 0.2 (k = 5).")
    schema, _, name = table.rpartition(".")
    schema = schema or con.default_schema
    described = con.relation_columns(schema, name)
    if described is None:
        raise SpecError(f"no table {table!r} in {con.url}.")
    relation = quote_table(schema, name, con.dialect)
    profiles = profile_table(con, relation, dict(described))
    rows = next(iter(profiles.values())).rows if profiles else 0
    if rows == 0:
        raise DataError(f"table {table!r} is empty: there is nothing to suggest a release of.")
    decisions: dict[str, Decision] = {}
    key = _key(con, relation, profiles)
    decisions[key] = Decision(key, "key", "unique and never NULL: identifies the rows (not released)")
    for c, p in profiles.items():
        if c in decisions:
            continue
        decisions[c] = _first_pass(con, relation, p)
    candidates = [c for c, d in decisions.items() if d.role == "candidate"]
    # distinction and separation rank the columns: on a random sample above RANK_ROWS rows
    ranking = (f"({P.block_sample_query(relation, 100.0 * RANK_ROWS / rows, con.dialect)}) AS ranking_sample"
               if rows > RANK_ROWS else relation)
    singles = _separations(con, ranking, [[c] for c in candidates])
    ranked = sorted(candidates, key=lambda c: (not QID_WORDS.search(c), -singles[(c,)][1], c))
    known = [c for c in ranked if QID_WORDS.search(c)]
    chosen = known[:MAX_QIDS] if known else ranked[: min(4, len(ranked))]
    pair_figures = _separations(con, ranking, [[a, b] for i, a in enumerate(chosen) for b in chosen[i + 1:]])
    pairs = sorted(((c, a, b) for c, (a, b) in pair_figures.items()), key=lambda t: -t[2])
    for rank, c in enumerate(ranked, start=1):
        d, s = decisions[c], singles[(c,)]
        d.score = s
        figures = f"distinction {s[0]:.4f}, separation {s[1]:.4f}, rank {rank} of {len(ranked)}"
        if c in chosen:
            why = "a quasi-identifier an attacker plausibly knows (its name says so)" if QID_WORDS.search(c) else \
                "singles out the most rows among the columns (no name says quasi-identifier)"
            decisions[c] = Decision(c, "qid", f"{why}; {figures}", s)
        elif SENSITIVE_WORDS.search(c):
            decisions[c] = Decision(c, "sensitive", f"sensitive by its name (published as it is, protected by the model); {figures}", s)
        else:
            extra = "a further name-known quasi-identifier beyond the first " + str(MAX_QIDS) if QID_WORDS.search(c) else \
                "not a quasi-identifier by its name"
            decisions[c] = Decision(c, "drop", f"{extra}; {figures}; dropped (fail closed): move it to keep to publish it "
                                    "as it is (the run then checks whether it singles anyone out)", s)
    k = max(2, math.ceil(1 / max_risk - 1e-12))
    order = list(profiles)
    result = Suggestion(table, rows, sorted(decisions.values(), key=lambda d: order.index(d.column)), pairs, k, float(max_risk),
                        [c for c in chosen if profiles[c].nulls], rows if rows <= RANK_ROWS else -RANK_ROWS)
    qids = [d.column for d in result.of("qid")]
    persons = result.of("person")
    if persons and qids:
        row = con.query(P.varying_per_person_query(relation, persons[0].column, qids, con.dialect)).row(0)
        result.person_varying = [q for q, n in zip(qids, row, strict=True) if int(n or 0) > 0]
    if qids:
        a = assess(con, relation, qids, attributes=False)
        result.source_risk = {"qids": qids, **a.to_json()}
    return result


def _key(con: Connector, relation: str, profiles: dict[str, ColumnProfile]) -> str:
    # the profile's distinct counts are approximate (Spark's estimator errs by up to 5 %): confirmed exactly below
    unique = [c for c, p in profiles.items() if p.nonnull == p.rows and p.distinct >= NEAR_UNIQUE * p.rows]
    unique.sort(key=lambda c: (not ID_NAME.search(c), c))
    for c in unique:  # approximate counts: confirm exactly
        row = con.query(P.exact_distinct_query(relation, c, con.dialect)).row(0, named=True)
        if int(row["d"]) == profiles[c].rows:
            return c
    raise DataError("no column is unique and never NULL, so none can be the release's key. Hint: add one "
                    "(e.g. a row number) to the table, then run ppdp suggest again.")


def _first_pass(con: Connector, relation: str, p: ColumnProfile) -> Decision:
    c = p.name
    if p.nonnull == 0:
        return Decision(c, "drop", "holds only NULL values: nothing to publish")
    if p.distinct == 1:
        return Decision(c, "drop", "holds one value on every row: tells nothing about anyone, and nothing to analyse")
    share = p.distinct / p.nonnull
    if IDENTIFIER_WORDS.search(c):
        return Decision(c, "identifier", "direct identifier by its name (name, e-mail, phone, address...): never released")
    if PERSON_WORDS.search(c) and (ID_NAME.search(c) or PERSON_NUMBER.search(c)) and share < NEAR_UNIQUE:
        row = con.query(P.repeat_query(relation, c, con.dialect)).row(0, named=True)
        if int(row["repeated"] or 0) > 0:
            return Decision(c, "person", f"its values repeat across rows ({int(row['repeated']):,} of {int(row['groups']):,} "
                                         "values on several rows): one person, several rows; never released")
    if share >= NEAR_UNIQUE:
        return Decision(c, "identifier", f"unique or nearly unique per row ({p.distinct:,} distinct of {p.nonnull:,} values): "
                                         "singles out almost everyone; never released")
    if p.distinct > min(MAX_QID_VALUES, MAX_LEAVES):
        if SENSITIVE_WORDS.search(c):
            return Decision(c, "sensitive", f"sensitive by its name, {p.distinct:,} distinct values (published as it is)")
        return Decision(c, "drop", f"{p.distinct:,} distinct values: too many for a quasi-identifier hierarchy, dropped (fail closed)")
    return Decision(c, "candidate", "")


def _separations(con: Connector, relation: str, combos: list[list[str]]) -> dict[tuple[str, ...], tuple[float, float]]:
    """(distinction, separation) of each column combination, in one statement."""
    if not combos:
        return {}
    per: dict[int, dict[int, int]] = {}
    if len(combos) == 1:  # a UNION needs two
        per[0] = {int(a): int(b) for a, b in con.query(R.class_sizes(relation, combos[0], con.dialect)).select("size", "classes").iter_rows()}
    else:
        for combo, size, classes in con.query(R.combination_sizes(relation, combos, con.dialect)).select("combo", "size", "classes").iter_rows():
            per.setdefault(int(combo), {})[int(size)] = int(classes)
    seps = [separation(tuple(c), Histogram.of(per.get(i, {}))) for i, c in enumerate(combos)]
    return {s.columns: (s.distinction, s.separation) for s in seps}


# --- the spec ------------------------------------------------------------------------------


def _s(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _comment(text: str) -> str:
    return "# " + text.replace("\n", " ")


def spec_text(s: Suggestion, database: str, table: str) -> str:
    schema, _, name = table.rpartition(".")
    key = s.of("key")[0].column
    out = [f"# Written by `ppdp suggest` from {s.rows:,} rows of {table}. Every decision has its reason; change any and run:",
           "#   ppdp run THIS_FILE",
           "[source]",
           f"database = {_s(database)}"]
    if schema:
        out.append(f"schema = {_s(schema)}")
    out += [f"table = {_s(name)}", f"key = {_s(key)}  {_comment(s.of('key')[0].why)}"]
    idents = s.of("identifier")
    out.append("identifiers = [" + ", ".join(_s(d.column) for d in idents) + "]")
    for d in idents:
        out.append(_comment(f"  {d.column}: {d.why}"))
    for d in s.of("person"):
        out.append(f"person = {_s(d.column)}  # one person, several rows: the models count persons, not rows")
        out.append(_comment(f"  {d.column}: {d.why}"))
    if s.of("person") and s.person_varying:
        out.append("person_varying = [" + ", ".join(_s(c) for c in s.person_varying) + "]  "
                   + _comment("these differ between one person's rows: the signature rule of docs/design/person_unit.md"))
    drops = s.of("drop")
    out.append("drop = [" + ", ".join(_s(d.column) for d in drops) + "]")
    for d in drops:
        out.append(_comment(f"  {d.column}: {d.why}"))
    out.append("keep = []  # a kept column is published as it is: none is, by default")
    if s.null_qids:
        out.append('null_policy = "suppress"  ' + _comment(f"{', '.join(s.null_qids)} hold NULLs: their rows are withheld, "
                                                          "not published (the alternative, \"error\", refuses the run)"))
    out.append("")
    for d in s.of("qid"):
        out += ["[[quasi_identifiers]]", _comment(d.why), f"column = {_s(d.column)}",
                'hierarchy = "auto"  # built from the data (docs/design/auto_hierarchies.md); { type = "auto", ... } overrides it', ""]
    sens = s.of("sensitive")
    if sens:
        out.append("[sensitive]")
        for d in sens:
            out.append(_comment(f"{d.column}: {d.why}"))
        out += ["columns = [" + ", ".join(_s(d.column) for d in sens) + "]", ""]
    if s.pairs:
        out.append("# Pairs of candidates that single out the most rows (distinction / separation):")
        out += [_comment(f"  {a} + {b}: {x:.4f} / {y:.4f}") for (a, b), x, y in s.pairs[:5]]
        out.append("")
    out += ["[[privacy.models]]",
            _comment(f"k-anonymity: every released record shares its quasi-identifiers with at least k - 1 others; k = "
                     f"ceil(1 / max risk {s.max_risk:g}) so that the prosecutor's highest risk is 1/k <= {s.max_risk:g}"),
            f"name = {_s(KAnonymity.name)}", f"k = {s.k}", "",
            "[optimizer]", '# the lattice search certifies the optimum when it finishes within the budget',
            'name = "lattice"', "budget = 100000", "seed = 1", "",
            "[output]", 'schema = "published"', f"name = {_s(re.sub(r'[^A-Za-z0-9_]', '_', name).lower())}", ""]
    return "\n".join(out)


def preview(con: Connector, s: Suggestion, table: str, text: str) -> dict[str, Any]:
    """Run the spec on a copy of the table (a sample above PREVIEW_ROWS rows) in a throwaway
    DuckDB: the release it would give, its risk and utility. Figures only: no value leaves."""
    from ppdp.connectors import connect
    from ppdp.engine.app import api

    schema, _, name = table.rpartition(".")
    relation = quote_table(schema or con.default_schema, name, con.dialect)
    sampled = s.rows > PREVIEW_ROWS
    frame = con.query(P.sample_query(relation, PREVIEW_ROWS, con.dialect) if sampled else P.all_rows_query(relation, con.dialect))
    with tempfile.TemporaryDirectory(prefix="ppdp-suggest-") as tmp:
        db = Path(tmp) / "preview.duckdb"
        copy = connect(f"duckdb://{db}")
        try:
            copy.write_frame("main", name, frame)
        finally:
            copy.close()
        spec_path = Path(tmp) / "spec.toml"
        spec_path.write_text(_retarget(text, f"duckdb://{db}"))
        result = api.run_release(spec_path, db=f"duckdb://{db}")
        solution: dict[str, Any] = {}
        if result.status == "published" and result.release is not None:
            copy = connect(f"duckdb://{db}")
            try:
                runs = catalog.published_runs(copy, catalog.resolve_release(copy, result.release))
                solution = runs[-1].solution if runs else {}
            finally:
                copy.close()
    return {"rows": len(frame), "sampled": sampled, "status": result.status, "verified": result.verified,
            "certified": bool(solution.get("certified")), "levels": solution.get("levels"),
            "k": result.k, "released": result.released, "suppressed": result.suppressed, "td": result.td,
            "error": result.error, "risk": result.risk}


def risk_phrase(measured: dict[str, Any]) -> str:
    """One line of measured risk, each estimator phrasing its own keys (as ``ppdp run`` prints)."""
    from ppdp.engine.risk.base import estimators, values_of

    return "; ".join(p for e in estimators() if (v := values_of(e, measured)) and (p := e.summary(v)) is not None)


def _retarget(text: str, database: str) -> str:
    """The spec with its database replaced and no schema (the copy is in main)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("database = "):
            line = f"database = {_s(database)}"
        elif line.startswith("schema = ") and "[output]" not in lines:
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"
