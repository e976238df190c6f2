"""The model a fit starts from (a warm start, docs/warm_start.md), without Spark: read from its files, and checked
against the network the fit trains.

    start = read_start_model('/models/day1')          # a SparkModel folder, or a FeedForward checkpoint PREFIX
    check_start('initial model /models/day1', start.symbol, start.arg_params, start.aux_params, net,
                {'data': (32, 64)}, label_name='softmax_label')

The Spark fit (:mod:`sparkps.spark.driver.initial_model`) and ``sparkps worker train --initial-model`` both check
here, so a model that does not fit the network is one ConfigError naming the parameter or table that differs,
before anything is trained. Blocks on reading the model's files only (never a table's rows).
"""
import glob
import json
import os
import re
from collections import namedtuple

import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.rows.values import RowSparse

# symbol: the saved network; arg_params: its dense parameters (and RowSparse tables of an inline model);
# tables: the folder of its tables' shard files (a SparkModel of format 4), else None
StartModel = namedtuple("StartModel", ["symbol", "arg_params", "aux_params", "tables"])


def read_start_model(path):
    """The StartModel at ``path``: a saved SparkModel folder (its ``metadata.json`` names the FeedForward files and the
    tables' manifest) or a FeedForward checkpoint prefix (``PREFIX-symbol.json`` and the newest
    ``PREFIX-NNNN.params``, what ``sparkps worker train --save PREFIX`` writes). ConfigError naming ``path`` when it is
    neither; DataError naming a damaged file."""
    from sparkps.model_files import load_checkpoint
    path = str(path)
    meta_path = os.path.join(path, "metadata.json")
    if os.path.isfile(meta_path):
        try:
            with open(meta_path, encoding="utf-8") as handle:
                meta = json.load(handle)
            prefix, epoch = os.path.join(path, meta["prefix"]), int(meta["epoch"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError("cannot read %s: %s" % (meta_path, exc)) from None
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        tables = meta.get("tables")
        folder = os.path.dirname(os.path.join(path, tables)) if tables else None
        return StartModel(symbol, arg_params, aux_params, folder)
    epochs = [int(m.group(1)) for m in (re.search(r"-(\d{4,})\.params$", p) for p in glob.glob(path + "-*.params"))
              if m]
    if not os.path.isfile(path + "-symbol.json") or not epochs:
        raise ConfigError("%s is not a saved model: neither a SparkModel folder (metadata.json) nor a checkpoint "
                          "PREFIX (PREFIX-symbol.json and PREFIX-NNNN.params)" % path)
    symbol, arg_params, aux_params = load_checkpoint(path, max(epochs))
    return StartModel(symbol, arg_params, aux_params, None)


def check_start(what, saved_symbol, arg_params, aux_params, network, input_shapes, label_name):
    """ConfigError when the model ``what`` names (its network ``saved_symbol``, weights ``arg_params`` and
    ``aux_params``) cannot start a fit of ``network`` fed ``input_shapes`` ({input: shape}; ``label_name``: the label
    input's name, or a list of them): a sparse table or dense
    parameter it lacks or holds beyond the network's (another network), a table of another embedding width or id
    range, a parameter or auxiliary state of another shape."""
    check_tables(what, saved_symbol, network)
    check_dense(what, arg_params, aux_params, network, input_shapes, label_name)


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


def check_dense(what, arg_params, aux_params, network, input_shapes, label_name):
    """ConfigError naming the first dense parameter of ``network`` that the model lacks, holds beyond it, or holds in
    another shape, and the first auxiliary state of another shape."""
    from sparkps.symbol.ops.embedding import sparse_tables
    tables = sparse_tables(network)
    labels = {label_name} if isinstance(label_name, str) else set(label_name)
    shapes = dict(input_shapes, **{t: (1, s.dim) for t, s in tables.items()})
    arg_shapes, _, aux_shapes = network.infer_shape(**shapes)
    wanted = {n: tuple(s) for n, s in zip(network.list_arguments(), arg_shapes)
              if n not in input_shapes and n not in labels and n not in tables}
    held = {n: tuple(np.shape(v)) for n, v in arg_params.items() if not isinstance(v, RowSparse) and n not in tables}
    for name in sorted(set(wanted) | set(held)):
        if name not in held:
            raise ConfigError("%s has no parameter %r of this fit's network (it holds %s): it is another network"
                              % (what, name, ", ".join(sorted(held)) or "none"))
        if name not in wanted:
            raise ConfigError("%s holds the parameter %r, which this fit's network lacks: it is another network"
                              % (what, name))
    for name in sorted(wanted):        # the same parameters: their shapes
        if held[name] != wanted[name]:
            raise ConfigError("parameter %r: %s holds shape %s, this fit's network needs %s (another input width or "
                              "layer size)" % (name, what, held[name], wanted[name]))
    for name, shape in sorted(zip(network.list_auxiliary_states(), map(tuple, aux_shapes))):
        value = (aux_params or {}).get(name)
        if value is None or tuple(np.shape(value)) != shape:
            raise ConfigError("auxiliary state %r: %s holds %s, this fit's network needs shape %s"
                              % (name, what, "none" if value is None else tuple(np.shape(value)), shape))
