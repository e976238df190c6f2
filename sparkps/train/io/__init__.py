"""Data input: batch iterators (MXNet's NDArrayIter) and LibSVM / CSV readers that can read one shard."""
from sparkps.train.io.iterators import DataBatch, DataDesc, DataIter, LAST_BATCH_MODES, NDArrayIter
from sparkps.train.io.readers import CSRMatrix, CSVIter, LibSVMIter, read_csv, read_libsvm

__all__ = ['DataBatch', 'DataDesc', 'DataIter', 'LAST_BATCH_MODES', 'NDArrayIter', 'CSRMatrix', 'CSVIter',
           'LibSVMIter', 'read_csv', 'read_libsvm']
