"""The Cluster pass's dispatcher (pure parts): every command type has its one handler,
a value of no known type is refused, and every decision of every step maps to commands
the dispatcher knows (an unknown action is a programming error that fails here)."""

from __future__ import annotations

import datetime

import pytest

from tidelog_operator.cluster import (
    ca_renewal_commands,
    certificate_commands,
    commands,
    user_commands,
)
from tidelog_operator.cluster.commands import HANDLERS, Command, Context, carry_out
from tidelog_operator.cluster.scale_step import _carry
from tidelog_operator.cluster.scaling import ScaleAction, ScaleDecision
from tidelog_operator.cluster.snapshot import BrokersView, Partition
from tidelog_operator.spec import parse_cluster

SPEC = parse_cluster(
    "events", "ns", {"brokers": {"replicas": 3}, "storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}
)
NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)
BROKERS = BrokersView(
    racks={0: None, 1: None, 2: None},
    controller=0,
    partitions=(Partition("orders", 0, (0, 1, 2), (0, 1, 2), 0, (), 2),),
    log_dirs={},
    reassigning={},
)


def test_every_command_type_has_a_handler():
    defined = {
        value
        for module in (commands, certificate_commands, user_commands, ca_renewal_commands)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Command)
        and value not in (Command, certificate_commands.TlsCommand)
    }
    assert defined and defined == set(HANDLERS)


def test_a_value_of_no_known_command_type_is_refused():
    class Unknown(Command):
        pass

    with pytest.raises(TypeError, match="no handler for Unknown"):
        carry_out(Unknown(), Context(None, "ns", "events", lambda: None))


@pytest.mark.parametrize("action", list(ScaleAction), ids=lambda a: a.value)
def test_every_scale_action_becomes_a_step(action):
    running = {"state": "Running", "partitions": 1, "bytes": 0, "brokers": [3]}
    move = running if action in (ScaleAction.WAIT, ScaleAction.FINISH) else {}
    decision = ScaleDecision(action, (1,) if action is not ScaleAction.DONE else (), "why")
    state = BROKERS.cluster_state()
    step = _carry(decision, BROKERS, state, SPEC, dict(move), None, NOW, {})
    assert all(type(c) in HANDLERS for c in step.commands)
    assert (step.shrink_to is not None) == (action is ScaleAction.SHRINK)
