"""kvstore.create's registry and KVStoreBase.is_capable: MXNet's type names, clear errors, capabilities."""
import numpy as np
import pytest

from sparkps import kvstore
from sparkps.errors import ConfigError
from sparkps.kvstore import KVStoreBase, LocalKVStore, key_value_lists


@pytest.mark.parametrize('name', ['local', 'device', 'local_allreduce_cpu', 'local_allreduce_device',
                                  'local_update_cpu'])
def test_mxnet_local_type_names_give_a_local_store_that_keeps_the_name(name):
    kv = kvstore.create(name)
    assert isinstance(kv, LocalKVStore) and kv.type == name
    assert kv.is_capable('optimizer') and not kv.is_capable('sync') and kv.is_capable('row_sparse')
    # a local store holds tables with options of their own, but has no pull_step (no step rides with a pull)
    assert kv.is_capable('table_options') and not kv.is_capable('pull_step')


@pytest.mark.parametrize('name,reason', [('nccl', 'no GPU collective'), ('horovod', 'parameter server')])
def test_unsupported_mxnet_types_say_so(name, reason):
    with pytest.raises(ConfigError, match=f"'{name}' is not supported: .*{reason}"):
        kvstore.create(name)


def test_unknown_type_lists_the_known_ones_and_unknown_capability_is_an_error():
    with pytest.raises(ConfigError, match="unknown kvstore type 'dist_sycn' \\(known: .*dist_sync.*local"):
        kvstore.create('dist_sycn')
    assert 'nccl' not in kvstore.known_types() and 'dist_device_sync' in kvstore.known_types()
    with pytest.raises(ConfigError, match="unknown kvstore capability 'optimiser'"):
        kvstore.create('local').is_capable('optimiser')
    with pytest.raises(ConfigError, match="takes no options"):
        kvstore.create('device', secret='x')


def test_dist_type_without_a_scheduler_is_a_config_error(monkeypatch):
    monkeypatch.delenv('SPARKPS_SCHEDULER_URI', raising=False)
    monkeypatch.delenv('SPARKPS_SCHEDULER_PORT', raising=False)
    with pytest.raises(ConfigError, match='no scheduler address'):
        kvstore.create('dist_sync_device', secret='s')


def test_one_normaliser_pairs_keys_with_values():
    assert key_value_lists(3, np.zeros(2), 'push')[0] == [3]
    assert key_value_lists([1, 2], [np.zeros(1), [np.zeros(1), np.ones(1)]], 'push')[0] == [1, 2]
    with pytest.raises(ConfigError, match='kvstore pull: 2 keys but 1 out arrays'):
        key_value_lists([1, 2], [np.zeros(1)], 'pull', 'out arrays')


def test_base_store_defaults_pushpull_and_refuses_what_it_lacks():
    kv = kvstore.create('local')
    kv.init(0, np.zeros(2))
    kv._set_updater(lambda key, grad, weight: weight.__isub__(grad))
    out = np.empty(2)
    kv.pushpull(0, np.ones(2), out=out)
    np.testing.assert_array_equal(out, [-1, -1])
    kv.end_training()
    kv.report_progress(epoch=0, force=True)
    with pytest.raises(ConfigError, match="'local' does not support checkpoints"):
        kv.save_checkpoint('/tmp/nowhere')
    assert kvstore.create(kv) is kv
    with pytest.raises(ConfigError, match="does not support init"):
        KVStoreBase('custom').init(0, np.zeros(1))


def test_a_store_without_table_options_refuses_a_table_with_options_by_capability():
    """FeedForward asks the store (``is_capable('table_options')``) instead of probing for ``init_table``: a
    store that declares no such capability gets the ConfigError even if it happens to have the method."""
    import sparkps as sp

    class PlainStore(LocalKVStore):
        CAPABILITIES = frozenset(('optimizer', 'row_sparse'))

    from sparkps.rows.config import table_attr
    weight = sp.sym.Variable('emb_weight', attr=table_attr(init_scale=0.1))
    net = sp.sym.contrib.HashEmbedding(sp.sym.Variable('data'), output_dim=2, weight=weight, name='emb')
    net = sp.sym.SoftmaxOutput(sp.sym.FullyConnected(sp.sym.Flatten(net), num_hidden=2, name='fc'), name='softmax')
    model = sp.FeedForward(net, num_epoch=1, optimizer='sgd', learning_rate=0.1, numpy_batch_size=4)
    with pytest.raises(ConfigError, match="table 'emb_weight': its table options .* does not hold them"):
        model.fit(np.arange(8, dtype=np.int64).reshape(8, 1), np.zeros(8, np.float32), kvstore=PlainStore('local'))


def test_the_dist_kvstore_registers_itself_when_the_worker_package_is_imported():
    """The registry knows only which package provides the dist types: ``sparkps.kvstore`` does not import the
    worker package (local training never loads it); the first ``create`` of a dist type imports it, and the class
    it registered serves the type. In a fresh interpreter, so no earlier test has imported the worker package."""
    import subprocess
    import sys
    code = """if True:
        import sys
        from sparkps import kvstore
        from sparkps.errors import ConfigError
        assert 'sparkps.worker' not in sys.modules and 'dist_sync' in kvstore.known_types()
        try:
            kvstore.create('dist_sync', max_staleness=2)
        except ConfigError as error:
            assert "kvstore 'dist_sync' has no option(s) max_staleness" in str(error), error
        from sparkps.worker import DistKVStore
        assert kvstore._FACTORIES['dist_sync'][0] == DistKVStore.create
        print('ok')
    """
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == 'ok', done.stderr
