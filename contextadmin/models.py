"""Workflows and their definitions: variables (four categories), derived triggers, hand-offs,
and seed 004's output mappings.

The rows mirror ``context_variables.json`` (sdk/contextadmin_sdk/engine/format/); ``specs.py``
translates between the two. Which values are valid is decided by the schema alone, so the model
fields only carry sizes and vocabularies.
"""

from __future__ import annotations

from typing import Any

import reversion
from contextadmin_sdk.engine import format as fmt
from contextadmin_sdk.engine.format import MAX_CONDITION_LENGTH
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone


def _optional_link(field: type[models.ForeignKey], to: str, **options: Any) -> Any:
    """A link whose target may be deleted later: the link empties and this row stays."""
    return field(to, on_delete=models.SET_NULL, null=True, blank=True, **options)


WORKFLOW_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,99}$"
workflow_name_validator = RegexValidator(
    WORKFLOW_NAME_PATTERN,
    "Start with a letter; then up to 99 letters, digits, _ or - (this name is used in URLs).",
)


class Workflow(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[workflow_name_validator])
    description = models.TextField(blank=True)
    database_name = models.CharField(
        max_length=fmt.IDENTIFIER_MAX_CHARS,
        blank=True,
        help_text="Default MongoDB database of the database variables (each may override it).",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    # What deployment pipelines and new runs get (null: never published).
    published_version = _optional_link(
        models.ForeignKey, "WorkflowVersion", related_name="+", editable=False
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Category(models.TextChoices):
    DECLARATIVE = "declarative", "declarative"
    DATABASE = "database", "database"
    ENVIRONMENT = "environment", "environment"
    DERIVED = "derived", "derived"


class VariableType(models.TextChoices):
    STRING = "string", "string"
    INTEGER = "integer", "integer"
    NUMBER = "number", "number"
    BOOLEAN = "boolean", "boolean"


class Variable(models.Model):
    """One context variable; which fields matter depends on ``category``."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="variables")
    category = models.CharField(max_length=16, choices=Category.choices)
    name = models.CharField(max_length=fmt.NAME_MAX_CHARS)
    type = models.CharField(
        max_length=16, choices=VariableType.choices, default=VariableType.STRING
    )
    description = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0, help_text="Order within the category.")
    # declarative
    value = models.JSONField(null=True, blank=True)
    # database source
    database_name = models.CharField(
        max_length=fmt.IDENTIFIER_MAX_CHARS,
        blank=True,
        help_text="Overrides the workflow's database name.",
    )
    collection = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)
    search_by = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)
    field = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)
    # environment source
    env_var = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)
    # environment: the value used when the env var is unset (null: none);
    # derived: the flag's starting value (a boolean)
    default = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["workflow", "category", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "name"], name="contextadmin_variable_unique_name"
            ),
            models.CheckConstraint(
                condition=models.Q(category__in=Category.values),
                name="contextadmin_variable_category",
            ),
        ]
        indexes = [models.Index(fields=["workflow", "category", "position"])]

    def __str__(self) -> str:
        return self.name


class _CategoryManager(models.Manager["Variable"]):
    def __init__(self, category: str) -> None:
        super().__init__()
        self.category = category

    def get_queryset(self) -> models.QuerySet[Variable]:
        return super().get_queryset().filter(category=self.category)


def _category_proxy(category: str, class_name: str) -> type[Variable]:
    """A proxy model of one category's variables (its own admin list and formset)."""
    meta = type("Meta", (), {"proxy": True, "verbose_name": f"{category} variable"})
    attributes = {"__module__": __name__, "Meta": meta, "objects": _CategoryManager(category)}
    return type(class_name, (Variable,), attributes)


DeclarativeVariable = _category_proxy(Category.DECLARATIVE, "DeclarativeVariable")
DatabaseVariable = _category_proxy(Category.DATABASE, "DatabaseVariable")
EnvironmentVariable = _category_proxy(Category.ENVIRONMENT, "EnvironmentVariable")
DerivedVariable = _category_proxy(Category.DERIVED, "DerivedVariable")


PROXIES: dict[str, type[Variable]] = {
    Category.DECLARATIVE: DeclarativeVariable,
    Category.DATABASE: DatabaseVariable,
    Category.ENVIRONMENT: EnvironmentVariable,
    Category.DERIVED: DerivedVariable,
}


class TriggerType(models.TextChoices):
    AGENT_TEXT = "agent_text", "agent_text"
    AGENT_TURN_COUNT = "agent_turn_count", "agent_turn_count"
    TOOL_RESPONSE = "tool_response", "tool_response"


class Trigger(models.Model):
    """One way a derived variable flips to true; which fields matter depends on ``type``."""

    variable = models.ForeignKey(Variable, on_delete=models.CASCADE, related_name="triggers")
    position = models.PositiveIntegerField(default=0)
    type = models.CharField(
        max_length=32,
        choices=TriggerType.choices,
        default=TriggerType.AGENT_TEXT,
        help_text=(
            "agent_text: the agent says the text (agent, text equals); "
            "agent_turn_count: the agent's Nth message (agent, turn count); "
            "tool_response: the tool responds, with the status if given (tool, status)"
        ),
    )
    agent = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)
    tool = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)
    equals = models.CharField(max_length=fmt.MATCH_TEXT_MAX_CHARS, blank=True)
    case_sensitive = models.BooleanField(default=False)
    trim = models.BooleanField(default=True)
    count = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS, blank=True)

    class Meta:
        ordering = ["variable", "position", "id"]

    def __str__(self) -> str:
        return f"{self.type} #{self.position + 1}"


