"""The export's ``version`` key (docs/format.md): the digest of the definitions without the key,
stable whatever the text the definitions hold; the loader ignores the key (a property over
hostile but valid documents)."""

from __future__ import annotations

import json

from contextadmin_sdk.engine import build_context
from contextadmin_sdk.engine import format as fmt
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.security.strategies import hostile_but_valid
from tests.support.demo import demo_config


@settings(max_examples=80, deadline=None)
@given(
    document=hostile_but_valid(demo_config()),
    number=st.none() | st.integers(1, 2**31 - 1),
    production=st.booleans(),
)
def test_the_version_key_is_stable_and_ignored(
    document: dict, number: int | None, production: bool
) -> None:
    try:
        config = fmt.parse_config(document).config
    except fmt.ConfigError:
        return  # a free-text field the format refuses: not this property's concern
    body = fmt.config_export_bytes(config, production=production)
    versioned = fmt.export_with_version(body, number=number)
    assert fmt.export_with_version(versioned, number=number) == versioned  # idempotent
    assert json.loads(versioned)["version"] == {"number": number, "digest": fmt.export_digest(body)}
    parsed = fmt.parse_config(versioned).config
    assert fmt.config_export_bytes(parsed) == body  # the key is no definition
    assert fmt.config_digest(parsed) == fmt.export_digest(body)  # what a runtime sends
    environ = {"CONTEXT_AWARE": "1"}
    assert (
        build_context(parsed, workflow_name="W", enterprise_id="e", environ=environ).values
        == build_context(config, workflow_name="W", enterprise_id="e", environ=environ).values
    )
