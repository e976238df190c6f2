# `make demo` and `make test` each create .venv when it is missing and install sparkps into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sparkps-installed
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: demo demo-ctr test lint bench bench-gpu bench-quick clean

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test,demo]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) jobs/train_classifier.py --demo --overwrite --output demo-output

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)  ## every CPU benchmark at its full size; each rewrites its section of docs/benchmarks.md
	$(PY) -m benchmarks.bench_executor --write-docs
	$(PY) -m benchmarks.bench_ps --write-docs
	$(PY) -m benchmarks.bench_step_floor --write-docs
	$(PY) -m benchmarks.bench_vs_mllib --write-docs
	$(PY) -m benchmarks.bench_sparse --write-docs
	$(PY) -m benchmarks.bench_sparse_compaction --write-docs
	$(PY) -m benchmarks.bench_sparse_embedding --write-docs
	$(PY) -m benchmarks.bench_strategies --write-docs
	$(PY) -m benchmarks.bench_ctr --write-docs

bench-gpu: $(STAMP)  ## needs CuPy, a CUDA device and PyTorch (the baseline)
	$(PY) -m benchmarks.bench_gpu --write-docs

# Reduced bench_executor, bench_ps, bench_sparse and bench_ctr, printed only (docs/ untouched); with BEFORE=DIR,
# against the checkout DIR, alternating runs (benchmarks/compare.py): make bench-quick BEFORE=../main REPEATS=3
REPEATS ?= 3
bench-quick: $(STAMP)
	$(PY) -m benchmarks.compare --after . $(if $(BEFORE),--before $(BEFORE)) --repeats $(REPEATS)

clean:
	rm -rf $(VENV) demo-output demo-ctr build *.egg-info

demo-ctr: $(STAMP)
	$(PY) jobs/train_ctr.py --demo --model deepfm --embedding-dim 4 --epochs 3 --overwrite --output demo-ctr
