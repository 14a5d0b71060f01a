"""A save refused as stale comes back holding both operators' edits.

The workflow page posts every field of every row. When another operator saved a newer
version after the page was opened, the save is refused (``WorkflowForm``), and saving the
page again as it was would write back the old values of every field its user left alone,
undoing the other operator's changes without a word. So before the page is validated, each
field its user did not change (the posted value is the one of the version the page showed)
while the stored row did change takes the stored value; the fields the user changed keep the
user's value. The refusal page then shows the merged definitions, and the next save keeps both.

Rows are matched by id; a row the other operator deleted is left to the form (an error on its
row), and one they added is untouched by the page's save.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.http import QueryDict

from contextadmin import selectors
from contextadmin.forms.formsets import stored_row_id
from contextadmin.models import Workflow, WorkflowVersion

_ROW_ID = re.compile(r"^(?P<prefix>(?:[a-z_]+-\d+-)*(?P<key>[a-z_]+)-\d+)-id$")


def stale_post_merge(
    *,
    post: QueryDict,
    workflow: Workflow,
    workflow_form: type[forms.ModelForm],
    row_forms: dict[str, type[forms.ModelForm]],
) -> QueryDict | None:
    """Return ``post`` with the stored values of the fields its user left alone, when the
    page was opened at an older version than the stored one (None: nothing to merge).

    ``row_forms`` maps an inline's key (``handoffs``, ``triggers``, ...) to its row form.
    """
    try:
        base = int(post.get("base_version", ""))
    except ValueError:
        return None
    head = selectors.workflow_head(workflow=workflow)
    if head is None or head.number == base:
        return None
    version = (
        WorkflowVersion.objects.filter(workflow=workflow, number=base)
        .select_related("revision")
        .first()
    )
    if version is None or version.revision is None:
        return None
    stored = {
        (record.content_type.model_class(), record.object_id): record.field_dict
        for record in version.revision.version_set.select_related("content_type")
    }
    merged = post.copy()
    _fields_merge(merged, workflow_form, None, workflow, stored.get((Workflow, str(workflow.pk))))
    posted: list[tuple[type[forms.ModelForm], str, str]] = []  # (row form, prefix, id)
    for key in post:
        found = _ROW_ID.match(key)
        form = row_forms.get(found["key"]) if found else None
        if form is not None and post[key] and not post.get(f"{found['prefix']}-DELETE"):
            posted.append((form, found["prefix"], post[key]))
    ids: dict[type, set[int]] = {}  # each model's posted rows, read in one query a model
    for form, _, pk in posted:
        model = form.Meta.model._meta.concrete_model
        number = stored_row_id(model=model, value=pk)
        if number is not None:
            ids.setdefault(model, set()).add(number)
    rows = {
        (model, str(pk)): row
        for model, wanted in ids.items()
        for pk, row in model._base_manager.in_bulk(list(wanted)).items()
    }
    for form, prefix, pk in posted:
        key = (form.Meta.model._meta.concrete_model, pk)
        if key in rows:
            _fields_merge(merged, form, prefix, rows[key], stored.get(key))
    return merged


def _fields_merge(
    merged: QueryDict,
    form_class: type[forms.ModelForm],
    prefix: str | None,
    row: Any,
    base: dict[str, Any] | None,
) -> None:
    """Take the stored value of each field of ``row`` that changed since ``base`` and that
    the page left as it was in ``base``."""
    if base is None:  # added since the page's version: the page did not show it
        return
    stored = form_class(instance=row, prefix=prefix)  # unbound: renders the stored values
    for name, field in stored.fields.items():
        if name not in base:
            continue  # not a column (the change note, the page's version)
        if base[name] == getattr(row, name):
            continue  # not changed by the other save: the page's value stands
        key = stored.add_prefix(name)
        posted = field.widget.value_from_datadict(merged, {}, key)
        if field.has_changed(base[name], posted):
            continue  # changed on this page too: the user's value wins
        rendered = stored[name].value()
        if isinstance(field.widget, forms.CheckboxInput):
            if rendered:
                merged[key] = "on"
            else:
                merged.pop(key, None)
        else:
            merged[key] = "" if rendered is None else str(rendered)
