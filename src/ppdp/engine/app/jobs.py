"""Release jobs stored in the database (``_ppdp.jobs``) and the audit certificate.

A job is a row: ``name``, ``spec`` (the release spec as JSON, same fields as the TOML form,
see docs/guides/jobs.md), ``created_at``, ``updated_at``, ``enabled``. It can be registered
with ``ppdp job register`` or with a plain SQL INSERT; either way the JSON is validated when
the job runs. A job always runs against the database that stores it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ppdp.connectors import connect
from ppdp.connectors.base import Connector
from ppdp.engine.app import summary
from ppdp.engine.core import catalog
from ppdp.engine.core.spec import load_spec, spec_from_dict
from ppdp.engine.methods import method_of
from ppdp.engine.release.placement import may_create_database
from ppdp.engine.release.run import ReleaseOutcome, run_release
from ppdp.errors import DataError, SpecError
from ppdp.sql import catalog as catalog_sql
from ppdp.sql.queries import PRIVATE_SCHEMA


def _absolute_hierarchies(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """Resolve ARX and source.file paths against the spec's folder so the stored job runs from anywhere."""
    out = json.loads(json.dumps(raw))
    for q in out.get("quasi_identifiers", []):
        h = q.get("hierarchy")
        if isinstance(h, str) and h not in ("intervals", "masking", "dates", "flat"):
            q["hierarchy"] = {"type": "arx", "file": str((base / h).resolve())}
        elif isinstance(h, dict) and h.get("type") == "arx" and "file" in h:
            h["file"] = str((base / h["file"]).resolve())
    src = out.get("source", {})
    if isinstance(src.get("file"), str):  # like ARX files: the stored job must not depend on the cwd
        src["file"] = str((base / src["file"]).resolve())
    src.pop("database", None)  # the job's database is the one storing it
    return out


def register_job(db: str, spec_path: str | Path, *, name: str | None = None) -> str:
    """Validate a TOML spec and store it as a job (replacing a job of the same name)."""
    spec = load_spec(spec_path)
    method_of(spec)  # the spec names a release method (the spec module does not know them)
    raw = _absolute_hierarchies(spec.raw, Path(spec.base_dir))
    job = name or spec.output_name
    con = connect(db, create=may_create_database(spec))
    try:
        with con.transaction():
            catalog.ensure_schema(con)
            con.execute(catalog_sql.delete_job(con.dialect), [job])
            con.execute(catalog_sql.insert_job(con.dialect), [job, json.dumps(raw, sort_keys=True)])
    finally:
        con.close()
    return job


def load_job(con: Connector, name: str) -> dict[str, Any]:
    has_jobs = con.relation_columns(PRIVATE_SCHEMA, "jobs") is not None
    rows = con.query(catalog_sql.select_job(con.dialect), [name]) if has_jobs else None
    if rows is None or rows.height == 0:
        raise SpecError(f"No job named {name!r} in {con.url}. Hint: 'ppdp job list --db ...' shows the registered jobs.")
    row = rows.row(0, named=True)
    try:
        raw = json.loads(row["spec"])
    except json.JSONDecodeError as exc:
        raise SpecError(f"Job {name!r}: its spec column is not valid JSON ({exc}).") from None
    return {"name": row["name"], "spec": raw, "enabled": bool(row["enabled"])}


