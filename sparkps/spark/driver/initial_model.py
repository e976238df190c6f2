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
        from sparkps import symbol as sym
        from sparkps.train.start_model import check_start
        model = self.model
        check_start(self.describe(), model.symbol, model.arg_params, model.aux_params,
                    sym.load_json(trainer.symbol_json), input_shapes(trainer), trainer.label_name)

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


def input_shapes(trainer):
    """{input: shape} of one batch of ``trainer``'s network (its named inputs, or its data input)."""
    if trainer.inputs is not None:
        return dict(trainer.inputs.shapes(trainer.batch_size))
    return {trainer.data_name: (trainer.batch_size,) + tuple(trainer.input_shape)}
