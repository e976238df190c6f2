"""The size limit a SparkTrainer gives every node of its fit: the largest legitimate frame of the network with a
margin (dense ranges per server, a batch's rows of the widest table), passed to the workers' sockets and to the
servers' environment, so a stranger's larger frame is dropped before it is allocated."""
import sparkps as sp
from sparkps.comm.settings import HEADER_LIMIT_BYTES, message_size_limit
from sparkps.spark import SparkTrainer
from sparkps.spark.task import barrier_task


def mlp(hidden):
    net = sp.sym.FullyConnected(sp.sym.Variable('data'), num_hidden=hidden, name='fc1')
    return sp.sym.SoftmaxOutput(sp.sym.FullyConnected(net, num_hidden=10, name='fc2'), name='softmax')


def test_the_limit_follows_the_dense_parameters_cut_per_server():
    trainer = SparkTrainer(mlp(4096), input_shape=(784,), batch_size=64, num_workers=2, num_servers=2)
    dense = 784 * 4096 + 4096 + 4096 * 10 + 10
    limit = trainer._plan('tcp://127.0.0.1:1', 's', 2, 2)['max_message_bytes']
    assert limit == message_size_limit(dense_elements=dense, num_servers=2)
    assert 1.25 * dense * 4 / 2 <= limit < dense * 4          # a server's range with the margin, not the model
    one = trainer._plan('tcp://127.0.0.1:1', 's', 2, 1)['max_message_bytes']
    assert one > limit


def test_a_small_model_keeps_the_header_floor_and_a_table_counts_its_batch_rows():
    small = SparkTrainer(mlp(8), input_shape=(4,), batch_size=16, num_workers=1, num_servers=1)
    assert small._plan('tcp://127.0.0.1:1', 's', 1, 1)['max_message_bytes'] == HEADER_LIMIT_BYTES
    ids = sp.sym.Variable('data')
    net = sp.sym.contrib.HashEmbedding(ids, output_dim=64, name='emb')
    net = sp.sym.SoftmaxOutput(sp.sym.FullyConnected(sp.sym.Flatten(net), num_hidden=2, name='fc'), name='softmax')
    table = SparkTrainer(net, input_shape=(26,), batch_size=65536, num_workers=1, num_servers=1)
    limit = table._plan('tcp://127.0.0.1:1', 's', 1, 1)['max_message_bytes']
    assert limit == message_size_limit(dense_elements=26 * 64 * 2 + 2, num_servers=1, sparse_rows=65536 * 26,
                                       row_dim=64)


def test_the_servers_a_task_starts_get_the_limit_in_their_environment(monkeypatch):
    seen = {}

    def spawn(uri, secret, rank=None, env=None, **kwargs):
        seen.update(env)
        return object()

    monkeypatch.setattr('sparkps.runtime.server_node.spawn_server', spawn)
    barrier_task._start_server({'scheduler_uri': 'tcp://127.0.0.1:1', 'secret': 's', 'max_message_bytes': 123456789},
                               0, '127.0.0.1')
    assert seen['SPARKPS_MAX_MESSAGE_BYTES'] == '123456789'
