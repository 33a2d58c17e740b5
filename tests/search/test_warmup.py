"""ppdp warm-up: every method, optimizer and model family runs once on the sample."""

from __future__ import annotations

from pathlib import Path

from ppdp.engine.app import warmup
from ppdp.engine.methods.generalization.optimizers import optimizer_names
from ppdp.engine.methods.heterogeneous.method import INITIAL
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS


def test_the_warm_up_covers_every_optimizer_algorithm_and_initial_heuristic(tmp_path: Path):
    labels = [label for label, _ in warmup.releases(tmp_path / "unused.duckdb")]
    for name in optimizer_names():
        assert f"generalization, {name}, k-anonymity" in labels
    # Flash's positive-limit traversal is a kernel of its own (the zero-limit one is above)
    assert "generalization, flash with a suppression limit, k-anonymity" in labels
    for algorithm in ALGORITHMS:
        assert f"microaggregation, {algorithm}" in labels
    for initial in INITIAL:
        assert f"heterogeneous, {initial}, gcp" in labels and f"heterogeneous, {initial}, sil" in labels
    specs = [spec for _, spec in warmup.releases(tmp_path / "unused.duckdb")]
    assert len({(s.output_schema, s.output_name) for s in specs}) == len(specs)  # no release overwrites another
