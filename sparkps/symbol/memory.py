"""Static memory plan: one buffer per intermediate entry, reused once its last reader has run.

The plan walks the execution order (forward nodes, then backward nodes) once per bind. An entry's
buffer goes back to a pool keyed by (shape, dtype) after the step of its last reader (each entry is
allocated in its own dtype, from the executor's type plan); entries read
by the backward pass therefore live until then. Bound arrays (arguments, gradients written in place,
outputs the user reads) are never pooled.
"""


class MemoryPlan:
    """Assign arrays to entries. ``bound`` maps entries to arrays fixed from outside."""

    def __init__(self, sequence, shapes, types, xp, bound, pinned):
        self.xp = xp
        self.types = types                   # entry -> dtype
        self.arrays = dict(bound)
        self.allocated = []                  # every array this plan created (one per storage)
        self._pool = {}
        self._assign(sequence, shapes, set(pinned) | set(bound))

    def _assign(self, sequence, shapes, keep):
        last_read = {}
        for step, node in enumerate(sequence):
            for entry in node.inputs:
                last_read[entry] = step
        for step, node in enumerate(sequence):
            produced = []
            for index in range(node.num_outputs):
                entry = (node, index)
                if entry not in self.arrays:
                    self.arrays[entry] = self._take(shapes[entry], self.types[entry])
                    produced.append(entry)
            done = {e for e in node.inputs if last_read.get(e) == step}
            done.update(e for e in produced if e not in last_read)
            for entry in done:
                if entry not in keep and entry in self.arrays:
                    self._give(self.arrays[entry])

    def _take(self, shape, dtype):
        free = self._pool.get((shape, dtype))
        if free:
            return free.pop()
        array = self.xp.zeros(shape, dtype=dtype)
        self.allocated.append(array)
        return array

    def _give(self, array):
        self._pool.setdefault((array.shape, array.dtype), []).append(array)

    @property
    def num_buffers(self):
        """How many intermediate arrays the plan allocated."""
        return len(self.allocated)
