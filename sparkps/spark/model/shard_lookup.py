"""The co-partitioned lookup of a model's table rows: each id is looked up in the one shard that holds it.

A model's shard files split every table by ``rows.ids.shard_of`` (the servers' split, decision 13), so the pairs
(input row, id) that a scoring plan needs are hash-partitioned by their id's shard (a shuffle of ids only, 16 bytes a
pair) and each task looks its pairs up in that shard alone: the table's vectors are never shuffled, whatever the
table's size (a sort-merge join shuffles the whole table at every ``transform``). A Python worker reads a shard
once into a sorted index (``ShardRows``) and keeps the last one per table (``ShardCache``: its share of a table,
never the whole table) for the tasks it runs after; the pairs stream through one Arrow batch at a time.

Used by ``join_scoring`` for the tables above the broadcast limit whose folder the executors' Python reads with
plain file I/O; a folder on a Hadoop store is joined by Spark SQL instead. Blocks on reading shard files.
"""
import threading

import numpy as np

from sparkps.errors import DataError

SHARD = "__sparkps_shard"


class ShardRows:
    """One shard of a table read whole into a sorted index: ``ids`` (int64 bits, ascending) and their ``vectors``
    (float32, (rows, dim)). ``read`` checks that every id belongs to the shard (``shard_of``): a folder split
    otherwise is one DataError naming the table and the file, never a silent miss."""

    def __init__(self, ids, vectors):
        self.ids, self.vectors = ids, vectors

    @property
    def nbytes(self):
        return int(self.ids.nbytes + self.vectors.nbytes)

    @classmethod
    def read(cls, path, table, dim, shard, num_shards):
        """The rows of the shard file ``path`` (shard ``shard`` of ``num_shards`` of ``table``). Blocks on
        reading it."""
        import pyarrow.parquet as pq

        from sparkps.rows.ids import shard_of
        from sparkps.rows.shards import _shard_batches
        ids, vectors = [], []
        with open(path, "rb") as f:
            for batch_ids, batch_vectors, _ in _shard_batches(pq.ParquetFile(f), int(dim), 1 << 18):
                ids.append(batch_ids)
                vectors.append(batch_vectors)
        ids = np.concatenate(ids) if ids else np.empty(0, np.uint64)
        vectors = np.concatenate(vectors) if vectors else np.empty((0, int(dim)), np.float32)
        if ids.size and (shard_of(ids, num_shards) != shard).any():
            raise DataError("table %r: the shard file %s holds ids of other shards (a table's shards are split by "
                            "rows.ids.shard_of over %d shards); it cannot be looked up by shard"
                            % (table, path, num_shards))
        order = np.argsort(ids.view(np.int64), kind="stable")
        return cls(ids.view(np.int64)[order], np.ascontiguousarray(vectors[order]))

    def lookup(self, ids):
        """(held, vectors of the held ids): a bool mask over int64 ``ids`` and the rows of those held, in order."""
        if not self.ids.size:
            return np.zeros(ids.size, bool), np.empty((0, self.vectors.shape[1]), np.float32)
        at = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        held = self.ids[at] == ids
        return held, self.vectors[at[held]]


class ShardCache:
    """The shards a Python worker read, at most one per table (the last asked for), keyed by the file and its
    sha256 (a rewritten shard is read again)."""

    def __init__(self):
        self._items = {}
        self._lock = threading.Lock()

    def get(self, table_key, file_key, read):
        """The ShardRows of ``file_key`` for ``table_key``, made with ``read()`` unless it is the one kept."""
        with self._lock:
            kept = self._items.get(table_key)
            if kept is not None and kept[0] == file_key:
                return kept[1]
            self._items.pop(table_key, None)        # the worker's earlier share goes before the next is read
        rows = read()
        with self._lock:
            self._items[table_key] = (file_key, rows)
        return rows


# one per Python worker process (Spark reuses its Python workers across tasks); only scoring uses it
WORKER_SHARDS = ShardCache()


def shard_numbers(ids, num_shards):
    """The shard (int32) of each of int64 ``ids``."""
    from sparkps.rows.ids import shard_of
    return shard_of(np.asarray(ids).view(np.uint64), num_shards).astype(np.int32)


