"""Initializers: rules by name, Xavier's scale, seeding, Mixed patterns."""
import numpy as np
import pytest

from sparkps import initializer as init
from sparkps.errors import ConfigError, ShapeError


@pytest.mark.parametrize('name,value', [('fc1_bias', 0.0), ('bn_beta', 0.0), ('bn_moving_mean', 0.0),
                                        ('bn_gamma', 1.0), ('bn_moving_var', 1.0)])
def test_non_weight_parameters_are_set_by_name(name, value):
    arr = np.full((5,), 7.0, dtype=np.float32)
    init.Xavier(seed=0)(name, arr)
    np.testing.assert_array_equal(arr, np.full(5, value, dtype=np.float32))


def test_xavier_uniform_avg_bounds_and_spread():
    arr = np.zeros((300, 200), dtype=np.float32)
    init.Xavier(rnd_type='uniform', factor_type='avg', magnitude=3, seed=1)('fc_weight', arr)
    bound = np.sqrt(3 / 250)
    assert np.abs(arr).max() <= bound
    assert arr.std() == pytest.approx(bound / np.sqrt(3), rel=0.02)


@pytest.mark.parametrize('factor_type,fan', [('in', 20 * 9), ('out', 400 * 9)])
def test_xavier_gaussian_uses_fan_with_kernel(factor_type, fan):
    arr = np.zeros((400, 20, 3, 3), dtype=np.float64)
    init.Xavier(rnd_type='gaussian', factor_type=factor_type, magnitude=2, seed=2)('conv_weight', arr)
    assert arr.std() == pytest.approx(np.sqrt(2 / fan), rel=0.02)
    assert abs(arr.mean()) < 0.01 * np.sqrt(2 / fan) * 10


def test_xavier_rejects_one_dimensional_weight():
    with pytest.raises(ShapeError, match='w_weight'):
        init.Xavier()('w_weight', np.zeros(4))


def test_uniform_normal_constant_zero_one():
    arr = np.zeros((100, 100))
    init.Uniform(0.2, seed=0)('a_weight', arr)
    assert np.abs(arr).max() <= 0.2 and arr.std() == pytest.approx(0.2 / np.sqrt(3), rel=0.05)
    init.Normal(0.5, seed=0)('a_weight', arr)
    assert arr.std() == pytest.approx(0.5, rel=0.05)
    init.Constant(3.5)('a_weight', arr)
    assert (arr == 3.5).all()
    init.Zero()('a_weight', arr)
    assert (arr == 0).all()
    init.One()('a_weight', arr)
    assert (arr == 1).all()


def test_seed_and_generator_make_draws_reproducible():
    a, b, c = (np.zeros((10, 10)) for _ in range(3))
    init.Xavier(seed=5)('w_weight', a)
    init.Xavier(seed=5)('w_weight', b)
    init.Xavier(seed=6)('w_weight', c)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    d = np.zeros((10, 10))
    init.Xavier()('w_weight', d, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a, d)


def test_fills_float32_in_place():
    backing = np.zeros(12, dtype=np.float32)
    arr = backing.reshape(3, 4)                  # a view: filling it in place is what writes into backing
    init.Normal(1.0, seed=0)('w_weight', arr)
    assert arr.dtype == np.float32 and np.shares_memory(arr, backing)
    assert backing.all() and np.array_equal(backing, arr.reshape(-1))


def test_mixed_uses_first_matching_pattern():
    mixed = init.Mixed(['embed.*', '.*'], [init.Constant(2.0), init.Zero()])
    emb, fc = np.ones((2, 2)), np.ones((2, 2))
    mixed('embed_weight', emb)
    mixed('fc_weight', fc)
    assert (emb == 2).all() and (fc == 0).all()
    with pytest.raises(ConfigError, match='other'):
        init.Mixed(['fc.*'], [init.Zero()])('other_weight', fc)


def test_unknown_parameter_name_and_options_are_config_errors():
    with pytest.raises(ConfigError, match="'data'"):
        init.Uniform()('data', np.zeros(3))
    with pytest.raises(ConfigError, match='rnd_type'):
        init.Xavier(rnd_type='cauchy')
    with pytest.raises(ConfigError, match='bogus'):
        init.create('bogus')
