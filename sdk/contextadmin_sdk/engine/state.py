"""A run's state as a pure fold over its event log (seed 004 namespaces, docs/api.md).

Five namespaces addressed by dot paths (``STATE_NAMESPACES``): ``context`` (the variables),
``nodes`` (each agent's last text and each tool's last response, for ``{{node.field}}``
templates), ``execution`` (status, current agent, visited agents, turn counts, the path of
hand-off edges taken, the ``exchanges`` between speakers (one agent spoke after another without
a hand-off: the user and the agent it talks to, say), last seq, the run's ``environment`` and,
once it resumed, ``resumes`` (``lifecycle.resume_mark``)), and seed 004's ``agent`` and
``world``, written by the workflow's output mappings when a tool responds (``outputs.py``;
``writes`` says which tool wrote each path, at which seq) and read by ``{{agent.…}}`` and
``{{world.…}}`` templates (``RunState.resolve``). No clock and no randomness: replaying a
run's events rebuilds exactly the live state.

A run knows its environment (docs/engine.md): in production no environment variable or base flag
is ever in its context, neither from the base context (dropped at construction) nor from a
``context_set`` (refused). ``context_set`` may only set a database variable, an environment
variable outside production, or a derived flag (a boolean: an explicit set, recorded as a flip
naming the tool or agent) to a value of its declared type (``writes.context_set_refusal``). A
``warning`` event (a change the chat made that the run refused) changes no variable: it is
counted in ``execution.warnings``.

The run lifecycle (``lifecycle.py``) and what ``nodes`` keeps of each agent and tool within the
state's budget (``nodes.py``) have their own modules. A run's state is stored and rewritten after
every batch, so it is bounded: at most ``STATE_MAX_NODES`` distinct agents and tools (an event
bringing one more is refused), and the latest ``PATH_MAX_EDGES`` hand-off edges.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .arguments import require_config, require_iterable, require_mapping, require_str
from .config import ConfigInput, load_config
from .derived import DerivedContextManager, Flip
from .events import event_sender, validate_event
from .format import (
    BASE_FLAGS,
    ENVIRONMENTS,
    EXCHANGES_MAX,
    PATH_MAX_EDGES,
    STATE_MAX_NODES,
    STATE_NAMESPACES,
    ContextVariablesFile,
    json_value_problem,
)
from .lifecycle import (
    RUN_ENDED_STATUSES,
    RUN_TRANSITIONS,
    EventError,
    RunEnded,
    SeqError,
    resume_mark,
    run_status_problem,
)
from .loader import Context, ContextError
from .log import replaying
from .nodes import node_name, node_output
from .outputs import OutputWrite, outputs_apply, outputs_by_tool
from .paths import drill
from .resolver import Resolution, resolve
from .writes import (
    Refusal,
    context_set_problem,
    context_set_refusal,
    explicit_set_cause,
    warning_value_problem,
)

__all__ = [
    "NAMESPACES",
    "RUN_ENDED_STATUSES",
    "RUN_TRANSITIONS",
    "Applied",
    "EventError",
    "Refusal",
    "RunEnded",
    "RunState",
    "SeqError",
    "context_set_problem",
    "context_set_refusal",
    "explicit_set_cause",
    "node_output",
    "replay",
    "run_status_problem",
]

NAMESPACES = STATE_NAMESPACES


@dataclass(frozen=True)
class Applied:
    """What one event did: its seq, the derived flips, context changes name -> {old, new}, and
    for a tool_response what each of its tool's output mappings wrote (or why not)."""

    seq: int
    flips: list[Flip] = field(default_factory=list)
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: list[OutputWrite] = field(default_factory=list)
    resumed: dict[str, Any] | None = None  # a run_status that resumed the run: its mark

    def as_dict(self) -> dict[str, Any]:
        out = {
            "seq": self.seq,
            "flips": [flip.as_dict() for flip in self.flips],
            "changes": copy.deepcopy(self.changes),
        }
        if self.outputs:  # only events of a mapped tool carry the key
            out["outputs"] = [write.as_dict() for write in self.outputs]
        if self.resumed is not None:
            out["resumed"] = dict(self.resumed)
        return out


