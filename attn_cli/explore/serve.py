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


def serve_app(lesson: str, port: int, export_dir: Path, host: str = "localhost") -> None:
    """Serve the explorer on http://HOST:PORT until Ctrl+C."""
    from textual_serve.server import Server

    server = Server(
        command(lesson, export_dir.resolve()),
        host=host,
        port=port,
        title=f"attn explore {lesson}",
        templates_path=templates_folder(),
    )
    server.serve()
