"""The learning-rate decay of an Angel network's ``train`` section (Angel's ``StepSizeScheduler`` classes).

    decay = TrainDecay.parse(config["train"], "deepfm.json")     # checked when the network loads
    decay.scheduler(num_rows=30000, batch_size=256)              # an LRScheduler, or None (constant rate)

Keys (Angel's JSON names; docs/regularisation.md gives the formulas):

- ``decayclass``: ``ConstantLearningRate``, ``StandardDecay`` or ``WarmRestarts`` (any case). Without it a
  network decays only when it names a rate (``decayalpha``/``decaybeta``), with StandardDecay, Angel's default
  class; without either the rate is constant (Angel would apply StandardDecay at its default alpha).
- ``decayalpha``: StandardDecay's and WarmRestarts' alpha (Angel's ``ml.opt.decay.alpha``, default 0.001).
  StandardDecay takes ``decaybeta`` when ``decayalpha`` is absent, as the networks under jobs/networks/ give it.
- ``decayintervals``: WarmRestarts' first cycle in decay steps (Angel's ``ml.opt.decay.intervals``, 100).
- ``decayonbatch``: decay once per batch instead of once per epoch (Angel's ``ml.opt.decay.on.batch``, false).

A per-epoch decay needs the updates per epoch, ``ceil(num_rows / batch_size)``: the caller gives the row count.
Without it ``scheduler`` raises ConfigError when asked to (``require_rows``) and otherwise logs once that the
rate stays constant (the Spark estimator's path, which does not know its rows when it reads the network).
Pure decisions: nothing here blocks.
"""
import logging
import math
import numbers

from sparkps.errors import ConfigError
from sparkps.lr_scheduler import AngelStandardDecay, AngelWarmRestarts

LOG = logging.getLogger(__name__)
CLASSES = {"constantlearningrate": "ConstantLearningRate", "standarddecay": "StandardDecay",
           "warmrestarts": "WarmRestarts"}
DEFAULT_ALPHA = 0.001        # Angel's DEFAULT_ML_OPT_DECAY_ALPHA
DEFAULT_INTERVALS = 100      # Angel's DEFAULT_ML_OPT_DECAY_INTERVALS


class TrainDecay:
    """One network's decay: ``kind`` (an Angel class name, None for a constant rate) and its parameters."""

    def __init__(self, source, kind=None, alpha=DEFAULT_ALPHA, intervals=DEFAULT_INTERVALS, on_batch=False):
        self.source, self.kind, self.alpha = source, kind, alpha
        self.intervals, self.on_batch = intervals, on_batch
        self._fallback_logged = False

    @classmethod
    def parse(cls, train, source):
        """The decay ``train`` (an Angel train section) sets; one ConfigError naming ``source`` and the key at
        fault for an unknown class or a bad value."""
        named = train.get("decayclass")
        rate = train.get("decayalpha", train.get("decaybeta"))
        if named is None:
            kind = "StandardDecay" if rate is not None else None
        else:
            kind = CLASSES.get(str(named).lower())
            if kind is None:
                raise ConfigError("%s: train.decayclass %r is not supported; supported: %s"
                                  % (source, named, ", ".join(CLASSES.values())))
        if kind in (None, "ConstantLearningRate"):
            return cls(source)
        key = "decayalpha" if "decayalpha" in train or kind == "WarmRestarts" else "decaybeta"
        alpha = train.get(key, DEFAULT_ALPHA)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha >= 0:
            raise ConfigError("%s: train.%s must be a number >= 0, got %r" % (source, key, alpha))
        intervals = train.get("decayintervals", DEFAULT_INTERVALS)
        if isinstance(intervals, bool) or not isinstance(intervals, int) or intervals < 1:
            raise ConfigError("%s: train.decayintervals must be a positive integer, got %r" % (source, intervals))
        on_batch = train.get("decayonbatch", False)
        if not isinstance(on_batch, bool):
            raise ConfigError("%s: train.decayonbatch must be true or false, got %r" % (source, on_batch))
        return cls(source, kind, float(alpha), intervals, on_batch)

    def scheduler(self, num_rows, batch_size, require_rows=False):
        """The LRScheduler of this decay (None for a constant rate). A per-epoch decay without ``num_rows``:
        ConfigError when ``require_rows``, else None and one log line per network."""
        if self.kind is None or self.kind == "ConstantLearningRate":
            return None
        per_epoch = 1
        if not self.on_batch:
            if not num_rows:
                return self._no_rows(require_rows)
            per_epoch = max(math.ceil(num_rows / batch_size), 1)
        if self.kind == "StandardDecay":
            return AngelStandardDecay(per_epoch, self.alpha, on_batch=self.on_batch)
        return AngelWarmRestarts(per_epoch, self.alpha, self.intervals, on_batch=self.on_batch)

    def _no_rows(self, require_rows):
        what = ("%s: train.decayclass %s decays once per epoch and needs the number of training rows (num_rows) "
                "to count the updates per epoch" % (self.source, self.kind))
        if require_rows:
            raise ConfigError(what + "; none was given (pass num_rows, or set train.decayonbatch true)")
        if not self._fallback_logged:
            self._fallback_logged = True
            LOG.warning("%s; none was given, so the learning rate stays constant", what)
        return None
