"""No ``hasattr``/``getattr`` probe of the project's own objects (DESIGN.md decision 18: abilities are declared by
their classes and asked, never inferred from attributes probed): this walks ``sparkps/`` with ``ast``, as
``tests/test_layering.py`` does for imports, lists every call of ``hasattr`` or ``getattr``, and fails on any not on
the allow-list below. An entry names the file and the call (its source text) and says why it may stay:

- ``foreign``: the object is not the project's (pyspark, pyarrow, numpy/CuPy arrays, the standard library, a user's
  value or callback where MXNet's API takes any object of that shape);
- ``module``: an attribute of a module, by name (lazy imports, numpy/CuPy functions by name, op constructors);
- ``field``: not a probe: a field the class itself declares, read by a name from its own list of fields (no default,
  so a missing one is an error).

A new probe of a project object is to be replaced by a declared attribute, a base class or a type check, not added
here.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sparkps"

ALLOWED = {
    # -- module: attributes of modules, by name ------------------------------------------------------------------
    ("sparkps/__init__.py", "getattr(importlib.import_module(_NAMES[name]), name)"):
        "module: the package's lazy attributes (PEP 562 __getattr__)",
    ("sparkps/spark/__init__.py", "getattr(importlib.import_module(_NAMES[name]), name)"):
        "module: the package's lazy attributes (PEP 562 __getattr__), so importing sparkps.spark needs no pyspark",
    ("sparkps/cli/__init__.py", "getattr(logging, log_level.upper())"):
        "module: the stdlib logging level named by --log-level",
    ("sparkps/metric/__init__.py", "getattr(metric_scores, cls)"):
        "module: a metric class of sparkps.metric.scores by its name in the alias table",
    ("sparkps/nets/angel_layers.py", "getattr(sym, self.op)"):
        "module: the sparkps.symbol op constructor an Angel layer kind names",
    ("sparkps/rows/index.py", "getattr(row_kernels, name)"):
        "module: the compiled kernels of sparkps.rows.kernels, imported on first use (PEP 562 __getattr__)",
    ("sparkps/symbol/ops/reduce.py", "getattr(rt.xp, self.pick)"):
        "module: numpy's or CuPy's argmax/argmin, by the op's name for it",
    # -- foreign: CuPy / numpy arrays and numpy protocols -----------------------------------------------------------
    ("sparkps/backend.py", "hasattr(array, 'get')"): "foreign: a CuPy array (its .get copies it to the host)",
    ("sparkps/optimizer/finite.py", "hasattr(flat, 'get')"): "foreign: a CuPy array, searched on the host",
    ("sparkps/optimizer/finite.py", "hasattr(grads, 'get')"): "foreign: a CuPy array, searched on the host",
    ("sparkps/initializer.py", "hasattr(array, 'set')"): "foreign: a CuPy array (filled from the host with .set)",
    ("sparkps/initializer.py", "hasattr(value, 'tolist')"):
        "foreign: a numpy scalar or array given as an initializer argument (MXNet takes either)",
    ("sparkps/io/iterators.py", "hasattr(a, 'shape')"):
        "foreign: the user's data arrays (numpy, CuPy, pandas: anything with a shape, as MXNet's NDArrayIter)",
    ("sparkps/symbol/executor.py", "getattr(value, 'shape', None)"):
        "foreign: a user's input value (numpy, CuPy, a list), as MXNet's forward(**kwargs) takes",
    ("sparkps/rows/ids.py", "getattr(obj, 'bound', None)"):
        "foreign: numpy's __array_finalize__ hands any ndarray (a plain one has no bound)",
    ("sparkps/rows/ids.py", "getattr(ufunc, method)"): "foreign: numpy's __array_ufunc__ protocol (the ufunc method)",
    ("sparkps/rows/config.py", "hasattr(value, '__index__')"):
        "foreign: a user's count setting (any integer type: int, numpy integer)",
    ("sparkps/spark/driver/trainer.py", "hasattr(input_shape, '__len__')"):
        "foreign: the user's input_shape (an int or any sequence of ints)",
    # -- foreign: the standard library ---------------------------------------------------------------------------
    ("sparkps/comm/van.py", "getattr(self._local, 'channel', None)"):
        "foreign: a threading.local, which holds a channel only in the threads that made one",
    ("sparkps/runtime/supervisor.py", "getattr(self.process, name)"):
        "foreign: subprocess.Popen, whose interface (pid, poll, wait, ...) the supervised process forwards",
    ("sparkps/spark/model/storage.py", "getattr(exc, 'java_exception', None)"):
        "foreign: a py4j error (only a Py4JJavaError carries the JVM exception)",
    ("sparkps/spark/driver/progress.py", "hasattr(stream, 'isatty')"):
        "foreign: the user's output stream (any file-like object)",
    ("sparkps/spark/submit/output.py", "getattr(stream, 'reconfigure', None)"):
        "foreign: sys.stdout, a TextIOWrapper only when not replaced",
    ("sparkps/spark/submit/failures.py", "getattr(exc, 'filename', None)"):
        "foreign: an OSError (its filename is set only for errors about a path)",
    ("sparkps/spark/submit/flags.py", "getattr(args, 'scheduler', None)"):
        "foreign: an argparse.Namespace of a job whose parser may lack --scheduler",
    ("sparkps/spark/submit/flags.py", "getattr(args, 'curve', None)"):
        "foreign: an argparse.Namespace of a job whose parser may lack --curve",
    ("sparkps/spark/submit/job_settings.py", "getattr(args, name.replace('-', '_'))"):
        "foreign: an argparse.Namespace, read by the flag names the caller lists (no default)",
    ("sparkps/spark/submit/job_settings.py", "getattr(args, 'early_stopping_patience', 0)"):
        "foreign: an argparse.Namespace of a job whose parser may lack --early-stopping-patience",
    ("sparkps/spark/submit/job_settings.py", "getattr(args, 'embedding_l2', 0.0)"):
        "foreign: an argparse.Namespace of a job whose parser may lack --embedding-l2",
    ("sparkps/spark/submit/job_settings.py", "getattr(args, 'dropout', 0.0)"):
        "foreign: an argparse.Namespace of a job whose parser may lack --dropout",
    # -- foreign: user callbacks (MXNet takes any callable) --------------------------------------------------------
    ("sparkps/metric/base.py", "getattr(feval, '__name__', 'custom')"):
        "foreign: a user's metric function (MXNet's CustomMetric takes any callable; a partial has no __name__)",
    ("sparkps/metric/scores.py", "getattr(numpy_feval, '__name__', 'custom')"):
        "foreign: a user's metric function (MXNet's np() takes any callable)",
    # -- foreign: pyspark and pyarrow ------------------------------------------------------------------------------
    ("sparkps/spark/common/arrow_inputs.py", "hasattr(column, 'combine_chunks')"):
        "foreign: a pyarrow ChunkedArray or Array",
    ("sparkps/spark/task/ctr_columns.py", "hasattr(column, 'combine_chunks')"):
        "foreign: a pyarrow ChunkedArray or Array",
    ("sparkps/spark/common/batches.py", "hasattr(row, 'features')"):
        "foreign: a pyspark Row (this module imports no pyspark: it recognises rows and vectors by shape)",
    ("sparkps/spark/common/batches.py", "hasattr(row, 'label')"): "foreign: a pyspark Row",
    ("sparkps/spark/common/batches.py", "hasattr(features, 'indices')"): "foreign: a pyspark SparseVector",
    ("sparkps/spark/common/batches.py", "hasattr(features, 'values')"): "foreign: a pyspark SparseVector",
    ("sparkps/spark/common/batches.py", "hasattr(features, 'size')"): "foreign: a pyspark SparseVector",
    ("sparkps/spark/common/batches.py", "hasattr(features, 'toArray')"): "foreign: a pyspark DenseVector",
    ("sparkps/spark/task/row_weights.py", "hasattr(features, 'toArray')"): "foreign: a pyspark Vector",
    ("sparkps/spark/common/session.py", "getattr(session, 'sparkSession', session)"):
        "foreign: a pyspark DataFrame or SparkSession (classic or Spark Connect)",
    ("sparkps/spark/common/session.py", "hasattr(data, 'sparkSession')"):
        "foreign: a pyspark DataFrame (classic or Spark Connect, two classes)",
    ("sparkps/spark/common/session.py", "hasattr(data, 'select')"): "foreign: a pyspark DataFrame",
    ("sparkps/spark/common/worker_python.py", "getattr(where, 'sparkSession', None)"):
        "foreign: a pyspark DataFrame, SparkSession, RDD or SparkContext",
    ("sparkps/spark/common/worker_python.py", "hasattr(where, 'sparkContext')"): "foreign: a pyspark SparkSession",
    ("sparkps/spark/common/worker_python.py", "getattr(where, 'context', where)"):
        "foreign: a pyspark RDD (else the SparkContext itself)",
    ("sparkps/spark/driver/data_checks.py", "hasattr(data, 'mapPartitions')"):
        "foreign: a pyspark RDD (a DataFrame has no mapPartitions)",
    ("sparkps/spark/driver/training_input.py", "hasattr(data, 'mapPartitions')"):
        "foreign: a pyspark RDD (a DataFrame has no mapPartitions)",
    ("sparkps/spark/task/barrier_task.py", "hasattr(context, 'resources')"):
        "foreign: pyspark's BarrierTaskContext (resources() only from Spark 3)",
    ("sparkps/spark/ml/mlflow_flavor.py", "getattr(model, 'stages', [])"):
        "foreign: a pyspark.ml Model or PipelineModel (only a pipeline has stages)",
    # -- field: a class's own declared fields, by a name from its own list -------------------------------------
    ("sparkps/optimizer/base.py", "getattr(self, key)"): "field: the hyper-parameters the class lists in hyper_params",
    ("sparkps/optimizer/base.py", "getattr(self, k)"): "field: the hyper-parameters the class lists in hyper_params",
    ("sparkps/lr_scheduler.py", "getattr(self, k)"): "field: the schedule's own parameters, listed beside the call",
    ("sparkps/nets/regularisation.py", "getattr(self, name)"):
        "field: the dataclass's three *_wd_mult fields, listed beside the call",
    ("sparkps/plan/model.py", "getattr(self, name)"): "field: the plan's own fields, listed beside the checks",
    ("sparkps/rows/config.py", "getattr(self, option)"): "field: TableConfig's count options, listed beside the call",
    ("sparkps/rows/config.py", "getattr(self, k)"): "field: TableConfig's fields (the keys of _DEFAULTS)",
    ("sparkps/rows/config.py", "getattr(options, k)"): "field: TableConfig's fields (the keys of _DEFAULTS)",
    ("sparkps/rows/store.py", "getattr(self, c)"): "field: RowStore's per-row columns (its COLUMNS)",
    ("sparkps/rows/store.py", "getattr(self, column)"): "field: RowStore's per-row columns (its COLUMNS)",
    ("sparkps/rows/table.py", "getattr(store, column)"): "field: RowStore's per-row columns (rows.store.COLUMNS)",
}


def calls_in(source, filename="<source>"):
    """``[(line, call source)]`` of the hasattr/getattr calls in Python ``source``."""
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source, filename=filename))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("hasattr", "getattr")]


def attribute_calls():
    """``{(file relative to the repository, call source): [line, ...]}`` of every hasattr/getattr call in sparkps/."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, call in calls_in(path.read_text(encoding="utf-8"), str(path)):
            found.setdefault((path.relative_to(ROOT).as_posix(), call), []).append(line)
    return found


