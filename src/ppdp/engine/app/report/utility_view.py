"""The report's analysis section: what the data can still do (docs/concepts/utility.md).

ARX's quality models (``ppdp utility``), each attribute's distribution in source and release
(``ppdp utility --summary``), sdcMicro's measures of a microaggregated version and, when asked
(``ppdp report --classify TARGET``), the classifier of release against source. All are
aggregates. Values shared by fewer than 10 records are folded into "other" on both pages; the
external page leaves the source's distributions out (beside the release's they would count the
suppressed records of each value) and shows the release's and the distance only.
"""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.app.report.gather import AnalysisProvider, AnalysisView
from ppdp.errors import PpdpError


def measured_analysis(classify_target: str | None = None) -> AnalysisProvider:
    """An analysis provider for ``gather``; ``classify_target``: also train the classifier."""

    def provide(con: Connector, release: str, version: int, external: bool) -> AnalysisView:
        notes: list[str] = []
        quality: list[tuple[str, float | None]] = []
        try:
            from ppdp.engine.app.utility_cli import spec_hierarchies
            from ppdp.engine.utility import assess
            from ppdp.engine.utility.base import ordered_measures as measures

            a = assess(con, release, version, spec_hierarchies(con))
            values = dict(a.measures)
            for m in measures():
                v = values.get(m.name)
                quality.append((m.title, _value(v.get("value") if isinstance(v, dict) else v)))
        except PpdpError as exc:  # a version the quality models do not cover: say so, show the rest
            notes.append(f"Quality models not measured: {exc}")
        from ppdp.engine.utility.summary import summarize

        s = summarize(con, release, version=version)
        attrs = tuple((x.attribute, x.distance_kind, x.distance, None if external else tuple(x.source_shares.items()),
                       tuple(x.release_shares.items())) for x in s.attributes)
        from ppdp.engine.utility import sdc

        micro = sdc.measure_version(con, release, version=version)
        classification = None
        if classify_target:
            from ppdp.engine.utility.classify import classify

            classification = classify(con, release, classify_target, version=version).to_json()
        else:
            notes.append("No classifier trained (ppdp report --classify TARGET trains one).")
        if external:
            notes.append("Source distributions are left out of the external report.")
        return AnalysisView(tuple(quality), attrs, classification, micro.to_json() if micro is not None else None,
                            " ".join(notes))

    return provide


def _value(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) else None