def spark_int_hash(value, seed=42):
    """Spark's ``hash`` of an int column's ``value`` (Murmur3_x86_32.hashInt with Spark's seed 42): what
    ``repartition(n, column)`` partitions by (``pmod(hash, n)``)."""
    mask = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & mask
    k1 = rotl((value & mask) * 0xCC9E2D51 & mask, 15) * 0x1B873593 & mask
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & mask
    h1 ^= 4
    h1 = (h1 ^ (h1 >> 16)) * 0x85EBCA6B & mask
    h1 = (h1 ^ (h1 >> 13)) * 0xC2B2AE35 & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def partition_keys(num_shards):
    """One int key per shard such that ``repartition(num_shards, key)`` sends shard ``s``'s key to partition ``s``:
    each shard's pairs in a task of their own (a plain shard number may share a partition with another). A list,
    indexed by shard."""
    keys, value = [None] * int(num_shards), 0
    while None in keys:
        partition = spark_int_hash(value) % int(num_shards)
        if keys[partition] is None:
            keys[partition] = value
        value += 1
    return keys


def lookup_pairs(pairs, tables, columns):
    """``pairs`` (a DataFrame with an ``id`` column and the other columns to keep) plus one vector column per table of
    ``tables`` ([(column name, table name, dim, [shard file paths, by shard], [their sha256])], every table split into
    the same number of shards), null where that table holds no row of the id: looked up shard by shard in Python
    workers (module docstring). ``columns``: the names of ``pairs``' columns, kept in that order. Lazy."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, FloatType, IntegerType, StructField

    num_shards = len(tables[0][3])

    keys = np.array(partition_keys(num_shards), np.int32)

    def shard_of_ids(ids):       # the shard's partition key (partition_keys), mapped back by look_up_batch
        return pa.array(keys[shard_numbers(ids.to_numpy(zero_copy_only=False), num_shards)], pa.int32())

    keyed = pairs.withColumn(SHARD, F.arrow_udf(shard_of_ids, IntegerType())(F.col("id")))
    keyed = keyed.repartition(num_shards, SHARD).sortWithinPartitions(SHARD)
    out_schema = pairs.schema
    for column, _, _, _, _ in tables:
        out_schema = out_schema.add(StructField(column, ArrayType(FloatType())))

    def lookup(batches):
        # imported here: the module's worker cache is the Python worker's own, never pickled with the function
        from sparkps.spark.model.shard_lookup import look_up_batch
        for batch in batches:
            yield look_up_batch(batch, tables, columns, num_shards, out_schema.names)

    return keyed.mapInArrow(lookup, out_schema)


def look_up_batch(batch, tables, columns, num_shards, names):
    """The Arrow record batch of ``lookup_pairs``' output for one batch of its keyed pairs (``columns`` kept, then a
    vector column per table of ``tables``, named ``names``), the shards read through ``WORKER_SHARDS``."""
    import pyarrow as pa
    keys = batch.column(SHARD).to_numpy(zero_copy_only=False)
    shards = np.empty(keys.size, np.int64)
    for shard, key in enumerate(partition_keys(num_shards)):
        shards[keys == key] = shard
    ids = batch.column("id").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    arrays = [batch.column(name) for name in columns]
    for _, table, dim, paths, digests in tables:
        held = np.zeros(ids.size, bool)
        vectors = np.empty((ids.size, dim), np.float32)
        for shard in np.unique(shards):
            shard = int(shard)
            rows = WORKER_SHARDS.get(table, (paths[shard], digests[shard]), _reader(paths[shard], table, dim, shard,
                                                                                    num_shards))
            mine = np.flatnonzero(shards == shard)
            found, found_vectors = rows.lookup(ids[mine])
            held[mine[found]] = True
            vectors[mine[found]] = found_vectors
        offsets = np.zeros(ids.size + 1, np.int32)
        np.cumsum(held * dim, out=offsets[1:])
        arrays.append(pa.ListArray.from_arrays(pa.array(offsets, pa.int32()),
                                               pa.array(vectors[held].reshape(-1), pa.float32()),
                                               mask=pa.array(~held)))
    return pa.RecordBatch.from_arrays(arrays, names=list(names))


def _reader(path, table, dim, shard, num_shards):
    return lambda: ShardRows.read(path, table, dim, shard, num_shards)
