"""What contextadmin_sdk.integrations.ag2.internals reads of AG2 1.x beyond its documented API:
these fail
when AG2 moves it (the pin is contextadmin_sdk.integrations.ag2.SUPPORTED_AG2)."""

from __future__ import annotations

from typing import Any

import ag2
import pytest
from ag2.network import (
    EV_CONTEXT_SET,
    AgentTarget,
    Always,
    ChannelMetadata,
    Envelope,
    FromSpeaker,
    ToolCalled,
    Transition,
    TransitionGraph,
    WorkflowAdapter,
    default_build_text_envelope,
)
from ag2.network.workflow_helpers import set_context
from contextadmin_sdk.integrations.ag2 import SUPPORTED_AG2
from contextadmin_sdk.integrations.ag2.internals import (
    context_set_of,
    routed_by_packet,
    text_of_envelope,
    transition_order,
)


def test_the_installed_ag2_is_the_supported_minor() -> None:
    assert SUPPORTED_AG2 == ">=1.2,<1.3"
    assert ag2.__version__.startswith("1.2.")


def test_a_text_envelope_carries_its_text_where_the_adapter_reads_it() -> None:
    envelope = default_build_text_envelope("c1", "u1", "Hello there")
    assert text_of_envelope(envelope) == "Hello there"


async def test_set_context_posts_the_shape_the_adapter_reads() -> None:
    posted: list[Any] = []

    class Channel:
        metadata = type("M", (), {"manifest": type("F", (), {"type": "workflow"})()})()

        async def send(self, content: str, **kwargs: Any) -> str:
            posted.append(kwargs)
            return "id"

    await set_context(Channel(), "plan_owner", "tool")  # type: ignore[arg-type]
    assert posted[0]["event_type"] == EV_CONTEXT_SET
    envelope = Envelope("c1", "a1", None, EV_CONTEXT_SET, posted[0]["event_data"])
    assert context_set_of(envelope) == ({"plan_owner": "tool"}, [])


def _metadata(graph: TransitionGraph) -> ChannelMetadata:
    from ag2.network import ChannelState, Participant, ParticipantRole

    roles = [ParticipantRole.INITIATOR, ParticipantRole.PARTICIPANT, ParticipantRole.PARTICIPANT]
    return ChannelMetadata(
        channel_id="c1",
        manifest=WorkflowAdapter().manifest,
        creator_id="u1",
        participants=[
            Participant(agent_id=a, role=role, order=i)
            for i, (a, role) in enumerate(zip(["u1", "a1", "a2"], roles, strict=True))
        ],
        state=ChannelState.ACTIVE,
        created_at="",
        knobs={"graph": graph.to_dict()},
    )


@pytest.mark.parametrize("priorities", [(0, 0), (1, 0), (0, -1)])
def test_the_workflow_adapter_tries_transitions_in_the_order_the_adapter_replays(
    priorities: tuple[int, int],
) -> None:
    transitions = [
        Transition(Always(), AgentTarget("a1"), priority=priorities[0]),
        Transition(Always(), AgentTarget("a2"), priority=priorities[1]),
    ]
    graph = TransitionGraph(initial_speaker="u1", transitions=transitions)
    adapter = WorkflowAdapter()
    state = adapter.initial_state(_metadata(graph))
    folded = adapter.fold(default_build_text_envelope("c1", "u1", "hi"), state)
    assert folded.expected_next_speaker == transition_order(transitions)[0].then.agent_id


def test_a_packet_routed_by_a_tool_is_told_apart() -> None:
    graph = TransitionGraph(
        initial_speaker="u1", transitions=[Transition(FromSpeaker("u1"), AgentTarget("a2"))]
    )
    adapter = WorkflowAdapter()
    state = adapter.initial_state(_metadata(graph))
    packet = Envelope(
        "c1",
        "u1",
        None,
        "ag2.packet",
        {"routing": {"kind": "handoff", "tool": "go", "target": "a1"}, "body": "x"},
    )
    assert adapter.fold(packet, state).expected_next_speaker == "a1"  # not the graph's a2
    assert routed_by_packet(packet)
    text = Envelope("c1", "u1", None, "ag2.packet", {"routing": {"kind": "text"}, "body": "x"})
    assert not routed_by_packet(text)


def test_a_tool_called_packet_still_goes_through_the_transitions() -> None:
    """A ``ToolCalled`` tool's packet is ``handoff`` without a target: the adapter still runs
    the transitions (a rule before the ToolCalled one routes it), so it is not tool-routed."""
    graph = TransitionGraph(
        initial_speaker="u1",
        transitions=[
            Transition(FromSpeaker("u1"), AgentTarget("a2")),
            Transition(ToolCalled("go"), AgentTarget("a1")),
        ],
    )
    adapter = WorkflowAdapter()
    state = adapter.initial_state(_metadata(graph))
    packet = Envelope(
        "c1", "u1", None, "ag2.packet", {"routing": {"kind": "handoff", "tool": "go"}, "body": "x"}
    )
    assert adapter.fold(packet, state).expected_next_speaker == "a2"  # the first transition
    assert not routed_by_packet(packet)
