"""What the driver, the tasks and the model share: the session kind (session.py), rows to float32 batches (batches.py),
where a row sits in the whole input (row_places.py), a network's sparse inputs (sparse_inputs.py) and typed inputs
(typed_inputs.py), and a DataFrame's features column read as arrays and float32 blocks (feature_blocks.py)."""
