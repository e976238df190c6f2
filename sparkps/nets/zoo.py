"""The CTR model zoo: LR, FM, Wide&Deep, DeepFM, DCN, PNN (inner) and NFM, each a Symbol built from a
FeatureSpec and ending in ``click_head`` (a probability of a click).

    net = build('deepfm', FeatureSpec(categorical=['C1', 'C2'], numeric=['I1']))
    net = build('deepfm', spec, embedding_wd_mult=1.0, deep_wd_mult=0.0, dropout=0.2)   # see regularisation.py
    net = build('fm', spec, fused=False)     # the same network of the plain (unfused) ops

By default the table reads and the FM / NFM crosses are the fused ops of sparkps/symbol/ops/fused.py (one compiled
kernel each way); ``fused=False`` builds the graph of the plain ops, with the same parameters and equal values.

The zoo names its models once, here: ``register(name, make, deep=...)`` adds a model (a function of ``Inputs``
returning its Symbol) to ``MODELS``; the estimator's ``model`` param, the job's ``--model`` choices, the sweeps and
the benchmarks read ``names()`` and ``deep_names()``, so a new model built from existing ops is a function here (or
in a module that registers it) plus its tests.
"""
from dataclasses import dataclass

import sparkps.symbol as sym
from sparkps.errors import ConfigError
from sparkps.nets.blocks import Inputs, click_head, field_embedding, flat_features, linear_term, mlp
from sparkps.nets.regularisation import Regularisation


def lr(inputs):
    """Logistic regression over hashed categorical values and numeric columns."""
    return click_head([linear_term(inputs)])


def _fm_cross(inputs, embedded):
    if inputs.fused:
        return sym.contrib.FMInteraction(embedded, name="fm_cross")
    return sym.BiInnerSumCross(embedded, name="fm_cross")


def fm(inputs):
    """Factorisation machine: first-order term plus the pairwise inner products of field embeddings."""
    return click_head([linear_term(inputs), _fm_cross(inputs, field_embedding(inputs))])


def widedeep(inputs):
    """Wide & Deep: the linear term beside an MLP over the field embeddings and numeric columns."""
    deep = mlp(flat_features(inputs, field_embedding(inputs)), inputs.spec.hidden_units, "deep", inputs=inputs)
    return click_head([linear_term(inputs), deep])


def deepfm(inputs):
    """DeepFM: FM and an MLP sharing one field embedding."""
    embedded = field_embedding(inputs)
    deep = mlp(flat_features(inputs, embedded), inputs.spec.hidden_units, "deep", inputs=inputs)
    return click_head([linear_term(inputs), _fm_cross(inputs, embedded), deep])


def dcn(inputs):
    """Deep & Cross: ``spec.cross_layers`` cross layers and an MLP over the same stacked input, joined by a
    linear layer, beside the linear term."""
    x0 = flat_features(inputs, field_embedding(inputs))
    cross = x0
    for i in range(inputs.spec.cross_layers):
        layer = "cross%d" % (i + 1)
        cross = sym.CrossLayer(data=cross, x0=x0, name=layer, **inputs.weight(layer, "deep"))
    deep = mlp(x0, inputs.spec.hidden_units, "deep", out_units=None, inputs=inputs)
    joined = sym.FullyConnected(sym.Concat(cross, deep, dim=1), num_hidden=1, name="dcn_out",
                                **inputs.weight("dcn_out", "deep"))
    return click_head([linear_term(inputs), joined])


def pnn(inputs):
    """Inner-product PNN: an MLP over the field embeddings and all their pairwise inner products, beside the
    linear term (as Angel's PNN sums a wide input layer into its output)."""
    embedded = field_embedding(inputs)
    products = sym.BiInnerCross(embedded, name="pnn_cross")
    deep = mlp(flat_features(inputs, embedded, products), inputs.spec.hidden_units, "deep", inputs=inputs)
    return click_head([linear_term(inputs), deep])


def nfm(inputs):
    """Neural FM: the linear term plus an MLP over the bi-interaction pooling of the field embeddings."""
    embedded = field_embedding(inputs)
    pooled = (sym.contrib.FMInteraction(embedded, keep_factors=True, name="nfm_cross") if inputs.fused
              else sym.BiInteractionCross(embedded, name="nfm_cross"))
    return click_head([linear_term(inputs), mlp(pooled, inputs.spec.hidden_units, "deep", inputs=inputs)])


@dataclass(frozen=True)
class ZooModel:
    """One registered zoo model: its ``name``, ``make`` (``Inputs`` -> Symbol ending in ``click_head``) and
    whether it has a ``deep`` part (an MLP: the deep part's dropout and weight decay apply to it)."""
    name: str
    make: object
    deep: bool


MODELS = {}      # {name: ZooModel}, in registration order


def register(name, make, deep):
    """Add zoo model ``name`` (lower case) built by ``make(inputs)``; ``deep``: it has an MLP part. ConfigError
    when the name is taken by another function. Returns ``make`` (usable as a decorator's body)."""
    key = str(name).lower()
    known = MODELS.get(key)
    if known is not None and known.make is not make:
        raise ConfigError("zoo model %r is already registered (%s)" % (key, known.make.__name__))
    MODELS[key] = ZooModel(key, make, bool(deep))
    return make


def unregister(name):
    """Remove zoo model ``name`` (a model a test registered); KeyError when it is not registered."""
    del MODELS[str(name).lower()]


def names():
    """The registered model names, in registration order."""
    return tuple(MODELS)


def deep_names():
    """The registered models with a deep (MLP) part."""
    return tuple(name for name, model in MODELS.items() if model.deep)


def check_name(name):
    """``name`` lower-cased when it names a registered model; ConfigError naming it and the known ones otherwise."""
    key = str(name).lower()
    if key not in MODELS:
        raise ConfigError("unknown CTR model %r; known: %s" % (name, ", ".join(MODELS)))
    return key


for _make, _deep in ((lr, False), (fm, False), (widedeep, True), (deepfm, True), (dcn, True), (pnn, True),
                     (nfm, True)):
    register(_make.__name__, _make, deep=_deep)


def build(name, spec, embedding_wd_mult=None, linear_wd_mult=None, deep_wd_mult=None, dropout=0.0, fused=True):
    """The Symbol of zoo model ``name`` for ``spec``; ConfigError naming the model when unknown, or the setting
    at fault. The weight-decay multipliers (None: MXNet's rule) and the deep part's ``dropout`` are those of
    ``regularisation.Regularisation``; the defaults add nothing to the graph. ``fused`` (default) builds the table
    reads and crosses of the fused ops, False of the plain ones (the same parameters, equal values)."""
    make = MODELS[check_name(name)].make
    settings = Regularisation(embedding_wd_mult, linear_wd_mult, deep_wd_mult, dropout)
    return make(Inputs(spec, settings, fused=fused))
