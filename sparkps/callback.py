"""Training callbacks with MXNet's names: Speedometer, do_checkpoint, BatchEndParam."""
import logging
import time
from collections import namedtuple

BatchEndParam = namedtuple('BatchEndParam', ['epoch', 'nbatch', 'eval_metric', 'locals'])
BatchEndParam.__doc__ = "What a batch-end callback receives: epoch, batch number, the metric, fit's locals."


class Speedometer:
    """Batch-end callback logging samples/s (and the metric) every ``frequent`` batches.

        model.fit(X, y, batch_end_callback=Speedometer(batch_size=128, frequent=50))
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True, logger=None):
        self.batch_size, self.frequent, self.auto_reset = batch_size, frequent, auto_reset
        self.logger = logger or logging.getLogger('sparkps')
        self._last_count = 0
        self._tic = None

    def __call__(self, param):
        count = param.nbatch
        if self._tic is None or count < self._last_count:
            self._tic, self._last_count = time.time(), count
            return
        if count % self.frequent != 0 or count == self._last_count:
            return
        elapsed = max(time.time() - self._tic, 1e-9)
        speed = (count - self._last_count) * self.batch_size / elapsed
        message = f'Epoch[{param.epoch}] Batch [{count}]\tSpeed: {speed:.2f} samples/sec'
        if param.eval_metric is not None:
            pairs = param.eval_metric.get_name_value()
            message += ''.join(f'\tTrain-{name}={value:f}' for name, value in pairs)
            if self.auto_reset:
                param.eval_metric.reset()
        self.logger.info(message)
        self._tic, self._last_count = time.time(), count


def do_checkpoint(prefix, period=1):
    """Epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params`` every ``period`` epochs."""
    period = max(1, int(period))

    def _callback(epoch, symbol, arg_params, aux_params):
        if (epoch + 1) % period == 0:
            from sparkps.model_files import save_checkpoint
            save_checkpoint(prefix, epoch + 1, symbol, arg_params, aux_params)
    return _callback


def log_train_metric(period, auto_reset=False, logger=None):
    """Batch-end callback logging the training metric every ``period`` batches."""
    logger = logger or logging.getLogger('sparkps')

    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logger.info('Iter[%d] Batch[%d] Train-%s=%f', param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset()
    return _callback
