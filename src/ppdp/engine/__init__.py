"""ppdp's engine, one folder per layer; a module imports only from its own layer or below
(tests/architecture/test_layer_order.py):

    app/       front ends: the CLI, the Python API, jobs, the request worker, reports, export
    release/   the release pipeline: the orchestrator (run.py) over ordered stages
    methods/   release methods (generalization, microaggregation, heterogeneous) and the
               contract they implement (base.py, context.py, results.py)
    privacy/   privacy models, one module each        risk/  re-identification risk estimators
    core/      the release spec, hierarchies, encoding, the private catalog
    kernels/   the Numba kernels the layers above share
    data/      bundled data: adult, schemas of the JSON outputs, sensitive-value catalogues

Below the engine: ``ppdp.sql`` (all SQL text), ``ppdp.connectors`` (one module per database),
and the foundation ``ppdp.errors``, ``ppdp.registry``, ``ppdp.redact``.
"""

from ppdp import __version__  # noqa: F401 (one version, in the package root)
