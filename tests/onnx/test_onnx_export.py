"""sparkps.onnx.export_model on MLPs: ONNX Runtime's outputs equal sparkps's forward pass to 1e-5 (at another
batch size than the one exported); saved model files work as input; an op without a translation names itself,
its node and layer; bad arguments are named."""
import pathlib

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx_parity import bind_seeded, run_onnx, table_feeds  # noqa: E402

import sparkps.symbol as sym  # noqa: E402
from sparkps.ctr.features import FeatureSpec  # noqa: E402
from sparkps.errors import ConfigError  # noqa: E402
from sparkps.model_files import save_checkpoint  # noqa: E402
from sparkps.nets import zoo  # noqa: E402
from sparkps.nets.mlp import ACTIVATIONS, mlp_symbol  # noqa: E402
from sparkps.onnx import UnsupportedOp, export_model, exportable_ops  # noqa: E402
from sparkps.rows.values import RowSparse  # noqa: E402
from sparkps.symbol.op import OPS  # noqa: E402


def forward(net, shapes, inputs, seed=0):
    exe, params = bind_seeded(net, shapes, seed)
    return [np.asarray(o).copy() for o in exe.forward(is_train=False, **inputs)], params


def batchnorm_net():
    """FC -> BatchNorm (learned gamma) -> LeakyReLU -> Dropout -> FC(flatten=False) + scalar -> softmax, and a
    second head: a 3-D input's FC -> BatchNorm (fix_gamma) -> sigmoid, summed over axis 1."""
    data, image = sym.Variable("data"), sym.Variable("image")
    net = sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = sym.BatchNorm(net, fix_gamma=False, eps=1e-3, name="bn1")
    net = sym.LeakyReLU(net, act_type="leaky", slope=0.1, name="leaky1")
    net = sym.Dropout(net, p=0.5, name="drop1")
    net = sym.FullyConnected(net, num_hidden=3, flatten=False, name="fc2") * 2.0
    first = sym.SoftmaxOutput(net, name="softmax")
    side = sym.FullyConnected(image, num_hidden=4, name="fc3")
    side = sym.Activation(sym.BatchNorm(side, name="bn2"), act_type="sigmoid", name="sig")
    second = sym.sum(sym.Reshape(side, shape=(0, 2, 2)), axis=1, name="total")
    return sym.Group([first, second])


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_mlp_matches_sparkps_at_another_batch_size(activation, tmp_path):
    net = mlp_symbol([5, 7, 4, 3], activation=activation, dropout=0.3)
    _, params = bind_seeded(net, {"data": (2, 5)})
    x = np.random.default_rng(1).normal(size=(9, 5)).astype(np.float32)
    want, _ = forward(net, {"data": (9, 5)}, {"data": x})
    doubles = {k: v.astype(np.float64) for k, v in params.items()}        # written as float32
    path = export_model(net, doubles, [(2, 5)], tmp_path / "mlp.onnx", in_types=[np.float32])
    got = run_onnx(path, {"data": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0].sum(axis=1), 1, rtol=1e-5)


