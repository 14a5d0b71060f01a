"""The workflow page's output mappings (seed 004): one inline row per mapping.

No rule lives here either: ``forms.WorkflowCheck`` checks the mappings with the rest of the
document through the format module and puts each issue on the field its path names
(``outputs[1].to`` is the ``to`` of the second mapping saved, in position order), naming any
other mapping a message refers to as the page lists it (``output mapping #1 (…)``).
"""

from __future__ import annotations

from django import forms

from contextadmin.forms import DefinitionsFormSet, PositionInput
from contextadmin.models import OutputMapping


class OutputMappingForm(forms.ModelForm):
    class Meta:
        model = OutputMapping
        fields = ("tool", "field", "to", "position")
        labels = {"field": "Response field", "to": "Writes to"}
        widgets = {
            "position": PositionInput(),
            "tool": forms.TextInput(attrs={"size": 24, "placeholder": "extract_keywords"}),
            "field": forms.TextInput(attrs={"size": 18, "placeholder": "keywords"}),
            "to": forms.TextInput(
                attrs={"size": 36, "placeholder": "agent.intermediate.keywords"}
            ),
        }


class OutputMappingFormSet(DefinitionsFormSet):
    key = "outputs"
