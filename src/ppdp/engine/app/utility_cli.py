"""How ``ppdp utility`` prints a version's utility (engine/app/cli.py stays a thin parser)."""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.utility import HierarchyLoader, UtilityAssessment
from ppdp.engine.utility.base import ordered_measures


def _number(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):  # noqa: PLR0124
        return "n/a"
    return f"{v:,.4f}" if abs(v) < 1e6 else f"{v:,.1f}"


def describe(a: UtilityAssessment) -> str:
    """A header, then one line per measure: its value and, for ARX's models, its per-QID values."""
    values = dict(a.measures)
    lines = [f"utility of {a.relation}: {a.rows:,} source rows, {a.withheld:,} withheld ({a.method}); quality, higher is better"]
    for m in ordered_measures():
        v = values.get(m.name)
        if isinstance(v, dict):
            line = f"  {m.title:<32} {_number(v.get('value'))}"
            cols = v.get("columns")
            if cols:
                line += "   (" + ", ".join(f"{c} {_number(x)}" for c, x in cols.items()) + ")"
        else:
            line = f"  {m.title:<32} {_number(v)}"
        lines.append(line)
    return "\n".join(lines)


def spec_hierarchies(con: Connector) -> HierarchyLoader:
    """Hierarchies read as the run's spec gives them (its files, or generated from the source),
    for a version whose method stores none (heterogeneous)."""

    def load(run: RunRecord) -> dict[str, Hierarchy]:
        from ppdp.engine.core.spec import spec_from_dict
        from ppdp.engine.release.stages.validate import load_hierarchy
        from ppdp.sql.queries import Source

        spec = spec_from_dict(run.spec)
        source = Source(spec.schema, spec.table, spec.query, con.dialect)
        return {q.column: load_hierarchy(spec, q, source, con) for q in spec.quasi_identifiers}

    return load


def analyses(con: Any, args: Any, result: UtilityAssessment) -> dict[str, Any]:
    """The analyses asked for beside the quality models: ``classification`` (--classify),
    ``summary`` (--summary, --pairs) and, for a version with numeric QIDs released as numbers
    or ranges (microaggregation), sdcMicro's measures (``sdc``)."""
    from ppdp.engine.utility import sdc
    from ppdp.errors import SpecError

    out: dict[str, Any] = {}
    version = getattr(args, "version", None)
    if getattr(args, "classify", None):
        from ppdp.engine.utility.classify import classify

        feats = [f.strip() for f in args.features.split(",") if f.strip()] if getattr(args, "features", None) else None
        out["classification"] = classify(con, args.name, args.classify, version=version, features=feats,
                                         model=args.model, folds=args.folds, max_records=args.max_records, seed=args.seed)
    pairs = []
    for p in (getattr(args, "pairs", None) or "").split(","):
        if p.strip():
            a, sep, b = p.partition(":")
            if not sep or not a.strip() or not b.strip():
                raise SpecError(f"--pairs takes FIRST:SECOND[,FIRST:SECOND...], got {p!r}.")
            pairs.append((a.strip(), b.strip()))
    if getattr(args, "summary", False) or pairs:
        from ppdp.engine.utility.summary import summarize

        out["summary"] = summarize(con, args.name, version=version, pairs=pairs)
    if result.method == "microaggregation":
        micro = sdc.measure_version(con, args.name, version=version)
        if micro is not None:
            out["sdc"] = micro
    return out


def describe_analyses(extra: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key in ("sdc", "summary", "classification"):
        if key in extra:
            lines += extra[key].lines()
    return lines
