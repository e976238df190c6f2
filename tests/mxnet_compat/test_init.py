"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_init.py.

Not ported: test_rsp_const_init (a row_sparse weight initialised through ``sparse.dot`` of csr data; sparkps
has no csr symbol input).
"""
import json

import numpy as np
import pytest

import sparkps as sp
from sparkps.errors import ConfigError, ShapeError


def test_variable_init():
    """MXNet: test_variable_init: a Variable's own initializer wins over the model's (here on a weight whose
    name would otherwise get Xavier)."""
    sym = sp.sym
    weight = sym.Variable('fc_weight', init=sp.init.One())
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Variable('data'), weight=weight, num_hidden=3, name='fc'),
                            name='softmax')
    model = sp.FeedForward(net, num_epoch=1, optimizer='sgd', learning_rate=0.0, initializer=sp.init.Xavier(), seed=0)
    model.fit(np.zeros((4, 5), np.float32), np.zeros(4))
    assert (model.arg_params['fc_weight'] == 1).all()
    assert (model.arg_params['fc_bias'] == 0).all()


def test_default_init():
    """MXNet: test_default_init: PReLU's gamma starts at 0.25 (the initialiser LeakyReLU gives its gamma
    input), whatever the model's initializer (MXNet's Module defaults to Uniform)."""
    sym = sp.sym
    net = sym.SoftmaxOutput(sym.LeakyReLU(data=sym.Variable('data'), act_type='prelu', name='act'), name='softmax')
    model = sp.FeedForward(net, num_epoch=1, optimizer='sgd', learning_rate=0.0, initializer=sp.init.Uniform(),
                           seed=0, numpy_batch_size=10)
    model.fit(np.zeros((10, 10), np.float32), np.zeros(10))
    assert list(model.arg_params) == ['act_gamma']
    assert (model.arg_params['act_gamma'] == 0.25).all()


def test_aux_init():
    """MXNet: test_aux_init: BatchNorm's moving variance starts at 1, its moving mean at 0."""
    net = sp.sym.BatchNorm(data=sp.sym.Variable('data'), name='bn')
    exe = net.simple_bind(sp.cpu(), data=(10, 10, 3, 3))
    init = sp.init.Uniform()
    for name, array in exe.aux_dict.items():
        array[...] = 7
        init(name, array)
    assert (exe.aux_dict['bn_moving_var'] == 1).all()
    assert (exe.aux_dict['bn_moving_mean'] == 0).all()


def test_bilinear_init():
    """MXNet: test_bilinear_init."""
    weight = np.empty((1, 1, 4, 4))
    sp.init.Bilinear()._init_weight(None, weight)
    bili_1d = np.array([[1 / 4.0, 3 / 4.0, 3 / 4.0, 1 / 4.0]])
    assert (bili_1d * bili_1d.T == weight).all()


def test_bilinear_for_upsampling_names_and_bad_shapes():
    weight = np.zeros((2, 1, 3, 3), np.float32)
    sp.init.Xavier()('upsampling0_weight', weight)
    one_d = np.array([0.25, 0.75, 0.75])             # MXNet's formula: f = ceil(3 / 2), c = (2f - 1 - f % 2) / 2f
    np.testing.assert_allclose(weight[1, 0], np.outer(one_d, one_d))
    with pytest.raises(ShapeError, match="4-d weight; 'w'"):
        sp.init.Bilinear()._init_weight('w', np.zeros((3, 3)))


def test_const_init_dumps():
    """MXNet: test_const_init_dumps."""
    shape = (2, 3, 1)
    init = sp.init.Constant(np.ones(shape))
    assert init.dumps() == json.dumps([init.__class__.__name__.lower(), init._kwargs])
    assert sp.init.Constant(1).dumps() == '["constant", {"value": 1}]'


def test_dumps_round_trip_through_create():
    for init in (sp.init.Xavier(rnd_type='gaussian', magnitude=2), sp.init.Uniform(0.2), sp.init.Normal(0.5),
                 sp.init.Constant(0.25), sp.init.One(), sp.init.Bilinear()):
        again = sp.init.create(init.dumps())
        assert type(again) is type(init) and again.dumps() == init.dumps()
    with pytest.raises(ConfigError, match="'bogus'"):
        sp.init.create('["bogus", {}]')
