"""Where a training row sits in the input, so an error about it names its position in the whole input.

A training task reads one partition of the stage's RDD.  Without a shuffle that is input partition
``rank`` in its own order; when the input had to be re-partitioned to one partition per worker, the
driver tags every element with ``(partition, index)`` first (no Spark job: a lazy mapPartitionsWithIndex),
so the task still knows where each row came from.  A task's error names ``row i of input partition p``;
only when the fit fails does the driver turn that into ``row N`` counted over the whole input (one Spark
job counting the elements of the partitions before ``p``), so a fit that succeeds pays nothing.

    places = RowPlaces(partition=1)              # in the task (or RowPlaces(tagged=True))
    for row in places.read(rows): ...            # places.describe(slot) -> 'row 3 of input partition 1'
    message = in_input(message, input_rdd)       # on the driver -> 'row 10'

Nothing here imports pyspark.
"""
import re
from bisect import bisect_right

_PLACE = re.compile(r"\b(row|element) (\d+) of input partition (\d+)")


def tag_rows(partition, rows):
    """``((partition, index), row)`` for each element of one input partition (``mapPartitionsWithIndex``)."""
    for index, row in enumerate(rows):
        yield (partition, index), row


class RowPlaces:
    """The input positions of the rows one task reads, and of the slots of the batch being filled.

    ``partition``: the input partition the task reads in order (None: unknown, rows are named by the
    count the task has read).  ``tagged``: rows arrive as ``((partition, index), row)`` (see tag_rows).
    Never blocks.
    """

    def __init__(self, partition=None, tagged=False):
        self.partition, self.tagged = partition, bool(tagged)
        self.current = None              # (partition, index) of the element being read
        self._starts, self._elements = [], []

    def read(self, rows):
        """The rows without their tags, keeping each one's place in ``current`` while it is handled."""
        if self.tagged:
            for tag, row in rows:
                self.current = tag
                yield row
            return
        for index, row in enumerate(rows):
            self.current = (self.partition, index)
            yield row

    def new_batch(self):
        """Forget the slots of the batch just handed out."""
        self._starts, self._elements = [], []

    def placed(self, slot, block_row=None):
        """The current element fills batch slots from ``slot`` on: one slot for a row, or, for a block
        element, its rows from ``block_row`` on."""
        self._starts.append(slot)
        self._elements.append((self.current, block_row))

    def describe(self, slot=None, block_row=None):
        """'row i of input partition p' for the row in batch ``slot`` (None: the current element, or its
        row ``block_row`` when it is a block): rows of a block read 'row k of the block, element i of input
        partition p'."""
        if slot is None:
            return _named(self.current, block_row)
        at = bisect_right(self._starts, slot) - 1
        element, first = self._elements[at]
        return _named(element, None if first is None else first + slot - self._starts[at])


def _named(element, block_offset):
    partition, index = element if element is not None else (None, None)
    if index is None:
        return "row ?"
    if partition is None:
        where = "row %d" % index
        return where if block_offset is None else "row %d of the block, element %d" % (block_offset, index)
    if block_offset is None:
        return "row %d of input partition %d" % (index, partition)
    return "row %d of the block, element %d of input partition %d" % (block_offset, index, partition)


def in_input(message, rdd):
    """``message`` with its first 'row|element i of input partition p' rewritten as 'row|element N', N
    counted from 0 over the whole of ``rdd`` (the fit's input, before any re-partitioning).  Blocks on one
    Spark job over partitions 0..p-1 (only their elements are counted); the message is returned unchanged
    when there is nothing to rewrite or the count fails."""
    found = _PLACE.search(message or "")
    if not found:
        return message
    kind, index, partition = found.group(1), int(found.group(2)), int(found.group(3))
    try:
        offset = sum(partition_sizes(rdd, partition))
    except Exception:   # the input's lineage failed again: keep the partition-relative place
        return message
    return message[:found.start()] + "%s %d" % (kind, offset + index) + message[found.end():]


def partition_sizes(rdd, before):
    """The element counts of ``rdd``'s partitions ``0 .. before-1`` (one Spark job; none for 0)."""
    if before <= 0:
        return []
    return rdd.context.runJob(rdd, lambda rows: [sum(1 for _ in rows)], partitions=list(range(before)))
