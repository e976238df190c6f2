"""The sizing model's arithmetic against cases worked out by hand."""
import pytest

from sparkps import plan
from sparkps.plan import constants as C
from sparkps.plan import model, zipf


def test_row_payload_is_value_state_and_columns():
    assert model.row_payload_bytes(16, 'adagrad') == 4 * 16 * 2 + 21 == 149
    assert model.row_payload_bytes(8, 'sgd') == 32 + 21
    assert model.row_payload_bytes(4, 'adam') == 4 * 4 * 3 + 21


@pytest.mark.parametrize("rows, arrival, capacity", [
    (1, None, 1024), (1024, None, 1024), (1025, None, 2048),
    (8193, None, 9216),            # steps of one chunk until capacity // 8 exceeds it
    (9217, None, 11264),           # 9216 + 9216 // 8 = 10368, rounded up to 11 chunks
    (100_000, 65536, 100_352),     # 65536 at once, then need 100,000 > 65536 + 8192: exactly need, in chunks
])
def test_store_capacity_follows_the_growth_rule(rows, arrival, capacity):
    assert model.store_capacity(rows, arrival) == capacity


def test_index_buckets_double_past_seventy_percent():
    assert model.index_buckets(0) == 2048
    assert model.index_buckets(1433) == 2048          # 0.7 * 2048 = 1433.6
    assert model.index_buckets(1434) == 4096


def test_table_bytes_adds_store_index_and_sketch():
    plain = model.table_bytes(1000, 16, 'adagrad')
    assert plain == {'rows': 1024 * 149, 'index': 1000 * 12, 'sketch': 0, 'total': 1024 * 149 + 1000 * 12}
    assert model.table_bytes(1000, 16, 'adagrad', min_count=2)['total'] == plain['total'] + 4 * 4 * 2**18


def test_dense_bytes():
    # weights + states (+ the round's sum under sync) + the update's two temporaries
    assert model.dense_bytes(100, 'adam', sync=True) == 4 * 100 * (1 + 2 + 1 + 2)
    assert model.dense_bytes(100, 'sgd', sync=False) == 4 * 100 * (1 + 2)


def test_the_index_is_sorted_below_the_switch_then_a_hash_of_twice_the_ids():
    assert model.index_bytes(1000) == 12 * 1000
    switch = C.INDEX_SWITCH_AT
    assert model.index_bytes(switch) == (1 << 20) * 12                # HashRowIndex(2 * 262144): 2**20 buckets
    assert model.index_bytes(int(0.7 * 2**20)) == (1 << 20) * 12
    assert model.index_bytes(int(0.7 * 2**20) + 1) == (1 << 21) * 12
    assert model.fixed_server_bytes(0) == C.SERVER_PROCESS_BYTES
    assert model.fixed_server_bytes(switch - 1) == C.SERVER_PROCESS_BYTES + C.FIRST_TABLE_BYTES
    assert model.fixed_server_bytes(switch) == C.SERVER_PROCESS_BYTES + C.FIRST_TABLE_BYTES + C.INDEX_KERNELS_BYTES


def test_a_fit_that_writes_its_tables_counts_the_writer_and_a_ctr_model_its_linear_table():
    switch = C.INDEX_SWITCH_AT
    assert model.fixed_server_bytes(switch, write_tables=True) - model.fixed_server_bytes(switch) \
        == C.SHARD_WRITE_BYTES
    plain = plan.estimate(2, 2, 1e6, dim=16, optimizer='adam')
    ctr = plan.estimate(2, 2, 1e6, dim=16, optimizer='adam', linear=True, write_tables=True)
    linear = model.table_bytes(5e5, 1, 'adam')['total']
    assert ctr.server_table['total'] == plain.server_table['total'] + linear
    assert ctr.server_memory == plain.server_memory + linear + C.SHARD_WRITE_BYTES


def test_a_checkpoint_holds_the_dense_weights_and_their_optimizer_state():
    w = model.Workload(workers=2, servers=10, rows=1e3, dense=1000, optimizer='adagrad', disk_bandwidth=1)
    without = model.checkpoint(model.Workload(workers=2, servers=10, rows=1e3, optimizer='adagrad'), 100)
    assert model.checkpoint(w, 100)['server_bytes'] - without['server_bytes'] == 4 * 100 * (1 + 1)


def test_row_arrival_is_an_option_of_the_plan():
    from sparkps.plan.figures import estimate
    few = estimate(2, 1, 100_000, dim=8)
    bulk = estimate(2, 1, 100_000, dim=8, row_arrival=100_000)
    assert few.server_table['rows'] != bulk.server_table['rows']
    assert few.server_memory == few.server_table['total'] + few.server_dense + few.server_fixed


