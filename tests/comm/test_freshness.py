"""Replay windows and the binding of a sender's node id to its registered session, without sockets."""
import pytest

from sparkps.comm.freshness import REPLAYED, TOO_OLD, WINDOW, Freshness, ReplayWindow
from sparkps.comm.message import Sequencer

S1, S2 = b"1" * 16, b"2" * 16


def test_a_window_accepts_each_number_once_and_slight_reordering():
    w = ReplayWindow()
    assert [w.admit(s) for s in (1, 2, 5, 4, 3)] == [None] * 5
    assert [w.admit(s) for s in (1, 3, 5)] == [REPLAYED] * 3


def test_reordering_beyond_the_window_is_refused():
    w = ReplayWindow()
    assert w.admit(10) is None
    assert w.admit(10 + WINDOW - 1) is None
    assert w.admit(10) == REPLAYED
    assert w.admit(11) is None  # still inside the window, never seen
    assert w.admit(9) == TOO_OLD
    assert w.admit(10 + 3 * WINDOW) is None
    assert w.admit(10 + WINDOW) == TOO_OLD


def test_a_registered_node_cannot_speak_with_another_session_or_id():
    f = Freshness()
    f.install({4: S1, 5: S2})
    assert f.admit(4, S1, 1) is None
    assert f.admit(4, S2, 2) == "not the registered session of node 4"  # node 5 claiming to be node 4
    assert f.admit(9, S1, 3) == "not a registered node"
    assert f.admit(4, S1, 1) == REPLAYED
    assert f.refused == {"not the registered session of node 4": 1, "not a registered node": 1, REPLAYED: 1}
    assert f.replays == 3


def test_a_restarted_node_registers_a_new_session_and_starts_again():
    f = Freshness()
    f.install({4: S1})
    assert f.admit(4, S1, 7) is None
    f.expect(4, S2)
    assert f.admit(4, S2, 1) is None
    assert f.admit(4, S1, 8) == "not the registered session of node 4"


def test_before_the_table_the_first_session_is_pinned_then_replaced_by_the_table():
    f = Freshness()
    assert f.admit(4, S1, 1) is None
    assert f.admit(4, S2, 1) == "not the registered session of node 4"
    f.install({4: S2})
    assert f.admit(4, S2, 1) is None
    assert f.admit(4, S1, 2) == "not the registered session of node 4"


def test_unregistered_senders_are_windowed_per_session():
    f = Freshness(strict=True)
    assert f.admit(-1, S1, 1) is None
    assert f.admit(-1, S2, 1) is None
    assert f.admit(-1, S1, 1) == REPLAYED
    f.install({4: S1})  # the scheduler still hears unregistered nodes (STATUS, ABORT) ...
    assert f.admit(-1, S2, 2) is None
    f.install({4: S1}, anonymous=False)  # ... servers and workers no longer do
    assert f.admit(-1, S2, 3) == "not a registered node"


@pytest.mark.parametrize("session, seq", [(b"", 1), (b"x" * 15, 1), (S1, 0), (S1, -3)])
def test_messages_without_a_session_or_sequence_number_are_refused(session, seq):
    assert Freshness().admit(3, session, seq) == "no session or sequence number"


def test_sequencers_have_their_own_sessions_and_count_from_one():
    a, b = Sequencer(), Sequencer()
    assert a.session != b.session and len(a.session) == 16
    assert [a.next(), a.next(), b.next()] == [1, 2, 1]
