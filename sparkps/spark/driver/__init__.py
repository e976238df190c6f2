"""What runs on the Spark driver: ``SparkTrainer`` (trainer.py), the barrier stage it starts and watches
(stage.py), the checks made before it starts (checks.py, schema.py, input_rows.py), progress and the console
bar (progress.py, console.py), restarts after a failure (restarts.py) and MLflow logging (tracking.py)."""
