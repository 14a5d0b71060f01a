"""What both AG2 adapters share (contextadmin_sdk.integrations.ag2 for AG2 1.x,
contextadmin_sdk.integrations.autogen for
AG2 Classic): loading the config, opening or resuming the run, checking hand-off rules against
the workflow's agents, and turning AG2's outputs and a run's flips into run events and text.

Django-free and AG2-free: each adapter imports its own AG2.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Required, TypedDict, get_origin, get_type_hints

from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.client.definitions import definitions_workflow_check
from contextadmin_sdk.client.resume import Resumed, delivery_message
from contextadmin_sdk.engine import (
    RUN_ENDED_STATUSES,
    TEXT_MAX_CHARS,
    RunState,
    build_context,
    condition_names,
    is_production,
    load_config,
    replaying,
)
from contextadmin_sdk.engine.format import ContextVariablesFile, config_digest

__all__ = [
    "ConfigArg",
    "HandoffRuleError",
    "OpenedRun",
    "RunOptions",
    "ToolCall",
    "check_rules",
    "completed_overview",
    "describe_cause",
    "load_config_arg",
    "open_run",
    "options_check",
    "refusal_message",
    "text_of",
    "tool_data",
    "unroutable_reason",
]

ConfigArg = ContextVariablesFile | Mapping[str, Any] | bytes | str | os.PathLike[str]

logger = logging.getLogger("contextadmin_sdk.integrations")


class HandoffRuleError(ValueError):
    """A hand-off rule of the config that this workflow cannot route."""


def load_config_arg(config: ConfigArg) -> ContextVariablesFile:
    """Accept a path, JSON text or bytes, a mapping, or a parsed config."""
    if isinstance(config, os.PathLike) or (
        isinstance(config, str) and not config.lstrip().startswith("{")
    ):
        config = Path(config).read_bytes()
    return load_config(config).config


def check_rules(config: ContextVariablesFile, agents: Iterable[str], *, where: str) -> None:
    """Refuse rules naming an agent that is not in the workflow (``where``: "the pattern",
    "the channel"); the error names each rule and the workflow's agents."""
    known = set(agents)
    problems = []
    for index, rule in enumerate(config.handoffs):
        for role, name in (
            ("source_agent", rule.source_agent),
            ("target_agent", rule.target_agent),
        ):
            if name not in known:
                problems.append(f"handoffs[{index}].{role}: no agent named {name!r} in {where}")
    if problems:
        listed = ", ".join(sorted(known)) or "none"
        raise HandoffRuleError("; ".join(problems) + f" ({where}'s agents: {listed})")


def unroutable_reason(condition: str, context: Mapping[str, Any]) -> str | None:
    """Why a hand-off rule never fires in this run (a variable absent from its context: an
    environment variable in production, seed 000), or None when it may."""
    missing = [name for name in condition_names(condition) if name not in context]
    return f"{', '.join(missing)} not in this run's context" if missing else None


class RunOptions(TypedDict, total=False):
    """The keywords both adapters' ``attach`` take to open (or resume) the run: one owner, so
    a new option is added here once. ``environ`` defaults to ``os.environ``; ``run_id`` (with
    a ``reporter``) resumes that run; ``spool_dir`` and ``capacity`` configure the reporter's
    background mode; ``flush_timeout`` (5 s) bounds how long leaving the session's ``with``
    block waits for acknowledgements."""

    workflow_name: Required[str]
    enterprise_id: Required[str]
    environ: Mapping[str, str] | None
    mongo: Any
    reporter: RunReporter | None
    run_id: str | None
    spool_dir: str | os.PathLike[str] | None
    capacity: int | None
    flush_timeout: float


# RunOptions' names and which are Required[]: read from its hints (with postponed annotations
# the TypedDict's own __required_keys__ cannot tell).
_OPTION_HINTS = get_type_hints(RunOptions, include_extras=True)
_REQUIRED_OPTIONS = tuple(n for n, hint in _OPTION_HINTS.items() if get_origin(hint) is Required)


