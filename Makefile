# Two commands set up a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
WARM   := $(VENV)/.warm

.PHONY: demo test check lint hooks bench-evaluator bench-papers bench-papers-quick bench-scale bench-scale-spark bench-hetero-moves bench-hetero bench-hetero-quick bench-drasl bench-drasl-quick bench-drasl-pipeline bench-vs-arx bench-vs-arx-quick bench-islands-heavy bench-islands-heavy-quick clean

# dbt for examples/dbt and tests/adapters/test_dbt_example.py. dbt-core 1.12 depends on
# dbt-core-experimental-parser, whose only distribution is an sdist that downloads its wheel from
# GitHub at build time (unreachable from CI here) and that dbt-core's Python code never imports:
# so install dbt 1.11 with all its dependencies, then dbt-core 1.12.6 without them, then the two
# it adds (metricflow, python-dotenv) and the pathspec that both dbt-core 1.12 and mypy accept.
DBT_INSTALL = $(BIN)/pip install --quiet 'dbt-core==1.11.*' 'dbt-duckdb==1.11.*' 'dbt-postgres==1.11.*' \
	&& $(BIN)/pip install --quiet --no-deps 'dbt-core==1.12.6' \
	&& $(BIN)/pip install --quiet metricflow python-dotenv 'pathspec>=1.0,<1.1'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[postgres,test,plot,ray,spark,utility]'
	$(DBT_INSTALL)
	# Dagster beside dbt: dbt-common and dbt-adapters need protobuf 6, and pip then picks a
	# grpcio-health-checking that accepts it (the newest needs protobuf 7).
	$(BIN)/pip install --quiet -e '.[orchestrators]' 'protobuf>=6,<7'
	touch $(STAMP)

# The commit-msg hook (.githooks/commit-msg: a subject of 72 characters or fewer), in a git
# checkout only; harmless elsewhere (an unpacked archive has no .git).
hooks:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git config core.hooksPath .githooks; fi

# Compile the Numba kernels now, so that no first release pays for it (engine/app/warmup.py)
$(WARM): $(STAMP)
	$(BIN)/ppdp warm-up
	touch $(WARM)

demo: $(WARM) hooks
	rm -f demo.duckdb demo_release.duckdb
	$(BIN)/ppdp demo --db demo.duckdb
	$(BIN)/ppdp verify adult --db duckdb://demo.duckdb
	$(BIN)/ppdp export demo_release.duckdb --db duckdb://demo.duckdb

# The suite in 2 pytest-xdist workers (CI has 2 cores): Spark and Ray tests each stay in one worker
# (tests/support/conftest_xdist.py). TEST_WORKERS=0 runs it in this process. The 30 slowest
# tests are listed at the end, so every CI log shows where the suite's time goes.
TEST_WORKERS ?= 2

# The warm-up compiles in one process: ruff, mypy and the docs build run beside it on the other
# core, and the suite starts once all are done (its kernels then come from Numba's cache).
test: $(STAMP) hooks
	$(MAKE) --no-print-directory -j2 -O check $(WARM)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=30

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet --site-dir .site

lint: $(STAMP)
	$(BIN)/ruff check .

bench-evaluator: $(WARM)
	$(BIN)/python benchmarks/evaluator.py

bench-papers: $(WARM)
	$(BIN)/python benchmarks/papers.py --family id-dga
	$(BIN)/python benchmarks/papers.py --family haef --jobs 2 --out benchmarks/results/haef
	$(BIN)/python benchmarks/islands.py

bench-papers-quick: $(WARM)
	$(BIN)/python benchmarks/papers.py --quick
	$(BIN)/python benchmarks/islands.py --quick

bench-scale: $(WARM)
	$(BIN)/python benchmarks/scale.py --rows 10000000

# Spark local[2], 6 GB driver heap: 10M rows both resamplings, then 100M (long on 2 cores; needs ~2 GB disk in /tmp)
bench-scale-spark: $(WARM)
	$(BIN)/python benchmarks/scale.py --engine spark --rows 10000000
	$(BIN)/python benchmarks/scale.py --engine spark --rows 10000000 --resample rare
	$(BIN)/python benchmarks/scale.py --engine spark --rows 100000000

bench-hetero-moves: $(WARM)
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/hetero_moves.py

# Heterogeneous k-anonymity, Table 6 / Fig. 5-9 layout (issue #16). Full mode takes hours (see
# the script's docstring); the quick mode is under 3 minutes. Data: --data or $$PPDP_DATA.
bench-hetero: $(WARM)
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/hetero.py --neighbors 32 --evaluations 20000000 --seeds 1 --rows 1000 10000 40000 --k 3 5 10 20 --jobs 2 --move-seconds 60 --out benchmarks/results/hetero/full_near32
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/hetero.py --neighbors 32 --evaluations 20000000 --seeds 5 --rows 1000 10000 --k 5 --jobs 2 --move-seconds 1 --out benchmarks/results/hetero/five_seeds
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/hetero.py --neighbors 0 --evaluations 20000000 --seeds 1 --rows 1000 10000 --k 3 5 --jobs 2 --move-seconds 1 --out benchmarks/results/hetero/full_paper_scan

bench-hetero-quick: $(WARM)
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/hetero.py --quick

# DRASL (issue #15): Fig. 5-16, Table 9 and the sensitive-value attack harness for every registered
# microaggregation algorithm. Full mode: adult 30,139 rows + SPARCS 10,000; quick: 2,000 rows each.
bench-drasl: $(WARM)
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/drasl.py

bench-drasl-quick: $(WARM)
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/drasl.py --quick

# ppdp's own microaggregation release (drasl, dpp, m-invariance) over v1 and three steps of mixed
# changes, attacked by tests/attack/harness.py on the sensitive value (issue #15 item 6); minutes.
bench-drasl-pipeline: $(WARM)
	NUMBA_NUM_THREADS=1 $(BIN)/python benchmarks/drasl_pipeline.py

# ppdp's side of the ARX 3.9.2 comparison (issue #18): ARX figures fixed from the issue. Quick mode
# (adult only) takes about 2 minutes, full mode adds fars, cup, mach2019 and creditcard.
# Data: --data or $$PPDP_DATA (default ../shared/data).
bench-vs-arx: $(WARM)
	$(BIN)/python benchmarks/vs_arx.py

bench-vs-arx-quick: $(WARM)
	$(BIN)/python benchmarks/vs_arx.py --quick

# Islands on a heavy instance (issue #17 item 4): id-dga+oracle on all 63,733 SPARCS records,
# 1 island vs 2 in processes and on a local Ray cluster; about 20 minutes (quick: 2). Data: $$PPDP_DATA.
bench-islands-heavy: $(WARM)
	$(BIN)/python benchmarks/islands.py --heavy

bench-islands-heavy-quick: $(WARM)
	$(BIN)/python benchmarks/islands.py --heavy --quick

clean:
	rm -rf $(VENV) demo.duckdb demo_release.duckdb .pytest_cache .site
