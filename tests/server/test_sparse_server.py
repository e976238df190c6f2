"""Sparse tables behind the server's table seam: requests as they arrive, rounds, shards, checkpoints (no sockets)."""
import numpy as np
import pytest

from cluster import RecordingResponder
from sparkps.comm import manifest, protocol
from sparkps.comm.message import Message
from sparkps.errors import DataError, MalformedMessage
from sparkps.rows.ids import row_ids, shard_of
from sparkps.server.kvserver import KVServer

OPTIONS = {'dim': 2, 'optimizer': {'name': 'sgd', 'params': {'learning_rate': 1.0}}}


class _Postoffice:
    worker_ids = (5, 6)


_Responder = RecordingResponder


def init(server, sync=True, shard=(0, 1), options=OPTIONS):
    request = protocol.Init([], [], sync=sync, table='user', kind='sparse',
                            options={**options, 'shard': list(shard)})
    server.handle(Message('INIT', sender=5, meta=request.meta()), _Responder())


def pull(server, ids, round_=None, sender=5):
    responder = _Responder()
    meta = protocol.Pull([], round_, 'user', ids=np.asarray(ids, np.uint64)).meta()
    server.handle(Message('PULL', sender=sender, meta=meta, arrays=[np.asarray(ids, np.uint64)]), responder)
    return responder


def push(server, ids, grads, round_=None, sender=5):
    meta = protocol.Push([], round_, 'user', ids=np.asarray(ids, np.uint64)).meta()
    arrays = [np.asarray(ids, np.uint64), np.asarray(grads, np.float32).reshape(-1)]
    server.handle(Message('PUSH', sender=sender, meta=meta, arrays=arrays), _Responder())


def rows_of(responder):
    (_, arrays), = responder.replies
    return np.asarray(arrays[0]).reshape(-1, 2)


def test_a_sync_round_sums_both_workers_rows_and_answers_the_pull_after_it():
    server = KVServer(_Postoffice())
    init(server)
    start = rows_of(pull(server, [1, 2, 3], 0))
    push(server, [1, 2], np.ones((2, 2)), round_=1, sender=5)
    parked = pull(server, [1, 2, 3], 1, sender=5)
    assert parked.replies == []
    push(server, [2, 3], np.ones((2, 2)), round_=1, sender=6)
    np.testing.assert_allclose(rows_of(parked) - start, [[-1, -1], [-2, -2], [-1, -1]], rtol=1e-6)
    assert server.tables['user'].stats()['step'] == 1


def test_async_pushes_apply_on_arrival():
    server = KVServer(_Postoffice())
    init(server, sync=False)
    start = rows_of(pull(server, [7]))
    push(server, [7], np.ones((1, 2)), sender=5)
    push(server, [7], np.ones((1, 2)), sender=6)
    np.testing.assert_allclose(rows_of(pull(server, [7])) - start, [[-2, -2]], rtol=1e-6)


def test_rows_of_another_server_are_refused_naming_the_owner():
    server = KVServer(_Postoffice())
    init(server, shard=(0, 2))
    ids = row_ids(np.arange(10))
    theirs = int(ids[shard_of(ids, 2) == 1][0])
    with pytest.raises(DataError, match=rf"table 'user': field 'ids' holds {theirs}, which belongs to server 1 "
                                        r"of 2, not to this server \(0\)"):
        pull(server, [theirs], 0)


def test_malformed_row_requests_name_the_field():
    server = KVServer(_Postoffice())
    init(server)
    with pytest.raises(MalformedMessage, match="PULL of rows needs one uint64 ids array"):
        server.handle(Message('PULL', sender=5, meta={'keys': [], 'rows': True, 'table': 'user', 'round': 0},
                              arrays=[np.ones(2, np.float64)]), _Responder())
    with pytest.raises(DataError, match=r"table 'user': field 'grads' has shape \(3,\)"):
        push(server, [1], np.ones(3), round_=1)
    with pytest.raises(DataError, match="table 'user': INIT again with other options"):
        init(server, options={**OPTIONS, 'dim': 3})


