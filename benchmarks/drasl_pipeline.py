"""ppdp's own microaggregation release across versions, attacked on the sensitive value (issue #15 item 6).

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/drasl_pipeline.py            # 3,000 rows, minutes
    ... --algorithms drasl --rows 2000 --steps 2                                   # a subset

Where benchmarks/drasl.py attacks in-memory states of the algorithms (the paper's model: no row
ids), this runs the release pipeline itself (engine.release.run.run_release on an embedded DuckDB
file in a temporary folder) and attacks what it publishes with the pipeline's attack harness,
tests/attack/harness.py: an attacker who keeps every published version, its ``__delta`` and the
stable ``ppdp_row_id``, and knows each changed person's QIDs and who was inserted, deleted or
modified. For each person changed since the previous version (and a sample of 200 unchanged
persons) the harness gives the probability the attacker assigns to the person's exact Disease
and to its catalogue category (share among the person's candidate rows). The benchmark imports
the harness from tests/ (test machinery, not part of the installed package), so it runs from a
checkout of the repository.

Setting (benchmarks/drasl.py's adult): the UCI adult rows without missing values or duplicates,
file order; QIDs age and capital-gain (continuous: published as the group's [lo, hi]), workclass,
occupation, education (semantic, ARX hierarchies), race and sex (drasl.py treats them as
non-semantic nominal, eq. 3; the release method publishes continuous and semantic QIDs only, so
here they are semantic over their one-level hierarchy: value -> '*'); Disease drawn uniformly
from diseases32 with drasl.py's seed (the prior: 1/32 for the value, 1/8 for the category).
The first ``--rows`` rows are v1's source; the rows after them are the pool of newcomers.

Per algorithm (``params.algorithm``; the dynamic ones: drasl, dpp, m-invariance), K = 8 with
``[dynamic] max_repair_fraction = 1.0`` (the history stage may hold back whatever it must): v1,
then ``--steps`` steps of mixed source changes, each followed by a release: 50 inserts (the
next pool rows), 50 deletes and 25 QID modifications (all seven QIDs taken from a pool row) and
25 Disease modifications (another value, uniformly) of distinct random persons.

Reported per algorithm: versions published, rows held back per kind (run.cross_version
["held_back"]), forged rows published (the method check's count), the harness's P(exact) and
P(category) mean and worst per change kind, and the k-anonymity violations (must be 0: the
cross-version guarantee of the release pipeline).

Outputs (``--out``, default benchmarks/results/drasl): pipeline.json and pipeline.md (the exact
command first).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.drasl import ADULT_HIERARCHIES, ADULT_QIDS, UPDATE_K, data_dir, load_adult  # noqa: E402
from ppdp.engine.core.spec import ReleaseSpec, load_spec  # noqa: E402
from ppdp.engine.release.run import run_release  # noqa: E402
from ppdp.errors import PpdpError  # noqa: E402
from tests.attack.harness import (  # noqa: E402
    KINDS,
    Backend,
    ModelCheck,
    Scenario,
    SourceChange,
    Step,
    duckdb_backend,
    run_scenario,
    summarize_exposures,
)
from tests.attack.scenarios import MicroaggregationRelease  # noqa: E402
from tests.conftest import toml_str  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "drasl"
ALGORITHMS = ("drasl", "dpp", "m-invariance")
CONTINUOUS = ("age", "capital-gain")
SEMANTIC_FILES = {"workclass": "workclass", "occupation": "occupation", "education": "education", "race": "race",
                  "sex": "sex"}
SA = "disease"
CATALOGUE = "diseases32"
PER_STEP = {"inserts": 50, "deletes": 50, "qid_modifications": 25, "sa_modifications": 25}


@dataclass
class PipelineRelease(MicroaggregationRelease):
    """ppdp's microaggregation release of the benchmark's adult table with a named algorithm;
    the attack harness's row predicate (``[lo, hi]`` containment, hierarchy labels) is
    MicroaggregationRelease's. Every succeeded run record is kept for the report."""

    algorithm: str = "drasl"
    runs: list = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)

    def spec_for(self, backend: Backend) -> ReleaseSpec:
        lines = ["[source]", f"database = {toml_str(backend.url)}", 'table = "adult"', 'key = "id"',
                 f"schema = {toml_str(backend.source_schema)}"]
        for q in self.qids:
            h = ('{ type = "intervals" }' if q in CONTINUOUS
                 else toml_str(str(ADULT_HIERARCHIES / f"adult_hierarchy_{SEMANTIC_FILES[q]}.csv")))
            lines += ["[[quasi_identifiers]]", f"column = {toml_str(q)}", f"hierarchy = {h}"]
        kinds = ", ".join(f"{toml_str(q)} = {toml_str('continuous' if q in CONTINUOUS else 'semantic')}"
                          for q in self.qids)
        lines += ["[sensitive]", f"columns = [{toml_str(SA)}]",
                  "[[privacy.models]]", 'name = "k-anonymity"', f"k = {UPDATE_K}",
                  "[method]", 'name = "microaggregation"',
                  f"params = {{ algorithm = {toml_str(self.algorithm)}, k = {UPDATE_K}, catalogue = {toml_str(CATALOGUE)}, "
                  f"kinds = {{ {kinds} }} }}",
                  "[dynamic]", "max_repair_fraction = 1.0",
                  "[output]", f"schema = {toml_str(self.output_schema)}", f"name = {toml_str(self.output_name)}"]
        path = self.spec_dir / f"{self.output_name}.toml"
        path.write_text("\n".join(lines) + "\n")
        return load_spec(path)

    def publish(self, backend: Backend) -> int | None:
        try:
            run = run_release(self.spec_for(backend), progress=False).run
        except PpdpError:
            raise
        except Exception as exc:  # an engine bug: recorded, and the step counts as not published
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).relative_to(ROOT) if frame.filename.startswith(str(ROOT)) else frame.filename}:{frame.lineno}"
            self.crashes.append(f"{type(exc).__name__}: {exc} ({where})")
            raise PpdpError(f"crashed: {type(exc).__name__} at {where}") from exc
        if run.status != "succeeded":
            return None
        self.runs.append(run)
        return run.version


