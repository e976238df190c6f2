"""The one home of a sparse row: its id (ids.py: validation where ids enter, the 64-bit mix, the shard, the table
seed), its initial value (init.py: ``RowInitializer``), row-sparse values and their sums (values.py: ``RowSparse``,
``sum_rows``), a table's configuration (config.py: ``TableConfig``) and the one table that holds rows
(table.py: ``SparseTable``, over store.py's ``RowStore``, index.py's id -> slot index with its compiled probes in
kernels.py, and admission.py's rules). The local kvstore, the servers and prediction all stand on these modules."""
