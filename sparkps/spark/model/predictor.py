"""Batched prediction with a bound executor, the part of SparkModel that runs inside Spark's Python workers.

A model reaches the executors as a *source* (``SparkModel.source``), a dict of plain values: either the payload
itself (symbol JSON + params as .npz bytes, no pickled objects; shipped inside the UDF, or broadcast for RDDs) or,
for a model too large to ship that way, the folder of its saved files (``"path"``), which each Python worker reads
once. ``PredictorCache`` keeps one bound Predictor per model id in each Python worker so later partitions and later
tasks skip the load and the bind. Works the same on classic and Spark Connect sessions (no SparkContext here).
"""
import threading
from collections import OrderedDict

import numpy as np

from sparkps.backend import asnumpy
from sparkps.errors import ConfigError, DataError
from sparkps.model_files import params_from_bytes, params_to_bytes
from sparkps.spark.common.sparse_inputs import data_dtype, has_tables
from sparkps.spark.common.typed_inputs import TypedInputs

__all__ = ["Predictor", "PredictorCache", "data_input_name", "float_row_width", "model_payload", "params_from_bytes",
           "params_to_bytes", "predictor_for"]


def float_row_width(input_shape, input_layout=None):
    """Values of one float feature row of a model: ``prod(input_shape)``, or for a CTR model (its ``input_layout``
    parts) the width of the float rows of earlier versions (ids as exact float planes, ``sparkps.ctr.packed``),
    which is how a CTR model reads a float vector (an RDD row, a Vector column, a numpy matrix)."""
    if input_layout is None:
        return int(np.prod(input_shape))
    from sparkps.ctr.packed import PackedLayout
    return PackedLayout(input_layout).width


def data_input_name(symbol, arg_params, label_name):
    """The one argument of ``symbol`` that is neither a parameter nor the label (usually 'data')."""
    names = [n for n in symbol.list_arguments() if n not in arg_params and n != label_name]
    if len(names) != 1:
        raise ConfigError("the symbol must have exactly one data input besides its parameters and label "
                          "%r; it has %s" % (label_name, names))
    return names[0]


