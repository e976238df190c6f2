"""What runs on the Spark driver: ``SparkTrainer`` (trainer.py), its argument checks (arguments.py), the barrier
stage it starts and watches (stage.py), the checks made before it starts (checks.py, schema.py, input_rows.py),
what it makes of the tasks' results (results.py), progress and the console bar (progress.py, console.py),
restarts after a failure (restarts.py) and MLflow logging (tracking.py)."""
