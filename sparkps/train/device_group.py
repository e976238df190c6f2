"""Data parallelism over several devices in one process: ``FeedForward(ctx=[cpu(0), cpu(1)])``.

MXNet's ``FeedForward`` with a list of contexts binds one executor per device, cuts every batch into one
slice per device, sums the slices' gradients (its local kvstore aggregates them) and applies one update to
weights every device then shares. ``DeviceGroup`` does the same behind the executor interface FeedForward
uses (``arg_dict``, ``grad_dict``, ``aux_dict``, ``outputs``, ``forward``, ``backward``), so the training
loop and the optimizer see one executor:

    group = DeviceGroup(symbol, [cpu(0), cpu(1)], grad_req, {'data': (128, 64), 'softmax_label': (128,)})
    group.forward(is_train=True, data=X, softmax_label=y)   # each device gets 64 rows
    group.backward()                                        # group.grad_dict = the sum over devices

The weights live in the first device's executor; the others get a copy before each forward. Auxiliary
states (BatchNorm's moving statistics) are averaged over the devices after a training forward, as MXNet's
executor manager does when it copies them out. Nothing here blocks or waits.
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.io.validate import copy_into, host


def slice_sizes(batch_size, num_devices):
    """Rows per device: as even as possible, the first ones one larger (every device gets a row)."""
    if batch_size < num_devices:
        raise ConfigError(f"a batch of {batch_size} rows cannot be split over {num_devices} devices")
    base, extra = divmod(batch_size, num_devices)
    return [base + (1 if i < extra else 0) for i in range(num_devices)]


class DeviceGroup:
    """One executor per context over slices of each batch; looks like a single executor."""

    def __init__(self, symbol, contexts, grad_req, shapes, batch_names):
        self.contexts = list(contexts)
        self.batch_names = set(batch_names)
        batch = next(shapes[n][0] for n in shapes if n in self.batch_names)
        self.sizes = slice_sizes(batch, len(self.contexts))
        self.executors = []
        for ctx, size in zip(self.contexts, self.sizes):
            sliced = {n: ((size,) + tuple(s[1:]) if n in self.batch_names else tuple(s)) for n, s in shapes.items()}
            self.executors.append(symbol.simple_bind(ctx, grad_req=grad_req, **sliced))
        first = self.executors[0]
        self.arg_dict, self.grad_dict, self.aux_dict = first.arg_dict, first.grad_dict, first.aux_dict
        self.arg_group, self.grad_group = first.arg_group, first.grad_group  # the first device's flat layout
        self.outputs = []

    def seed(self, seed):
        """Reseed every device's random generator (Dropout masks), each from its own stream of ``seed``."""
        for index, exe in enumerate(self.executors):
            exe.seed(int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0]))

    def _share_params(self):
        first = self.executors[0]
        for exe in self.executors[1:]:
            for name, value in first.arg_dict.items():
                if name not in self.batch_names:
                    copy_into(exe.arg_dict[name], value)
            for name, value in first.aux_dict.items():
                copy_into(exe.aux_dict[name], value)

    def forward(self, is_train=False, **inputs):
        """Run every device on its slice of ``inputs`` (arrays whose first axis is the batch)."""
        self._share_params()
        start = 0
        for exe, size in zip(self.executors, self.sizes):
            exe.forward(is_train=is_train, **{n: v[start:start + size] for n, v in inputs.items()})
            start += size
        self.outputs = [np.concatenate([host(exe.outputs[i]) for exe in self.executors])
                        for i in range(len(self.executors[0].outputs))]
        if is_train and self.aux_dict:
            self._average_aux()

    def _average_aux(self):
        for name, target in self.aux_dict.items():
            mean = sum(host(exe.aux_dict[name]).astype(np.float64) for exe in self.executors) / len(self.executors)
            copy_into(target, mean.astype(host(target).dtype))

    def backward(self, out_grads=None):
        """Backward on every device; the first device's gradients become the sum over devices."""
        for exe in self.executors:
            if out_grads is None:
                exe.backward()
            else:
                exe.backward(out_grads)
        first = self.executors[0]
        for name, grad in first.grad_dict.items():
            if grad is None:
                continue
            total = host(grad).copy()
            for exe in self.executors[1:]:
                total += host(exe.grad_dict[name])
            copy_into(grad, total)