def source_frame(rows: list[tuple], sa: list[str]) -> pl.DataFrame:
    """The benchmark rows as a source table: an Int64 key ``id`` (1..n), the QIDs (continuous
    ones as integers, as in adult.data) and Disease."""
    cols: dict[str, Any] = {"id": list(range(1, len(rows) + 1))}
    for i, q in enumerate(ADULT_QIDS):
        cols[q] = [int(r[i]) if q in CONTINUOUS else r[i] for r in rows]
    cols[SA] = sa
    schema = {"id": pl.Int64, **{q: pl.Int64 if q in CONTINUOUS else pl.String for q in ADULT_QIDS}, SA: pl.String}
    return pl.DataFrame(cols, schema=schema)


def mixed_step(index: int, pool: pl.DataFrame, diseases: list[str]) -> Step:
    """Step ``index`` (1-based): inserts of pool rows ``[p, p + 50)``, QIDs of the next 25 pool
    rows for the QID modifications, deletes and Disease changes of random persons."""
    n = PER_STEP
    per_pool = n["inserts"] + n["qid_modifications"]
    start = (index - 1) * per_pool
    newcomers = pool.slice(start, n["inserts"]).rows(named=True)
    donors = pool.slice(start + n["inserts"], n["qid_modifications"]).rows(named=True)

    def step(state: dict[int, dict[str, Any]], rng: random.Random) -> SourceChange:
        keys = sorted(state)
        deletes = rng.sample(keys, n["deletes"])
        gone = set(deletes)
        touched = rng.sample([k for k in keys if k not in gone], n["qid_modifications"] + n["sa_modifications"])
        updates = [(k, tuple((q, d[q]) for q in ADULT_QIDS)) for k, d in zip(touched[:n["qid_modifications"]], donors, strict=True)]
        for k in touched[n["qid_modifications"]:]:
            other = [v for v in diseases if v != state[k][SA]]
            updates.append((k, ((SA, rng.choice(other)),)))
        return SourceChange(deletes=tuple(deletes), updates=tuple(updates), inserts=tuple(dict(r) for r in newcomers))

    return step


