"""A small CTR model with two sparse tables, as earlier versions made it (its ``input_shape`` the width of a packed
float row, ``sparkps.ctr.packed``), for the prediction tests.

Data: planted FM clicks (``planted_ctr``: 1500 rows, 3 fields of 40 values, seed 1), hashed per field. The model
is an FM (tables ``embedding_weight`` and ``linear_embedding_weight``) trained one epoch in one process.
"""
import numpy as np

from sparkps.ctr.features import FeatureSpec
from sparkps.ctr.hashing import hash_column
from sparkps.ctr.packed import PackedLayout
from sparkps.ctr.synthetic import planted_ctr
from sparkps.nets.ctr_fit import fit_ctr
from sparkps.nets.zoo import build
from sparkps.spark.model.spark_model import SparkModel

SPEC = FeatureSpec(categorical=("a", "b", "c"), embedding_dim=4)
TABLES = ("embedding_weight", "linear_embedding_weight")
PACKED = PackedLayout(SPEC.input_parts())      # the float rows of earlier versions


def packed_fm():
    """(SparkModel of the earlier versions' shape, its training rows packed as float32)."""
    data = planted_ctr(1500, num_fields=3, num_numeric=0, vocab=40, zipf=1.3, seed=1, deep_scale=0.0)
    ids = np.stack([hash_column(f, [str(v) for v in data.ranks[:, i]]) for i, f in enumerate("abc")], axis=1)
    inputs = SPEC.inputs(ids)
    net = build("fm", SPEC)
    model = fit_ctr(net, inputs, data.labels, num_epoch=1)
    spark_model = SparkModel(net, model.arg_params, model.aux_params, input_shape=(PACKED.width,),
                             label_name="ctr_label", input_layout=PACKED)
    return spark_model, PACKED.pack(inputs)
