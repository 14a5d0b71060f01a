"""contextadmin.channel_layers.InMemoryChannelLayer delivers group messages as channels' own
in-memory layer does: a copy per member, none to a full channel, none after expiry."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from contextadmin.channel_layers import InMemoryChannelLayer


def in_own_loop(scenario: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Run the test on a fresh event loop in a thread of its own: the session's sync Playwright
    (tests/support/browser.py) can leave its loop marked running in the main thread."""

    def test() -> None:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, scenario()).result()

    test.__name__ = scenario.__name__
    test.__doc__ = scenario.__doc__
    return test


async def _members(layer: InMemoryChannelLayer, count: int) -> list[str]:
    channels = [await layer.new_channel() for _ in range(count)]
    for channel in channels:
        await layer.group_add("run.r1", channel)
    return channels


@in_own_loop
async def test_every_member_gets_the_message_and_no_one_shares_a_change():
    layer = InMemoryChannelLayer()
    first, second = await _members(layer, 2)
    message = {"type": "run.events", "items": [(1, "one")]}
    await layer.group_send("run.r1", message)
    message["items"].append((2, "changed after sending"))
    got_first = await layer.receive(first)
    got_first["type"] = "changed by a consumer"
    got_second = await layer.receive(second)
    assert got_second == {"type": "run.events", "items": [(1, "one")]}
    assert got_first["items"] == [(1, "one")]


@in_own_loop
async def test_a_full_channel_drops_and_the_others_still_get_it():
    layer = InMemoryChannelLayer(capacity=2)
    stalled, live = await _members(layer, 2)
    for seq in (1, 2, 3):
        await layer.group_send("run.r1", {"type": "run.events", "items": [(seq, "x")]})
        assert (await layer.receive(live))["items"] == [(seq, "x")]
    held = [(await layer.receive(stalled))["items"][0][0] for _ in range(2)]
    assert held == [1, 2]  # the third was dropped: the channel held its capacity
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await layer.receive(stalled)


@in_own_loop
async def test_messages_expire_and_so_does_the_membership():
    layer = InMemoryChannelLayer(expiry=1)
    [member] = await _members(layer, 1)
    await layer.group_send("run.r1", {"type": "run.events", "items": [(1, "x")]})
    await asyncio.sleep(1.3)  # past expiry and past the sweep interval (0.25 s)
    await layer.group_send("run.r1", {"type": "run.events", "items": [(2, "x")]})
    with pytest.raises(TimeoutError):  # the expired one is gone and the member left the group
        async with asyncio.timeout(0.1):
            await layer.receive(member)
