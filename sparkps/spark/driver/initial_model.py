"""The model a fit starts from (a warm start, decision 21): checked against the fit's network on the driver, before any
Spark job, then handed to the tasks as the dense weights and the folder of the tables' shard files.

    start = StartModel.of(initial_model, session)      # a SparkModel, or the path of a saved one
    start.check(trainer)                                # ConfigError naming the parameter or table that differs
    plan["initial"] = start.plan(session, master, num_servers)      # {"params": .npz bytes, "tables": folder}

The dense part travels in the task plan (as a model's dense part ships to scoring). The sparse tables never pass
through the driver: a model whose tables are shard files (SparkModel format 4) gives the servers its own tables folder,
which each server reads its share of (:mod:`sparkps.server.tables.sparse_start`); a model whose tables are inline
(formats 1-3, small by definition) has them written as shard files into a staging folder first
(:func:`sparkps.spark.model.sharded_tables.write_table_shards`), removed after the fit. The optimizer state starts
fresh: a saved model holds weights, counts and last-seen steps, not optimizer state (docs/warm_start.md).
"""
import os

import numpy as np

from sparkps.errors import ConfigError
from sparkps.rows.values import RowSparse


class StartModel:
    """A SparkModel a fit starts from, and where it came from (``source``: its path, or ``"the given model"``)."""

    def __init__(self, model, source):
        self.model, self.source = model, source
        self.staged = None       # a staging folder holding an inline model's tables as shard files

    @classmethod
    def of(cls, initial_model, session=None):
        """The StartModel of ``initial_model``: a SparkModel, or the path (a plain path or a Spark URI) of a saved
        SparkModel or of a saved pyspark.ml model (its ``weights`` folder). ConfigError naming the path when it holds
        no model; DataError naming a damaged file. Blocks on reading the model's files (not its shard files)."""
        from sparkps.spark.model.spark_model import SparkModel
        if isinstance(initial_model, SparkModel):
            return cls(initial_model, "the given model")
        if not isinstance(initial_model, (str, os.PathLike)):
            raise ConfigError("initial_model must be a SparkModel or the path of a saved model, got %s"
                              % type(initial_model).__name__)
        path = str(initial_model)
        return cls(SparkModel.load(model_folder(path, session), session=session), path)

    def describe(self):
        return "initial model %s" % self.source if self.source != "the given model" else "the initial model"

    def check(self, trainer):
        """ConfigError when this model cannot start a fit of ``trainer`` (a SparkTrainer): another network (a
        parameter or table it lacks or has beyond the fit's), a parameter of another shape, a table of another
        embedding width or id range. Needs no Spark; reads no rows."""
        check_tables(self.describe(), self.model.symbol, trainer_symbol(trainer))
        check_dense(self.describe(), self.model, trainer)

    def plan(self, session, master, num_servers):
        """``{"params", "tables"}`` for the task plan: the dense weights as .npz bytes, and the folder of the tables'
        shard files the servers load (None without sparse tables). Shard files are checked first (a missing or
        damaged one: one DataError naming it and its table); inline tables are written as ``num_servers`` shard files
        into a new staging folder (``self.staged``, removed by :meth:`close`). ConfigError when the shard files are on
        a store the servers cannot read with file I/O. Blocks on checking or writing the shard files."""
        from sparkps.model_files import params_to_bytes
        model = self.model
        dense = {n: v for n, v in model.arg_params.items() if not isinstance(v, RowSparse)}
        tables = None
        if model.table_manifest:
            from sparkps.spark.model.storage import is_uri
            folder, _, _ = model.checked_tables(session)
            if is_uri(folder):
                raise ConfigError("%s keeps its tables on %s, which the servers cannot read with file I/O: copy the "
                                  "model to a folder every executor mounts and start from that path"
                                  % (self.describe(), folder))
            tables = os.path.abspath(folder)
        elif any(isinstance(v, RowSparse) for v in model.arg_params.values()):
            from sparkps.spark.driver.table_staging import staging_folder
            from sparkps.spark.model.sharded_tables import write_table_shards
            self.staged = staging_folder(session, master)
            write_table_shards(self.staged, model.symbol, model.arg_params, model.table_counts,
                               num_shards=max(int(num_servers), 1))
            tables = self.staged
        return {"params": params_to_bytes(dense, model.aux_params), "tables": tables}

    def close(self):
        """Remove the staging folder of an inline model's tables (nothing otherwise)."""
        from sparkps.spark.driver.table_staging import remove
        remove(self.staged)
        self.staged = None