def test_saved_by_two_servers_loaded_by_three(tmp_path):
    ids = np.arange(40, dtype=np.uint64)
    two = []
    for rank in range(2):
        server = KVServer(_Postoffice())
        init(server, sync=False, shard=(rank, 2))
        mine = ids[shard_of(ids, 2) == rank]
        pull(server, mine)
        push(server, mine, np.full((mine.size, 2), 0.5))
        two.append(server)
    replies = []
    for server in two:
        responder = _Responder()
        server.handle(Message('COMMAND', sender=5, meta=protocol.Command('save', path=str(tmp_path)).meta()),
                      responder)
        replies.append(responder.replies[0][0])
    written = manifest.write_manifest(str(tmp_path), [], None, [d for r in replies for d in r['tables']])
    assert written['tables']['user']['generations'][0]['rows'] == 40
    expected = {}
    for rank, server in enumerate(two):
        mine = ids[shard_of(ids, 2) == rank]
        expected.update(zip(mine.tolist(), rows_of(pull(server, mine)).tolist()))
    for rank in range(3):
        server = KVServer(_Postoffice())
        init(server, sync=False, shard=(rank, 3))
        server.handle(Message('COMMAND', sender=5, meta=protocol.Command('load', path=str(tmp_path)).meta()),
                      _Responder())
        mine = ids[shard_of(ids, 3) == rank]
        assert server.tables['user'].stats()['rows'] == mine.size
        assert dict(zip(mine.tolist(), rows_of(pull(server, mine)).tolist())) == {i: expected[i] for i in
                                                                                  mine.tolist()}


def test_a_second_save_into_the_same_directory_is_a_delta(tmp_path):
    server = KVServer(_Postoffice())
    init(server, sync=False)
    pull(server, np.arange(10))

    def save():
        responder = _Responder()
        server.handle(Message('COMMAND', sender=5, meta=protocol.Command('save', path=str(tmp_path)).meta()),
                      responder)
        return manifest.write_manifest(str(tmp_path), [], None, responder.replies[0][0]['tables'])

    save()
    push(server, [3], np.ones((1, 2)))
    gens = save()['tables']['user']['generations']
    assert [(g['delta'], g['rows']) for g in gens] == [(False, 10), (True, 1)]


def test_the_stats_command_answers_every_row_table():
    server = KVServer(_Postoffice())
    init(server, sync=False)
    pull(server, np.arange(6))
    responder = _Responder()
    server.handle(Message('COMMAND', sender=5, meta=protocol.Command('stats').meta()), responder)
    (meta, _), = responder.replies
    assert list(meta['tables']) == ['user']
    assert meta['tables']['user']['rows'] == 6 and meta['tables']['user']['admitted'] == 6


def counted_pull(server, ids, counts, round_=None, sender=5):
    responder = _Responder()
    request = protocol.Pull([], round_, 'user', ids=np.asarray(ids, np.uint64), counts=np.asarray(counts, np.uint32))
    server.handle(Message('PULL', sender=sender, meta=request.meta(), arrays=request.arrays()), responder)
    return responder


def occurrences(server):
    ids, counts = server.tables['user'].table.occurrences()
    return dict(zip(ids.tolist(), counts.tolist()))


def test_a_training_pulls_counts_arrive_and_add_up_over_pulls_steps_and_workers():
    server = KVServer(_Postoffice())
    init(server, sync=False)
    counted_pull(server, [1, 2], [3, 1], sender=5)                 # a first batch: id 1 three times, id 2 once
    counted_pull(server, [2, 7], [2, 5], sender=6)                 # the other worker's
    # a step: the push of the last batch and the pull of the next, its counts a frame beside the pulled ids
    step = protocol.PushPull([], tables=(protocol.TableStep('user', np.array([1, 2], np.uint64),
                                                            np.ones(4, np.float32), np.array([1, 9], np.uint64),
                                                            np.array([4, 1], np.uint32)),))
    responder = _Responder()
    server.handle(Message('PUSHPULL', sender=5, meta=step.meta(),
                          arrays=[np.zeros(0, np.float32)] + step.tables[0].arrays()), responder)
    (_, arrays), = responder.replies
    assert np.asarray(arrays[1]).reshape(-1, 2).shape == (2, 2)
    assert occurrences(server) == {1: 7.0, 2: 3.0, 7: 5.0, 9: 1.0}
    pull(server, [7])                                               # a pull without counts names each id once
    assert occurrences(server)[7] == 6.0


def test_a_peek_reads_the_rows_without_counting_or_storing_any():
    server = KVServer(_Postoffice())
    init(server, sync=False)
    held = rows_of(counted_pull(server, [1, 2], [2, 3]))
    responder = _Responder()
    request = protocol.Pull([], None, 'user', ids=np.array([2, 1, 50], np.uint64), peek=True)
    server.handle(Message('PULL', sender=5, meta=request.meta(), arrays=request.arrays()), responder)
    read = rows_of(responder)
    np.testing.assert_array_equal(read[:2], held[::-1])
    assert occurrences(server) == {1: 2.0, 2: 3.0}                   # nothing counted, id 50 not stored
    np.testing.assert_array_equal(read[2], rows_of(pull(server, [50]))[0])   # its initial row, as a pull makes it
