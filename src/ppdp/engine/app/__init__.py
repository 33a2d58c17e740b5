"""Front ends: the ``ppdp`` CLI (cli.py), the Python API for orchestrators (api.py, outcome.py),
release jobs and their summaries (jobs.py, summary.py), the request worker that serves
``_ppdp.requests`` (request_worker.py), the HTML report (report/), export, rebuild, the risk
command and the Numba warm-up. Nothing below this layer imports it."""
