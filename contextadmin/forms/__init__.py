"""Admin forms: one inline form per category, and the check of a whole submitted workflow.

No rule lives here. ``check.WorkflowCheck`` builds the workflow's ``context_variables.json``
from the submitted inlines (through ``specs``, as the exporter does), validates it with
``fmt.parse_config`` and puts each ``ConfigIssue`` next to the form field its JSON path names.
The package exports what the admin uses."""

from contextadmin.forms.check import (
    VARIABLE_KEYS,
    WorkflowCheck,
    humanize,
    names_to_release,
)
from contextadmin.forms.fields import (
    PrimitiveField,
    primitive_from_text,
)
from contextadmin.forms.formsets import (
    DatabaseFormSet,
    DeclarativeFormSet,
    DefinitionsFormSet,
    DerivedFormSet,
    EnvironmentFormSet,
    HandoffFormSet,
    TriggerFormSet,
)
from contextadmin.forms.rows import (
    DatabaseForm,
    DeclarativeForm,
    DerivedForm,
    EnvironmentForm,
    HandoffForm,
    PositionInput,
    TriggerForm,
    VariableForm,
)
from contextadmin.forms.workflow import (
    ImportUploadForm,
    WorkflowForm,
)

__all__ = [
    "VARIABLE_KEYS",
    "DatabaseForm",
    "DatabaseFormSet",
    "DeclarativeForm",
    "DeclarativeFormSet",
    "DefinitionsFormSet",
    "DerivedForm",
    "DerivedFormSet",
    "EnvironmentForm",
    "EnvironmentFormSet",
    "HandoffForm",
    "HandoffFormSet",
    "ImportUploadForm",
    "PositionInput",
    "PrimitiveField",
    "TriggerForm",
    "TriggerFormSet",
    "VariableForm",
    "WorkflowCheck",
    "WorkflowForm",
    "humanize",
    "names_to_release",
    "primitive_from_text",
]
