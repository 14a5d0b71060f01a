"""The rules that span a whole file: unique names, nodes, base flags, databases, hand-off
conditions and output mappings. ``parse_config`` runs them; the admin calls them piecemeal."""

from __future__ import annotations

from collections.abc import Mapping

from .errors import ConfigIssue, format_loc
from .handoff_conditions import condition_problems
from .limits import (
    BASE_FLAGS,
    CATEGORY_KEYS,
    MAX_VARIABLES,
    OUTPUT_NAMESPACES,
    RESERVED_NAMES,
)
from .models import (
    ContextVariablesFile,
    DatabaseVariable,
    OutputMapping,
    ToolResponseTrigger,
    state_path_problem,
)
from .values import (
    with_article,
)


def config_problems(config: ContextVariablesFile) -> list[ConfigIssue]:
    """Return the rules that span variables: names, agents, databases, hand-off conditions."""
    issues: list[ConfigIssue] = []
    first_seen: dict[str, tuple[str | int, ...]] = {}
    nodes = config.node_names()
    total = 0
    for category, index, variable in config.variables():
        total += 1
        loc: tuple[str | int, ...] = ("context_variables", CATEGORY_KEYS[category], index, "name")
        if variable.name in RESERVED_NAMES:
            issues.append(
                ConfigIssue(loc, f"{variable.name} is reserved: the runtime always sets it")
            )
        elif variable.name in first_seen:
            issues.append(ConfigIssue(
                loc,
                f"{variable.name} is already declared at "
                f"{format_loc(first_seen[variable.name][:-1])}",
            ))
        else:
            first_seen[variable.name] = loc
        node = nodes.get(variable.name)
        if node is not None:  # seed 002: "Global variable names must never collide with node names"
            issues.append(ConfigIssue(
                loc,
                f"{variable.name} is also {with_article(node)} name: variables and nodes "
                "(agents, tools) must not collide",
            ))
        if variable.name in OUTPUT_NAMESPACES:
            issues.append(ConfigIssue(loc, _namespace_taken(variable.name, "a variable")))
        if variable.name in BASE_FLAGS and category != "environment":
            issues.append(ConfigIssue(
                loc,
                f"{variable.name} is a base flag the runtime reads from "
                f"{BASE_FLAGS[variable.name]} (and suppresses in production): only an "
                f"environment variable may take its name, not {with_article(category)} variable",
            ))
        if (
            isinstance(variable, DatabaseVariable)
            and not variable.source.database_name
            and not config.context_variables.database_name
        ):
            issues.append(ConfigIssue(
                (*loc[:-1], "source", "database_name"),
                "field required: set it here or context_variables.database_name",
            ))
    if total > MAX_VARIABLES:
        issues.append(ConfigIssue(("context_variables",), f"at most {MAX_VARIABLES} variables"))
    categories = config.categories()
    for index, handoff in enumerate(config.handoffs):
        for message in condition_problems(handoff.condition, categories):
            issues.append(ConfigIssue(("handoffs", index, "condition"), message))
    issues.extend(_node_namespace_problems(config))
    issues.extend(_outputs_problems(config.outputs, categories))
    return issues


def _namespace_taken(name: str, what: str) -> str:
    return (
        f"{name} is a namespace of the run's state (seed 004: {{{{{name}.…}}}} reads it): "
        f"{what} may not take its name"
    )


def _node_namespace_problems(config: ContextVariablesFile) -> list[ConfigIssue]:
    """An agent or tool named ``agent`` or ``world`` would shadow (or be shadowed by) the
    namespace in every ``{{agent.…}}`` template: refused where it is named."""
    named: list[tuple[tuple[str | int, ...], str, str]] = []
    section = config.context_variables
    for index, derived in enumerate(section.derived_variables):
        for position, trigger in enumerate(derived.triggers):
            loc = ("context_variables", "derived_variables", index, "triggers", position)
            if isinstance(trigger, ToolResponseTrigger):
                named.append(((*loc, "tool"), trigger.tool, "a tool"))
            else:
                named.append(((*loc, "agent"), trigger.agent, "an agent"))
    for index, handoff in enumerate(config.handoffs):
        named.append((("handoffs", index, "source_agent"), handoff.source_agent, "an agent"))
        named.append((("handoffs", index, "target_agent"), handoff.target_agent, "an agent"))
    for index, output in enumerate(config.outputs):
        named.append((("outputs", index, "tool"), output.tool, "a tool"))
    return [
        ConfigIssue(loc, _namespace_taken(name, what))
        for loc, name, what in named
        if name in OUTPUT_NAMESPACES
    ]


def _outputs_problems(
    outputs: list[OutputMapping], categories: Mapping[str, str]
) -> list[ConfigIssue]:
    """Each target a writable path, not a variable, written by one mapping, never inside
    another's (a path holds a value or keys, not both). Linear: each path's prefixes once."""
    issues: list[ConfigIssue] = []
    written: dict[str, int] = {}  # target -> mapping index
    prefixes: dict[str, int] = {}  # every proper prefix of a target -> a mapping writing below
    for index, output in enumerate(outputs):
        loc: tuple[str | int, ...] = ("outputs", index, "to")
        to = output.to
        bare = to.removeprefix("context.")
        if bare in categories:
            writable = " or ".join(f"{name}.…" for name in OUTPUT_NAMESPACES)
            issues.append(ConfigIssue(loc, (
                f"{to} names {categories[bare]} variable {bare}: a mapping writes {writable}, "
                "never a context variable (those change by context_set only)"
            )))
            continue
        problem = state_path_problem(to)
        if problem:
            issues.append(ConfigIssue(loc, problem))
            continue
        if to in written:
            issues.append(ConfigIssue(
                loc, f"{to} is already written by outputs[{written[to]}]: one mapping per path"
            ))
            continue
        parts = to.split(".")
        above = next(
            (".".join(parts[:n]) for n in range(2, len(parts)) if ".".join(parts[:n]) in written),
            None,
        )
        if above is not None:
            issues.append(ConfigIssue(loc, (
                f"{to} is inside {above}, which outputs[{written[above]}] writes: "
                "a path holds a value or keys, not both"
            )))
            continue
        if to in prefixes:
            issues.append(ConfigIssue(loc, (
                f"{to} holds the path outputs[{prefixes[to]}] writes: a path holds a value "
                "or keys, not both"
            )))
            continue
        written[to] = index
        for n in range(2, len(parts)):
            prefixes.setdefault(".".join(parts[:n]), index)
    return issues