def run_job(db: str, name: str, *, dry_run: bool = False, progress: bool = True, on_phase=None) -> ReleaseOutcome:
    """Run a stored job against the database that stores it (``on_phase``: see run_release)."""
    con = connect(db, create=False)
    try:
        job = load_job(con, name)
    finally:
        con.close()
    if not job["enabled"]:
        raise SpecError(f"Job {name!r} is disabled (enabled = false in _ppdp.jobs).")
    raw = job["spec"]
    if not isinstance(raw, dict):
        raise SpecError(f"Job {name!r}: spec must be a JSON object.")
    raw = json.loads(json.dumps(raw))
    raw.setdefault("source", {})
    if isinstance(raw["source"], dict):
        raw["source"]["database"] = db
    try:
        spec = spec_from_dict(raw, base_dir=Path.cwd())
    except SpecError as exc:
        raise SpecError(f"Job {name!r}: {exc}") from None
    try:
        return run_release(spec, database=db, dry_run=dry_run, progress=progress, job=name, on_phase=on_phase)
    except (SpecError, DataError) as exc:
        # the spec's errors found once the source is read (source.query, columns, hierarchies):
        # prefixed like the others, the exception kept (its class decides the exit code)
        if not str(exc).startswith(f"Job {name!r}: "):
            exc.args = (f"Job {name!r}: {exc}", *exc.args[1:])
        raise


def job_exists(db: str, name: str) -> None:
    """SpecError unless job ``name`` is registered in ``db``."""
    con = connect(db, read_only=True)
    try:
        load_job(con, name)
    finally:
        con.close()


def list_jobs(db: str) -> list[dict[str, Any]]:
    con = connect(db, read_only=True)
    try:
        if con.relation_columns(PRIVATE_SCHEMA, "jobs") is None:
            return []
        return con.query(catalog_sql.list_jobs(con.dialect)).to_dicts()
    finally:
        con.close()


def certificate(db: str, name: str) -> dict[str, Any]:
    """The audit record of the current version of job ``name``'s release (or of release ``name``)."""
    con = connect(db, read_only=True)
    try:
        release = None
        if con.relation_columns(PRIVATE_SCHEMA, "jobs") is not None:
            rows = con.query(catalog_sql.select_job_spec(con.dialect), [name])
            if rows.height:
                out = json.loads(rows["spec"][0]).get("output", {})
                release = catalog.release_id(out.get("schema", "published"), out.get("name", name))
        release = release or catalog.resolve_release(con, name)
        run = catalog.latest_success(con, release) if catalog.has_catalog(con) else None
    finally:
        con.close()
    if run is None:
        raise SpecError(f"No published release named {name!r} in {db}.")
    return certificate_of(run)


def certificate_of(run: catalog.RunRecord) -> dict[str, Any]:
    """The audit record of the version ``run`` published (what ``ppdp job certificate`` prints)."""
    from ppdp.engine.app.shareable import shareable_check

    m, s, v = run.metrics, run.solution, run.verification
    checks = [shareable_check(c) for c in v.get("checks", [])]
    return {
        "release": run.release, "version": run.version, "run_id": run.run_id, "job": run.job,
        "published_at": str(run.finished_at), "source_rows": run.source_rows, "source_fingerprint": run.source_fingerprint,
        "models": [{"model": c["model"], "params": c["params"], "achieved": c.get("achieved", c["ad"]), "passed": c["passed"],
                    "verification_query": c["query"]} for c in checks],
        "released_rows": v.get("rows"), "suppressed_rows": int(m.get("suppressed") or 0),
        "method": s.get("method", "generalization"), "method_summary": dict(summary.method_lines(run)),
        "utility": summary.utility(m),
        # the version's risk and utility as stored beside each other (_ppdp.risk, _ppdp.utility):
        # aggregates over the published rows only
        "risk": (v.get("risk") or {}).get("release"),
        "utility_measures": v.get("utility"),
        "class_sizes": m.get("class_sizes"), "levels": s.get("levels"),
        # only a method that searched with an optimizer has one (no "None")
        "optimizer": None if s.get("optimizer") is None else
        {"name": s.get("optimizer"), "budget": s.get("budget"), "seed": s.get("seed"),
         "evaluations": s.get("evaluations"), "certified_optimal": s.get("certified")},
        "cross_version": dict(run.cross_version or {}),
        # the release method's own checks with what they counted (e.g. how many forged rows a
        # microaggregation version holds), never which rows: no queries, no ids
        "method_checks": {c["check"]: {k: val for k, val in c.items() if k not in ("check", "query", "detail")}
                          for c in v.get("method_checks", [])},
        "verification_passed": v.get("passed"),
    }


