"""The Slack text: whatever a run says shows as text in Slack, never as a mention or a link;
only the links contextadmin builds are links."""

from __future__ import annotations

import pytest

from runs.models import Run
from runs.webhooks.services.payloads import run_payload, slack_text, version_payload

HOSTILE = "<!channel> *bold* & <https://evil.example|click>"
SHOWN = "&lt;!channel&gt; *bold* &amp; &lt;https://evil.example|click&gt;"
RUN = {"id": "r1", "workflow_name": "Generator", "workflow_version": 2, "enterprise_id": "acme"}
SITE = "https://contextadmin.example"


@pytest.mark.parametrize(
    ("event", "run", "fields", "shown"),
    [
        ("run_started", {"enterprise_id": HOSTILE}, {}, f"started for {SHOWN}"),
        ("run_started", {"workflow_name": "<!here>"}, {}, "&lt;!here&gt; run r1:"),
        ("handoff", {}, {"agent": "<!here>", "target": HOSTILE}, f"&lt;!here&gt; → {SHOWN}"),
        ("warning", {}, {"text": f"{HOSTILE} tried"}, f"warning: {SHOWN} tried"),
        ("run_ended", {}, {"status": HOSTILE}, f"ended *{SHOWN}*"),
        (
            "flag_flipped",
            {},
            {"flag": "<@U024BE7LH>", "value": "<!everyone>",
             "cause": {"agent": "<!here>", "text": HOSTILE}},
            f'flag *&lt;@U024BE7LH&gt;* flipped to "&lt;!everyone&gt;" (agent: &lt;!here&gt;, '
            f"text: {SHOWN})",
        ),
        ("warning", {}, {"text": "a &lt;b&gt; c"}, "a &amp;lt;b&amp;gt; c"),  # shown as typed
    ],
)
def test_run_text_is_escaped_and_only_the_run_link_is_markup(event, run, fields, shown) -> None:
    payload = run_payload(Run(**{**RUN, **run}), event=event, seq=4, **fields)
    text = slack_text(payload)
    link = f"<{SITE}/runs/r1/?at=4|open at #4>"
    assert shown in text
    assert text.endswith(f" {link}")
    rest = text.removesuffix(link)
    assert "<" not in rest and ">" not in rest


def test_a_published_workflows_name_is_escaped_and_its_export_stays_a_link() -> None:
    text = slack_text(version_payload(workflow_name=HOSTILE, number=3, digest="ab"))
    export = f"{SITE}/api/workflows/%3C%21channel%3E%20%2Abold%2A%20%26%20%3Chttps%3A%2F%2F"
    assert text.startswith(f"{SHOWN}: version 3 published <{export}")
    assert text.endswith("/context_variables.json?version=3>")
