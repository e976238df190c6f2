"""Data input: batch iterators (MXNet's NDArrayIter) and LibSVM / CSV readers that can read one shard."""
from sparkps.io.iterators import LAST_BATCH_MODES, DataBatch, DataDesc, DataIter, NDArrayIter
from sparkps.io.readers import CSRMatrix, CSVIter, LibSVMIter, read_csv, read_libsvm

__all__ = ['DataBatch', 'DataDesc', 'DataIter', 'LAST_BATCH_MODES', 'NDArrayIter', 'CSRMatrix', 'CSVIter',
           'LibSVMIter', 'read_csv', 'read_libsvm', 'load_params']


def load_params(path):
    """Read a params file, sparkps's ``.npz`` or MXNet's binary ``.params`` (chosen by content), into
    (arg_params, aux_params). See :func:`sparkps.model_files.load_params`."""
    from sparkps.model_files import load_params as read
    return read(path)