class WorkflowPart(models.Model):
    """A row of one of a workflow's ordered lists (hand-offs, output mappings): the page, the
    export and every query list them by ``position``, then in the order they were added."""

    position = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True
        ordering = ["workflow", "position", "id"]


class Handoff(WorkflowPart):
    """A conditional hand-off from one agent to another."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="handoffs")
    source_agent = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS)
    target_agent = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS)
    condition = models.CharField(
        max_length=MAX_CONDITION_LENGTH, help_text="${flag} or ${flag_a} and ${flag_b}"
    )
    description = models.TextField(blank=True)

    class Meta(WorkflowPart.Meta):
        verbose_name = "hand-off"

    def __str__(self) -> str:
        return f"{self.source_agent} → {self.target_agent}"


class OutputMapping(WorkflowPart):
    """Seed 004's output mapping: when ``tool`` responds, ``data[field]`` is written to ``to``."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="outputs")
    tool = models.CharField(max_length=fmt.IDENTIFIER_MAX_CHARS)
    field = models.CharField(
        max_length=fmt.IDENTIFIER_MAX_CHARS, help_text="The key of the tool's response data."
    )
    to = models.CharField(
        max_length=fmt.STATE_PATH_MAX_CHARS,
        help_text="agent.key[.key...] or world.key[.key...]: the path of the run's state.",
    )

    class Meta(WorkflowPart.Meta):
        verbose_name = "output mapping"

    def __str__(self) -> str:
        return f"{self.tool}.{self.field} → {self.to}"


class VersionAction(models.TextChoices):
    CREATE = "create", "created"
    SAVE = "save", "saved"
    IMPORT = "import", "imported"
    REVERT = "revert", "reverted"
    UPGRADE = "upgrade", "recorded at upgrade"


class WorkflowVersion(models.Model):
    """One numbered version of a workflow's definitions: who, when, why, and its export.

    django-reversion keeps the rows (``revision``: the workflow, its variables, their triggers,
    its hand-offs and output mappings); the canonical export is stored here too, so a version
    stays readable, diffable and servable after any schema migration, and serving it costs one
    query.
    """

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    revision = _optional_link(
        models.OneToOneField, "reversion.Revision", related_name="workflow_version"
    )
    action = models.CharField(max_length=16, choices=VersionAction.choices)
    # Who acted: a user who may be deleted later, so the ``*_name`` field beside it keeps the
    # name ("command line" for imports without a user).
    author = _optional_link(models.ForeignKey, settings.AUTH_USER_MODEL, related_name="+")
    author_name = models.CharField(max_length=150, blank=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    comment = models.TextField(blank=True)
    reverted_from = models.PositiveIntegerField(null=True, blank=True)
    export = models.TextField(help_text="The canonical context_variables.json of this version.")
    export_production = models.TextField(help_text="The same for environment=production.")
    # Indexed: a run start finds the version a runtime's definitions are by these digests.
    digest = models.CharField(max_length=64, db_index=True, help_text="SHA-256 of the export.")
    digest_production = models.CharField(
        max_length=64, db_index=True, help_text="SHA-256 of the production export."
    )
    approved_by = _optional_link(models.ForeignKey, settings.AUTH_USER_MODEL, related_name="+")
    approved_by_name = models.CharField(max_length=150, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approval_comment = models.TextField(blank=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["workflow", "-number"]
        verbose_name = "change"
        verbose_name_plural = "recent changes"
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "number"], name="contextadmin_version_unique_number"
            )
        ]

    def __str__(self) -> str:
        return f"{self.workflow.name} version {self.number}"

    @property
    def who(self) -> str:
        return self.author_name or "command line"

    def export_for(self, environment: str) -> str:
        """Return the stored export for an environment (already validated by the caller)."""
        return self.export_production if environment == "production" else self.export


# One revision spans a workflow with its variables and hand-offs; services add the triggers
# (grand-children) to it explicitly, in one query rather than one per variable.
reversion.register(
    Workflow, follow=("variables", "handoffs", "outputs"), exclude=("published_version",)
)
reversion.register(Variable)
reversion.register(Trigger)
reversion.register(Handoff)
reversion.register(OutputMapping)


# The rows a workflow owns, deleted with it (the admin lets a workflow's deleter delete them).
WORKFLOW_PARTS: tuple[type[models.Model], ...] = (
    Variable,
    Trigger,
    Handoff,
    OutputMapping,
    WorkflowVersion,
)
