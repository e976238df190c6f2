"""Data input: batch iterators (MXNet's NDArrayIter) and LibSVM / CSV readers that can read one shard."""
from sparkps.train.io.iterators import LAST_BATCH_MODES, DataBatch, DataDesc, DataIter, NDArrayIter
from sparkps.train.io.readers import CSRMatrix, CSVIter, LibSVMIter, read_csv, read_libsvm

__all__ = [
           'LAST_BATCH_MODES',
           'CSRMatrix',
           'CSVIter',
           'DataBatch',
           'DataDesc',
           'DataIter',
           'LibSVMIter',
           'NDArrayIter',
           'read_csv',
           'read_libsvm',
]