def run_algorithm(algorithm: str, base: pl.DataFrame, pool: pl.DataFrame, steps: int, seed: int,
                  diseases: list[str], category: dict[str, str], log) -> dict:
    """v1 and ``steps`` mixed steps of one algorithm's release, attacked; the report's row."""
    tmp = Path(tempfile.mkdtemp(prefix=f"ppdp-pipeline-{algorithm}-"))
    try:
        method = PipelineRelease(tmp, [ModelCheck("k-anonymity", UPDATE_K)], list(ADULT_QIDS), [SA],
                                 output_name=f"adult_{algorithm.replace('-', '_')}", algorithm=algorithm)
        scenario = Scenario(f"adult-{algorithm}", tuple(mixed_step(i + 1, pool, diseases) for i in range(steps)), seed=seed)
        t0 = time.perf_counter()
        report = run_scenario(scenario, duckdb_backend(tmp / "adult.duckdb"), method, base, category=category)
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_version = []
    for run in method.runs:
        h = run.cross_version.get("held_back", {}) if run.cross_version else {}
        forged = sum(c.get("forged_rows", 0) for c in run.verification.get("method_checks", []))
        per_version.append({"version": run.version, "held_back": dict(h), "forged_rows_published": forged,
                            "released_rows": run.metrics.get("released_records")})
    summaries = summarize_exposures(report.exposures)
    violations = Counter(v.model for v in report.violations)
    row = {"algorithm": algorithm, "versions": report.versions, "refusals": report.refusals, "crashes": method.crashes,
           "skipped_steps": report.skipped_steps, "seconds": seconds, "per_version": per_version,
           # a version's counts are the rows standing held back in it (a deletion delayed at v2 and
           # still delayed at v3 counts in both): the last version's are the ones still pending
           "held_back_last": per_version[-1]["held_back"] if per_version else {},
           "forged_rows_published_last": per_version[-1]["forged_rows_published"] if per_version else 0,
           "k_violations": violations.get("k-anonymity", 0), "violations": dict(violations),
           "delta_problems": report.delta_problems,
           "exposure": {k: vars(s) for k, s in summaries.items()}}
    log(f"{algorithm}: versions {report.versions}, refused {[s for s, _ in report.refusals]}, held back at the last version {row['held_back_last']}, "
        f"forged (last version) {row['forged_rows_published_last']}, violations {dict(violations)}, {seconds:.0f} s")
    for s in summaries.values():
        log(f"  {s.kind:<14} n={s.count:<4} unmeasured={s.unmeasured:<3} P(exact) mean {s.p_exact_mean:.3f} "
            f"worst {s.p_exact_worst:.3f}; P(category) mean {s.p_category_mean:.3f} worst {s.p_category_worst:.3f}")
    return row


