"""FeedForward: MXNet's one-object training API over a Symbol, an optimizer and a kvstore.

    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Variable('data'), num_hidden=10, name='fc'), name='softmax')
    model = FeedForward(net, num_epoch=10, optimizer='sgd', learning_rate=0.1, momentum=0.9, seed=0)
    model.fit(X_train, y_train, eval_data=(X_test, y_test))
    probabilities = model.predict(X_test)
    model.save('digits')                    # digits-symbol.json, digits-0010.params
    again = FeedForward.load('digits', 10)

``fit`` binds one executor and reuses it for every batch; with a list of contexts (``ctx=[cpu(0), cpu(1)]``
or GPUs) it binds one per device and splits each batch over them, summing their gradients
(:mod:`sparkps.train.device_group`). With ``kvstore='local'`` (the string) the optimizer
updates the executor's weights in place; with a KVStore object (or 'dist_sync'/'dist_async') every step is one
``push`` of all gradients and one ``pull`` of all weights, and the final weights are pulled from the store.
"""
import logging
import math
import time
from collections.abc import Mapping

import numpy as np

from sparkps import initializer as init_mod
from sparkps import kvstore as kv_mod
from sparkps import metric as metric_mod
from sparkps import optimizer as opt_mod
from sparkps.callback import BatchEndParam
from sparkps.errors import ConfigError, DataError, ShapeError
from sparkps.io import DataIter, NDArrayIter
from sparkps.io.validate import check_labels_fit, checked_arrays, copy_into, host, named_inputs
from sparkps.model_files import load_checkpoint, save_checkpoint
from sparkps.param_group import bound_arrays
from sparkps.train.inference import Inference, as_list, batch_inputs
from sparkps.train.sparse_batch import QueuedStep, SparseBatch, warm_kernels, with_sparse_push

__all__ = ['FeedForward', 'save_checkpoint', 'load_checkpoint']
LOG = logging.getLogger('sparkps')


def dropout_seed(seed, rank=0):
    """The seed of worker ``rank``'s Dropout masks under training seed ``seed``: each worker its own stream, the
    same in every run of that seed."""
    return int(np.random.SeedSequence([int(seed), int(rank), 1]).generate_state(1)[0])


