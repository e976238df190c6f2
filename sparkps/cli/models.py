"""The model commands: ``sparkps symbol mlp`` (write a network as symbol JSON) and ``sparkps predict`` (a trained
sparkps or MXNet checkpoint over libsvm or CSV rows)."""
import os

import click
import numpy as np

from sparkps.cli.options import reports_errors
from sparkps.errors import ConfigError


@click.group()
def symbol():
    """Write network definitions (symbol JSON files)."""


@symbol.command()
@click.option("--layers", required=True, help="Comma-separated layer sizes, input first: 784,128,64,10.")
@click.option("--act", type=click.Choice(["relu", "sigmoid", "tanh", "softrelu"]), default="relu",
              show_default=True, help="Activation between hidden layers.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True,
              help="Where to write the JSON.")
@reports_errors("symbol mlp")
def mlp(layers, act, output):
    """A multilayer perceptron with a softmax output (input size is the first of --layers)."""
    from sparkps.nets.mlp import mlp_symbol, parse_layers
    sizes = parse_layers(layers)
    net = mlp_symbol(sizes, act)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(net.tojson())
    click.echo("wrote %s (%s)" % (output, " -> ".join(map(str, sizes))))


@click.command()
@click.option("--model", "model_prefix", metavar="PREFIX",
              help="Checkpoint PREFIX-symbol.json + PREFIX-NNNN.params, sparkps's or MXNet's (told apart by content).")
@click.option("--from-mxnet", "mxnet_prefix", metavar="PREFIX",
              help="MXNet checkpoint (mx.model.save_checkpoint): PREFIX-symbol.json + PREFIX-NNNN.params; "
                   "params in any other format are refused.")
@click.option("--epoch", type=click.IntRange(min=0), required=True, help="Epoch NNNN of the params file.")
@click.option("--data", type=click.Path(exists=True, dir_okay=False), required=True,
              help="Rows to predict (libsvm or CSV; the label column is copied to the output).")
@click.option("--format", "data_format", type=click.Choice(["auto", "libsvm", "csv"]), default="auto",
              show_default=True, help="Data format (auto: from the content).")
@click.option("--num-features", type=click.IntRange(min=1), help="LibSVM feature count (default: largest index).")
@click.option("--label-column", type=int, default=0, show_default=True, help="CSV column holding the label.")
@click.option("--no-label", is_flag=True, help="The CSV rows hold features only.")
@click.option("--input-shape", help="Shape of one row as the network's data input takes it, e.g. 1,8,8 "
                                    "(default: the flat row).")
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True, help="Rows per forward.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="CSV file to write (default: standard output).")
@reports_errors("predict")
def predict(model_prefix, mxnet_prefix, epoch, data, data_format, num_features, label_column, no_label,
            input_shape, batch_size, output):
    """Predict with a trained model: one CSV line per input row, `label,prediction,output_0,...`
    (prediction: the arg-max of the first output).

    Example: sparkps predict --from-mxnet resnet --epoch 10 --data test.csv --input-shape 3,32,32 -o out.csv
    """
    from sparkps.train.feedforward import FeedForward
    if (model_prefix is None) == (mxnet_prefix is None):
        raise ConfigError("give exactly one of --model PREFIX and --from-mxnet PREFIX")
    X, y = _read_rows(data, data_format, num_features, None if no_label else label_column)
    if input_shape:
        X = X.reshape((len(X),) + _row_shape(input_shape, X.shape[1]))
    model = FeedForward.load(model_prefix or mxnet_prefix, epoch, from_mxnet=mxnet_prefix is not None,
                             numpy_batch_size=batch_size)
    if model_prefix is not None:
        _add_sharded_rows(model, model_prefix, X)
    outputs = model.predict(X)
    outputs = (outputs[0] if isinstance(outputs, list) else outputs).reshape(len(X), -1)
    lines = ["label,prediction," + ",".join("output_%d" % k for k in range(outputs.shape[1]))]
    for k, row in enumerate(outputs):
        label = "" if y is None else "%.10g" % y[k]
        lines.append("%s,%d,%s" % (label, int(row.argmax()), ",".join("%.8g" % v for v in row)))
    text = "\n".join(lines) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
        click.echo("sparkps predict: wrote %d predictions to %s" % (len(X), output), err=True)
    else:
        click.echo(text, nl=False)


def _add_sharded_rows(model, prefix, X):
    """When ``prefix`` is the model of a saved SparkModel folder whose tables are shard files, put in
    ``model.arg_params`` the rows of the ids ``X`` reads (the one data input feeds its tables), streamed from the
    shards: never a whole table. ConfigError when a table reads ids from another input. Blocks on reading them."""
    import json

    from sparkps.rows.shards import check_shards, read_manifest, tables_folder_of
    from sparkps.spark.model.sharded_tables import rows_for_ids
    from sparkps.symbol.ops.embedding import sparse_tables
    meta_path = os.path.join(os.path.dirname(os.path.abspath(prefix)), "metadata.json")
    if not os.path.exists(meta_path):
        return
    with open(meta_path, encoding="utf-8") as handle:
        tables = json.load(handle).get("tables")
    if not tables:
        return
    folder = tables_folder_of(os.path.dirname(meta_path), tables)
    manifest = read_manifest(folder)
    check_shards(folder, manifest)
    data = [n for n in model.symbol.list_arguments() if n not in model.arg_params and not n.endswith("label")
            and n not in manifest["tables"]]
    for name, spec in sparse_tables(model.symbol).items():
        if name not in manifest["tables"]:
            continue
        if list(spec.fields) != data[:1] or len(data) != 1:
            raise ConfigError("sparkps predict: table %r reads ids from %s; predict feeds one data input (%s), so "
                              "score this model with SparkModel.transform" % (name, list(spec.fields), data))
        model.arg_params[name] = rows_for_ids(folder, name, np.asarray(X).astype(np.int64).reshape(-1), spec.dim,
                                              spec.input_dim)


def _read_rows(path, data_format, num_features, label_column):
    from sparkps.io.formats import detect_format
    from sparkps.io.readers import read_csv, read_libsvm
    kind = detect_format(path, data_format)
    if kind == "csv":
        return read_csv(path, label_column=label_column)
    if kind == "libsvm":
        return read_libsvm(path, num_features=num_features)
    raise ConfigError("--data %s is %s; predict reads libsvm and CSV files" % (path, kind))


def _row_shape(text, width):
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ConfigError("--input-shape %r is not a comma-separated list of sizes" % text) from None
    if int(np.prod(shape)) != width:
        raise ConfigError("--input-shape %s holds %d values but the rows have %d features"
                          % (text, int(np.prod(shape)), width))
    return shape
