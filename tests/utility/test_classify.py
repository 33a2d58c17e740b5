"""The classifier of release against original: ARX's folds record for record, ARX's scores, and
a published version read from the database."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ppdp.engine.utility.classify import auc_one_vs_rest, classify, classify_arrays
from ppdp.engine.utility.folds import (
    ARX_SEED,
    JavaRandom,
    arx_folds,
    java_shuffle,
    java_shuffle_python,
)
from tests.conftest import write_spec

sklearn = pytest.importorskip("sklearn")


def test_java_random_matches_the_documented_sequence():
    # new Random(42).nextInt() is -1170105035 in every Java since 1.0 (the LCG is specified)
    r = JavaRandom(42)
    assert r.next_int() == -1170105035
    assert [JavaRandom(0).next_int(10) for _ in range(1)] == [0]


def test_the_kernel_equals_its_twin():
    for n, seed in ((0, 1), (1, 7), (2, 3), (1000, ARX_SEED), (4096, 1 << 40), (777, -5)):
        assert java_shuffle(n, seed).tolist() == java_shuffle_python(n, seed).tolist()


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK")
def test_shuffle_equals_collections_shuffle(tmp_path: Path):
    src = tmp_path / "Shuffle.java"
    src.write_text("import java.util.*;\npublic class Shuffle { public static void main(String[] a) {"
                   " List<Integer> l = new ArrayList<>(); for (int i = 0; i < Integer.parseInt(a[0]); i++) l.add(i);"
                   " Collections.shuffle(l, new Random(Long.parseLong(a[1]))); StringBuilder b = new StringBuilder();"
                   " for (int x : l) b.append(x).append(' '); System.out.println(b.toString().trim()); } }\n")
    subprocess.run(["javac", "-d", str(tmp_path), str(src)], check=True)
    for n, seed in ((1, 7), (10, 3), (30162, ARX_SEED), (1000, 1 << 40)):
        out = subprocess.run(["java", "-cp", str(tmp_path), "Shuffle", str(n), str(seed)], check=True,
                             capture_output=True, text=True).stdout.split()
        assert [int(x) for x in out] == java_shuffle(n, seed).tolist() == java_shuffle_python(n, seed).tolist()


def test_folds_are_cut_as_arx_cuts_them():
    folds = arx_folds(25, k=10)
    assert [len(f) for f in folds] == [2] * 9 + [7]
    assert sorted(np.concatenate(folds).tolist()) == list(range(25))
    capped = arx_folds(1000, k=10, max_records=95)
    assert sum(len(f) for f in capped) == 95 and [len(f) for f in capped][-1] == 14
    assert np.array_equal(np.concatenate(capped), java_shuffle(1000, ARX_SEED)[:95])
    assert len(arx_folds(3, k=10)) == 3  # never more folds than records


def test_auc_counts_ties_half_as_sklearn_does():
    rng = np.random.default_rng(5)
    score = rng.integers(0, 6, 400) / 5.0  # many ties
    positive = rng.random(400) < 0.3
    from sklearn.metrics import roc_auc_score
    assert auc_one_vs_rest(score, positive) == pytest.approx(roc_auc_score(positive, score), abs=1e-12)
    assert auc_one_vs_rest(score, np.zeros(400, dtype=bool)) == 0.0


def _toy(n: int = 400, seed: int = 3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = rng.integers(0, 3, n)
    labels = np.where(a == 3, "yes", "no")  # the class is a function of a (a quarter "yes")
    original = np.column_stack([a.astype(str), b.astype(str)]).astype(object)
    return original, labels


def test_a_perfect_feature_and_its_loss():
    original, labels = _toy()
    none = np.zeros(len(labels), dtype=bool)
    same = classify_arrays(original, original, none, labels.tolist(), target="c", features=("a", "b"), folds=5)
    assert same.original.accuracy == 1.0 and same.release.accuracy == 1.0 and same.gap == 0.0
    assert same.zeror.accuracy == np.mean(labels == "no")  # "no" is the majority of every training set
    assert same.original.auc["yes"] == 1.0
    # a generalized to '*': the release classifier can do no better than the class frequencies
    gen = original.copy()
    gen[:, 0] = "*"
    lost = classify_arrays(original, gen, none, labels.tolist(), target="c", features=("a", "b"), folds=5)
    assert lost.release.accuracy <= lost.zeror.accuracy + 0.03 and lost.gap > 0.2
    assert lost.brier_skill_score < 0 < same.brier_skill_vs_zeror


def test_zeror_brier_is_the_class_frequency_score():
    original, labels = _toy()
    r = classify_arrays(original, original, np.zeros(len(labels), dtype=bool), labels.tolist(), target="c",
                        features=("a", "b"), folds=4)
    folds = arx_folds(len(labels), k=4)
    y = (labels == "yes").astype(int)
    total = 0.0
    for i, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != i])
        p = y[train].mean()
        total += float(np.sum((p - y[test]) ** 2 + ((1 - p) - (1 - y[test])) ** 2))
    assert r.zeror.brier == pytest.approx(total / len(labels), abs=1e-12)


def test_suppressed_records_are_not_trained_on_but_are_evaluated():
    original, labels = _toy()
    suppressed = np.zeros(len(labels), dtype=bool)
    suppressed[labels == "yes"] = True  # only 'no' released: the release classifier predicts 'no'
    r = classify_arrays(original, original, suppressed, labels.tolist(), target="c", features=("a", "b"), folds=5)
    assert r.suppressed == int(suppressed.sum())
    assert r.release.accuracy == pytest.approx(np.mean(labels == "no"), abs=1e-12)


def test_bad_model_is_refused():
    original, labels = _toy(20)
    from ppdp.errors import SpecError
    with pytest.raises(SpecError, match="unknown --model"):
        classify_arrays(original, original, np.zeros(20, dtype=bool), labels.tolist(), target="c", features=("a", "b"),
                        model="svm")


def test_a_published_version_against_its_source(adult_db: Path, tmp_path: Path):
    from ppdp.connectors.base import connect
    from ppdp.engine.app.api import run_release

    spec = write_spec(tmp_path / "s.toml", db=adult_db, qids=["age", "sex", "race"],
                      hierarchies={"age": '{ type = "intervals", widths = [10, 20] }'}, output="adult3")
    run_release(str(spec))
    con = connect(f"duckdb://{adult_db}", read_only=True)
    try:
        r = classify(con, "adult3", "salary-class", folds=5, max_records=3000)
        released = con.query('SELECT COUNT(*) AS n FROM "published"."adult3"')["n"][0]
    finally:
        con.close()
    assert r.records == 3000 and r.features == ("age", "sex", "race")
    assert 0 <= r.suppressed < 3000 and released < 30162  # some records suppressed in the version
    assert r.zeror.accuracy == pytest.approx(0.75, abs=0.03)
    # age, sex and race say little about the salary class: both near the baseline, the release below the original
    assert abs(r.original.accuracy - r.zeror.accuracy) < 0.05 and r.release.accuracy <= r.original.accuracy + 0.02
    assert r.original.auc["<=50K"] > 0.6
    assert set(r.classes) == {"<=50K", ">50K"} and set(r.to_json()) >= {"gap", "brier_skill_score", "seed"}


def test_without_scikit_learn_one_line_names_the_extra(monkeypatch):
    import sys

    from ppdp.errors import SpecError
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn raises ImportError
    original, labels = _toy(40)
    with pytest.raises(SpecError) as exc:
        classify_arrays(original, original, np.zeros(40, dtype=bool), labels.tolist(), target="c", features=("a", "b"),
                        folds=2)
    assert "ppdp[utility]" in str(exc.value) and "\n" not in str(exc.value)


def test_a_random_forest_learns_the_perfect_feature_too():
    original, labels = _toy(200)
    r = classify_arrays(original, original, np.zeros(200, dtype=bool), labels.tolist(), target="c",
                        features=("a", "b"), model="forest", folds=2)
    assert r.model == "forest" and r.original.accuracy == 1.0 and r.release.accuracy == 1.0
