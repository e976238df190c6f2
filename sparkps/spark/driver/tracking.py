"""MLflow logging of a fit, when MLflow is installed and a run is active (an extra: sparkps never needs it).

    with mlflow.start_run():
        model = trainer.fit(df)        # params and per-epoch metrics land in the run

Logged after training, from the history the workers returned (metrics at step = epoch, from 1).  A param the run
holds already with another value (``mlflow.pyspark.ml.autolog`` logs the estimator's Params first, ``model`` among
them) is logged as ``sparkps.<name>`` beside it, since MLflow refuses to change a param.  Never raises: a tracking
failure is logged as a warning and the fit's result stands.
"""
import logging
import sys

LOG = logging.getLogger("sparkps.spark")
PREFIX = "sparkps."


def log_fit(params, history):
    """Log ``params`` (a flat dict) and each epoch's metrics of ``history`` to the active MLflow run.  Blocks on the
    tracking server's answers (one call for the params, one per epoch)."""
    mlflow = sys.modules.get("mlflow")
    if mlflow is None:
        try:
            import mlflow
        except ImportError:
            return False
    try:
        run = mlflow.active_run()
        if run is None:
            return False
        mlflow.log_params(params_to_log({key: str(value)[:250] for key, value in params.items()},
                                        logged_params(mlflow, run)))
        for entry in history:
            metrics = {name: float(value) for name, value in entry.items() if name != "epoch"}
            mlflow.log_metrics(metrics, step=int(entry["epoch"]) + 1)
    except Exception as exc:   # a tracking server being down must not fail a finished fit
        LOG.warning("MLflow logging failed: %s", exc)
        return False
    return True


def params_to_log(params, logged):
    """``params`` (str values) less those ``logged`` holds with the same value; one it holds with another value is
    renamed ``sparkps.<name>``."""
    return {(PREFIX + key if key in logged else key): value for key, value in params.items()
            if logged.get(key) != value}


def logged_params(mlflow, run):
    """The params ``run`` holds already ({} where the tracking API cannot say)."""
    try:
        return dict(mlflow.get_run(run.info.run_id).data.params)
    except AttributeError:
        return {}