def options_check(options: Mapping[str, Any]) -> None:
    """What Python says of a plain keyword signature, for ``**options``: an unknown or a
    missing keyword is a ``TypeError`` naming it; so is a value of the wrong type, before any
    run starts (a ``capacity="10"`` would otherwise lose the run's events mid-run)."""
    for name in options:
        if name not in _OPTION_HINTS:
            raise TypeError(f"attach() got an unexpected keyword argument {name!r}")
    for name in _REQUIRED_OPTIONS:
        if name not in options:
            raise TypeError(f"attach() missing required keyword argument: {name!r}")
    for name, value in options.items():
        problem = _option_problem(name, value)
        if problem is not None:
            raise TypeError(f"attach() {name}: must be {problem}, not {_shown(value)}")


def _option_problem(name: str, value: Any) -> str | None:
    """What ``value`` must be for the option ``name``, or None when it is that."""
    if name in ("workflow_name", "enterprise_id"):
        return None if isinstance(value, str) and value else "a non-empty str"
    if value is None and name not in ("flush_timeout",):
        return None
    checks: dict[str, tuple[bool, str]] = {
        "environ": (isinstance(value, Mapping), "a mapping such as os.environ"),
        "reporter": (isinstance(value, RunReporter), "a contextadmin_sdk.client.RunReporter"),
        "run_id": (isinstance(value, str) and bool(value), "the run's id, a non-empty str"),
        "spool_dir": (isinstance(value, str | os.PathLike), "a directory path (str or Path)"),
        "capacity": (_number(value, integer=True) and value >= 1, "an int of at least 1"),
        "flush_timeout": (_number(value) and value >= 0, "a number of seconds, at least 0"),
    }
    ok, expected = checks.get(name, (True, ""))
    return None if ok else expected


def _number(value: Any, *, integer: bool = False) -> bool:
    kinds = (int,) if integer else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    name = type(value).__name__
    return f"{name} {value!r}" if isinstance(value, str | int | float) else name


@dataclass
class OpenedRun:
    """A run started (or resumed) for a session: its state, what to replay, and the options
    the session keeps."""

    config: ContextVariablesFile
    state: RunState
    unsent: list[dict[str, Any]] = field(default_factory=list)  # spooled, not on the server yet
    warnings: list[str] = field(default_factory=list)
    reporter: RunReporter | None = None
    flush_timeout: float = 5.0
    resumed: bool = False  # attach(run_id=...): the session reports where the run resumed


