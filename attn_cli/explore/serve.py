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

import re
import shlex
import sys
import tempfile
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


def templates_folder() -> Path:
    """A folder holding the offline page template (written afresh for this server)."""
    import textual_serve

    original = (Path(textual_serve.__file__).parent / "templates" / TEMPLATE).read_text("utf-8")
    folder = Path(tempfile.mkdtemp(prefix="attn-explore-"))
    (folder / TEMPLATE).write_text(offline_template(original), encoding="utf-8")
    return folder


def command(lesson: str, export_dir: Path) -> str:
    """The command each browser tab runs."""
    words = [sys.executable, "-m", "attn_cli", "explore", lesson, "--export-dir", str(export_dir)]
    return " ".join(shlex.quote(word) for word in words)


# The address the server listens on: this machine's loopback, never a network interface.
BIND = "127.0.0.1"
# The names a browser on this machine reaches the server by (the page says localhost).
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
# Explorers running at once: each browser tab is a process of its own (about 70 MB); a further
# tab gets a page that says so, not a process.
MAX_SESSIONS = 4


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


def explore_server(command_line: str, port: int) -> Any:
    """textual-serve's server for ``command_line`` on this machine's loopback at ``port``,
    guarded (see :func:`refusal`): its pages say http://localhost:PORT."""
    from aiohttp import web
    from textual_serve.server import Server

    class ExploreServer(Server):
        sessions = 0

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()

            @web.middleware
            async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
                refused = refusal(request, self.port, self.sessions)
                return refused if refused is not None else await handler(request)

            app.middlewares.append(guard)
            return app

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            self.sessions += 1
            try:
                return await super().handle_websocket(request)
            finally:
                self.sessions -= 1

    return ExploreServer(
        command_line,
        host=BIND,
        port=port,
        public_url=f"http://localhost:{port}",
        templates_path=templates_folder(),
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
