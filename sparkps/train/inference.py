"""Inference with a FeedForward model: ``predict`` and ``score`` over an executor bound for inference.

The executor is bound once per input shape and holds the model's current parameters; a network's sparse tables
are read through a local kvstore that holds the model's rows (frozen: an unseen id reads its initial row without
being stored). Nothing here waits on anything but the computation itself.
"""
import numpy as np

from sparkps import kvstore as kv_mod
from sparkps import metric as metric_mod
from sparkps.callback import BatchEndParam
from sparkps.errors import ConfigError, DataError
from sparkps.io import DataIter
from sparkps.io.validate import checked_arrays, copy_into, host
from sparkps.train.sparse_batch import SparseBatch


class Inference:
    """``predict`` and ``score`` of :class:`sparkps.train.feedforward.FeedForward` (a mixin: it uses the model's
    ``symbol``, ``arg_params``, ``aux_params``, ``_bind``, ``_input_shapes``, ``_init_iter``,
    ``table_stores_built`` (a count from 0) and the checks of given parameters)."""

    def _predict_executor(self, data_iter, gathered=False):
        """An inference executor for the iterator's data shapes (cached), holding the current params. ``gathered``:
        its tables' rows come from the caller (``predict_with_rows``), no table store is built."""
        if self.arg_params is None:
            raise ConfigError("the model has no parameters yet: fit it or pass arg_params")
        shapes = self._input_shapes(data_iter, with_label=False)
        key = tuple(sorted(shapes.items()))
        if self._pred_exec is None or self._pred_exec[0] != key:
            sparse = SparseBatch.for_symbol(self.symbol, shapes)
            self._tables = sparse.tables if sparse else {}
            exe = self._bind({**shapes, **(sparse.table_shapes if sparse else {})}, 'null')
            if sparse is not None:
                sparse.attach(exe)
                sparse.remember_batches = False     # a prediction keeps no ids: memory bounded by its batch
            self._pred_exec = (key, exe, sparse)
        _, exe, sparse = self._pred_exec
        self._check_given_params(exe, [n for n in self._param_names(shapes) if n not in self._tables], shapes)
        held = [self.arg_params.get(name) for name in self._tables]
        if sparse is not None and not gathered and (self._pred_store is None or len(held) != len(self._pred_held)
                                   or any(a is not b for a, b in zip(held, self._pred_held))):
            # the tables' rows are read through a local kvstore holding arg_params' tables, kept while arg_params
            # holds the same table values (a store per predict call would copy every row each time)
            self._pred_store, self._pred_held = kv_mod.create('local'), held
            sparse.init_tables(self._pred_store, self.arg_params)
            self._pred_store.freeze_tables()     # unseen ids read their initial rows without growing the store
            self.table_stores_built += 1
        for name, value in self.arg_params.items():
            if name in exe.arg_dict and name not in self._tables:
                copy_into(exe.arg_dict[name], value)
        for name, value in (self.aux_params or {}).items():
            if name in exe.aux_dict:
                copy_into(exe.aux_dict[name], value)
        return exe

    def _batches(self, data_iter, num_batch, table_rows=None):
        """Yield (batch, outputs without the pad rows) for up to ``num_batch`` batches; ``table_rows``: the tables'
        rows gathered for these batches ({table: RowSparse}; None: the model's own table store)."""
        from sparkps.rows.gathered import GatheredRows
        exe = self._predict_executor(data_iter, gathered=table_rows is not None)
        sparse = self._pred_exec[2]
        store = self._pred_store if table_rows is None else GatheredRows(table_rows, self._tables)
        for nbatch, batch in enumerate(data_iter):
            if num_batch is not None and nbatch >= num_batch:
                break
            inputs = batch_inputs(data_iter, batch, with_label=False)
            if sparse is not None:
                inputs = sparse.pull(store, inputs)
            exe.forward(is_train=False, **inputs)
            valid = batch.data[0].shape[0] - batch.pad
            yield batch, valid, [host(out[:valid]).copy() for out in exe.outputs]

    def predict_with_rows(self, X, table_rows):
        """``predict(X)`` reading the sparse tables' rows from ``table_rows`` ({table: RowSparse}: the rows of
        ``X``'s ids gathered elsewhere, e.g. by a join over the tables' shard files) instead of ``arg_params``: an id
        it lacks reads its initial row, as an unseen id does in ``predict``. The executor is bound once and kept;
        no table store is built (``sparkps.rows.gathered``). Blocks on computation only."""
        data_iter = self._init_iter(X, None, is_train=False)
        data_iter.reset()
        outputs = [outs for _, _, outs in self._batches(data_iter, None, table_rows)]
        merged = [np.concatenate(parts) for parts in zip(*outputs)]
        return merged[0] if len(merged) == 1 else merged

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """Run the network on ``X`` (numpy or DataIter); returns numpy outputs (one array per output,
        a single array when the network has one), pad rows dropped. ``return_data`` also returns the
        data and labels seen, as (outputs, data, label)."""
        data_iter = self._init_iter(X, None, is_train=False)
        if reset:
            data_iter.reset()
        outputs, data, label = [], [], []
        for batch, valid, outs in self._batches(data_iter, num_batch):
            outputs.append(outs)
            if return_data:
                data.append([host(d[:valid]) for d in batch.data])
                label.append([host(lab[:valid]) for lab in batch.label])
        merged = [np.concatenate(parts) for parts in zip(*outputs)]
        merged = merged[0] if len(merged) == 1 else merged
        if not return_data:
            return merged
        data = [np.concatenate(p) for p in zip(*data)]
        label = [np.concatenate(p) for p in zip(*label)]
        return merged, (data[0] if len(data) == 1 else data), (label[0] if len(label) == 1 else label)

    def _evaluate(self, data_iter, eval_metric, num_batch=None, batch_end_callback=None):
        eval_metric.reset()
        for nbatch, (batch, valid, outs) in enumerate(self._batches(data_iter, num_batch)):
            eval_metric.update([lab[:valid] for lab in batch.label], outs)
            for callback in as_list(batch_end_callback):
                callback(BatchEndParam(0, nbatch, eval_metric, locals()))
        return eval_metric.get_name_value()

    def score(self, X, y=None, eval_metric='acc', num_batch=None, batch_end_callback=None, reset=True):
        """Evaluate ``eval_metric`` on ``X`` (with ``y``, or a DataIter); returns its value (a list of
        values for several metrics)."""
        if not isinstance(X, (DataIter, dict)):
            X, y = checked_arrays(X, y, need_label=True)
        elif isinstance(X, dict) and y is None:
            raise DataError("labels y are required when X is a dict of arrays")
        data_iter = self._init_iter(X, y, is_train=False) if not isinstance(X, DataIter) else X
        if reset:
            data_iter.reset()
        values = [v for _, v in self._evaluate(data_iter, metric_mod.create(eval_metric), num_batch,
                                                batch_end_callback)]
        return values[0] if len(values) == 1 else values


def as_list(callbacks):
    """A callback argument (None, one callable or a list) as a list."""
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]


def batch_inputs(data_iter, batch, with_label=True):
    """{input name: array} of one DataBatch of ``data_iter`` (labels too unless ``with_label`` is False)."""
    inputs = {d[0]: arr for d, arr in zip(data_iter.provide_data, batch.data)}
    if with_label:
        inputs.update({d[0]: arr for d, arr in zip(data_iter.provide_label, batch.label)})
    return inputs