def test_codecs_and_messages():
    assert (model.codec_bytes(100, 'none'), model.codec_bytes(100, 'fp16'), model.codec_bytes(100, '2bit')) \
        == (400, 200, 28)
    # header 226 + dense 400 + 10 pushed ids (8 + 64 each) + 10 pulled ids with their counts (8 + 4 each)
    assert model.step_request_bytes(100, 10, 16) == 226 + 400 + 720 + 120
    assert model.step_reply_bytes(100, 10, 16) == 158 + 400 + 640


def test_traffic_of_a_worker_and_a_server():
    w = model.Workload(workers=4, servers=2, rows=1e6, dim=16, dense=200)
    moved = model.traffic(w, unique=20)
    assert moved == {'worker_out': 2 * 1466, 'worker_in': 2 * 1198, 'server_in': 4 * 2932 / 2,
                     'server_out': 4 * 2396 / 2, 'requests_per_worker': 2}


def test_step_times_and_the_sync_step():
    w = model.Workload(workers=4, servers=2, rows=1e6, dim=16, dense=200, batch=100, compute_per_sample=1e-3,
                       bandwidth=8000, server_row_seconds=0.5, latency=0.25)
    moved = model.traffic(w, unique=20)
    times = model.step_times(w, 20, moved)
    assert times == pytest.approx({'compute': 0.1, 'worker link': 2.932, 'server link': 5.864, 'server cpu': 20.0})
    assert model.step_time(times, w.latency) == pytest.approx(0.1 + 20.0 + 0.25)


def test_scheduler_and_checkpoint():
    w = model.Workload(workers=100, servers=10, rows=1e9, disk_bandwidth=1000)
    assert model.scheduler_load(w) == {'heartbeats_per_s': 110, 'reports_per_s': 110, 'barriers_per_job': 4,
                                       'barrier_messages_per_job': 800, 'barriers_per_step': 0}
    point = model.checkpoint(w, 1000)
    assert point == {'server_bytes': 148_000, 'total_bytes': 1_480_000, 'seconds': 148}


def test_distinct_ids_by_hand():
    assert zipf.expected_distinct(2, 2, 1.0) == pytest.approx(13 / 9)   # p = 2/3, 1/3: 8/9 + 5/9
    assert zipf.expected_distinct(1, 10**9, 1.1) == pytest.approx(1.0)
    assert zipf.expected_distinct(0, 10, 1.1) == 0


def test_the_tail_approximation_matches_the_exact_sum(monkeypatch):
    approx = zipf.expected_distinct(4096 * 26, 10**7, 1.1), zipf.harmonic(10**7, 1.1)
    monkeypatch.setattr(zipf, 'EXACT_RANKS', 10**7)
    exact = zipf.expected_distinct(4096 * 26, 10**7, 1.1), zipf.harmonic(10**7, 1.1)
    assert approx == pytest.approx(exact, rel=1e-4)


def test_distinct_ids_match_sampled_batches():
    import numpy as np
    rng = np.random.default_rng(3)
    cdf = np.cumsum(zipf.probabilities(5000, 1.2))
    counts = [np.unique(zipf.sample_ranks(rng, 5000, 1.2, 2000, cdf)).size for _ in range(200)]
    assert np.mean(counts) == pytest.approx(zipf.expected_distinct(2000, 5000, 1.2), rel=0.01)


def test_estimate_at_100_workers_10_servers_1b_rows():
    e = plan.estimate(workers=100, servers=10, rows=1e9, dim=16, batch=4096, fields=26, zipf=1.1)
    assert e.rows_per_server == 1e8
    assert e.server_table['index'] == 2**28 * 12        # 1e8 ids need 2^28 buckets at 70 % load
    assert e.traffic['requests_per_worker'] == 10
    assert e.bottleneck == max(e.times, key=e.times.get)
    assert 'bottleneck' in e.table() and e.as_dict()['workload']['workers'] == 100


def test_memory_over_the_bound_is_the_bottleneck():
    e = plan.estimate(10, 1, 1e8, server_memory=2**30)
    assert e.bottleneck == 'server memory' and 'add servers' in e.advice


@pytest.mark.parametrize("options, field", [({'workers': 0}, 'workers'), ({'optimizer': 'lbfgs'}, 'optimizer'),
                                            ({'codec': 'zip'}, 'codec'), ({'zipf': 0}, 'zipf'),
                                            ({'dense': -1}, 'dense'), ({'id_space': 0}, 'id_space')])
def test_bad_values_name_the_field(options, field):
    kw = dict({'workers': 2, 'servers': 1, 'rows': 1e6}, **options)
    with pytest.raises(ValueError, match=field):
        plan.estimate(**kw)


def test_servers_to_match_compute_scales_the_slowest_server_time():
    e = plan.estimate(10, 2, 1e6, batch=100, fields=10, compute_per_sample=1e-3, server_row_seconds=1e-3)
    # server cpu = 10 workers x distinct / 2 servers x 1 ms; compute = 100 ms: servers >= 10 x distinct x 1 ms / 100 ms
    assert e.servers_to_match_compute == -(-round(10 * e.unique_ids * 1e-3 * 1e6) // round(0.1 * 1e6))
