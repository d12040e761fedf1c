"""--format latex writes a whole document that pdflatex compiles as saved (issue 42: the
fragment it wrote, its preamble in a comment, made `pdflatex cat.tex` exit 1); --latex-fragment
writes the body alone, to paste into a document of one's own."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import attn_cli as attn
from attn_cli.render.latex_render import FIRST_LINE, PREAMBLE_LINES
from tests.waits import HANG_GUARD_SECONDS


def test_the_output_file_is_a_whole_document(invoke, tmp_path):
    out = tmp_path / "cat.tex"
    result = invoke("scaled", "--example", "cat-slept", "--format", "latex", "--output", str(out))
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert lines[1 : 1 + len(PREAMBLE_LINES)] == list(PREAMBLE_LINES)
    assert "\\begin{document}" in lines and lines[-1] == "\\end{document}"
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (Debian: apt-get install texlive-latex-base)")
    compiled = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "cat.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
    )
    assert compiled.returncode == 0, compiled.stdout[-2000:]
    assert (tmp_path / "cat.pdf").stat().st_size > 0


def test_a_fragment_on_request_states_its_preamble(invoke):
    result = invoke("scaled", "--format", "latex", "--latex-fragment")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == FIRST_LINE
    assert "\\begin{document}" not in result.stdout


def test_the_python_hook_gives_a_fragment_or_a_document():
    walkthrough = attn.scaled(example="cat-slept")
    assert walkthrough.to_latex().splitlines()[0] == FIRST_LINE
    assert walkthrough.to_latex(document=True).rstrip().endswith("\\end{document}")


def test_no_output_format_speaks_of_a_shading_it_lacks(invoke):
    """Issue 42: LaTeX said "darker cells get more attention" and has no shading."""
    for fmt in ("latex", "markdown", "json"):
        assert "darker" not in invoke("scaled", "--format", fmt).stdout
