"""A Problem shipped to another process (engine/methods/generalization/optimizers/remote.py) arrives with writable
arrays even when the transport hands NumPy buffers out of band and read-only, as Ray's object
store does: Numba types read-only arrays apart, so the worker would otherwise compile every
kernel a second time, never served by the cache that local runs and ``ppdp warm-up`` fill."""

from __future__ import annotations

import pickle

import numpy as np

from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec, writable
from tests.search.test_evolutionary import QIDS_K, adult_problem


def _out_of_band_read_only(obj: object) -> object:
    """Pickle ``obj`` as Ray does (protocol 5, buffers out of band) and give the buffers back
    read-only, as views of the object store are."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return pickle.loads(data, buffers=[b.raw().toreadonly() for b in buffers])


def _arrays(table) -> dict[str, np.ndarray]:
    return {name: getattr(table, name) for name in ("codes", "sa", "counts")}


def test_problem_spec_arrives_writable_and_equal() -> None:
    problem = adult_problem(300, QIDS_K, "k-anonymity", {"k": 2})
    plain = _out_of_band_read_only(_arrays(problem.table))
    assert not any(a.flags.writeable for a in plain.values())  # the transport's read-only views
    spec = _out_of_band_read_only(ProblemSpec.of(problem))
    assert isinstance(spec, ProblemSpec) and spec.backend == problem.evaluator.name
    for name, array in _arrays(spec.table).items():
        assert array.flags.writeable, name
        np.testing.assert_array_equal(array, _arrays(problem.table)[name])
    rebuilt = spec.build()
    g = np.zeros((1, problem.n_qids), dtype=np.int64)
    keep = problem.retained_from_s(np.ones((1, problem.n_records), dtype=bool))
    assert rebuilt.evaluator.evaluate(g, keep).td.tolist() == problem.evaluator.evaluate(g, keep).td.tolist()


def test_writable_copies_only_read_only_arrays() -> None:
    a = np.arange(4)
    assert writable(a) is a
    b = _out_of_band_read_only(np.arange(4))
    assert not b.flags.writeable
    c = writable(b)
    assert c.flags.writeable and c is not b and c.tolist() == [0, 1, 2, 3]
