"""The pyspark.ml models as MLflow models: MLflow's ``spark`` flavor (the pyspark.ml persistence of
``persistence.py``, loaded back by ``mlflow.spark.load_model`` as a PipelineModel) and a ``python_function``
flavor that scores a pandas DataFrame into probabilities.

    with mlflow.start_run():
        info = log_model(model, "ctr")     # requirements: default_requirements()
    mlflow.spark.load_model(info.model_uri).transform(df)     # a PipelineModel: the same predictions as model
    mlflow.pyfunc.load_model(info.model_uri).predict(pdf)     # the click probability of each row

``model`` is a SparkpsCTRModel, a SparkpsClassificationModel, or a PipelineModel holding one (the last one is
scored).  The pyfunc answers a float64 array: for a CTR model the click probability p of each row, for the classifier
the class probabilities (rows x classes; a features column of lists is read as the vectors).

A model whose tables are shard files (docs/tables.md) is logged with them: the pyspark.ml persistence copies the
files one by one (no table is read), and the pyfunc scores through the Spark SQL join.

``mlflow.spark.log_model(model, ...)`` works on the same models; its pyfunc answers the ``prediction`` column (the
class index, 0 or 1 for a CTR model) instead, and without ``pip_requirements`` it infers them by loading the model
in a new Python process that starts a Spark application (most of such a log's time: docs/export.md, section
``mlflow_log``): :func:`log_model` writes :func:`default_requirements` instead, so it takes the save's
time.  MLflow is an extra: it is imported when these functions are called.
"""
import os
import sys

import numpy as np

from sparkps.errors import ConfigError
from sparkps.spark.ml.classifier import SparkpsClassificationModel
from sparkps.spark.ml.ctr_classifier import SparkpsCTRModel

SCORED = (SparkpsCTRModel, SparkpsClassificationModel)


SCORING_DISTRIBUTIONS = ("pyspark", "numpy", "pandas", "pyarrow")    # what the pyfunc imports besides sparkps


def log_model(model, name, **kwargs):
    """Log ``model`` to the active MLflow run (one is started if none is) under ``name``, with the ``spark`` and
    this module's ``python_function`` flavors; the other keyword arguments are ``mlflow.spark.log_model``'s
    (``pip_requirements``, ``extra_pip_requirements``, ``signature``, ``registered_model_name``...).  Returns
    MLflow's ModelInfo.

    Blocks while the model is saved (a small Spark job) and its files are copied to the run's artifact
    store.  Without ``pip_requirements`` or ``conda_env`` the requirements are :func:`default_requirements` (plus
    any ``extra_pip_requirements``), so MLflow does not infer them by loading the model in a new Python process,
    which starts a Spark application (what ``mlflow.spark.log_model`` does)."""
    from mlflow.models import Model
    scored_stage(model)         # a model without a sparkps stage fails before anything is logged
    return Model.log(artifact_path=None, name=name, flavor=sys.modules[__name__], spark_model=model,
                     **with_requirements(kwargs))


def save_model(spark_model, path, mlflow_model=None, **kwargs):
    """Save ``spark_model`` as an MLflow model in the local folder ``path`` (which must not exist): what
    ``mlflow.spark.save_model`` writes, its pyfunc loaded by this module, its requirements as :func:`log_model`
    gives them.  Blocks for a small Spark job."""
    import mlflow.pyfunc
    import mlflow.spark
    from mlflow.models import Model
    scored_stage(spark_model)
    mlflow_model = Model() if mlflow_model is None else mlflow_model
    mlflow.spark.save_model(spark_model, path, mlflow_model=mlflow_model, **with_requirements(kwargs))
    mlflow_model.flavors[mlflow.pyfunc.FLAVOR_NAME][mlflow.pyfunc.MAIN] = __name__
    mlflow_model.save(os.path.join(path, "MLmodel"))


def default_requirements():
    """The pip requirements of a logged sparkps model, from this process's installed versions: ``sparkps`` and the
    distributions its pyfunc imports (SCORING_DISTRIBUTIONS), each pinned (``name==version``); one not installed as
    a distribution is left out.  Never blocks."""
    from importlib import metadata

    import sparkps
    pinned = ["sparkps==%s" % sparkps.__version__]
    for name in SCORING_DISTRIBUTIONS:
        try:
            pinned.append("%s==%s" % (name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return pinned


def with_requirements(kwargs):
    """``kwargs`` of a log or save with ``pip_requirements`` set to :func:`default_requirements` and any
    ``extra_pip_requirements`` when the caller gave neither ``pip_requirements`` nor ``conda_env``."""
    if kwargs.get("pip_requirements") is not None or kwargs.get("conda_env") is not None:
        return kwargs
    kwargs = dict(kwargs)
    extra = list(kwargs.pop("extra_pip_requirements", None) or [])
    kwargs["pip_requirements"] = default_requirements() + extra
    return kwargs


def scored_stage(model):
    """The sparkps model whose probabilities the pyfunc answers: ``model`` itself or the last sparkps stage of a
    PipelineModel; ConfigError naming the model's class when there is none."""
    if isinstance(model, SCORED):
        return model
    for stage in reversed(getattr(model, "stages", [])):
        if isinstance(stage, SCORED):
            return stage
    raise ConfigError("%s holds no SparkpsCTRModel or SparkpsClassificationModel: log it with mlflow.spark.log_model"
                      % type(model).__name__)


def _load_pyfunc(path):
    """``mlflow.pyfunc.load_model``'s loader: ``path`` is the model's ``sparkml`` folder.  Blocks while the
    PipelineModel loads (in the active SparkSession, or a local one it starts)."""
    import mlflow.spark
    from pyspark.sql import SparkSession
    spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
    return ProbabilityScorer(spark, mlflow.spark.load_model(os.path.dirname(os.path.abspath(path))))


class ProbabilityScorer:
    """The pyfunc of a logged model: pandas rows in, probabilities out (see the module's docstring)."""

    def __init__(self, spark, pipeline):
        self.spark = spark
        self.pipeline = pipeline
        self.stage = scored_stage(pipeline)

    def get_raw_model(self):
        """The PipelineModel."""
        return self.pipeline

    def predict(self, model_input, params=None):
        """Probabilities of the rows of the pandas DataFrame ``model_input``, in its order.  Blocks for a Spark job."""
        from pyspark.ml.functions import array_to_vector, vector_to_array
        from pyspark.sql.types import ArrayType
        frame = self.spark.createDataFrame(model_input)
        if isinstance(self.stage, SparkpsClassificationModel):
            features = self.stage.getOrDefault("featuresCol")
            if features in frame.columns and isinstance(frame.schema[features].dataType, ArrayType):
                frame = frame.withColumn(features, array_to_vector(features))
        column = self.stage.getOrDefault("probabilityCol")
        rows = self.pipeline.transform(frame).select(vector_to_array(column)).collect()
        probabilities = np.array([row[0] for row in rows], dtype=np.float64).reshape(len(rows), -1)
        return probabilities[:, 1] if isinstance(self.stage, SparkpsCTRModel) else probabilities