def test_every_hasattr_and_getattr_in_sparkps_is_on_the_allow_list():
    found = attribute_calls()
    assert found, "the walk found no call at all: it is not looking at sparkps/"
    unlisted = sorted(f"{file}:{lines[0]}: {call}" for (file, call), lines in found.items()
                      if (file, call) not in ALLOWED)
    assert not unlisted, ("probes of the project's own objects (ask a declared attribute, a base class or a type "
                          "instead), or foreign ones missing from ALLOWED with their reason:\n" + "\n".join(unlisted))


def test_the_allow_list_names_only_calls_that_exist_each_with_a_kind_and_reason():
    found = attribute_calls()
    stale = sorted(f"{file}: {call}" for file, call in ALLOWED if (file, call) not in found)
    assert not stale, "allow-list entries whose call is gone (remove them):\n" + "\n".join(stale)
    for (file, call), reason in ALLOWED.items():
        kind, _, why = reason.partition(": ")
        assert kind in ("foreign", "module", "field") and len(why) > 10, f"{file}: {call}: give a kind and a reason"


def test_the_walk_sees_a_probe_it_was_not_told_about():
    source = "def f(request):\n    return getattr(request, 'peek', False) or hasattr(request, 'counts')\n"
    calls = calls_in(source)
    assert calls == [(2, "getattr(request, 'peek', False)"), (2, "hasattr(request, 'counts')")]
    assert not any(("sparkps/server/tables/sparse_served.py", call) in ALLOWED for _, call in calls)
