"""runs.resume.ResumeStream on its own: de-duplication, gap -> catch-up, idle resync, pings."""

from __future__ import annotations

import asyncio

from runs.resume import ResumeStream


class Log:
    """A run's log as the stream sees it: (seq, text) read in chunks; group joins counted."""

    def __init__(self, seqs: int = 0) -> None:
        self.items = [(seq, f"e{seq}") for seq in range(1, seqs + 1)]
        self.sent: list[str] = []
        self.reads: list[int] = []
        self.joins = 0

    def append(self, count: int) -> list[tuple[int, str]]:
        start = len(self.items) + 1
        new = [(seq, f"e{seq}") for seq in range(start, start + count)]
        self.items.extend(new)
        return new

    async def send(self, text: str) -> None:
        self.sent.append(text)

    async def read_after(self, seq: int) -> list[tuple[int, str]]:
        self.reads.append(seq)
        return [item for item in self.items if item[0] > seq][:3]

    async def rejoin(self) -> None:
        self.joins += 1

    def stream(self, last_seq: int = 0, **kwargs: float) -> ResumeStream:
        return ResumeStream(
            last_seq=last_seq,
            send=self.send,
            read_after=self.read_after,
            rejoin=self.rejoin,
            chunk=3,
            **kwargs,
        )


def texts(*seqs: int) -> list[str]:
    return [f"e{seq}" for seq in seqs]


async def test_catch_up_sends_the_log_after_the_snapshot_in_chunks():
    log = Log(seqs=7)
    stream = log.stream(last_seq=2)
    await stream.catch_up()
    assert log.sent == texts(3, 4, 5, 6, 7)
    assert log.reads == [2, 5]  # until a chunk comes back short
    assert stream.last_seq == 7


async def test_what_was_sent_is_never_sent_again():
    log = Log(seqs=3)
    stream = log.stream()
    await stream.catch_up()
    await stream.deliver([(2, "e2"), (3, "e3")])  # committed while the snapshot was read
    new = log.append(2)
    await stream.deliver(new)
    await stream.deliver(new)  # a layer that delivers twice
    assert log.sent == texts(1, 2, 3, 4, 5)


async def test_a_gap_is_filled_from_the_log_before_the_message_that_shows_it():
    log = Log(seqs=1)
    stream = log.stream()
    await stream.catch_up()
    log.append(3)  # seqs 2 and 3 were dropped by the layer
    await stream.deliver([(4, "e4")])
    assert log.sent == texts(1, 2, 3, 4)
    assert stream.last_seq == 4


async def test_a_ping_resyncs_at_most_every_ping_resync_min():
    log = Log(seqs=2)
    stream = log.stream(ping_resync_min=60.0, resync_interval=60.0)
    stream.start()
    try:
        log.append(1)  # a dropped tail: no later message shows it
        assert await stream.ping() == 3
        assert log.joins == 1 and log.sent == texts(1, 2, 3)
        log.append(1)
        assert await stream.ping() == 3  # too soon: no second read
        assert log.joins == 1
    finally:
        await stream.stop()


async def test_the_idle_timer_rejoins_and_reads_the_dropped_tail():
    log = Log(seqs=1)
    stream = log.stream(resync_interval=0.05, resync_max_interval=0.2)
    await stream.catch_up()
    stream.start()
    try:
        log.append(2)
        for _ in range(100):
            if stream.last_seq == 3:
                break
            await asyncio.sleep(0.01)
        assert log.sent == texts(1, 2, 3)
        assert log.joins >= 1
    finally:
        await stream.stop()


async def test_the_idle_timer_waits_while_group_messages_keep_arriving():
    log = Log()
    stream = log.stream(resync_interval=0.1)
    stream.start()
    try:
        for _ in range(8):  # a busy run: a message every 30 ms
            await stream.deliver(log.append(1))
            await asyncio.sleep(0.03)
        assert log.joins == 0 and log.reads == []
    finally:
        await stream.stop()


async def test_a_failed_rejoin_still_reads_the_log():
    log = Log(seqs=2)

    async def broken() -> None:
        raise ConnectionError("layer down")

    stream = ResumeStream(
        last_seq=0, send=log.send, read_after=log.read_after, rejoin=broken, chunk=3,
        ping_resync_min=0.0,
    )
    stream.start()
    try:
        assert await stream.ping() == 2
        assert log.sent == texts(1, 2)
    finally:
        await stream.stop()