def open_run(
    config_arg: ConfigArg,
    *,
    agents: Iterable[str] | None,
    where: str = "",
    runtime: Mapping[str, str],
    options: RunOptions,
) -> OpenedRun:
    """What both adapters' ``attach`` do, in this order: check ``options``, load the config,
    refuse hand-off rules naming none of ``agents`` (``where``: "the pattern"; None: a single
    agent, no rules routed), then build the run's context and start it on the server, pinned to
    the config and naming ``runtime`` (``contextadmin_sdk.client.definitions.runtime_info``), or
    resume ``run_id`` from the server's state and the spool (raising ``ValueError`` for a run
    that has ended, once what its spool held is delivered)."""
    options_check(options)
    definitions_workflow_check(config_arg, workflow=options["workflow_name"])  # fail before a run
    config = load_config_arg(config_arg)
    if agents is not None:
        check_rules(config, agents, where=where)
    workflow_name, enterprise_id = options["workflow_name"], options["enterprise_id"]
    reporter, run_id = options.get("reporter"), options.get("run_id")
    environ = options.get("environ")
    environ = os.environ if environ is None else environ
    flush_timeout = options.get("flush_timeout", 5.0)
    if run_id is not None and reporter is None:
        raise ValueError("run_id resumes a run from the server: pass the reporter too")
    if reporter is not None:
        if reporter.run_id is not None:
            raise ValueError(
                f"the reporter already reports run {reporter.run_id}: give attach() a fresh "
                "reporter (and run_id=... to resume that run)"
            )
        reporter.use_background(
            capacity=options.get("capacity"), spool_dir=options.get("spool_dir")
        )
    environment = "production" if is_production(environ) else "development"
    if run_id is None:
        built = build_context(
            config,
            workflow_name=workflow_name,
            enterprise_id=enterprise_id,
            environ=environ,
            mongo=options.get("mongo"),
        )
        state = RunState(config, built.values, environment=environment)
        if reporter is not None:
            reporter.start(
                workflow=workflow_name,
                enterprise_id=enterprise_id,
                environment=environment,
                context=copy.deepcopy(dict(built.values)),
                definitions=config,  # the run is pinned to what this workflow runs with
                runtime=runtime,
                unresolved=built.unresolved_reasons(),
            )
        return OpenedRun(config, state, [], list(built.warnings), reporter, flush_timeout)
    assert reporter is not None
    resumed = reporter.resume(
        run_id,
        check=functools.partial(
            resumed_run_check,
            run_id=run_id,
            workflow=workflow_name,
            enterprise_id=enterprise_id,
            config=config,
        ),
    )
    if resumed.server is not None:
        state = RunState.from_dict(
            config, {**resumed.server["state"], "flips": resumed.server.get("flips", [])}
        )
    else:
        begun = resumed.start or {}
        state = RunState(
            config,
            begun.get("context") or {},
            environment=begun.get("environment") or environment,
        )
    with replaying():  # observed (and logged) before the crash, not yet on the server
        for event in resumed.unsent:
            state.apply(event)
    status = state.get("execution.status")
    if status in RUN_ENDED_STATUSES:
        # It ended (maybe while the server was away): deliver what the spool holds, and say so.
        delivered = reporter.close(flush_timeout if resumed.unsent else 0)
        delivery = delivery_message(resumed=resumed, delivered=delivered)
        raise ValueError(
            f"run {run_id} has ended ({status}): it takes no more events, so there is nothing "
            f"to resume; {delivery}"
        )
    derived = [var.name for var in config.context_variables.derived_variables]
    flags = [name for name in derived if state.context.get(name) is True]
    # One line for the whole rebuild: the flips in it were logged when they happened.
    logger.info(
        "resumed run %s at seq %d (%d spooled events not yet on the server) with %s",
        run_id,
        state.last_seq,
        len(resumed.unsent),
        f"flags {', '.join(flags)} set" if flags else "no flag set",
    )
    return OpenedRun(config, state, list(resumed.unsent), [], reporter, flush_timeout, resumed=True)


def resumed_run_check(
    resumed: Resumed,
    *,
    run_id: str,
    workflow: str,
    enterprise_id: str,
    config: ContextVariablesFile,
) -> None:
    """A resume continues the run it names: refuse (``ValueError``) one that is another
    workflow's or enterprise's run, or one pinned to other definitions than ``config``: the
    chat would route on other rules than the run's own (and the run page shows)."""
    if resumed.server is not None:
        context = resumed.server.get("state", {}).get("context") or {}
        owner = (context.get("workflow_name"), context.get("enterprise_id"))
    else:
        owner = ((resumed.start or {}).get("workflow"), (resumed.start or {}).get("enterprise_id"))
    if owner != (workflow, enterprise_id):
        raise ValueError(
            f"run {run_id} is workflow {owner[0]!r} for enterprise {owner[1]!r}, but attach() "
            f"was given workflow_name={workflow!r}, enterprise_id={enterprise_id!r}: resume it "
            "with the run's own workflow, definitions and enterprise"
        )
    pinned, version = _pinned_definitions(resumed)
    held = config_digest(config)
    if pinned and held not in pinned:
        raise ValueError(
            f"run {run_id} is pinned to definitions {pinned[0]}{version}, but this runtime "
            f"holds {held}: resume it with the definitions it started with (a production "
            "export of them will do), or start a new run with these"
        )