def _initial_execution(environment: str = "development") -> dict[str, Any]:
    return {
        "status": "running",
        "current_agent": None,
        "visited_agents": [],
        "turn_counts": {},
        "path": [],
        "exchanges": [],  # [{"source", "target", "turns"}]: who spoke after whom, and how often
        "last_seq": 0,
        "environment": environment,
    }


def _exchange_count(execution: dict[str, Any], source: str | None, target: str) -> None:
    """Count one turn of ``target`` speaking after ``source`` (no hand-off between them)."""
    if source is None or source == target:
        return
    exchanges: list[dict[str, Any]] = execution.setdefault("exchanges", [])
    for exchange in exchanges:
        if exchange["source"] == source and exchange["target"] == target:
            exchange["turns"] += 1
            return
    if len(exchanges) < EXCHANGES_MAX:
        exchanges.append({"source": source, "target": target, "turns": 1})


class RunState:
    """The live state of one run; ``apply`` folds one event into it."""

    def __init__(
        self,
        config: ConfigInput,
        base_context: Mapping[str, Any] | Context,
        *,
        environment: str = "development",
    ) -> None:
        require_config("config", config)
        if not isinstance(base_context, Context):
            require_mapping("base_context", base_context)
        require_str("environment", environment)
        if environment not in ENVIRONMENTS:
            raise ValueError(f"environment: must be one of {', '.join(ENVIRONMENTS)}")
        self._config: ContextVariablesFile = load_config(config).config
        self._derived = DerivedContextManager(self._config)
        self._categories = self._config.categories()
        self._derived_names = tuple(self._derived.defaults())
        self._outputs = outputs_by_tool(self._config)
        self._before_flip: dict[str, Any] = {}
        values = base_context.values if isinstance(base_context, Context) else base_context
        problems = []
        for name, value in values.items():
            problem = json_value_problem(value)
            if problem:  # deeper values would overflow copying and every JSON encoder
                problems.append(f"context.{name}: {problem}")
        if problems:
            raise ContextError(problems)
        self.context: dict[str, Any] = copy.deepcopy(dict(values))
        if environment == "production":  # seed 000: never an environment flag in production
            for name in self._production_suppressed():
                self.context.pop(name, None)
        for name, default in self._derived.defaults().items():
            self.context.setdefault(name, default)
        self.nodes: dict[str, Any] = {}
        self.execution: dict[str, Any] = _initial_execution(environment)
        self.agent: dict[str, Any] = {}
        self.world: dict[str, Any] = {}
        self.writes: dict[str, dict[str, Any]] = {}  # agent/world path -> its latest write
        self.flips: list[dict[str, Any]] = []

    @property
    def environment(self) -> str:
        """``development`` or ``production``: fixed for the run's life."""
        environment: str = self.execution["environment"]
        return environment

    def _production_suppressed(self) -> set[str]:
        names = set(BASE_FLAGS)
        names.update(v.name for v in self._config.context_variables.environment_variables)
        return names

    # -- dot paths ---------------------------------------------------------------------------
    def _namespace(self, name: str) -> dict[str, Any]:
        if name not in NAMESPACES:
            raise KeyError(f"unknown namespace {name!r}: use one of {', '.join(NAMESPACES)}")
        namespace: dict[str, Any] = getattr(self, name)
        return namespace

    def get(self, path: str, default: Any = None) -> Any:
        """Read ``namespace.key.sub...`` (``context.interview_complete``); ``default`` if absent."""
        require_str("path", path)
        head, *rest = path.split(".")
        if head not in NAMESPACES:
            return default
        found, value = drill(self._namespace(head), rest)
        return value if found else default

    def set(self, path: str, value: Any) -> None:
        """Write ``namespace.key.sub...``, creating intermediate objects as needed."""
        require_str("path", path)
        head, *rest = path.split(".")
        if not rest or not all(rest):
            raise KeyError(f"{path!r}: a path is namespace.key[.sub...]")
        target: Any = self._namespace(head)
        for part in rest[:-1]:
            if isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
                continue
            if not isinstance(target, dict):
                raise KeyError(
                    f"{path!r}: {part} is inside a {type(target).__name__}, not an object"
                )
            if part not in target:
                target[part] = {}
            elif not isinstance(target[part], dict | list):
                raise KeyError(f"{path!r}: {part} holds a value, not an object")
            target = target[part]
        last = rest[-1]
        if isinstance(target, list):
            if not (last.isdigit() and int(last) < len(target)):
                raise KeyError(f"{path!r}: {last} is not an index of that list")
            target[int(last)] = value
        else:
            target[last] = value

    # -- events ------------------------------------------------------------------------------
    @property
    def ended(self) -> bool:
        """Whether a ``run_status`` has ended the run (it then takes no more events)."""
        return self.execution["status"] in RUN_ENDED_STATUSES

    @property
    def last_seq(self) -> int:
        last: int = self.execution["last_seq"]
        return last

    def problems(self, event: Any) -> list[str]:
        """Return why this run cannot take ``event`` ([] when it can), without applying it."""
        problems = validate_event(event)
        if problems:
            return problems
        if self.ended:
            return RunEnded(self.execution["status"]).problems
        if "seq" in event and event["seq"] != self.last_seq + 1:
            return [f"seq: expected {self.last_seq + 1}, got {event['seq']}"]
        if event["type"] == "context_set":
            problem = context_set_problem(
                self._config, event["name"], event["value"], environment=self.environment
            )
            if problem:
                return [problem]
        if event["type"] == "warning":
            problem = warning_value_problem(event["value"])
            if problem:
                return [problem]
        node = node_name(event)
        if node is not None and node not in self.nodes and node not in self.execution[
            "visited_agents"
        ] and len(set(self.nodes) | set(self.execution["visited_agents"])) >= STATE_MAX_NODES:
            field_ = "target" if event["type"] == "handoff" else (
                "tool" if event["type"] == "tool_response" else "agent")
            return [
                f"{field_}: the run already tracks {STATE_MAX_NODES} agents and tools, at most "
                f"{STATE_MAX_NODES} (STATE_MAX_NODES)"
            ]
        if event["type"] == "run_status":
            problem = run_status_problem(self.execution["status"], event["status"])
            if problem:
                return [problem]
        if event["type"] == "handoff" and "rule" in event:
            rule, handoffs = event["rule"], self._config.handoffs
            if rule >= len(handoffs):
                return [f"rule: the workflow has {len(handoffs)} hand-off rules, no rule {rule}"]
            declared = handoffs[rule]
            if (declared.source_agent, declared.target_agent) != (
                event_sender(event),
                event["target"],
            ):
                return [
                    f"rule: rule {rule} hands {declared.source_agent} to "
                    f"{declared.target_agent}, not {event_sender(event)} to {event['target']}"
                ]
        return []

    def apply(self, event: Mapping[str, Any]) -> Applied:
        """Fold one event into the state; raise ``EventError`` (``SeqError``) if it cannot apply."""
        problems = self.problems(event)
        if problems:
            if self.ended and problems == RunEnded(self.execution["status"]).problems:
                raise RunEnded(self.execution["status"])
            if isinstance(event, Mapping) and "seq" in event and problems[0].startswith(
            "seq: expected"
        ):
                raise SeqError(expected=self.last_seq + 1, got=event["seq"])
            raise EventError(problems)
        seq = self.last_seq + 1
        flips: list[Flip] = []
        changes: dict[str, dict[str, Any]] = {}
        outputs: list[OutputWrite] = []
        resumed: dict[str, Any] | None = None
        type_ = event["type"]
        execution = self.execution
        if type_ == "agent_text":
            agent = event_sender(event)
            assert agent is not None  # validate_event guarantees it
            counts: dict[str, int] = execution["turn_counts"]
            counts[agent] = counts.get(agent, 0) + 1
            _exchange_count(execution, execution["current_agent"], agent)
            execution["current_agent"] = agent
            if agent not in execution["visited_agents"]:
                execution["visited_agents"].append(agent)
            self.nodes[agent] = node_output(event, seq)
            flips = self._observe(event, counts)
        elif type_ == "tool_response":
            self.nodes[event["tool"]] = node_output(event, seq)
            flips = self._observe(event, execution["turn_counts"])
            outputs = outputs_apply(
                self._outputs.get(event["tool"], ()), event, seq=seq, get=self.get,
                put=self.set, writes=self.writes,
            )
        elif type_ == "context_set":
            name, new = event["name"], copy.deepcopy(event["value"])
            old = self.context.get(name)
            if name in self._derived_names:
                if old is not new:  # an explicit set is a flip; the same value again is not
                    self._before_flip = {name: old}
                    flips = [Flip(name, new, None, explicit_set_cause(event))]
            elif name not in self.context or old != new:
                changes[name] = {"old": copy.deepcopy(old), "new": copy.deepcopy(new)}
            self.context[name] = new
        elif type_ == "warning":
            # counted for the run header; absent until the first (older snapshots lack it)
            execution["warnings"] = execution.get("warnings", 0) + 1
        elif type_ == "run_status":
            resumed = resume_mark(execution, seq=seq, status=event["status"])  # before the change
            execution["status"] = event["status"]
            if resumed is not None:  # a new runtime: its first speaker followed no one here
                execution["current_agent"] = None
        elif type_ == "handoff":
            source, target = event_sender(event), event["target"]
            execution["path"].append(
                {"source": source, "target": target, "rule": event.get("rule"), "seq": seq}
            )
            if len(execution["path"]) > PATH_MAX_EDGES:  # the latest edges; each has its seq
                del execution["path"][: len(execution["path"]) - PATH_MAX_EDGES]
            execution["current_agent"] = target
            if target not in execution["visited_agents"]:
                execution["visited_agents"].append(target)
        execution["last_seq"] = seq
        for flip in flips:
            self.flips.append({**flip.as_dict(), "seq": seq})
            changes[flip.name] = {"old": self._before_flip.get(flip.name), "new": flip.value}
        return Applied(seq, flips, changes, outputs, resumed)

    def resolve(self, template: str) -> Resolution:
        """Resolve ``{{ref}}`` templates against this state: variables, nodes (seed 002), and
        ``{{agent.…}}``/``{{world.…}}`` from the namespaces (seed 004)."""
        return resolve(
            template,
            variables=self.context,
            node_outputs=self.nodes,
            namespaces={"agent": self.agent, "world": self.world},
        )

    def _observe(self, event: Mapping[str, Any], turn_counts: Mapping[str, int]) -> list[Flip]:
        # Only derived variables can flip: remember just their values, not the whole context.
        self._before_flip = {name: self.context.get(name) for name in self._derived_names}
        return self._derived.flips_for(event, self.context, turn_counts=turn_counts)

    # -- snapshots ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe snapshot: the namespaces, ``flips`` and ``writes``."""
        return copy.deepcopy(
            {
                "context": self.context,
                "nodes": self.nodes,
                "execution": self.execution,
                "agent": self.agent,
                "world": self.world,
                "flips": self.flips,
                "writes": self.writes,
            }
        )

    @classmethod
    def from_dict(
        cls, config: ConfigInput, data: Mapping[str, Any], *, environment: str | None = None
    ) -> RunState:
        """Rebuild a state from ``to_dict()`` output, to continue applying events after it.

        The environment is the snapshot's (``execution.environment``; ``development`` for
        snapshots older than it); an ``environment`` given here must agree with it.
        """
        execution = dict(data.get("execution") or {})
        stored = execution.get("environment")
        if environment is not None and stored is not None and environment != stored:
            raise ValueError(
                f"environment: the snapshot is of a {stored} run, not {environment}"
            )
        environment = environment or stored or "development"
        state = cls(config, data.get("context") or {}, environment=environment)
        state.nodes = copy.deepcopy(dict(data.get("nodes") or {}))
        state.execution = {
            **_initial_execution(environment),
            **copy.deepcopy(execution),
            "environment": environment,
        }
        state.agent = copy.deepcopy(dict(data.get("agent") or {}))
        state.world = copy.deepcopy(dict(data.get("world") or {}))
        state.writes = copy.deepcopy(dict(data.get("writes") or {}))
        state.flips = copy.deepcopy(list(data.get("flips") or []))
        return state


def replay(
    config: ConfigInput,
    base_context: Mapping[str, Any] | Context,
    events: Iterable[Mapping[str, Any]],
    *,
    environment: str = "development",
) -> RunState:
    """Rebuild a run's state from its base context and event log."""
    require_iterable("events", events)
    state = RunState(config, base_context, environment=environment)
    with replaying():  # these flips happened when the events did: not logged again
        for event in events:
            state.apply(event)
    return state
