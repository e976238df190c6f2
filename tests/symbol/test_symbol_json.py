"""Symbol files as MXNet writes and reads them: files from MXNet 0.8 (param/attr, two-element entries,
no auxiliary inputs, legacy lr_mult keys) and MXNet >= 0.9 (auxiliary states listed as inputs) load
with MXNet's upgrade rules, and tojson() writes only what MXNet 1.x's reader knows."""
import json

import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import ConfigError

# A network as MXNet 0.8 saved it: op parameters under "param", user attributes under "attr",
# entries [node, output], BatchNorm without its moving statistics, a legacy "lr_mult" on a variable
# and a legacy "weight_wd_mult" on an op, and no mxnet_version (MXNet reads such files as 0.8.0).
MXNET_0_8 = {
    "nodes": [
        {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "fc1_weight", "inputs": [], "backward_source_id": -1,
         "attr": {"lr_mult": "0.5"}},
        {"op": "null", "param": {}, "name": "fc1_bias", "inputs": [], "backward_source_id": -1},
        {"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "8"}, "name": "fc1",
         "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1, "attr": {"ctx_group": "stage1"}},
        {"op": "null", "param": {}, "name": "bn1_gamma", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "bn1_beta", "inputs": [], "backward_source_id": -1},
        {"op": "BatchNorm", "param": {"eps": "0.001", "fix_gamma": "False", "momentum": "0.9",
                                      "use_global_stats": "False"}, "name": "bn1",
         "inputs": [[3, 0], [4, 0], [5, 0]], "backward_source_id": -1},
        {"op": "Activation", "param": {"act_type": "relu"}, "name": "relu1", "inputs": [[6, 0]],
         "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "fc2_weight", "inputs": [], "backward_source_id": -1},
        {"op": "FullyConnected", "param": {"no_bias": "True", "num_hidden": "3"}, "name": "fc2",
         "inputs": [[7, 0], [8, 0]], "backward_source_id": -1, "attr": {"weight_wd_mult": "0"}},
        {"op": "Softmax", "param": {"grad_scale": "1", "multi_output": "False"}, "name": "softmax",
         "inputs": [[9, 0]], "backward_source_id": -1},
    ],
    "arg_nodes": [0, 1, 2, 4, 5, 8],
    "heads": [[10, 0]],
}

# The same network as MXNet 1.x writes it: attrs, three-element entries, moving stats as inputs.
MXNET_1_X = {
    "nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc1_weight", "attrs": {"__lr_mult__": "0.5"}, "inputs": []},
        {"op": "null", "name": "fc1_bias", "inputs": []},
        {"op": "FullyConnected", "name": "fc1", "attrs": {"num_hidden": "8"}, "inputs": [[0, 0, 0], [1, 0, 0],
                                                                                          [2, 0, 0]]},
        {"op": "null", "name": "bn1_gamma", "inputs": []},
        {"op": "null", "name": "bn1_beta", "inputs": []},
        {"op": "null", "name": "bn1_moving_mean", "attrs": {"__init__": "[\"zero\", {}]"}, "inputs": []},
        {"op": "null", "name": "bn1_moving_var", "attrs": {"__init__": "[\"one\", {}]"}, "inputs": []},
        {"op": "BatchNorm", "name": "bn1", "attrs": {"fix_gamma": "False"},
         "inputs": [[3, 0, 0], [4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]},
        {"op": "Activation", "name": "relu1", "attrs": {"act_type": "relu"}, "inputs": [[8, 0, 0]]},
        {"op": "null", "name": "fc2_weight", "attrs": {"__wd_mult__": "0"}, "inputs": []},
        {"op": "FullyConnected", "name": "fc2", "attrs": {"no_bias": "True", "num_hidden": "3"},
         "inputs": [[9, 0, 0], [10, 0, 0]]},
        {"op": "null", "name": "softmax_label", "inputs": []},
        {"op": "SoftmaxOutput", "name": "softmax", "inputs": [[11, 0, 0], [12, 0, 0]]},
    ],
    "arg_nodes": [0, 1, 2, 4, 5, 6, 7, 10, 12],
    "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14, 15, 16],
    "heads": [[13, 0, 0]],
    "attrs": {"mxnet_version": ["int", 10600]},
}

ARGS = ["data", "fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta", "fc2_weight", "softmax_label"]


def _outputs(net, seed=3):
    rng = np.random.default_rng(seed)
    exe = net.simple_bind("cpu", grad_req="null", data=(4, 5))
    for name, array in exe.arg_dict.items():
        if name != "data":
            array[:] = rng.normal(size=array.shape)
    exe.aux_dict["bn1_moving_var"][:] = 2.0
    exe.forward(data=rng.normal(size=(4, 5)), softmax_label=np.zeros(4))
    return exe.outputs[0].copy()


def test_mxnet_0_8_file_loads_with_upgrades():
    # MXNet test_symbol.py::test_load_000800 (the upgrade rules of legacy_json_util.cc)
    net = sym.load_json(json.dumps(MXNET_0_8))
    assert net.list_arguments() == ARGS            # the missing label became 'softmax_label'
    assert net.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    attrs = net.attr_dict()
    assert attrs["fc1_weight"]["__lr_mult__"] == "0.5"
    assert attrs["fc1"]["__ctx_group__"] == "stage1"
    assert attrs["fc2_weight"]["__wd_mult__"] == "0"
    assert "weight_wd_mult" not in attrs["fc2"]
    assert net.infer_shape(data=(4, 5))[1] == [(4, 3)]


def test_mxnet_1_x_file_lists_aux_states_as_inputs():
    net = sym.load_json(json.dumps(MXNET_1_X))
    assert net.list_arguments() == ARGS
    assert net.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    np.testing.assert_allclose(_outputs(net), _outputs(sym.load_json(json.dumps(MXNET_0_8))))


def test_tojson_is_what_mxnet_reads():
    net = sym.load_json(json.dumps(MXNET_1_X))
    doc = json.loads(net.tojson())
    assert set(doc) == {"nodes", "arg_nodes", "node_row_ptr", "heads", "attrs"}
    assert doc["attrs"] == {"mxnet_version": ["int", 10901]}
    for node in doc["nodes"]:
        assert set(node) <= {"op", "name", "attrs", "inputs"}, node
        assert all(isinstance(v, str) for v in node.get("attrs", {}).values())
        assert all(len(entry) == 3 for entry in node["inputs"])
    by_name = {n["name"]: n for n in doc["nodes"]}
    bn_inputs = [doc["nodes"][i]["name"] for i, _, _ in by_name["bn1"]["inputs"]]
    assert bn_inputs == ["fc1", "bn1_gamma", "bn1_beta", "bn1_moving_mean", "bn1_moving_var"]
    assert by_name["fc1"]["attrs"] == {"num_hidden": "8"}          # only parameters given, as MXNet writes
    assert [doc["nodes"][i]["name"] for i in doc["arg_nodes"]] == [
        "data", "fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta", "bn1_moving_mean", "bn1_moving_var",
        "fc2_weight", "softmax_label"]
    assert doc["node_row_ptr"] == MXNET_1_X["node_row_ptr"]         # BatchNorm has 3 outputs, as in MXNet
    again = sym.load_json(net.tojson())
    assert again.tojson() == net.tojson()
    np.testing.assert_allclose(_outputs(again), _outputs(net))


def test_symbols_built_here_write_no_owner_and_round_trip():
    data = sym.Variable("data")
    net = sym.SoftmaxOutput(sym.FullyConnected(data, num_hidden=4), name="out")
    doc = json.loads(net.tojson())
    assert all("owner" not in n for n in doc["nodes"])
    assert sym.load_json(net.tojson()).list_arguments() == net.list_arguments()


def test_files_written_by_earlier_sparkps_releases_still_load():
    doc = json.loads(sym.load_json(json.dumps(MXNET_1_X)).tojson())
    doc["attrs"] = {"sparkps_version": ["int", 10600]}
    for node in doc["nodes"]:
        if node["name"] == "fc1_bias":
            node["owner"] = 3
    assert sym.load_json(json.dumps(doc)).list_arguments() == ARGS


def test_missing_inputs_after_0_9_are_an_error_naming_the_node():
    doc = json.loads(json.dumps(MXNET_1_X))
    doc["nodes"][11]["inputs"] = doc["nodes"][11]["inputs"][:1]
    with pytest.raises(ConfigError, match="FullyConnected 'fc2' has 1 inputs, expected 2"):
        sym.load_json(json.dumps(doc))