class FeedForward(Inference):
    """A network plus everything needed to train it (MXNet's ``mx.model.FeedForward``).

    ``optimizer`` is a name or an Optimizer; extra keyword arguments (``learning_rate``, ``momentum``,
    ``wd``, ...) go to ``optimizer.create``. ``seed`` makes initialisation and shuffling reproducible.
    ``numpy_batch_size`` is the batch size used when ``fit``/``predict`` get numpy arrays. The default
    initializer is ``Uniform(0.01)``, as MXNet's.
    """

    def __init__(self, symbol, ctx='cpu', num_epoch=None, epoch_size=None, optimizer='sgd',
                 initializer=None, numpy_batch_size=128, arg_params=None, aux_params=None,
                 allow_extra_params=False, begin_epoch=0, seed=None, **kwargs):
        from sparkps.backend import Context
        self.symbol = symbol
        contexts = list(ctx) if isinstance(ctx, (list, tuple)) and len(ctx) > 1 else [ctx]
        self.contexts = [Context.parse(c) for c in contexts]
        self.ctx = self.contexts[0]
        self.num_epoch, self.epoch_size = num_epoch, epoch_size
        self.optimizer = optimizer
        self.initializer = init_mod.Uniform(0.01) if initializer is None else initializer
        self.numpy_batch_size = int(numpy_batch_size)
        self.arg_params = dict(arg_params) if arg_params is not None else None
        self.aux_params = dict(aux_params) if aux_params is not None else None
        self.allow_extra_params, self.begin_epoch, self.seed = allow_extra_params, int(begin_epoch), seed
        self.kwargs = kwargs
        self._pred_exec = self._pred_store = None
        self._pred_held = []   # the table values _pred_store was made from
        self.table_stores_built = 0   # how often predict built its table store (once while arg_params' tables stay)
        self._tables = {}   # sparse embedding tables: {weight name: TableConfig} (see sparse_batch.py)
        self._kept_rows = []   # named inputs whose table rows each epoch's arg_params hold (keep_rows_for)
        # True: the sparse tables stay on the store (its servers write them at the end of a Spark fit): arg_params
        # hold only the rows keep_rows_for names, pulled at each epoch end, never every row a batch pulled
        self.tables_on_store = False
        self.epoch_end_pull_seconds = 0.0   # the time fit spent pulling the tables' rows at its epoch ends

    def __getstate__(self):
        state = dict(self.__dict__)
        state['_pred_exec'] = None          # a bound executor stays with its process
        state['_pred_store'] = None         # rebuilt from arg_params by the next predict
        return state

    # ----- data -----------------------------------------------------------------------------------
    def _init_iter(self, X, y, is_train):
        """Wrap numpy input in an NDArrayIter (validated); pass DataIters through."""
        if isinstance(X, DataIter):
            if y is not None:
                raise ConfigError("y must be None when X is a DataIter (labels come from the iterator)")
            return X
        if isinstance(X, dict):  # named inputs, e.g. a sparse table's 64-bit ids beside dense features
            X, y = named_inputs(X, y, is_train)
            batch = min(len(next(iter(X.values()))), self.numpy_batch_size)
        else:
            X, y = checked_arrays(X, y, need_label=is_train)
            batch = min(X.shape[0], self.numpy_batch_size)
        if is_train:
            return NDArrayIter(X, y, batch, shuffle=True, last_batch_handle='roll_over', seed=self.seed)
        return NDArrayIter(X, y, batch, shuffle=False, last_batch_handle='pad')

    def _init_eval_iter(self, eval_data):
        if eval_data is None or isinstance(eval_data, DataIter):
            return eval_data
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            return self._init_iter(eval_data[0], eval_data[1], is_train=False)
        raise ConfigError("eval_data must be a DataIter or an (X, y) pair")

    # ----- binding and parameters ---------------------------------------------------------------
    def _input_shapes(self, data_iter, with_label=True):
        shapes = {d[0]: tuple(d[1]) for d in data_iter.provide_data}
        if with_label:
            shapes.update({d[0]: tuple(d[1]) for d in data_iter.provide_label})
        return shapes

    def _bind(self, shapes, grad_req, devices=1):
        """simple_bind (over the first ``devices`` contexts); shapes that do not fit the network are bad data,
        not a crash inside the graph."""
        unknown = [name for name in shapes if name not in self.symbol.list_arguments()]
        if unknown:
            raise DataError(f"input(s) {unknown} are not arguments of the network "
                            f"{self.symbol.list_arguments()}")
        try:
            if devices > 1:
                from sparkps.train.device_group import DeviceGroup
                return DeviceGroup(self.symbol, self.contexts[:devices], grad_req, shapes, shapes)
            return self.symbol.simple_bind(self.ctx, grad_req=grad_req, **shapes)
        except ShapeError as exc:
            raise DataError(f"input shapes {shapes} do not fit the network: {exc}") from exc

    def _param_names(self, input_names):
        return [n for n in self.symbol.list_arguments() if n not in input_names]

    def _check_given_params(self, exe, param_names, shapes):
        """arg_params/aux_params must match the bound shapes (a wrong feature width shows up here)."""
        names = set(param_names) | set(exe.aux_dict)
        for params, arrays in ((self.arg_params, exe.arg_dict), (self.aux_params, exe.aux_dict)):
            for name, value in (params or {}).items():
                if name in self._tables:
                    continue  # a sparse table: held by the kvstore, checked by SparseBatch.init_tables
                if name not in names:
                    if not self.allow_extra_params:
                        raise ConfigError(f"parameter {name!r} is not in the network (allow_extra_params=True "
                                          f"ignores it)")
                    continue
                if tuple(value.shape) != tuple(arrays[name].shape):
                    raise DataError(f"inputs {shapes} need parameter {name!r} of shape "
                                    f"{tuple(arrays[name].shape)} but the model holds {tuple(value.shape)} "
                                    f"(wrong number of features?)")

    def _init_params(self, exe, param_names):
        """Copy given parameters into the executor, initialise the rest (seeded when ``seed`` is set)."""
        rng = np.random.default_rng(self.seed) if self.seed is not None else None
        init = init_mod.create(self.initializer) if isinstance(self.initializer, str) else self.initializer
        targets = [(n, exe.arg_dict[n], self.arg_params) for n in param_names] + \
                  [(n, a, self.aux_params) for n, a in exe.aux_dict.items()]
        own = {n: a['__init__'] for n, a in self.symbol.attr_dict().items() if '__init__' in a}
        for name, array, given in targets:
            if given is not None and name in given:
                copy_into(array, given[name])
            elif name in own:                       # Variable(init=...): its own rule, whatever the name
                rule = init_mod.create(own[name])
                rule._init_weight(name, array, rng if rng is not None else rule.rng)
            elif rng is not None and isinstance(init, init_mod.Initializer):
                init(name, array, rng=rng)
            else:
                init(name, array)

    def _save_params_from(self, exe, param_names):
        self.arg_params = {n: host(exe.arg_dict[n]).copy() for n in param_names}
        self.aux_params = {n: host(a).copy() for n, a in exe.aux_dict.items()}

    # ----- optimizer and kvstore ----------------------------------------------------------------
    def _make_optimizer(self, batch_size, kv, param_names):
        workers = kv.num_workers if kv is not None and kv.is_capable(kv.SYNC) else 1
        rescale = 1.0 / (batch_size * workers)
        if isinstance(self.optimizer, opt_mod.Optimizer):
            self.optimizer.rescale_grad = rescale
            return self.optimizer
        # the tables are parameters too, numbered after the dense ones: their lr/wd multipliers are their own
        idx2name = dict(enumerate(list(param_names) + [t for t in self._tables if t not in param_names]))
        return opt_mod.create(self.optimizer, rescale_grad=rescale, param_idx2name=idx2name, sym=self.symbol,
                              **self.kwargs)

    @staticmethod
    def _make_step(exe, param_names, kv, opt):
        """Return ``step()`` applying one update: in place (no kvstore), or one push + one pull of every
        parameter through ``kv.pushpull`` (one request per server on the parameter server)."""
        weights = bound_arrays(exe.arg_group, exe.arg_dict, param_names)
        grads = bound_arrays(exe.grad_group, exe.grad_dict, param_names)
        keys = list(range(len(param_names)))
        if kv is None:
            updater = opt_mod.get_updater(opt)

            def step():
                for key, grad, weight in zip(keys, grads, weights):
                    updater(key, grad, weight)
            return step
        kv.init(keys, weights)
        kv.set_optimizer(opt)       # before the pull: a store resuming from a checkpoint loads it with the optimizer
        kv.pull(keys, out=weights)

        def step():  # one call: the gradients may travel without a copy (it blocks until the pull)
            kv.pushpull(keys, grads, out=weights)
        return step

    # ----- training -----------------------------------------------------------------------------
    def fit(self, X, y=None, eval_data=None, eval_metric='acc', epoch_end_callback=None,
            batch_end_callback=None, kvstore='local', logger=None):
        """Train for epochs ``begin_epoch .. num_epoch - 1``; returns self.

        ``X``: numpy array (with labels ``y``) or a DataIter. ``eval_data``: (X, y) or a DataIter, scored
        after each epoch. ``kvstore``: 'local' (in-place updates), a type name for ``kvstore.create`` or a
        KVStore object. Bad input (row counts, NaN, labels outside the network's classes, shapes) raises
        DataError before the first step. With a dist kvstore, blocks on it as its methods document.
        """
        if self.num_epoch is None:
            raise ConfigError("FeedForward.fit needs num_epoch")
        logger = logger or LOG
        data = self._init_iter(X, y, is_train=True)
        eval_iter = self._init_eval_iter(eval_data)
        shapes = self._input_shapes(data)
        grad_req = {n: ('null' if n in shapes else 'write') for n in self.symbol.list_arguments()}
        sparse = SparseBatch.for_symbol(self.symbol, shapes)
        if sparse is not None:
            warm_kernels()          # loaded while the network binds and the store initialises
        self._tables = sparse.tables if sparse else {}
        if sparse is not None and len(self.contexts) > 1:
            raise ConfigError(f"a network with sparse embedding tables ({', '.join(self._tables)}) trains on one "
                              f"context, got {len(self.contexts)}")
        exe = self._bind({**shapes, **(sparse.table_shapes if sparse else {})}, grad_req, devices=len(self.contexts))
        param_names = [n for n in self._param_names(shapes) if n not in self._tables]
        self._check_given_params(exe, param_names, shapes)
        if y is not None and not isinstance(X, DataIter):
            check_labels_fit(data.label, self.symbol, shapes)
        self._init_params(exe, param_names)
        kv = None if kvstore is None or kvstore == 'local' else kv_mod.create(kvstore)
        if self.seed is not None:        # Dropout masks: one stream per worker of the seed
            exe.seed(dropout_seed(self.seed, kv.rank if kv is not None else 0))
        if sparse is not None:  # the tables live in a kvstore, the local one when training in place
            kv = kv if kv is not None else kv_mod.create('local')
            sparse.attach(exe)
            sparse.remember_batches = not self.tables_on_store
            sparse.init_tables(kv, self.arg_params)
            self._keep_eval_rows(sparse, eval_iter)
        try:
            self._fit_epochs(exe, param_names, data, eval_iter, kv, eval_metric, epoch_end_callback,
                             batch_end_callback, logger, sparse)
        finally:
            if kv is not None and isinstance(kvstore, str):
                kv.close()
        return self

    def keep_rows_for(self, inputs):
        """Have every epoch end of the next ``fit`` pull into ``arg_params`` the rows of the sparse tables that the
        named inputs ``inputs`` read, so a ``predict`` or ``score`` of them from an epoch-end callback uses the
        rows as trained by every worker (on the parameter server a worker otherwise holds only the rows its own
        batches pulled, and reads initial values for the others). ``eval_data`` of ``fit`` is kept this way too.
        Blocks only at the epoch ends, as ``kv.row_sparse_pull`` of those rows."""
        self._kept_rows.append({k: np.asarray(v) for k, v in inputs.items()})

    def _keep_eval_rows(self, sparse, eval_iter):
        for inputs in self._kept_rows:
            sparse.keep_rows_of(inputs)
        if eval_iter is not None:
            eval_iter.reset()
            for batch in eval_iter:
                sparse.keep_rows_of(batch_inputs(eval_iter, batch, with_label=False))
            eval_iter.reset()

    def _fit_epochs(self, exe, param_names, data, eval_iter, kv, eval_metric, epoch_end_callback,
                    batch_end_callback, logger, sparse=None):
        opt = self._make_optimizer(data.batch_size, kv, param_names)
        step = self._make_step(exe, param_names, kv, opt)
        exchange = None
        if sparse is not None and kv.is_capable('pull_step'):  # the step's pushes ride with the next batch's pull
            step = exchange = QueuedStep(exe, param_names, sparse, kv)
        elif sparse is not None:
            step = with_sparse_push(step, sparse, kv)
        train_metric = metric_mod.create(eval_metric)
        self._diverged = DivergedLoss(self.symbol.list_outputs(), opt)
        for epoch in range(self.begin_epoch, self.num_epoch):
            self._train_epoch(epoch, exe, data, step, train_metric, batch_end_callback, kv, logger, sparse,
                              exchange)
            if exchange is not None:
                exchange.finish()
            self._save_params_from(exe, param_names)
            if sparse is not None:
                pulled = time.perf_counter()
                self.arg_params.update(sparse.table_values(kv))
                self.epoch_end_pull_seconds += time.perf_counter() - pulled
            for callback in as_list(epoch_end_callback):
                callback(epoch, self.symbol, self.arg_params, self.aux_params)
            if eval_iter is not None:
                eval_iter.reset()
                for name, value in self._evaluate(eval_iter, metric_mod.create(eval_metric)):
                    logger.info('Epoch[%d] Validation-%s=%f', epoch, name, value)
        if kv is not None:
            self._finish_with_store(kv, exe, param_names)
            if sparse is not None and not self.tables_on_store:
                self.arg_params.update(sparse.table_values(kv))

    def _train_epoch(self, epoch, exe, data, step, train_metric, batch_end_callback, kv, logger, sparse=None,
                     exchange=None):
        data.reset()
        train_metric.reset()
        tic, samples, nbatch = time.time(), 0, 0
        for batch in data:
            inputs = batch_inputs(data, batch)
            if sparse is not None:
                inputs = sparse.pull(kv, inputs, exchange.exchange if exchange else None, batch.pad)
            exe.forward(is_train=True, **inputs)
            exe.backward()
            self._diverged.check(exe.outputs, epoch, nbatch)     # before the step: no NaN gradient goes out
            step()
            valid = batch.data[0].shape[0] - batch.pad
            train_metric.update([lab[:valid] for lab in batch.label], [out[:valid] for out in exe.outputs])
            nbatch, samples = nbatch + 1, samples + valid
            for callback in as_list(batch_end_callback):
                callback(BatchEndParam(epoch, nbatch, train_metric, locals()))
            if kv is not None:
                kv.report_progress(epoch=epoch, nbatch=nbatch, samples=samples, metrics=MetricValues(train_metric))
            if self.epoch_size is not None and nbatch >= self.epoch_size:
                break
        elapsed = max(time.time() - tic, 1e-9)
        for name, value in train_metric.get_name_value():
            logger.info('Epoch[%d] Train-%s=%f', epoch, name, value)
        logger.info('Epoch[%d] Time cost=%.3f s, %d samples, %.1f samples/sec', epoch, elapsed, samples,
                    samples / elapsed)

    def _finish_with_store(self, kv, exe, param_names):
        """Leave training on the store (a no-op unless it keeps rounds) and take the store's final weights."""
        kv.end_training()
        kv.pull(list(range(len(param_names))), out=bound_arrays(exe.arg_group, exe.arg_dict, param_names))
        self._save_params_from(exe, param_names)

    # ----- persistence --------------------------------------------------------------------------
    def save(self, prefix, epoch=None):
        """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (epoch defaults to ``num_epoch``)."""
        epoch = self.num_epoch if epoch is None else epoch
        if epoch is None:
            raise ConfigError("FeedForward.save needs an epoch (num_epoch is not set)")
        if self.arg_params is None:
            raise ConfigError("the model has no parameters to save: fit it first")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params or {})

    @staticmethod
    def load(prefix, epoch, ctx='cpu', from_mxnet=False, **kwargs):
        """Rebuild a model saved by ``save`` (or MXNet's checkpoint; ``from_mxnet=True`` accepts only
        MXNet's params format); training would resume at ``epoch``."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch, from_mxnet=from_mxnet)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params, begin_epoch=epoch,
                           **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx='cpu', num_epoch=None, epoch_size=None, optimizer='sgd',
               initializer=None, eval_data=None, eval_metric='acc', epoch_end_callback=None,
               batch_end_callback=None, kvstore='local', logger=None, **kwargs):
        """Build a FeedForward and fit it in one call (as MXNet); returns the trained model."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size, optimizer=optimizer,
                            initializer=initializer, **kwargs)
        return model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                         epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                         kvstore=kvstore, logger=logger)


