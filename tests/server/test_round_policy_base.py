"""Every round policy derives from ``RoundPolicy``, which declares the contract the server asks (no probing of a
policy's attributes): ``register_policy`` refuses any other class, and the defaults hold for ``ssp``."""
import pytest

from sparkps.errors import ConfigError
from sparkps.server.policy import ROUND_POLICIES, BoundedStaleness, RoundPolicy, create_policy, register_policy


def test_every_registered_policy_is_a_round_policy():
    assert ROUND_POLICIES and all(issubclass(cls, RoundPolicy) for cls in ROUND_POLICIES.values())
    assert issubclass(BoundedStaleness, RoundPolicy)


def test_a_class_that_is_not_a_round_policy_is_refused_by_name():
    class Loose:
        needs_round = answers_round = False

    with pytest.raises(ConfigError, match="round policy 'loose' must be a RoundPolicy subclass"):
        register_policy('loose', Loose)
    assert 'loose' not in ROUND_POLICIES


def test_ssp_fails_no_round_a_refused_push_belongs_to():
    ssp = create_policy('ssp', [3, 4], {'max_staleness': 1})
    assert not ssp.wait_pull(3, 'parked')
    assert ssp.fail_round(3, 'refused') == [] and ssp.failure(3) is None
    assert ssp.parked() == ['parked'] and not ssp.is_stale(3)
    sync = create_policy('sync', [3, 4])
    assert not sync.wait_pull(1, 'pull') and sync.fail_round(1, 'refused') == ['pull']
    assert sync.failure(2) == 'refused' and sync.failure(0) is None
