"""A training task's result (a dict of plain values and .npz bytes) as rows of the DataFrame stage's output, and
back: the pickled dict cut into pieces of at most ``chunk_bytes``, so no row outgrows a Spark Connect message.

    batches = list(result_batches(rank, result, chunk_bytes=32 << 20))   # Arrow record batches, OUTPUT_SCHEMA
    results = join_results(rows)          # rows (rank, part, payload) of every task -> [result, ...] by rank

Pickle is Spark's own format for what tasks return (an RDD stage's results travel pickled too); nothing read from
the parameter server's network is ever unpickled. Nothing here blocks.
"""
import pickle

from sparkps.errors import ClusterError

CHUNK_BYTES = 32 << 20
OUTPUT_SCHEMA = "rank int, part int, parts int, payload binary"


def result_batches(rank, result, chunk_bytes=CHUNK_BYTES):
    """Arrow record batches (one row each, OUTPUT_SCHEMA) holding ``result`` pickled, cut every ``chunk_bytes``."""
    import pyarrow as pa
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    size = max(int(chunk_bytes or CHUNK_BYTES), 1)
    pieces = [data[i:i + size] for i in range(0, len(data), size)] or [b""]
    for part, piece in enumerate(pieces):
        yield pa.RecordBatch.from_arrays(
            [pa.array([rank], pa.int32()), pa.array([part], pa.int32()), pa.array([len(pieces)], pa.int32()),
             pa.array([piece], pa.binary())], names=["rank", "part", "parts", "payload"])


def join_results(rows):
    """Every task's result dict, by rank, from the collected rows ``(rank, part, parts, payload)``; ClusterError
    naming a worker whose pieces did not all arrive."""
    pieces = {}
    for row in rows:
        rank, part, parts, payload = int(row[0]), int(row[1]), int(row[2]), bytes(row[3])
        pieces.setdefault(rank, [parts, {}])[1][part] = payload
    results = []
    for rank in sorted(pieces):
        parts, found = pieces[rank]
        if sorted(found) != list(range(parts)):
            raise ClusterError("worker %d returned %d of the %d pieces of its result" % (rank, len(found), parts))
        results.append(pickle.loads(b"".join(found[p] for p in range(parts))))
    return results