class MetricValues(Mapping):
    """The values of ``metric`` as a read-only mapping {name: value}, computed when first read: a kvstore sends its
    progress at most once a second, so a step that does not send never computes them (an AUC over every prediction
    of the epoch so far, each step, grows with the epoch)."""

    def __init__(self, metric):
        self._metric, self._values = metric, None

    def _read(self):
        if self._values is None:
            self._values = dict(self._metric.get_name_value())
        return self._values

    def __bool__(self):
        return True

    def __getitem__(self, name):
        return self._read()[name]

    def __iter__(self):
        return iter(self._read())

    def __len__(self):
        return len(self._read())


class DivergedLoss:
    """The check that stops a diverging fit: once per batch, the sum of each output of the loss heads (one pass
    over batch x outputs values, far below a step's cost); a NaN or infinity there is a DataError naming the
    epoch, the batch and the output, pointing at the learning rate."""

    def __init__(self, names, opt):
        self.names, self.opt = list(names), opt

    def check(self, outputs, epoch, nbatch):
        """Raise DataError when an output of the batch after ``nbatch`` batches of ``epoch`` is not finite."""
        for i, out in enumerate(outputs):
            if math.isfinite(float(out.sum())) or np.isfinite(host(out)).all():   # a sum of finite values may
                continue                                                         # overflow
            name = self.names[i] if i < len(self.names) else "output %d" % i
            lr = self.opt.lr
            raise DataError("training diverged: the loss output %r holds NaN or infinity at epoch %d, step %d "
                            "(batch %d of the epoch); the learning rate%s is likely too large: lower it (or clip "
                            "the gradients with clip_gradient)" % (name, epoch, nbatch + 1, nbatch + 1,
                                                                   "" if lr is None else " (%g)" % lr))
