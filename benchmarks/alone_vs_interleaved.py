"""Each side of a benchmarks/vs_arx.py row timed alone (its runs back to back) and interleaved
with the other side (ARX, then ppdp, then ARX ...), in one process and one warm JVM.

    .venv/bin/python benchmarks/alone_vs_interleaved.py [--case KEY:OBJECTIVE ...] [--runs 150]
                                                        [--blocks 2] [--data DIR]
                                                        [--out benchmarks/results/alone_vs_interleaved]

The rows where ppdp's time is above ARX's are runs of 1-10 ms. There, what ran just before a
run moves it: this separates the two sides' own speeds from what running after the other costs
each. After 60 untimed interleaved rounds, each block times ``--runs`` ARX runs in a row, then
``--runs`` ppdp runs in a row, then ``--runs`` interleaved pairs; the blocks repeat ``--blocks``
times and each prints the four medians. ppdp's run is vs_arx.py's ``ppdp_run`` (the source's
rows read out of DuckDB, encoding, search), ARX's is ``ARXAnonymizer.anonymize`` from its data
in memory, as there. Writes ``<out>/<commit>.json`` (``<commit>-arx-cpus-<cpus>.json`` with
``--arx-cpus``, the JVM kept to those CPUs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = ["adult-1000-k5-flash-0:loss", "adult-5000-k5-lattice:nu-entropy", "adult-k5-lattice:precision",
         "mach2019-k5-lattice:precision"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", help="KEY:OBJECTIVE of a vs_arx.py row (repeatable; default: four "
                    "rows above 1 at 5278114)")
    ap.add_argument("--runs", type=int, default=150, help="runs of each kind per block (default 150)")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-vs-arx"))
    ap.add_argument("--arx-classpath", default="/tmp/arx-build/classpath.txt")
    ap.add_argument("--arx-cpus", help="run ARX's JVM on these CPUs only (taskset -c, e.g. 1; ppdp's process is not "
                    "pinned): whether ppdp's interleaving cost is the JVM taking its core")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "alone_vs_interleaved")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import benchmarks.vs_arx as V
    meta = {"commit": V.git_commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "runs": args.runs, "blocks": args.blocks, "heap_kept": V.keep_freed_memory(), "arx_cpus": args.arx_cpus}
    root = V.data_dir(args.data)
    arx = V.Arx(Path(args.arx_classpath).read_text().strip(), args.work, cpus=args.arx_cpus)
    rows = []
    try:
        for item in args.case or CASES:
            key, objective = item.split(":")
            V.OBJECTIVE = objective
            case = next(c for c in V.CASES if c.key == key)
            ds = V.dataset(root, case.dataset, args.work)
            loaded = V.load(ds, ds.sa)
            sample = None if case.subset is None else V.subset(loaded, case.subset, args.work)
            source = sample.table if case.sample and sample is not None else "source"
            tokens = V.arx_tokens(case, loaded, None, sample)

            def arx_ms(tokens=tokens) -> float:
                return float(arx.run(tokens)["ms"])

            def ppdp_ms(case=case, loaded=loaded, source=source) -> float:
                return float(V.ppdp_run(case, loaded, [], source)[0])

            for _ in range(60):
                arx_ms()
                ppdp_ms()
            blocks = []
            for _ in range(args.blocks):
                alone_arx = [arx_ms() for _ in range(args.runs)]
                alone_ppdp = [ppdp_ms() for _ in range(args.runs)]
                pairs = [(arx_ms(), ppdp_ms()) for _ in range(args.runs)]
                blocks.append({"arx_alone": statistics.median(alone_arx), "ppdp_alone": statistics.median(alone_ppdp),
                               "arx_interleaved": statistics.median(a for a, _ in pairs),
                               "ppdp_interleaved": statistics.median(p for _, p in pairs)})
            row = {"case": key, "objective": objective, "blocks": blocks}
            rows.append(row)
            print(f"{key:28s} {objective:15s} " + " | ".join(
                f"{k.replace('_', ' ')} {', '.join(f'{b[k]:.2f}' for b in blocks)} ms" for k in blocks[0]), flush=True)
    finally:
        arx.close()
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{meta['commit']}{'-arx-cpus-' + args.arx_cpus if args.arx_cpus else ''}.json"
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
