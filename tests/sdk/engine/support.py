"""Config and event builders shared by the engine tests."""

from __future__ import annotations

from typing import Any

from tests.support.demo import demo_config, demo_events

__all__ = ["config_with", "demo_config", "demo_events"]

def config_with(**section: Any) -> dict[str, Any]:
    """A raw config whose ``context_variables`` section holds just ``section``."""
    handoffs = section.pop("handoffs", None)
    config: dict[str, Any] = {"context_variables": section}
    if handoffs is not None:
        config["handoffs"] = handoffs
    return config


def env_var(name: str, env: str, type_: str = "boolean", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "source": {"type": "environment", "env_var": env}, **extra}


def db_var(name: str, collection: str, field: str, **source: Any) -> dict[str, Any]:
    return {
        "name": name,
        "source": {
            "type": "database",
            "collection": collection,
            "search_by": source.pop("search_by", "enterprise_id"),
            "field": field,
            **source,
        },
    }


def derived_var(name: str, *triggers: dict[str, Any], default: bool = False) -> dict[str, Any]:
    return {"name": name, "type": "boolean", "default": default, "triggers": list(triggers)}


def says(agent: str, equals: str, **match: Any) -> dict[str, Any]:
    return {"type": "agent_text", "agent": agent, "match": {"equals": equals, **match}}


def text(agent: Any, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "agent_text", "agent": agent, "text": text, **extra}


def tool(name: str, status: str | None = None, data: Any = None, **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "tool_response", "tool": name, **extra}
    if status is not None:
        event["status"] = status
    if data is not None:
        event["data"] = data
    return event
