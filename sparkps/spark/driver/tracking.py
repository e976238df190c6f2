"""MLflow logging of a fit, when MLflow is installed and a run is active (an extra: sparkps never needs it).

    with mlflow.start_run():
        model = trainer.fit(df)        # params and per-epoch metrics land in the run

Logged after training, from the history the workers returned (metrics at step = epoch, from 1).  Never
raises: a tracking failure is logged as a warning and the fit's result stands.
"""
import logging
import sys

LOG = logging.getLogger("sparkps.spark")


def log_fit(params, history):
    """Log ``params`` (a flat dict) and each epoch's metrics of ``history`` to the active MLflow run."""
    mlflow = sys.modules.get("mlflow")
    if mlflow is None:
        try:
            import mlflow
        except ImportError:
            return False
    try:
        if mlflow.active_run() is None:
            return False
        mlflow.log_params({key: str(value)[:250] for key, value in params.items()})
        for entry in history:
            metrics = {name: float(value) for name, value in entry.items() if name != "epoch"}
            mlflow.log_metrics(metrics, step=int(entry["epoch"]) + 1)
    except Exception as exc:   # a tracking server being down must not fail a finished fit
        LOG.warning("MLflow logging failed: %s", exc)
        return False
    return True