def certificate_markdown(cert: dict[str, Any]) -> str:
    lines = [f"# Release certificate: `{cert['release']}` v{cert['version']}", "",
             f"- run `{cert['run_id']}`" + (f" (job `{cert['job']}`)" if cert.get("job") else "") + f", published {cert['published_at']}",
             f"- source: {cert['source_rows']:,} rows, fingerprint `{cert['source_fingerprint']}`",
             f"- released rows: {cert['released_rows']:,}; suppressed: {int(cert['suppressed_rows'] or 0):,}"]
    opt = cert.get("optimizer")
    if opt:
        lines.append(f"- optimizer: {opt['name']} (budget {opt['budget']}, seed {opt['seed']}, {opt['evaluations']} evaluations, "
                     f"{'certified optimal' if opt['certified_optimal'] else 'not certified optimal'})")
    elif cert.get("method_summary", {}).get("method"):
        lines.append(f"- method: {cert['method_summary']['method']}")
    if cert.get("levels"):
        lines.append(f"- levels: {', '.join(f'{k}={v}' for k, v in cert['levels'].items())}")
    lines += ["", "| model | parameters | achieved | verified |", "|---|---|---|---|"]
    for mdl in cert["models"]:
        lines.append(f"| {mdl['model']} | {json.dumps(mdl['params'])} | {mdl['achieved']} | {'pass' if mdl['passed'] else 'FAIL'} |")
    if not cert["models"]:
        lines.append("| (verified by the method's own checks below) | | | |")
    lines.append("")
    if cert["utility"]:
        lines.append("Utility: " + ", ".join(f"{k} = {v:,.4f}" if isinstance(v, float) else f"{k} = {v}" for k, v in cert["utility"].items()))
    if cert.get("risk"):
        # each estimator phrases its own keys
        from ppdp.engine.risk.base import estimators, values_of

        phrases = [p for e in estimators() if (v := values_of(e, cert["risk"])) and (p := e.summary(v)) is not None]
        lines.append("Risk of this version: " + "; ".join(phrases))
    um = cert.get("utility_measures") or {}
    quality = {k: v["value"] if isinstance(v, dict) else v for k, v in um.items()
               if k not in ("rows", "withheld", "method") and (isinstance(v, dict) or isinstance(v, float))}
    if quality:
        lines.append("Utility of this version (ppdp utility; ARX's quality models in [0, 1], higher is better): "
                     + ", ".join(f"{k} = {v:,.4f}" if isinstance(v, float) else f"{k} = n/a" for k, v in quality.items()))
    cv = cert["cross_version"]
    if cv.get("versions_checked"):
        held = cv.get("held_back", {})
        classes = (f"every history class over {cv['versions_checked']} versions meets the models ({cv['history_classes']} "
                   f"classes, smallest {cv.get('smallest_history_class')})" if cv.get("history_classes") is not None
                   else f"checked over {cv['versions_checked']} versions")
        lines.append(f"Cross-version: {classes}; held back at this step: "
                     f"{held.get('inserts_withheld', 0)} insertions, {held.get('deletes_delayed', 0)} deletions, "
                     f"{held.get('changes_delayed', 0)} changes")
    for name, found in cert.get("method_checks", {}).items():
        counted = ", ".join(f"{k} = {val}" for k, val in found.items() if k != "passed")
        lines.append(f"Method check: {name}: {'pass' if found.get('passed') else 'FAIL'}" + (f" ({counted})" if counted else ""))
    lines += ["", "Verification queries:", ""]
    for mdl in cert["models"]:
        lines += [f"```sql\n-- {mdl['model']}\n{mdl['verification_query']}\n```"]
    return "\n".join(lines) + "\n"
