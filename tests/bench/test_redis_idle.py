"""Found by the benchmarks (B4): with redis-py >= 6 an idle socket's consumer died after 5 s.

channels_redis blocks 5 s in BZPOPMIN; redis-py's default 5 s socket timeout raced it and the
consumer crashed with "Timeout reading" (close 1011). settings.py now sets a longer timeout.
Both Redis layers (settings.REDIS_CHANNEL_LAYER) are checked.
"""

from __future__ import annotations

import json
import time

import pytest
from contextadmin_sdk.client import RunReporter
from websockets.sync.client import connect

from bench.servers import Site, daphnes, prepare_site, redis_server


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """One prepared database for both layers (each test starts its own Redis and Daphne)."""
    return prepare_site(tmp_path_factory.mktemp("redis-idle"))


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.parametrize("redis_layer", ["lists", "pubsub"])
def test_an_idle_inspector_on_the_redis_layer_outlives_the_blocking_pop(
    tmp_path, site: Site, redis_layer: str
) -> None:
    with (
        redis_server(tmp_path) as redis,
        daphnes(site, 1, redis_url=redis.url, redis_layer=redis_layer) as (server,),
    ):
        reporter = RunReporter(server.url, site.token, batch_size=1)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        headers = {"Origin": server.url, "Cookie": f"sessionid={site.session}"}
        with connect(f"{server.ws_url}/ws/runs/{run_id}/", additional_headers=headers) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "snapshot"
            time.sleep(7)  # longer than BZPOPMIN's 5 s: the consumer must still be there
            reporter.event("agent_text", agent="InterviewAgent", text="hello")
            reporter.close()
            message = json.loads(ws.recv(timeout=10))
        assert message["type"] == "event" and message["seq"] == 1
        log = next(site.workdir.glob("daphne-redis-*.log")).read_text()
        assert "Timeout reading" not in log, redis_layer
