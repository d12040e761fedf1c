"""attn explore --serve: the same app, served to a browser on localhost by textual-serve.

Every browser tab runs `python -m attn_cli explore LESSON` of its own. The page textual-serve
ships asks Google's servers for its font; the page served here uses the font textual-serve
carries instead, so nothing outside this machine is needed (a classroom without a network).
Two more changes to the page, for a projector: its font is sized to the window when the page
opens (about COLUMNS columns across and at least ROWS rows, unless the address says
``?fontsize=N``), and the keys go to the app from the start (the terminal takes the keyboard's
focus on load, and again on any click), where textual-serve's page waits for a click.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

# textual-serve's page template, and the font files it carries in its static folder.
TEMPLATE = "app_index.html"
FONT_FACE = """<style>
      @font-face {
        font-family: "Roboto Mono";
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf");
      }
    </style>"""


# The terminal the font is sized for: the explorer's 80 × 24 with room to spare.
COLUMNS = 100
ROWS = 30
# A cell of Roboto Mono in xterm.js, in ems of the font size (measured in Chromium).
CELL_WIDTH = 0.56
CELL_HEIGHT = 1.35
PAGE_SCRIPT = f"""<script>
      // attn: the font sized to the window ({COLUMNS} columns across, {ROWS} rows at least)
      // unless the address gives ?fontsize=, read by textual-serve's script on load; and the
      // keyboard's focus on the terminal from the start, and again after any click.
      (function () {{
        const terminal = document.getElementById("terminal");
        const asked = new URLSearchParams(window.location.search).get("fontsize");
        if (!asked) {{
          const across = window.innerWidth / ({COLUMNS} * {CELL_WIDTH});
          const down = window.innerHeight / ({ROWS} * {CELL_HEIGHT});
          terminal.dataset.fontSize = String(Math.max(10, Math.floor(Math.min(across, down))));
        }}
        function focusTerminal() {{
          const keys = document.querySelector(".xterm-helper-textarea");
          if (keys && document.activeElement !== keys) keys.focus();
        }}
        window.addEventListener("load", () => setTimeout(focusTerminal, 0));
        document.addEventListener("click", () => setTimeout(focusTerminal, 0));
      }})();
    </script>
  </body>"""


def offline_template(original: str) -> str:
    """textual-serve's page without its one external asset (Google's font stylesheet): the
    same font from the files it serves itself; with the script that sizes the font to the
    window and gives the terminal the keys (PAGE_SCRIPT)."""
    page = re.sub(r"<link[^>]*fonts\.googleapis\.com[^>]*>", FONT_FACE, original, flags=re.S)
    head, body_end, tail = page.rpartition("</body>")
    if not body_end:
        raise ValueError("textual-serve's page template has no </body>")
    return head + PAGE_SCRIPT + tail


def external_addresses(page: str) -> list[str]:
    """The http(s) addresses a page loads from (stylesheets, scripts, images, fonts): none
    may point off this machine. SVG namespaces are names, not loads."""
    loads = re.findall(r"""(?:href|src)\s*=\s*["'](https?://[^"']+)""", page)
    loads += re.findall(r"""url\(\s*["']?(https?://[^"')]+)""", page)
    return [url for url in loads if not re.match(r"https?://(localhost|127\.0\.0\.1)[:/]", url)]


def offline_page() -> str:
    """textual-serve's page template, offline (offline_template): served from memory, so that
    no folder is left behind however the server stops (a temporary folder was, before)."""
    import textual_serve

    original = (Path(textual_serve.__file__).parent / "templates" / TEMPLATE).read_text("utf-8")
    return offline_template(original)


def command(lesson: str, export_dir: Path) -> str:
    """The command each browser tab runs: the POSIX shell textual-serve starts it with replaces
    itself with it (exec), so that the process the server holds is the explorer itself, which
    it can stop (TabService.stop); Windows' shell has no exec."""
    words = [sys.executable, "-m", "attn_cli", "explore", lesson, "--export-dir", str(export_dir)]
    line = " ".join(shlex.quote(word) for word in words)
    return f"exec {line}" if os.name == "posix" else line


# The address the server listens on: this machine's loopback, never a network interface.
BIND = "127.0.0.1"
# The names a browser on this machine reaches the server by (the page says localhost).
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
# Explorers running at once: each browser tab is a process of its own (about 70 MB); a further
# tab gets a page that says so, not a process.
MAX_SESSIONS = 4
# The largest terminal a tab's page may ask for, in cells: a screen's worth (a 4K screen at the
# page's smallest font, 10 px, is some 690 × 160). The explorer draws every cell; one page's
# ["resize", {"width": 20000, "height": 20000}] grew its process by gigabytes.
MAX_TAB_COLUMNS = 700
MAX_TAB_ROWS = 200
# How long a tab's explorer has to quit once its page has gone, before it is killed: an explorer
# still drawing (or stopped, or stuck) reads no quit.
QUIT_SECONDS = 5.0


def tab_size(value: object, default: int, most: int) -> int:
    """A number of cells a page asked for, as the explorer is given it: whole, from 1 to
    ``most``; ``default`` for what is no number (textual-serve passes the page's JSON or its
    address's ?width= on as it came)."""
    if isinstance(value, str):
        value = value.strip()
        value = int(value) if value.isdigit() else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and math.isnan(value):
        return default
    return int(min(max(value, 1), most))  # 10**400 or inf: most


def local_host(host: str | None, port: int) -> bool:
    """Whether a request's Host header names this server: a local name with its port (a page
    served under another name, evil.example resolved to 127.0.0.1, is refused: DNS
    rebinding)."""
    return host is not None and host.lower() in {f"{name}:{port}" for name in LOCAL_NAMES}


def local_origin(origin: str | None, port: int) -> bool:
    """Whether a WebSocket handshake comes from a page this server served (its Origin): a page
    elsewhere that the user visits may not drive the explorer."""
    return origin is not None and origin.lower() in {
        f"http://{name}:{port}" for name in LOCAL_NAMES
    }


BUSY_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>attn explore: {limit} explorers open</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>{limit} explorers are open already</h1>
<p>This attn explore server runs at most {limit} at once (each is a process of its own). Close
one of the other tabs, then reload this page.</p>
</body></html>
"""


def refusal(request: Any, port: int, sessions: int) -> Any:
    """The response that refuses ``request`` (aiohttp's), or None to serve it: a Host that is
    not this server's (403), a WebSocket handshake from a page elsewhere (403), and, with
    MAX_SESSIONS explorers running, a new page or handshake (503, a page that says so)."""
    from aiohttp import web

    if not local_host(request.headers.get("Host"), port):
        return web.Response(status=403, text="attn explore answers only on localhost.\n")
    websocket = request.path == "/ws"
    if websocket and not local_origin(request.headers.get("Origin"), port):
        return web.Response(status=403, text="attn explore answers only its own pages.\n")
    if sessions >= MAX_SESSIONS and (websocket or request.path == "/"):
        page = BUSY_PAGE.format(limit=MAX_SESSIONS)
        return web.Response(status=503, text=page, content_type="text/html")
    return None


def tab_service() -> type:
    """textual-serve's AppService (one browser tab's explorer process), held to a screen's size
    (MAX_TAB_COLUMNS × MAX_TAB_ROWS, however large a size the page asks for) and stopped when
    its page goes: asked to quit, and killed if it has not within QUIT_SECONDS."""
    import asyncio

    from textual_serve.app_service import AppService

    class TabService(AppService):
        async def set_terminal_size(self, width: int, height: int) -> None:
            await super().set_terminal_size(
                tab_size(width, 80, MAX_TAB_COLUMNS), tab_size(height, 24, MAX_TAB_ROWS)
            )

        async def stop(self) -> None:
            process = self._process
            if process is None or self._task is None:
                return
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
            await self.send_meta({"type": "quit"})
            try:
                await asyncio.wait_for(process.wait(), QUIT_SECONDS)
            except TimeoutError:
                if process.returncode is None:
                    process.kill()
                await process.wait()
            task, self._task = self._task, None
            if task is not None:
                await task  # it ends once the process's output has closed

    return TabService


def explore_server(command_line: str, port: int) -> Any:
    """textual-serve's server for ``command_line`` on this machine's loopback at ``port``,
    guarded (see :func:`refusal`): its pages say http://localhost:PORT. Each tab's explorer is
    a TabService (tab_service), stopped when its page goes or the server stops."""
    import asyncio
    import logging

    import jinja2
    from aiohttp import WSCloseCode, web
    from aiohttp_jinja2 import get_env
    from textual_serve.server import Server

    tab_class = tab_service()
    log = logging.getLogger("textual-serve")

    class ExploreServer(Server):
        sessions = 0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.tabs: dict[Any, web.WebSocketResponse] = {}  # each tab's service: its socket
            # The tabs being stopped, held here: the handler's own task is let go by aiohttp
            # once the page's connection is lost, and a task nothing holds may be collected
            # before it is done.
            self.stopping: set[asyncio.Task[None]] = set()

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            get_env(app).loader = jinja2.DictLoader({TEMPLATE: offline_page()})

            @web.middleware
            async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
                refused = refusal(request, self.port, self.sessions)
                return refused if refused is not None else await handler(request)

            app.middlewares.append(guard)
            return app

        async def on_shutdown(self, app: web.Application) -> None:
            """The server stops (Ctrl+C, SIGTERM): every page's socket closed, so that each
            tab's handler ends and stops its explorer; done once every one has."""
            for websocket in list(self.tabs.values()):
                await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"server stopped")
            while self.tabs:  # each tab's stop is bounded (QUIT_SECONDS, then a kill)
                await asyncio.sleep(0.05)

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """textual-serve's handler, with a TabService for the tab: its explorer starts at
            the page's size (held to a screen's), and stops when the page's socket closes."""
            websocket = web.WebSocketResponse(heartbeat=15)
            self.sessions += 1
            tab = tab_class(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.tabs[tab] = websocket
            try:
                await websocket.prepare(request)
                query = request.query
                await tab.start(
                    tab_size(query.get("width"), 80, MAX_TAB_COLUMNS),
                    tab_size(query.get("height"), 24, MAX_TAB_ROWS),
                )
                await self._process_messages(websocket, tab)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as error:  # a page's malformed message: one line, the tab closed
                log.error("a page's session ended: %s: %s", type(error).__name__, error)
            finally:
                stopping = asyncio.ensure_future(self.end_tab(tab))
                self.stopping.add(stopping)
                stopping.add_done_callback(self.stopping.discard)
                await asyncio.shield(stopping)
            return websocket

        async def end_tab(self, tab: Any) -> None:
            """The tab's explorer stopped (TabService.stop), and the tab let go."""
            try:
                await tab.stop()
            finally:
                del self.tabs[tab]
                self.sessions -= 1

    return ExploreServer(
        command_line,
        host=BIND,
        port=port,
        public_url=f"http://localhost:{port}",
    )


def check_port(port: int) -> None:
    """Refuse, before anything is printed, a port that is taken on this machine's loopback."""
    import socket

    from attn_cli.core.errors import UserError

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            probe.bind((BIND, port))
        except OSError as error:
            raise UserError(
                f"--port {port}: {error.strerror or error} on this machine (another server, "
                "or another attn explore --serve, listens there); choose another --port."
            ) from None


def serve_app(lesson: str, port: int, export_dir: Path) -> None:
    """Serve the explorer on http://localhost:PORT until Ctrl+C."""
    from attn_cli.core.errors import UserError

    check_port(port)
    server = explore_server(command(lesson, export_dir.resolve()), port)
    server.title = f"attn explore {lesson}"
    try:
        server.serve()
    except OSError as error:  # taken between the check and the bind
        raise UserError(
            f"--port {port}: {error.strerror or error}; choose another --port."
        ) from None
