"""AG2 Classic's internals the Classic adapter uses (``autogen/internals.py``): these fail
when AG2 moves them, before a chat would silently go unobserved."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from autogen.io import IOStream
from contextadmin_sdk.integrations.autogen.internals import stream_put_in_front


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_the_default_stream_is_a_context_variable() -> None:
    assert isinstance(IOStream._default_io_stream, contextvars.ContextVar)


def test_a_stream_put_in_front_inside_a_chats_block_lasts_until_the_block_ends() -> None:
    seen: dict[str, str] = {}

    def chat_thread() -> None:  # run_group_chat's shape: its own thread, its own `with`
        before = IOStream.get_default()
        with IOStream.set_default(Named("AG2's")):
            stream_put_in_front(Named("the session's"))
            seen["during"] = IOStream.get_default().name
        seen["after"] = "restored" if IOStream.get_default() is before else "leaked"

    thread = threading.Thread(target=chat_thread)
    thread.start()
    thread.join()
    assert seen == {"during": "the session's", "after": "restored"}
    assert not isinstance(IOStream.get_default(), Named)  # another thread's context: untouched


def test_a_stream_put_in_front_in_a_task_stays_in_that_task() -> None:
    async def main() -> tuple[str, bool]:
        async def chat_task() -> str:  # a_run_group_chat's shape: a task of its own
            with IOStream.set_default(Named("AG2's")):
                stream_put_in_front(Named("the session's"))
                await asyncio.sleep(0)
                return IOStream.get_default().name

        name = await asyncio.create_task(chat_task())
        return name, isinstance(IOStream.get_default(), Named)

    assert asyncio.run(main()) == ("the session's", False)