def test_batchnorm_leaky_relu_reshape_and_two_heads(tmp_path):
    net = batchnorm_net()
    shapes = {"data": (4, 5), "image": (4, 2, 3)}
    rng = np.random.default_rng(2)
    inputs = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
    want, params = forward(net, shapes, inputs)
    got = run_onnx(export_model(net, params, shapes, tmp_path / "bn.onnx"), inputs)
    assert [g.shape for g in got] == [(4, 3), (4, 2)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_saved_symbol_json_and_params_files_are_input(tmp_path):
    """A checkpoint's PREFIX-symbol.json and PREFIX-0000.params (sparse tables stored as rows) export as the
    objects do; the tables' rows stay out of the ONNX file."""
    spec = FeatureSpec(categorical=["a", "b"], numeric=["x"], embedding_dim=3, hidden_units=(4,))
    net = zoo.build("deepfm", spec)
    shapes = spec.input_shapes(3)
    exe, params = bind_seeded(net, shapes)
    ids = {"ids": np.array([[0, 1], [2, 3], [4, 4]], np.float32)}
    dense = {"dense": np.array([[0.5], [-1.0], [2.0]], np.float32)}
    want = np.asarray(exe.forward(is_train=False, **ids, **dense)[0])
    tables = {"embedding_weight", "linear_embedding_weight"}
    arg = {k: (RowSparse(np.arange(len(v), dtype=np.uint64), v, (None, v.shape[1])) if k in tables else v)
           for k, v in params.items()}
    save_checkpoint(str(tmp_path / "ctr"), 0, net, arg, {})
    path = export_model(str(tmp_path / "ctr-symbol.json"), str(tmp_path / "ctr-0000.params"), shapes,
                        tmp_path / "ctr.onnx", fields=spec)
    import onnx
    model = onnx.load(str(path))
    assert not tables & {i.name for i in model.graph.initializer}
    got = run_onnx(path, dict(table_feeds(net, params, ids, {"ids": ["a", "b"]}), **dense))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_an_unsupported_op_names_the_op_node_and_layer(tmp_path):
    data = sym.Variable("data")
    net = sym.FullyConnected(sym.floor(sym.FullyConnected(data, num_hidden=4, name="head_fc"), name="tower_floor"),
                             num_hidden=2, name="out")
    _, params = bind_seeded(net, {"data": (2, 3)})
    with pytest.raises(UnsupportedOp, match=r"cannot export op 'floor' to ONNX \(node 'tower_floor', "
                                            r"layer 'tower'\)"):
        export_model(net, params, {"data": (2, 3)}, tmp_path / "x.onnx")
    assert not (tmp_path / "x.onnx").exists()


def test_bad_arguments_are_named(tmp_path):
    net = mlp_symbol([3, 2])
    _, params = bind_seeded(net, {"data": (2, 3)})
    with pytest.raises(ConfigError, match=r"input_shapes gives 2 shape\(s\) for the data input\(s\) \['data'\]"):
        export_model(net, params, [(2, 3), (2, 3)], tmp_path / "x.onnx")
    with pytest.raises(ConfigError, match=r"4th argument is the ONNX file path .* pass in_types= by keyword"):
        export_model(net, params, [(2, 3)], np.float32, str(tmp_path / "x.onnx"))
    with pytest.raises(ConfigError, match="in_types: a sparkps network takes float32 inputs, got 'int8'"):
        export_model(net, params, [(2, 3)], tmp_path / "x.onnx", in_types="int8")
    with pytest.raises(ConfigError, match="params has no value for 'fc1_bias'"):
        export_model(net, {"fc1_weight": params["fc1_weight"]}, {"data": (2, 3)}, tmp_path / "x.onnx")
    spec = FeatureSpec(categorical=["a", "b"], embedding_dim=2)
    _, params = bind_seeded(zoo.build("lr", spec), spec.input_shapes(2))
    with pytest.raises(ConfigError, match=r"fields names 1 field\(s\) \['a'\] for ids input 'ids', which holds 2"):
        export_model(zoo.build("lr", spec), params, spec.input_shapes(2), tmp_path / "x.onnx", fields={"ids": "a"})


def test_every_translated_op_is_a_sparkps_op():
    assert set(exportable_ops()) <= set(OPS)
    assert {"FullyConnected", "BatchNorm", "CrossLayer", "BiInnerCross", "SoftmaxOutput"} <= set(exportable_ops())


def every_translation():
    """One graph using every translated op that the networks above do not."""
    x, y, a, b, ids = (sym.Variable(n) for n in ("x", "y", "a", "b", "ids"))
    weight, bias = sym.Variable("w", shape=(5, 4)), sym.Variable("bias", shape=(1, 4))
    return sym.Group([
        sym.log(x) + sym.sqrt(x) - sym.abs(y) * sym.exp(sym.negative(y)) / x,
        sym.clip(sym.square(y), a_min=0.1, a_max=2.0) + (3 - y) * (2 / x) + (y / 4 - 1) * 2 + 1,
        sym.dot(x, weight, transpose_b=True),
        sym.batch_dot(a, b) + sym.batch_dot(sym.transpose(a, axes=(0, 2, 1)), sym.transpose(b, axes=(0, 2, 1)),
                                            transpose_a=True, transpose_b=True),
        sym.expand_dims(y, axis=1),
        sym.mean(a, axis=2) + sym.sum(a, axis=(0, 1), exclude=True, keepdims=False),
        sym.transpose(a),
        sym.softmax(y, axis=0) + sym.log_softmax(y) + sym.SoftmaxActivation(y),
        sym.relu(y) + sym.sigmoid(y) + sym.tanh(y) + sym.Activation(y, act_type="softsign"),
        sym.LeakyReLU(y, act_type="elu", slope=0.3) + sym.LeakyReLU(y, act_type="selu"),
        sym.Flatten(sym.Embedding(ids, input_dim=6, output_dim=3, name="dense_embed")),
        sym.LinearRegressionOutput(sym.BlockGrad(y), name="reg"),
        sym.broadcast_div(sym.broadcast_sub(sym.broadcast_mul(y, bias), bias), sym.broadcast_add(x, bias)),
        sym.Reshape(a, shape=(0, -3)),
    ])


def test_every_translation_matches_sparkps(tmp_path):
    net = every_translation()
    shapes = {"x": (3, 4), "y": (3, 4), "a": (3, 4, 2), "b": (3, 2, 5), "ids": (3, 2)}
    rng = np.random.default_rng(4)
    inputs = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
    inputs["x"] = rng.uniform(0.5, 2.0, shapes["x"]).astype(np.float32)
    inputs["ids"] = rng.integers(0, 6, shapes["ids"]).astype(np.float32)
    exe, params = bind_seeded(net, shapes, seed=5)
    want = [np.asarray(o).copy() for o in exe.forward(is_train=False, **inputs)]
    got = run_onnx(export_model(net, params, shapes, tmp_path / "all.onnx"), inputs)
    assert len(got) == len(want) == 14
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg="output %d" % k)
    used = {node.op.name for node in exe_nodes(net)} | {"BatchNorm", "Dropout", "LeakyReLU", "SoftmaxOutput",
                                                        "FullyConnected", "Activation", "Concat", "add_n",
                                                        "Flatten", "LogisticRegressionOutput", "BiInnerCross",
                                                        "BiInnerSumCross", "BiInteractionCross", "CrossLayer",
                                                        "_MulScalar", "_contrib_FMInteraction"}
    assert sorted(set(exportable_ops()) - used) == ["MAERegressionOutput", "_copy"]    # identities as BlockGrad


def exe_nodes(net):
    from sparkps.symbol.graph import topo_order
    return [n for n in topo_order(net.entries) if n.op is not None]


DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "export.md"


def test_the_documented_example_runs_and_the_op_list_is_current(tmp_path, monkeypatch):
    text = DOC.read_text(encoding="utf-8")
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(DOC), "exec"), {"__name__": "export_example"})     # it asserts ONNX == sparkps
    assert (tmp_path / "deepfm.onnx").is_file()
    listed = text.split("### Exportable ops", 1)[1].split("\n\n", 2)[1]
    assert listed == ", ".join("`%s`" % name for name in exportable_ops()) + "."
