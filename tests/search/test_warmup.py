"""ppdp warm-up: every method, optimizer and model family runs once on the sample."""

from __future__ import annotations

from pathlib import Path

from ppdp.engine.app import warmup
from ppdp.engine.methods.generalization.optimizers import optimizer_names
from ppdp.engine.methods.heterogeneous.method import INITIAL
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
from ppdp.engine.privacy import build_model


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


def test_the_warm_up_reaches_the_kernels_of_other_paths(tmp_path: Path):
    """Releases whose paths call kernels the ones above do not: the lattice's partner bitsets
    (rows with many partners) and its fused rounds at a zero limit, a class-based metric as the GA's fitness, Flash's plain traversal
    (every model set it accepts), and every model's own ``ad`` per solution."""
    labels = [label for label, _ in warmup.releases(tmp_path / "unused.duckdb")]
    assert "generalization, lattice with partner bitsets, k-anonymity with k = 10" in labels
    # at a zero limit the lattice's rounds run in one kernel (lattice._tops_fused)
    assert "generalization, lattice at a zero suppression limit, k-anonymity" in labels
    assert "generalization, ga, objective aecs, k-anonymity" in labels
    assert "generalization, flash, k-map" in labels  # k-map with an estimator: every AD the smallest class
    assert f"generalization, lattice, {warmup.EVERY_MODEL}" in labels


def test_the_every_model_set_is_evaluated_per_solution():
    sets = warmup.model_sets()
    every = sets[warmup.EVERY_MODEL]
    assert {m["name"] for m in every} == set(sets) - {warmup.EVERY_MODEL}
    # a model without a fused kernel kind sends the set to each model's own ad
    assert any(build_model(m["name"], {k: v for k, v in m.items() if k != "name"}).kernel_kind is None for m in every)
