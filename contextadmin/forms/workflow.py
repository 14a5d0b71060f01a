"""The workflow's own form (with its stale-edit token) and the import upload form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from contextadmin import selectors, services
from contextadmin.models import (
    Workflow,
    workflow_name_validator,
)


class WorkflowForm(forms.ModelForm):
    """The workflow itself, the page's concurrency token and a note for the version.

    ``base_version`` is the version the page showed. Saving from an older one is refused
    (``services.StaleEdit``): the page comes back with the diff of what changed meanwhile,
    holding the stored values of the fields its user left alone and the user's edits
    (``admin.merge``), and the token moved to the stored version so the next save keeps both.
    """

    base_version = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    version_comment = forms.CharField(
        label="Change note",
        required=False,
        max_length=1000,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="Optional: why you change this, shown in History and to the reviewer.",
    )
    stale: Any = None

    class Meta:
        model = Workflow
        fields = ("name", "description", "database_name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["base_version"] = (
                selectors.workflow_head_number(workflow=self.instance) if self.instance.pk else 0
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        base = data.get("base_version")
        if self.instance.pk and base is not None:
            try:
                services.workflow_edit_lock(workflow=self.instance, base=base)
            except services.StaleEdit as exc:
                self.stale = exc
                self.data = self.data.copy()
                self.data[self.add_prefix("base_version")] = str(exc.current.number)
                current = exc.current
                raise ValidationError(
                    f"Not saved: version {current.number} was {current.get_action_display()} "
                    f"by {current.who} since you opened this page (what changed is shown "
                    "above). The page now holds their changes and your edits (where you both "
                    "changed a field, yours): check it, then save again to keep both.",
                    code="stale",
                ) from None
        return data


class ImportUploadForm(forms.Form):
    name = forms.CharField(
        label="Workflow",
        max_length=100,
        validators=[workflow_name_validator],
        help_text="A new name creates the workflow; an existing one has its definitions replaced.",
    )
    file = forms.FileField(label="context_variables.json")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        limit = settings.FILE_UPLOAD_MAX_MEMORY_SIZE
        if upload.size > limit:
            raise ValidationError(f"The file is {upload.size} bytes; the limit is {limit} bytes.")
        return upload