class Predictor:
    """A symbol bound once for inference on ``batch_size`` rows of ``input_shape``.

    ``predict(X)`` runs any number of rows (padding the last batch) and returns the first output as numpy.
    A network with sparse embedding tables predicts through a FeedForward holding the tables' rows (each batch
    reads its unique ids' rows, as in training); ``dtype`` is the dtype its rows travel in (int64 for the ids of
    a hashed table, see :mod:`sparkps.spark.common.sparse_inputs`). ``typed``: the TypedInputs of a CTR network's
    named inputs (``predict`` then takes their structured rows, a dict of them, or the float rows of earlier
    versions). Not thread-safe (one executor); does not block on anything but computation.
    """

    def __init__(self, symbol_json, params_bytes, input_shape, batch_size=256, label_name="softmax_label",
                 ctx="cpu", typed=None):
        from sparkps import symbol as sym
        self.symbol = sym.load_json(symbol_json)
        self.arg_params, self.aux_params = params_from_bytes(params_bytes)
        self.input_shape = tuple(int(d) for d in input_shape)
        self.num_features = int(np.prod(self.input_shape))
        self.batch_size = int(batch_size)
        self.lock = threading.Lock()
        self.typed = TypedInputs.of(typed)
        self.model = None         # the FeedForward that reads named inputs (typed inputs, or made on first use)
        self._feedforward = None  # the FeedForward of a one-input network with sparse tables
        self.calls = 0            # predict calls served (a shipped model is bound once for many of them)
        if typed is not None:     # named inputs and sparse tables: FeedForward's prediction reads the table rows
            from sparkps.ctr.packed import PackedLayout
            self.float_rows = PackedLayout(self.typed.to_list())   # a float row: ids as exact float planes
            self.dtype = np.float32
            from sparkps.train.feedforward import FeedForward
            self.model = FeedForward(self.symbol, arg_params=self.arg_params, aux_params=self.aux_params,
                                     numpy_batch_size=self.batch_size)
            return
        self.data_name = data_input_name(self.symbol, self.arg_params, label_name)
        self.dtype = data_dtype(self.symbol, self.data_name)
        if has_tables(self.symbol):
            from sparkps.train.feedforward import FeedForward
            self._feedforward = FeedForward(self.symbol, ctx=ctx, arg_params=self.arg_params,
                                            aux_params=self.aux_params, numpy_batch_size=self.batch_size)
            return
        shapes = {self.data_name: (self.batch_size,) + self.input_shape}
        if label_name in self.symbol.list_arguments():
            shapes[label_name] = (self.batch_size,)
        self.executor = self.symbol.simple_bind(ctx=ctx, grad_req="null", **shapes)
        self.executor.copy_params_from(self.arg_params, self.aux_params, allow_extra_params=True)

    def predict(self, X, table_rows=None):
        """First output of the network for the rows of ``X`` (n, num_features) as a numpy array. With ``typed``:
        ``X`` is its structured rows (``TypedInputs.rows``), a dict of its named inputs, or float rows of the
        earlier versions' width (ids as float planes); DataError naming the width otherwise. ``table_rows``: see
        ``predict_with_rows``."""
        self.calls += 1
        if self.typed is not None:
            if isinstance(X, dict):
                return self.predict_inputs(X, table_rows)
            X = np.asarray(X)
            if X.dtype == self.typed.dtype:
                return self.predict_inputs(self.typed.split(X), table_rows)
            width = self.float_rows.width
            if X.size % width or (X.ndim == 2 and X.shape[1] != width):
                raise DataError("float rows of inputs %s must have %d values (ids as float planes), got %s; or "
                                "pass typed rows (TypedInputs.rows) or a dict of the inputs"
                                % (self.typed.names, width, X.shape))
            return self.predict_inputs(self.float_rows.split(X.reshape(-1, width)), table_rows)
        X = np.asarray(X, dtype=self.dtype).reshape(-1, self.num_features)
        if table_rows is not None:
            return self._predict_with_tables(X, table_rows)
        if self._feedforward is not None:
            return self._predict_with_tables(X)
        outputs = []
        with self.lock:
            for start in range(0, len(X), self.batch_size):
                chunk = X[start:start + self.batch_size]
                n = len(chunk)
                if n < self.batch_size:
                    chunk = np.concatenate([chunk, np.zeros((self.batch_size - n, self.num_features),
                                                            np.float32)])
                out = self.executor.forward(is_train=False, **{
                    self.data_name: chunk.reshape((self.batch_size,) + self.input_shape)})
                outputs.append(np.array(asnumpy(out[0])[:n]))
        if not outputs:
            return np.empty((0,) + self._output_tail(), np.float32)
        return np.concatenate(outputs)

    def predict_inputs(self, inputs, table_rows=None):
        """First output of the network for a dict of its named inputs (a CTR network's typed columns: uint64 or
        int64 ids, float32 numeric values), as a float32 (rows, outputs) array. No packed float planes.
        ``table_rows``: see ``predict_with_rows``."""
        rows = len(next(iter(inputs.values()))) if inputs else 0
        if not rows:
            return np.empty((0, 1), np.float32)
        with self.lock:
            model = self._named_model()
            named = {name: np.asarray(value) for name, value in inputs.items()}
            out = model.predict(named) if table_rows is None else model.predict_with_rows(named, table_rows)
        out = out[0] if isinstance(out, list) else out
        return np.asarray(out, np.float32).reshape(rows, -1)

    def predict_with_rows(self, X, table_rows):
        """``predict(X)`` reading the sparse tables from ``table_rows`` ({table: RowSparse}): the rows of this batch's
        ids only, gathered by a join over the table's shard files, fed as they are to the network bound once (no
        table store per call; an id they lack reads its initial row, as an unseen id does). Blocks on computation
        only."""
        return self.predict(X, table_rows)

    def _named_model(self):
        """The FeedForward that predicts from named inputs (made on first use for a network bound to one input)."""
        model = self.model or self._feedforward
        if model is None:
            from sparkps.train.feedforward import FeedForward
            model = self._feedforward = FeedForward(self.symbol, arg_params=self.arg_params,
                                                    aux_params=self.aux_params, numpy_batch_size=self.batch_size)
        return model

    def _predict_with_tables(self, X, table_rows=None):
        if not len(X):
            return np.empty((0,) + self._output_tail(), np.float32)
        with self.lock:
            model = self._named_model()
            data = {self.data_name: X.reshape((-1,) + self.input_shape)}
            out = model.predict(data) if table_rows is None else model.predict_with_rows(data, table_rows)
        return out[0] if isinstance(out, list) else out

    @property
    def table_stores_built(self):
        """How often this predictor built the lookup store of its sparse tables (1 once it predicted: the store
        is kept for every later call; 0 without tables)."""
        model = self.model or self._feedforward
        return model.table_stores_built if model is not None else 0

    def _output_tail(self):
        _, out_shapes, _ = self.symbol.infer_shape(**{self.data_name: (1,) + self.input_shape})
        return tuple(out_shapes[0][1:])


