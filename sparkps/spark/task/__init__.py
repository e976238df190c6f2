"""What runs inside a task of the one barrier stage: the task itself (barrier_task.py: a worker living the life of
sparkps.worker.lifecycle, and the server it starts), the partition's batches and its local copy (local_copy.py,
partition_iter.py), CTR Arrow columns (ctr_columns.py), row weights, per-epoch validation and early stopping."""
