"""LLM-free AG2 agents for tests, the demo and the benchmark: real AG2, scripted replies.

- ``scripted_agent(name, replies)``: ``llm_config=False`` and a ``register_reply`` function that
  answers each turn with the next scripted line (deterministic, no network).
- ``scripted_tool_agent(name, replies, tools=[...])``: an agent with a real ``llm_config``
  whose model is ``ScriptedModelClient`` (``model_client_cls``), so AG2's own LLM path makes
  the tool calls: a reply ``ToolCall("save_plan", names="a,b")`` becomes an OpenAI-style tool
  call that AG2's group tool executor runs. ``prepare_group_chat`` rebuilds an agent's client,
  which drops a registered custom client, and so do AG2's own ``update_agent_state`` hooks of an
  agent with LLM hand-offs (``OnCondition``); hooks register it again before every reply, the
  last one after AG2's (``process_all_messages_before_reply``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

from autogen import ConversableAgent

from contextadmin_sdk.integrations.common import ToolCall

__all__ = ["ScriptedModelClient", "ToolCall", "scripted_agent", "scripted_tool_agent"]

def _pacer(delay: float) -> Callable[[], None]:
    return (lambda: time.sleep(delay)) if delay > 0 else (lambda: None)


def scripted_agent(
    name: str,
    replies: Iterable[str],
    *,
    after: str = "Done.",
    delay: float = 0.0,
    **agent_options: Any,
) -> ConversableAgent:
    """An agent that says ``replies`` in order, then ``after`` on every later turn."""
    script = deque(replies)
    pace = _pacer(delay)
    agent = ConversableAgent(name, llm_config=False, human_input_mode="NEVER", **agent_options)

    def reply(
        recipient: ConversableAgent, messages: Any = None, sender: Any = None, config: Any = None
    ) -> tuple[bool, str]:
        pace()
        return True, script.popleft() if script else after

    agent.register_reply([ConversableAgent, None], reply)
    return agent


class ScriptedModelClient:
    """An AG2 ``ModelClient`` that answers from a script: text, or ``ToolCall`` tool calls."""

    def __init__(
        self,
        config: dict[str, Any],
        *,
        script: deque[Any],
        after: str = "Done.",
        pace: Callable[[], None] = lambda: None,
    ) -> None:
        self.config = config
        self.script = script
        self.after = after
        self.pace = pace

    def create(self, params: dict[str, Any]) -> SimpleNamespace:
        self.pace()
        reply = self.script.popleft() if self.script else self.after
        if isinstance(reply, ToolCall):
            call_id, arguments = reply.call()
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": reply.tool, "arguments": arguments},
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": str(reply)}
        choice = SimpleNamespace(message=message, finish_reason="stop")
        return SimpleNamespace(id=uuid.uuid4().hex, choices=[choice], model="scripted", cost=0.0)

    def message_retrieval(self, response: SimpleNamespace) -> list[Any]:
        messages = []
        for choice in response.choices:
            message = choice.message
            messages.append(message if message.get("tool_calls") else message["content"])
        return messages

    def cost(self, response: SimpleNamespace) -> float:
        return 0.0

    @staticmethod
    def get_usage(response: SimpleNamespace) -> dict[str, Any]:
        return {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "total_tokens": 0,
            "cost": 0.0,
            "model": "scripted",
        }


def scripted_tool_agent(
    name: str,
    replies: Iterable[str | ToolCall],
    *,
    tools: Iterable[Callable[..., Any]],
    after: str = "Done.",
    delay: float = 0.0,
    **agent_options: Any,
) -> ConversableAgent:
    """An agent whose (scripted) model calls ``tools``: AG2's real tool path, no network."""
    script: deque[Any] = deque(replies)
    llm_config = {
        "config_list": [
            {"model": "scripted", "api_type": "openai", "model_client_cls": "ScriptedModelClient"}
        ],
        "cache_seed": None,
    }
    client_log = logging.getLogger("autogen.oai.client")
    level = client_log.level
    client_log.setLevel(logging.WARNING)  # "custom model client ... until registered": expected
    try:
        agent = ConversableAgent(
            name,
            llm_config=llm_config,
            human_input_mode="NEVER",
            functions=list(tools),
            **agent_options,
        )
    finally:
        client_log.setLevel(level)
    options = {"script": script, "after": after, "pace": _pacer(delay)}

    def register_client(agent: ConversableAgent, messages: Any) -> None:
        client = agent.client
        if client is not None and any(
            type(c).__name__ == "PlaceHolderClient" for c in getattr(client, "_clients", [])
        ):
            client.register_model_client(model_client_cls=ScriptedModelClient, **options)

    def register_client_last(messages: Any) -> Any:
        """Again after AG2's own ``update_agent_state`` hooks: an agent with LLM hand-offs
        (``OnCondition``, a nested chat) rebuilds its client there, after ours."""
        register_client(agent, messages)
        return messages

    agent.register_hook("update_agent_state", register_client)
    agent.register_hook("process_all_messages_before_reply", register_client_last)
    register_client(agent, None)
    return agent
