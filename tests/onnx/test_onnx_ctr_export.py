"""The CTR zoo and Angel's JSON networks exported to ONNX, cut after their table reads: ONNX Runtime, given the
rows sparkps would read for the same ids (per field, a multi-valued field's rows pooled), gives sparkps's click
probabilities to 1e-5."""
import pathlib

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx_parity import TABLE_ROWS, bind_seeded, run_onnx, table_feeds  # noqa: E402

from sparkps.ctr.features import FeatureSpec  # noqa: E402
from sparkps.nets import angel_json, zoo  # noqa: E402
from sparkps.onnx import export_model  # noqa: E402

BATCH = 6
NETWORKS = pathlib.Path(__file__).resolve().parents[2] / "jobs" / "networks"


def ctr_ids(spec, seed=1):
    """Row positions for each ids input (what a bound table read takes): -1 marks absent ids of a multi-valued
    field, and row 0 has none of them."""
    rng = np.random.default_rng(seed)
    ids = {}
    for item in spec.id_inputs():
        low = -1 if item.pooling != "none" else 0
        ids[item.name] = rng.integers(low, TABLE_ROWS, (BATCH, item.width)).astype(np.float32)
        if item.pooling != "none":
            ids[item.name][0] = -1
    return ids


def check_ctr(net, spec, tmp_path):
    shapes = spec.input_shapes(BATCH)
    exe, params = bind_seeded(net, shapes)
    ids = ctr_ids(spec)
    dense = {"dense": np.random.default_rng(2).normal(size=shapes["dense"]).astype(np.float32)} \
        if "dense" in shapes else {}
    want = np.asarray(exe.forward(is_train=False, **ids, **dense)[0])
    path = export_model(net, params, shapes, tmp_path / "ctr.onnx", fields=spec)
    fields = {item.name: list(item.fields) for item in spec.id_inputs()}
    got = run_onnx(path, dict(table_feeds(net, params, ids, fields), **dense))[0]
    assert got.shape == want.shape == (BATCH, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return path


SPEC = FeatureSpec(categorical=["C1", "C2", "C3"], numeric=["I1", "I2"], multi_valued={"tags": 3},
                   embedding_dim=4, hidden_units=(8, 4), cross_layers=2, pooling="mean")


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "plain"])
@pytest.mark.parametrize("model", sorted(zoo.MODELS))
def test_zoo_model_matches_sparkps_from_looked_up_rows(model, fused, tmp_path):
    path = check_ctr(zoo.build(model, SPEC, fused=fused), SPEC, tmp_path)
    import onnx
    names = [i.name for i in onnx.load(str(path)).graph.input]
    assert "embedding_weight:C1" in names or model == "lr"
    assert "linear_embedding_weight:tags" in names and "dense" in names
    assert not {"ids", "ids_tags", "embedding_weight", "ctr_label"} & set(names)


def test_per_field_tables_sum_pooling_and_no_numeric_columns(tmp_path):
    spec = FeatureSpec(categorical=["a", "b"], multi_valued={"tags": 4}, embedding_dim=3, hidden_units=(5,),
                       tables="per_field", pooling="sum")
    check_ctr(zoo.build("deepfm", spec), spec, tmp_path)


@pytest.mark.parametrize("name", ["deepfm", "widedeep", "pnn", "nfm", "dcn"])
def test_angel_network_matches_sparkps(name, tmp_path):
    net = angel_json.load(NETWORKS / (name + ".json"))
    shapes = net.input_shapes(BATCH)
    exe, params = bind_seeded(net.symbol, shapes)        # Angel's tables are bounded: ids index them whole
    ids = np.random.default_rng(3).integers(0, net.index_range, shapes["ids"]).astype(np.float32)
    want = np.asarray(exe.forward(is_train=False, ids=ids)[0])
    path = export_model(net.symbol, params, shapes, tmp_path / "angel.onnx")
    got = run_onnx(path, table_feeds(net.symbol, params, {"ids": ids}, {}))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)



def test_a_model_with_sharded_tables_exports_the_graph_of_its_inline_self(tmp_path):
    """The graph is cut at the table reads, so the export reads no table row: a model whose tables are shard files
    (only its dense parameters in memory) writes the same ONNX file as the same model with its tables inline."""
    from packed_fm import SPEC as FM_SPEC
    from packed_fm import packed_fm
    spark_model, _ = packed_fm()
    sharded = spark_model.with_sharded_tables(str(tmp_path / "sharded"))
    for model, name in ((spark_model, "inline"), (sharded, "sharded")):
        export_model(model.symbol, (model.arg_params, model.aux_params), FM_SPEC.input_shapes(1),
                     tmp_path / (name + ".onnx"), fields=FM_SPEC)
    assert (tmp_path / "inline.onnx").read_bytes() == (tmp_path / "sharded.onnx").read_bytes()
