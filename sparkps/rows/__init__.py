"""The one home of a sparse row: its id (ids.py: validation, the 64-bit mix, the shard, the table seed), its
initial value (init.py), row-sparse values (values.py: ``RowSparse``) and a table's configuration
(config.py). The local kvstore, the servers and prediction all stand on these modules."""
