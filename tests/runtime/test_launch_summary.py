"""The launcher's summary names the first failure: the node the scheduler blamed, not the scheduler that
exited in the same instant."""
from types import SimpleNamespace

from sparkps.runtime.launcher import cause_line, cause_text, first_cause


def role(name, code, last_line=""):
    return SimpleNamespace(name=name, last_line=last_line, process=SimpleNamespace(returncode=code))


def test_the_node_the_scheduler_names_is_the_first_failure():
    roles = [role("scheduler", 1, "sparkps scheduler: NodeDied: worker 0 (node 3) failed: DataError: a.libsvm:5: "
                  "malformed feature 'oops'"),
             role("server 0", 1, "sparkps server: worker 0 (node 3) failed"),
             role("worker 0", 1, "sparkps worker: DataError: a.libsvm:5: malformed feature 'oops'"),
             role("worker 1", -15)]
    cause = first_cause(roles, roles[0])              # the scheduler was seen exiting first
    assert cause.name == "worker 0"
    assert cause_line(cause) == "worker 0 exit code 1: sparkps worker: DataError: a.libsvm:5: malformed feature 'oops'"


def test_without_a_named_node_the_first_role_seen_failing_is_the_cause():
    roles = [role("scheduler", 1, "sparkps scheduler: registration timed out"), role("worker 0", 1)]
    assert first_cause(roles, roles[1]) is roles[1]
    assert first_cause(roles, None) is None


def test_missed_heartbeats_are_the_first_failure_not_the_launchers_own_sigkill():
    heartbeats = "worker 0 (node 2) stopped sending heartbeats: none for 3.0 s (heartbeat timeout 3 s)"
    roles = [role("scheduler", 1, "sparkps scheduler: NodeDied: " + heartbeats), role("server 0", 1),
             role("worker 0", -9), role("worker 1", 1, "sparkps worker: NodeDied: " + heartbeats)]
    cause = first_cause(roles, roles[0])
    assert cause.name == "worker 0"
    assert cause_text(roles, cause, {id(roles[2])}) == heartbeats       # SIGSTOPped, then SIGKILLed by the launcher
    assert cause_text(roles, cause) == "worker 0 killed by SIGKILL"     # killed from outside: that is the cause
    roles[2] = role("worker 0", None)                                   # still running when the job failed
    assert cause_text(roles, first_cause(roles, roles[0])) == heartbeats
    roles[2] = role("worker 0", 1, "sparkps worker: DataError: bad row")   # its own error stays its own
    assert cause_text(roles, first_cause(roles, roles[0])) == "worker 0 exit code 1: sparkps worker: DataError: bad row"
