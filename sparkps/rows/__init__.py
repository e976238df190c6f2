"""The one home of a sparse row: its id (ids.py: validation where ids enter, the 64-bit mix, the shard, the table
seed), its initial value (init.py: ``RowInitializer``), row-sparse values and their sums (values.py: ``RowSparse``,
``sum_rows``) and a table's configuration (config.py: ``TableConfig``). The local kvstore, the servers and prediction
all stand on these modules."""
