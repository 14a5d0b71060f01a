"""The reporter encodes each event once on the chat's thread (``encode_record``): what it
writes to the spool and sends must read back as the same JSON, whatever the chat said."""

import json

from contextadmin_sdk.client.transport import encode_record
from hypothesis import given
from hypothesis import strategies as st

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_every_json_value_reads_back_equal_and_on_one_line(value):
    encoded = encode_record({"type": "agent_text", "data": value})
    assert b"\n" not in encoded  # one spool line per event
    assert json.loads(encoded) == {"type": "agent_text", "data": value}


def test_a_lone_surrogate_from_a_badly_decoded_text_is_escaped_not_raised():
    encoded = encode_record({"type": "agent_text", "agent": "A", "text": "bad \ud800 byte"})
    assert json.loads(encoded)["text"] == "bad \ud800 byte"
