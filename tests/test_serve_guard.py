"""attn explore --serve answers only this machine's own pages, runs at most MAX_SESSIONS
explorers at once, and says in one line when its port is taken (issue 43: a page elsewhere got
101 and an explorer process per connection, 20 connections 20 processes; a taken port printed
the banner, then a traceback).

The server is textual-serve's app with attn's guard, run in-process by aiohttp's test server;
each browser tab's explorer is stood in for by a process that waits (no Textual app starts).
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time

import pytest

from attn_cli.explore.serve import MAX_SESSIONS, local_host, local_origin
from tests.conftest import assert_user_error

pytest.importorskip("textual_serve")

# Stands in for a tab's explorer: waits, and ends at the first byte textual-serve sends it (the
# quit it sends when the tab closes) or when its input closes.
STAND_IN = f"{sys.executable} -c 'import sys; sys.stdin.buffer.read(1)'"


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("localhost:8000", True),
        ("127.0.0.1:8000", True),
        ("[::1]:8000", True),
        ("LOCALHOST:8000", True),
        ("evil.example", False),
        ("evil.example:8000", False),
        ("localhost:8001", False),
        ("localhost", False),
        (None, False),
    ],
)
def test_only_this_servers_own_host_is_answered(host, allowed):
    assert local_host(host, 8000) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:8000", True),
        ("http://127.0.0.1:8000", True),
        ("http://evil.example", False),
        ("http://localhost:8000.evil.example", False),
        ("https://localhost:8000", False),
        ("null", False),
        (None, False),
    ],
)
def test_only_this_servers_own_pages_may_open_a_session(origin, allowed):
    assert local_origin(origin, 8000) is allowed


def test_the_server_refuses_other_origins_and_hosts_and_caps_its_sessions():
    asyncio.run(_scenario())


async def _scenario() -> None:
    import aiohttp
    from aiohttp.test_utils import TestClient, TestServer

    from attn_cli.explore.serve import explore_server

    server = explore_server(STAND_IN, port=0)
    test_server = TestServer(await server._make_app(), host="127.0.0.1")
    async with TestClient(test_server) as client:
        port = server.port = test_server.port
        own = {"Origin": f"http://localhost:{port}"}
        index = await client.get("/")
        assert index.status == 200
        for headers in ({"Host": "evil.example"}, {"Host": f"evil.example:{port}"}):
            assert (await client.get("/", headers=headers)).status == 403
        for headers in ({"Origin": "http://evil.example"}, {}, {**own, "Host": "evil.example"}):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await client.ws_connect("/ws", headers=headers)
            assert refused.value.status == 403
        sessions = [await client.ws_connect("/ws", headers=own) for _ in range(MAX_SESSIONS)]
        await _until(lambda: server.sessions == MAX_SESSIONS)  # every explorer started
        with pytest.raises(aiohttp.WSServerHandshakeError) as busy:
            await client.ws_connect("/ws", headers=own)
        assert busy.value.status == 503
        page = await client.get("/")
        assert page.status == 503
        assert f"{MAX_SESSIONS} explorers are open already" in await page.text()
        await sessions[0].close()
        await _until(lambda: server.sessions < MAX_SESSIONS)  # its explorer stopped
        assert (await client.get("/")).status == 200
        for session in sessions[1:]:
            await session.close()
        await _until(lambda: server.sessions == 0)  # every explorer process ended


async def _until(condition, seconds: float = 300.0) -> None:
    """Wait for the server's state; the deadline is a hang guard (minutes: a loaded machine
    starts and stops an explorer's process in seconds), not a speed target."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"the server's sessions never reached the state ({seconds} s)")
        await asyncio.sleep(0.05)  # the next look at the state


def test_a_port_in_use_is_one_line_before_the_banner(invoke):
    pytest.importorskip("textual")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = invoke("explore", "--serve", "--port", str(port))
    assert_user_error(result, f"--port {port}", "in use", "choose another --port")
