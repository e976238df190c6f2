"""A DataIter (MXNet's interface, as FeedForward.fit expects) over one Spark partition's batches."""
from sparkps.io import DataBatch, DataDesc, DataIter


class PartitionIter(DataIter):
    """Epochs of full-size batches from a ``PartitionBatches``: the first streams the partition, later ones
    replay its local copy.  ``reset()`` ends the current epoch (a half-read first epoch is read to the end
    first, so no row is lost).  An empty partition gives empty epochs.  With ``weight_name`` the batches' last
    feature column is each row's weight, given as a second input of that name, shape (batch, 1) (see
    sparkps.spark.task.row_weights).
    """

    def __init__(self, batches, input_shape, data_name="data", label_name="softmax_label", weight_name=None,
                 typed=None):
        super().__init__(batches.batch_size)
        self.typed = typed        # a TypedInputs: each row holds several named inputs (CTR networks)
        self.batches = batches
        self.input_shape = tuple(int(d) for d in input_shape)
        self.data_name, self.label_name, self.weight_name = data_name, label_name, weight_name
        self._epoch = None
        self.stopped = False          # set by early stopping: every later epoch is empty

    @property
    def provide_data(self):
        if self.typed is not None:
            return [DataDesc(name, shape) for name, shape in self.typed.shapes(self.batch_size).items()]
        described = [DataDesc(self.data_name, (self.batch_size,) + self.input_shape)]
        if self.weight_name:
            described.append(DataDesc(self.weight_name, (self.batch_size, 1)))
        return described

    @property
    def provide_label(self):
        return [DataDesc(self.label_name, (self.batch_size,))]

    def reset(self):
        if self._epoch is not None and self.batches.streaming:
            for _ in self._epoch:
                pass
        self._epoch = None

    def next(self):
        if self.stopped:
            raise StopIteration
        if self._epoch is None:
            self._epoch = self.batches.epoch()
        X, y, pad = next(self._epoch)
        if self.typed is not None:
            inputs = self.typed.split(X)
            data = [inputs[desc.name] for desc in self.provide_data]
        else:
            data = [X.reshape((self.batch_size,) + self.input_shape)] if not self.weight_name else \
                [X[:, :-1].reshape((self.batch_size,) + self.input_shape), X[:, -1:]]
        return DataBatch(data, [y], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)
