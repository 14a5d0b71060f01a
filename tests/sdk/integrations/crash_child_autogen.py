"""A runtime that dies mid-chat: runs the demo chat reporting to a server and SIGKILLs itself
right after the run event with seq ``kill_after``
(python -m tests.sdk.integrations.crash_child_autogen)."""

import sys

from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter

from runs.demo_chats.autogen_chat import OPENING, demo_pattern
from tests.sdk.integrations.chats import attach_demo_chat
from tests.sdk.integrations.live import die_after


def main(url: str, token: str, spool_dir: str, kill_after: int) -> None:
    pattern = demo_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(url, token),
        spool_dir=spool_dir,
    )
    print(f"RUN_ID={session.run_id}", flush=True)
    die_after(session, kill_after)
    with session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
