"""attn explore --serve: the same app, served to a browser on localhost by textual-serve.

Every browser tab runs `python -m attn_cli explore LESSON` of its own. The page textual-serve
ships asks Google's servers for its font; the page served here uses the font textual-serve
carries instead, so nothing outside this machine is needed (a classroom without a network).
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


def offline_template(original: str) -> str:
    """textual-serve's page without its one external asset (Google's font stylesheet): the
    same font from the files it serves itself."""
    return re.sub(r"<link[^>]*fonts\.googleapis\.com[^>]*>", FONT_FACE, original, flags=re.S)


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
