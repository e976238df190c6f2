"""The zoo's fused networks (sparkps/symbol/ops/fused.py, the default) against the same networks of the plain ops
(``build(..., fused=False)``): the same parameters, equal outputs and gradients of a whole training step (shared
tables bound as batch-local matrices, random positions with repeats and absent ids), and equal AUC when trained
locally on planted clicks."""
import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import sparkps.nets as nets
from opcheck import CONTEXTS
from sparkps import backend
from sparkps.ctr.hashing import hash_fields
from sparkps.ctr.synthetic import planted_ctr
from sparkps.metric.ctr import binary_auc
from sparkps.nets.ctr_fit import fit_ctr, predict_ctr
from sparkps.train.sparse_batch import SparseBatch

SPEC = nets.FeatureSpec(categorical=["C1", "C2", "C3", "C4", "C5", "C6"], numeric=["I1", "I2"],
                        multi_valued={"tags": 3}, embedding_dim=8, hidden_units=(16, 8), pooling="mean")
PER_FIELD = nets.FeatureSpec(categorical=["a", "b"], multi_valued={"tags": 2}, tables="per_field", pooling="sum",
                             embedding_dim=4, hidden_units=(8,))
PLAIN_ONLY = {"_contrib_HashEmbedding", "BiInnerSumCross", "BiInteractionCross"}


def ops_of(net):
    return {node["op"] for node in json.loads(net.tojson())["nodes"]}


@pytest.mark.parametrize("model", sorted(nets.zoo.MODELS))
def test_every_zoo_model_builds_of_fused_ops_with_the_plain_parameters(model):
    for spec in (SPEC, PER_FIELD):
        fused, plain = nets.build(model, spec), nets.build(model, spec, fused=False)
        assert fused.list_arguments() == plain.list_arguments()
        assert not ops_of(fused) & PLAIN_ONLY
        assert "_contrib_FusedEmbedding" in ops_of(fused) and "_contrib_FusedEmbedding" not in ops_of(plain)
        shapes = spec.input_shapes(4)
        assert fused.infer_shape_partial(**shapes)[1] == plain.infer_shape_partial(**shapes)[1] == [(4, 1)]
    if model in ("fm", "deepfm", "nfm"):
        assert "_contrib_FMInteraction" in ops_of(nets.build(model, SPEC))


def bound_step(net, spec, batch, seed=0, ctx="cpu"):
    """Outputs and every gradient (numpy) of one training step of ``net``: the tables bound as batch-local
    matrices (as SparseBatch binds them), positions with repeats and absent ids, parameters and labels drawn from
    a Generator of ``seed``."""
    shapes = spec.input_shapes(batch)
    sparse = SparseBatch.for_symbol(net, shapes)
    shapes.update(sparse.table_shapes)
    shapes["ctr_label"] = (batch, 1)
    inputs = set(spec.input_shapes(batch)) | {"ctr_label"}
    exe = net.simple_bind(ctx, grad_req={n: "null" if n in inputs else "write" for n in net.list_arguments()},
                          **shapes)
    rng = np.random.default_rng(seed)
    feed = {}
    for name in sorted(exe.arg_dict):
        array = exe.arg_dict[name]
        if name.startswith("ids"):
            rows = min(sparse.table_shapes[t][0] for t in sparse.tables if name in sparse.tables[t].fields)
            pos = rng.integers(0, max(rows // 4, 1), array.shape).astype(np.float32)   # repeats
            if name != "ids":
                pos[rng.random(array.shape) < 0.3] = -1                                  # absent ids
            feed[name] = pos
        elif name == "ctr_label":
            feed[name] = (rng.random(array.shape) < 0.3).astype(np.float32)
        else:
            feed[name] = rng.normal(0, 0.3, array.shape).astype(np.float32)
    exe.forward(is_train=True, **feed)
    exe.backward()
    return backend.asnumpy(exe.outputs[0]).copy(), {k: backend.asnumpy(v).copy() for k, v in exe.grad_dict.items()}


@pytest.mark.parametrize("model", ["fm", "deepfm", "nfm", "lr"])
@pytest.mark.parametrize("spec", [SPEC, PER_FIELD], ids=["shared", "per_field"])
def test_a_whole_step_of_the_fused_network_equals_the_plain_one(model, spec):
    fused_out, fused_grads = bound_step(nets.build(model, spec), spec, 32)
    plain_out, plain_grads = bound_step(nets.build(model, spec, fused=False), spec, 32)
    np.testing.assert_allclose(fused_out, plain_out, rtol=1e-5, atol=1e-6)
    assert sorted(fused_grads) == sorted(plain_grads)
    for name in plain_grads:
        assert np.abs(plain_grads[name]).max() > 0 or name.endswith("bias"), name
        np.testing.assert_allclose(fused_grads[name], plain_grads[name], rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("model", ["fm", "deepfm"])
def test_a_fused_step_on_a_device_equals_the_plain_step_on_the_host(model, ctx):
    fused_out, fused_grads = bound_step(nets.build(model, SPEC), SPEC, 32, ctx=ctx)
    plain_out, plain_grads = bound_step(nets.build(model, SPEC, fused=False), SPEC, 32)
    np.testing.assert_allclose(fused_out, plain_out, rtol=1e-5, atol=1e-6)
    for name in plain_grads:
        np.testing.assert_allclose(fused_grads[name], plain_grads[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_fused_and_plain_fm_train_to_the_same_auc():
    rows, cut = 16000, 12000
    data = planted_ctr(rows, num_fields=4, num_numeric=0, vocab=10, zipf=1.3, seed=3, fm_scale=1.0, deep_scale=0.0)
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(4)])
    spec = nets.FeatureSpec(categorical=data.fields, embedding_dim=4)
    inputs = spec.inputs(ids)
    train = {k: v[:cut] for k, v in inputs.items()}
    test = {k: v[cut:] for k, v in inputs.items()}
    aucs = {}
    with threadpool_limits(1):
        for fused in (True, False):
            model = fit_ctr(nets.build("fm", spec, fused=fused), train, data.labels[:cut], num_epoch=4, seed=1,
                            learning_rate=0.03)
            aucs[fused] = binary_auc(data.labels[cut:], predict_ctr(model, test))
    best = binary_auc(data.labels[cut:], data.probability[cut:])
    assert aucs[True] >= best - 0.02, (aucs, best)
    assert abs(aucs[True] - aucs[False]) < 0.002, aucs
