"""Generated ``context_variables.json`` documents of a given size (deterministic)."""

from __future__ import annotations

from typing import Any

BENCH_DATABASE = "bench_db"


def workflow_document(variables: int, *, triggers_per_derived: int = 2) -> dict[str, Any]:
    """A document with ``variables`` variables spread evenly over the four categories."""
    per = variables // 4
    rest = variables - 3 * per
    declarative = [
        {"name": f"decl_{i}", "type": "string", "description": f"static {i}", "value": f"v{i}"}
        for i in range(per)
    ]
    environment = [
        {
            "name": f"env_{i}",
            "type": "boolean",
            "description": f"flag {i}",
            "source": {"type": "environment", "env_var": f"BENCH_FLAG_{i}"},
        }
        for i in range(per)
    ]
    database = [
        {
            "name": f"db_{i}",
            "type": "string",
            "description": f"field {i}",
            "source": {
                "type": "database",
                "database_name": BENCH_DATABASE,
                "collection": f"Collection{i % 5}",
                "search_by": "enterprise_id",
                "field": f"field_{i}",
            },
        }
        for i in range(per)
    ]
    derived = [
        {
            "name": f"derived_{i}",
            "type": "boolean",
            "description": f"flag {i}",
            "default": False,
            "triggers": [
                {
                    "type": "agent_text",
                    "agent": f"Agent{(i + t) % 20}",
                    "match": {"equals": f"D{i}"},
                }
                for t in range(triggers_per_derived)
            ],
        }
        for i in range(rest)
    ]
    return {
        "context_variables": {
            "database_name": BENCH_DATABASE,
            "declarative_variables": declarative,
            "environment_variables": environment,
            "database_variables": database,
            "derived_variables": derived,
        },
        "handoffs": [],
    }


def database_document(variables: int, collections: int) -> dict[str, Any]:
    """``variables`` database variables spread over ``collections`` collections."""
    return {
        "context_variables": {
            "database_name": BENCH_DATABASE,
            "database_variables": [
                {
                    "name": f"db_{i}",
                    "type": "string",
                    "description": f"field {i}",
                    "source": {
                        "type": "database",
                        "collection": f"Collection{i % collections}",
                        "search_by": "enterprise_id",
                        "field": f"field_{i}" if i % 4 else f"nested_{i}.value",
                    },
                }
                for i in range(variables)
            ],
        }
    }


def database_documents(variables: int, collections: int, enterprise_id: str) -> dict[str, Any]:
    """The MongoDB documents that resolve every variable of ``database_document``."""
    docs: dict[str, dict[str, Any]] = {
        f"Collection{c}": {"enterprise_id": enterprise_id} for c in range(collections)
    }
    for i in range(variables):
        doc = docs[f"Collection{i % collections}"]
        if i % 4:
            doc[f"field_{i}"] = f"value {i}"
        else:
            doc[f"nested_{i}"] = {"value": f"value {i}", "other": i}
    other = {f"Collection{c}": {"enterprise_id": "someone-else"} for c in range(collections)}
    return {
        BENCH_DATABASE: {name: [other[name], doc] for name, doc in docs.items()},
    }


def derived_document(
    triggers: int, *, agents: int = 50, tools: int = 20, per_variable: int = 5
) -> dict[str, Any]:
    """``triggers`` derived triggers (text, turn-count and tool triggers) over agents/tools."""
    variables = []
    made = 0
    index = 0
    while made < triggers:
        items = []
        for t in range(min(per_variable, triggers - made)):
            k = made + t
            kind = k % 10
            if kind < 6:
                items.append(
                    {
                        "type": "agent_text",
                        "agent": f"Agent{k % agents}",
                        "match": {"equals": f"APPROVED {k}"},
                    }
                )
            elif kind < 8:
                items.append(
                    {"type": "agent_turn_count", "agent": f"Agent{k % agents}", "count": 50 + k}
                )
            else:
                items.append(
                    {"type": "tool_response", "tool": f"tool_{k % tools}", "status": f"done_{k}"}
                )
        made += len(items)
        variables.append(
            {
                "name": f"flag_{index}",
                "type": "boolean",
                "description": "bench",
                "default": False,
                "triggers": items,
            }
        )
        index += 1
    return {"context_variables": {"derived_variables": variables}}