def model_folder(path, session=None):
    """The SparkModel folder of ``path``: ``path`` itself, or its ``weights`` folder when ``path`` holds a saved
    pyspark.ml model (``SparkpsCTRModel``, ``SparkpsClassificationModel``)."""
    from sparkps.spark.model.model_folder import METADATA
    from sparkps.spark.model.storage import files_for
    files = files_for(path, session)
    weights = files.join(path, "weights")
    if not files.exists(files.join(path, METADATA)) and files.exists(files.join(weights, METADATA)):
        return weights
    return path


def trainer_symbol(trainer):
    from sparkps import symbol as sym
    return sym.load_json(trainer.symbol_json)


def check_tables(what, saved, network):
    """ConfigError naming the first sparse table that ``saved`` (the initial model's network) and ``network`` do not
    share, or whose embedding width or id range differs."""
    from sparkps.symbol.ops.embedding import sparse_tables
    old, new = sparse_tables(saved), sparse_tables(network)
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            holder, other = ("this fit's network", what) if name in new else (what, "this fit's network")
            raise ConfigError("%s has the sparse table %r, which %s lacks (tables: %s against %s): it is another "
                              "network" % (holder, name, other, sorted(old), sorted(new)))
        if int(old[name].dim) != int(new[name].dim):
            raise ConfigError("table %r: %s has rows %d wide, this fit's network %d (embedding width)"
                              % (name, what, int(old[name].dim), int(new[name].dim)))
        if old[name].input_dim != new[name].input_dim:
            raise ConfigError("table %r: %s takes ids below %s, this fit's network below %s (the id range, e.g. "
                              "numBuckets)" % (name, what, old[name].input_dim, new[name].input_dim))


def check_dense(what, model, trainer):
    """ConfigError naming the first dense parameter of the fit's network that ``model`` lacks, holds beyond it, or
    holds in another shape."""
    from sparkps.symbol.ops.embedding import sparse_tables
    net = trainer_symbol(trainer)
    tables = sparse_tables(net)
    if trainer.inputs is not None:
        shapes = dict(trainer.inputs.shapes(trainer.batch_size), **{t: (1, s.dim) for t, s in tables.items()})
        inputs = set(trainer.inputs.shapes(trainer.batch_size))
    else:
        shapes = {trainer.data_name: (trainer.batch_size,) + tuple(trainer.input_shape)}
        inputs = {trainer.data_name}
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    wanted = {n: tuple(s) for n, s in zip(net.list_arguments(), arg_shapes)
              if n not in inputs and n != trainer.label_name and n not in tables}
    held = {n: tuple(np.shape(v)) for n, v in model.arg_params.items() if not isinstance(v, RowSparse)}
    for name in sorted(set(wanted) | set(held)):
        if name not in held:
            raise ConfigError("%s has no parameter %r of this fit's network (it holds %s): it is another network"
                              % (what, name, ", ".join(sorted(held)) or "none"))
        if name not in wanted:
            raise ConfigError("%s holds the parameter %r, which this fit's network lacks: it is another network"
                              % (what, name))
        if held[name] != wanted[name]:
            raise ConfigError("parameter %r: %s holds shape %s, this fit's network needs %s (another input width or "
                              "layer size)" % (name, what, held[name], wanted[name]))
    want_aux = {n: tuple(s) for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
    for name, shape in sorted(want_aux.items()):
        value = model.aux_params.get(name)
        if value is None or tuple(np.shape(value)) != shape:
            raise ConfigError("auxiliary state %r: %s holds %s, this fit's network needs shape %s"
                              % (name, what, "none" if value is None else tuple(np.shape(value)), shape))