class PredictorCache:
    """At most ``capacity`` Predictors per Python worker, keyed by model id (least recently used evicted)."""

    def __init__(self, capacity=4):
        self.capacity = capacity
        self._items = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, model_id):
        """The Predictor cached for ``model_id``, or None (nothing is built)."""
        with self._lock:
            return self._items.get(model_id)

    def get(self, model_id, make):
        """The cached Predictor for ``model_id``, built with ``make()`` on first use."""
        with self._lock:
            if model_id in self._items:
                self._items.move_to_end(model_id)
                return self._items[model_id]
        predictor = make()
        with self._lock:
            self._items[model_id] = predictor
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return predictor


# One cache per Python worker process: Spark reuses its Python workers across tasks, so a model shipped
# once is bound once per worker.  Only prediction uses it; nothing here holds cluster state.
WORKER_PREDICTORS = PredictorCache()


def model_payload(model_id, symbol_json, arg_params, aux_params, input_shape, batch_size, label_name,
                  input_layout=None):
    """A model's payload, the form it travels to the executors in (``SparkModel.payload``): plain strings, numbers,
    lists and the params as .npz bytes, keyed as ``predictor_for`` reads them. ``input_layout``: a TypedInputs'
    list, or None."""
    return {"id": model_id, "symbol": symbol_json, "params": params_to_bytes(arg_params, aux_params),
            "input_shape": [int(d) for d in input_shape], "batch_size": int(batch_size),
            "label_name": label_name, "ctx": "cpu", "input_layout": input_layout}


def predictor_for(source):
    """The Python worker's Predictor for a model source (``SparkModel.source``: the payload dict itself, or a dict
    naming the folder of the model's saved files), or a Spark Broadcast of one. Blocks on reading that folder the
    first time a worker meets the model."""
    if not isinstance(source, dict):      # a Spark Broadcast of one (SparkModel.predict on an RDD)
        source = source.value
    return WORKER_PREDICTORS.get(source["id"], lambda: _make_predictor(source))


def _make_predictor(source):
    if "params" not in source:
        source = _read_payload(source)
    return Predictor(source["symbol"], source["params"], source["input_shape"], source["batch_size"],
                     source["label_name"], source.get("ctx", "cpu"), _typed_inputs(source))


def _read_payload(source):
    """The payload of the model a source names by the folder of its saved files, ``source["path"]`` (read in a
    Python worker; ConfigError / DataError naming it), with the source's id and batch size."""
    from sparkps.spark.model.model_folder import read_folder
    saved = read_folder(source["path"])
    typed = _typed_inputs(saved.meta)
    return model_payload(source["id"], saved.symbol.tojson(), saved.arg_params, saved.aux_params,
                         saved.meta["input_shape"], source["batch_size"], saved.meta["label_name"],
                         None if typed is None else typed.to_list())


def _typed_inputs(payload):
    return TypedInputs.from_list(payload.get("input_layout"))