def _pinned_definitions(resumed: Resumed) -> tuple[tuple[str, ...], str]:
    """The digests of what the run is pinned to (its full export first, then its production
    export: a runtime may hold either), and its version's words; none when nothing says."""
    digests: tuple[Any, ...] = ()
    if resumed.server is not None:
        pinned = resumed.server.get("definitions") or {}
        digests = (pinned.get("digest"), pinned.get("digest_production"))
        number = resumed.server.get("workflow_version")
    else:  # the server is away: what the run's start sent, as its spool kept it
        sent = (resumed.start or {}).get("definitions") or {}
        key = sent.get("version") if isinstance(sent, Mapping) else None
        digests = (key.get("digest"),) if isinstance(key, Mapping) else ()
        number = key.get("number") if isinstance(key, Mapping) else None
    found = tuple(digest for digest in digests if isinstance(digest, str))
    return found, f" (version {number})" if number is not None else ""


def refusal_message(event: Mapping[str, Any]) -> str:
    """The words of a ``warning`` event ContextSync produced: who set (or deleted) what, and
    the rule."""
    who = " ".join(f"{key} {event[key]}" for key in ("tool", "agent") if key in event)
    did = (
        f"deleted {event['name']}"
        if event.get("rule") == "deleted"
        else f"set {event['name']} to {event['value']!r}"
    )
    return f"{who or 'the chat'} {did}: refused ({event['text']}); recorded as a warning event"


def text_of(content: Any) -> str | None:
    """The text of a message's content: a string, a scalar, or multimodal parts."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text", "") for part in content if isinstance(part, dict) and "text" in part
        ]
        return "\n".join(parts)
    return str(content)


def tool_data(text: str) -> dict[str, Any]:
    """A tool's output as a node output: its JSON object, or ``{"content": text}``."""
    if text[:1] == "{":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return data
    return {"content": text[:TEXT_MAX_CHARS]}


_call_ids = itertools.count(1)


@dataclass(frozen=True)
class ToolCall:
    """One scripted tool call of an LLM-free agent (each adapter's ``scripted``): the tool's
    name and its arguments."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __init__(self, tool: str, **arguments: Any) -> None:
        object.__setattr__(self, "tool", tool)
        object.__setattr__(self, "arguments", arguments)

    def call(self) -> tuple[str, str]:
        """A fresh call id (``call_N``, unique in this process) and the arguments as JSON."""
        return f"call_{next(_call_ids)}", json.dumps(self.arguments)


def describe_cause(cause: Mapping[str, Any]) -> str:
    """Say in words what flipped a flag (a flip's ``cause``)."""
    if cause.get("type") == "tool_response":
        status = cause.get("status")
        return f"when tool {cause.get('tool')} responded" + (f" with {status}" if status else "")
    if "turns" in cause:
        return f"at {cause.get('agent')}'s turn {cause['turns']}"
    if "text" in cause:
        return f'when {cause.get("agent")} said "{cause["text"]}"'
    return "by an event"


def completed_overview(config: ContextVariablesFile, state: RunState) -> str:
    """Say which derived milestones this run has reached, and by which event (seed 003).

    Send it to the agent that continues a resumed run, so it does not redo them.
    """
    if not state.flips:
        return "No milestones have been reached yet in this run."
    descriptions = {var.name: var.description for var in config.context_variables.derived_variables}
    lines = ["The following milestones have already been reached in this run:"]
    for flip in state.flips:
        about = f": {descriptions[flip['name']]}" if descriptions.get(flip["name"]) else ""
        lines.append(
            f"- {flip['name']}{about} (reached at event #{flip['seq']}, "
            f"{describe_cause(flip.get('cause') or {})})"
        )
    lines.append("Continue with the remaining work; do not repeat these steps.")
    return "\n".join(lines)
