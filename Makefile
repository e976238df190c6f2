# `make demo` and `make test` each create .venv when it is missing and install sparkps into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sparkps-installed
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: demo demo-ctr test lint bench bench-gpu clean

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test,demo]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) jobs/train_classifier.py --demo --output demo-output

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) benchmarks/bench_executor.py
	$(PY) benchmarks/bench_ps.py
	$(PY) benchmarks/bench_step_floor.py
	$(PY) benchmarks/bench_vs_mllib.py
	$(PY) benchmarks/bench_sparse.py
	$(PY) benchmarks/bench_sparse_compaction.py
	$(PY) benchmarks/bench_sparse_embedding.py
	$(PY) benchmarks/bench_strategies.py
	$(PY) benchmarks/bench_ctr.py

bench-gpu: $(STAMP)  ## needs CuPy, a CUDA device and PyTorch (the baseline)
	$(PY) benchmarks/bench_gpu.py

clean:
	rm -rf $(VENV) demo-output demo-ctr build *.egg-info

demo-ctr: $(STAMP)
	$(PY) jobs/train_ctr.py --demo --model deepfm --embedding-dim 4 --epochs 3 --output demo-ctr