def markdown(command: str, meta: dict, rows: list[dict]) -> str:
    """The report: command, setting, the per-algorithm table and the exposure table."""
    lines = ["# ppdp's microaggregation release across versions, attacked on the sensitive value", "",
             "```", command, "```", "",
             f"Machine: {meta['machine']['platform']}, Python {meta['machine']['python']}, {meta['machine']['cpus']} CPUs "
             f"shared with other jobs. Wall time {meta['wall_seconds']:.0f} s.", "",
             f"- adult (benchmarks/drasl.py's setting): {meta['rows']:,} source rows in v1 ({meta['source']}); QIDs "
             f"{', '.join(ADULT_QIDS)} (age, capital-gain continuous; the others semantic, race and sex over their "
             f"one-level hierarchy); Disease uniform over diseases32 (prior: 1/32 = 0.031 exact, 1/8 = 0.125 category).",
             f"- K = {UPDATE_K}, `[dynamic] max_repair_fraction = 1.0`; v1 then {meta['steps']} steps of "
             f"{PER_STEP['inserts']} inserts, {PER_STEP['deletes']} deletes, {PER_STEP['qid_modifications']} QID and "
             f"{PER_STEP['sa_modifications']} Disease modifications; a release after each (seed {meta['seed']}).",
             "- Attacker (tests/attack/harness.py): every published version, the deltas and the stable row ids; each "
             "changed person's QIDs and who was inserted, deleted or modified. P = share of the person's true Disease "
             "(its category) among their candidate rows in the latest version where they were in the source and their "
             "row was published; per change kind over every step, plus 200 unchanged persons at every version. "
             "unmeasured = changed persons whose row was never published while they were in the source (held back).",
             "", "## Versions, held-back rows, forged rows, k violations", "",
             "Held back = rows standing held back in the last published version (the history stage's counts, "
             "run.cross_version[\"held_back\"]: new rows withheld, i.e. inserted persons or forged rows; deleted "
             "persons whose row still stands; changed persons whose previous row still stands).", "",
             "| algorithm | versions | refused steps | new rows withheld | deletes delayed | changes delayed | "
             "forged rows in last version | k violations | other violations | delta problems | seconds |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        h = r["held_back_last"]
        other = sum(c for m, c in r["violations"].items() if m != "k-anonymity")
        lines.append(f"| {r['algorithm']} | {', '.join(f'v{v}' for v in r['versions'])} | "
                     f"{', '.join(str(s) for s, _ in r['refusals']) or '-'} | {h.get('inserts_withheld', 0)} | "
                     f"{h.get('deletes_delayed', 0)} | {h.get('changes_delayed', 0)} | {r['forged_rows_published_last']} | "
                     f"{r['k_violations']} | {other} | {len(r['delta_problems'])} | {r['seconds']:.0f} |")
    lines.append("")
    for r in rows:
        for s, msg in r["refusals"]:
            lines.append(f"- {r['algorithm']}, step {s} not published: {msg}")
    lines += ["", "Held back per version (new rows withheld / deletes delayed / changes delayed; forged rows published):", ""]
    for r in rows:
        per = "; ".join(f"v{p['version']}: {p['held_back'].get('inserts_withheld', 0)} / {p['held_back'].get('deletes_delayed', 0)}"
                        f" / {p['held_back'].get('changes_delayed', 0)}, forged {p['forged_rows_published']}"
                        for p in r["per_version"])
        lines.append(f"- {r['algorithm']}: {per}")
    lines += ["", "## What the attacker learns of each person's Disease", "",
              "| algorithm | change | persons | unmeasured | P(exact) mean | P(exact) worst | P(category) mean | "
              "P(category) worst |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for kind in KINDS:
            e = r["exposure"].get(kind)
            if e is None:
                continue
            lines.append(f"| {r['algorithm']} | {kind} | {e['count']} | {e['unmeasured']} | {e['p_exact_mean']:.3f} | "
                         f"{e['p_exact_worst']:.3f} | {e['p_category_mean']:.3f} | {e['p_category_worst']:.3f} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run every algorithm, print the Markdown, write pipeline.json and pipeline.md."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="data directory (default: $PPDP_DATA or ../shared/data; else the bundled adult)")
    p.add_argument("--rows", type=int, default=3000, help="v1 source rows (first rows of the cleaned adult)")
    p.add_argument("--steps", type=int, default=3, help="steps of mixed changes after v1")
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    env = " ".join(f"{v}={shlex.quote(os.environ[v])}" for v in ("PPDP_DATA", "NUMBA_NUM_THREADS") if v in os.environ)
    command = (env + " " if env else "") + "python benchmarks/drasl_pipeline.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    wall0 = time.perf_counter()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    ds = load_adult(data_dir(args.data))
    need = args.rows + args.steps * (PER_STEP["inserts"] + PER_STEP["qid_modifications"])
    if len(ds.rows) < need:
        raise SystemExit(f"drasl_pipeline: error: {len(ds.rows):,} adult rows, {need:,} needed. Hint: lower --rows or --steps.")
    frame = source_frame(ds.rows[:need], ds.sa[:need])
    base, pool = frame.head(args.rows), frame.slice(args.rows)
    cat = ds.catalogue
    category = {v: cat.categories[int(cat.category_code[i])] for i, v in enumerate(cat.values)}
    rows = [run_algorithm(a, base, pool, args.steps, args.seed, list(cat.values), category, log) for a in args.algorithms]
    meta = {"command": command, "rows": args.rows, "steps": args.steps, "seed": args.seed, "k": UPDATE_K,
            "per_step": PER_STEP, "source": ds.source, "notes": list(ds.notes),
            "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
            "wall_seconds": time.perf_counter() - wall0}
    report = markdown(command, meta, rows)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pipeline.md").write_text(report)
    (args.out / "pipeline.json").write_text(json.dumps({**meta, "algorithms": rows}, indent=1) + "\n")
    log(f"wrote {args.out}/pipeline.md and pipeline.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
