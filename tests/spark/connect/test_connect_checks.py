"""The driver's checks on a Spark Connect session (settings read through the session, no SparkContext), and the
``resourceProfile`` param turned into the barrier stage's ResourceProfile."""
import pytest

from sparkps.errors import ConfigError
from sparkps.spark.driver import checks

pytestmark = pytest.mark.spark


def test_too_few_slots_on_connect_is_one_message_saying_what_to_change(connect):
    assert checks.check_session(connect, 2) == 2
    with pytest.raises(ConfigError) as failure:
        checks.check_session(connect, 3)
    assert str(failure.value) == (
        "SparkTrainer needs 3 task slots for 3 workers but local[2] has 2: use num_workers <= 2 or more executor "
        "cores (spark.executor.cores / spark.executor.instances, or a larger local[N])")


def test_connect_parallelism_without_the_setting_is_asked_of_the_cluster(connect):
    settings = checks.session_conf_dict(connect)
    assert settings["spark.master"] == "local[2]" and "spark.executor.instances" not in settings
    assert checks.default_parallelism(connect, {}) == 2        # one small job, no SparkContext


def test_dynamic_allocation_is_refused_before_anything_is_counted():
    with pytest.raises(ConfigError, match="set spark.dynamicAllocation.enabled=false"):
        checks.check_cluster("yarn", {"spark.dynamicAllocation.enabled": "true"}, 0, 2)


def test_the_worker_python_of_a_connect_session_is_the_servers(connect, monkeypatch):
    """Nothing is probed or set from the client: the server's spark.pyspark.python (unset here) is the answer, even
    when this process's PYSPARK_PYTHON names a Python that does not exist."""
    monkeypatch.setenv("PYSPARK_PYTHON", "/nonexistent/python")
    assert checks.choose_worker_python(connect) is None


def test_a_resource_profile_asks_each_worker_task_for_its_resources():
    profile = checks.stage_profile("task.cpus=2, task.gpu=1", "spark://cluster:7077")
    requests = profile.taskResources
    assert requests["cpus"].amount == 2 and requests["gpu"].amount == 1.0
    assert profile.executorResources == {}
    assert checks.stage_profile("", "spark://cluster:7077") is None
    assert checks.stage_profile("task.gpu=1", "local[2]") is None        # local masters schedule no resources
    assert checks.task_cpus("task.cpus=3", {"spark.task.cpus": "1"}) == 3
    assert checks.task_cpus("", {"spark.task.cpus": "2"}) == 2


@pytest.mark.parametrize("text, words", [
    ("executor.cores=4", "a barrier stage refuses dynamic allocation"),
    ("gpu=1", "is not task.NAME=AMOUNT"),
    ("task.gpu", "is not task.NAME=AMOUNT"),
    ("task.gpu=-1", "needs a positive amount"),
    ("task.cpus=1.5", "needs a positive whole number of cpus"),
])
def test_a_bad_resource_profile_names_the_param_and_the_entry(text, words):
    with pytest.raises(ConfigError, match=r"param resourceProfile: .*" + words):
        checks.parse_resource_profile(text)


def test_the_estimators_take_a_resource_profile_and_check_it():
    from sparkps.spark.ml import SparkpsClassifier, SparkpsCTRClassifier
    from sparkps.spark.ml.shared_params import profile_settings
    clf = SparkpsClassifier(layers=[2, 2], resourceProfile="task.gpu=1")
    assert profile_settings(clf, "spark://cluster:7077").taskResources["gpu"].amount == 1.0
    assert profile_settings(SparkpsCTRClassifier(categoricalCols=["a"]), "spark://cluster:7077") is None
    with pytest.raises(ConfigError, match="param resourceProfile: 'executor.gpu=1'"):
        SparkpsCTRClassifier(categoricalCols=["a"]).setResourceProfile("executor.gpu=1")
