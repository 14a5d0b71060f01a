"""An AG2 1.x runtime that dies mid-workflow: runs the demo workflow reporting to a server and
SIGKILLs itself right after the run event with seq ``kill_after``
(python -m tests.sdk.integrations.crash_child_ag2 URL TOKEN SPOOL_DIR KILL_AFTER)."""

import asyncio
import sys

from contextadmin_sdk.client import RunReporter

from runs.demo_chats.ag2_workflow import demo_workflow, run_demo
from tests.sdk.integrations.live import die_after
from tests.sdk.integrations.workflows import attach_demo


async def main(url: str, token: str, spool_dir: str, kill_after: int) -> None:
    demo = await demo_workflow()
    session = attach_demo(
        demo,
        reporter=RunReporter(url, token),
        spool_dir=spool_dir,
    )
    print(f"RUN_ID={session.run_id}", flush=True)
    die_after(session, kill_after)
    with session:
        await run_demo(demo, session)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
