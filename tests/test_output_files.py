"""--format svg|html read back by the programs that read them, and --output for every format."""

from __future__ import annotations

import io
import re
import stat
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

import attn_cli as attn
from attn_cli.course import card, lesson_names
from attn_cli.render import RenderOptions
from attn_cli.render.rich_render import HTML_WIDTH, print_walkthrough
from tests.conftest import assert_user_error

LESSONS = lesson_names()
NUMBER = re.compile(r"-?\d+\.\d+(?:e[+-]\d+)?")
SVG = "{http://www.w3.org/2000/svg}"


def terminal_numbers(walkthrough) -> list[str]:
    """Every decimal number the terminal shows at the width the exports use, in order."""
    console = Console(file=io.StringIO(), width=HTML_WIDTH, color_system=None)
    precision = card(walkthrough.lesson).precision  # the lesson's own default, as printed
    print_walkthrough(walkthrough, console, RenderOptions(precision=precision))
    return NUMBER.findall(console.file.getvalue())


def svg_numbers(svg: str) -> list[str]:
    """The decimal numbers in the SVG's text elements (rich writes each styled run as one)."""
    root = ElementTree.fromstring(svg)  # raises unless the SVG is well-formed XML
    assert root.tag == f"{SVG}svg"
    texts = ("".join(element.itertext()) for element in root.iter(f"{SVG}text"))
    return [number for text in texts for number in NUMBER.findall(text.replace("\xa0", " "))]


VOID_ELEMENTS = {"meta", "br", "link", "img", "hr", "input"}  # no end tag in HTML


class TextOfHtml(HTMLParser):
    """The text of an HTML page, as a browser reads it (tags dropped, entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.open_tags: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag not in VOID_ELEMENTS:
            self.open_tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open_tags and self.open_tags[-1] == tag, (tag, self.open_tags[-3:])
        self.open_tags.pop()

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def html_text(html: str) -> str:
    parser = TextOfHtml()
    parser.feed(html)
    parser.close()
    assert parser.open_tags == [], parser.open_tags  # every element closed, in order
    return "".join(parser.parts)


@pytest.mark.parametrize("lesson", LESSONS)
def test_svg_parses_as_xml_and_holds_every_number_the_terminal_shows(invoke, lesson):
    result = invoke(lesson, "--format", "svg")
    assert result.exit_code == 0, result.output
    shown = terminal_numbers(getattr(attn, lesson)())
    assert shown, "the lesson shows numbers"
    assert svg_numbers(result.stdout) == shown


@pytest.mark.parametrize("lesson", LESSONS)
def test_html_parses_and_holds_every_number_the_terminal_shows(invoke, lesson):
    result = invoke(lesson, "--format", "html")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<!DOCTYPE html>")
    text = html_text(result.stdout)
    assert NUMBER.findall(text) == terminal_numbers(getattr(attn, lesson)())


def test_svg_and_html_keep_the_values_colours_and_labels_of_the_slide_example(invoke):
    svg = invoke("scaled", "--example", "two-tokens", "--format", "svg").stdout
    numbers = svg_numbers(svg)
    # every weight of the lecture's example, as the lesson computes it
    w = attn.scaled(example="two-tokens").step("weights")
    for value in w.ravel():
        assert f"{value:.4f}" in numbers
    assert "fill: #" in svg or "fill:#" in svg  # styled: colours kept
    html = invoke("scaled", "--example", "two-tokens", "--format", "html").stdout
    assert "background-color: #" in html  # the shading of the weights
    text = html_text(html)
    assert "q1" in text and "k2" in text and "Weights" in text


def test_user_text_in_svg_and_html_is_escaped(invoke):
    tokens = "<b>&amp;,x</svg>"
    for fmt in ("svg", "html"):
        result = invoke("causal", "--n", "2", "--tokens", tokens, "--format", fmt)
        assert result.exit_code == 0, result.output
        if fmt == "svg":
            root = ElementTree.fromstring(result.stdout)
            text = "".join(root.itertext()).replace("\xa0", " ")
        else:
            text = html_text(result.stdout)
        assert "<b>&amp;" in text and "x</svg>" in text


@pytest.mark.parametrize("fmt", ["json", "markdown", "latex", "svg", "html"])
def test_output_file_holds_exactly_what_stdout_would(invoke, tmp_path, fmt):
    path = tmp_path / f"out.{fmt}"
    args = ("selfattn", "--n", "3", "--d", "2", "--format", fmt)
    written = invoke(*args, "--output", str(path))
    assert written.exit_code == 0, written.output
    assert written.stdout == ""
    assert path.read_text(encoding="utf-8") == invoke(*args).stdout


def test_rich_output_file_is_plain_text_with_shade_marks(invoke, tmp_path):
    path = tmp_path / "walkthrough.txt"
    result = invoke("scaled", "--example", "two-tokens", "-o", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    text = path.read_text(encoding="utf-8")
    assert "\x1b" not in text  # no colour codes in a file
    for weight in attn.scaled(example="two-tokens").step("weights").ravel():
        assert f"{weight:.4f}" in text  # the computed weights, as the terminal rounds them
    assert any(mark in text for mark in "░▒▓█")  # the shading, as characters


def test_output_replaces_an_existing_file(invoke, tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old", encoding="utf-8")
    assert invoke("scaled", "-f", "json", "-o", str(path)).exit_code == 0
    assert path.read_text(encoding="utf-8").startswith("{")


@pytest.fixture
def nothing_computed(monkeypatch):
    """Fail the test if a lesson is computed: the path must be refused before."""

    def compute(request):
        raise AssertionError("computed before refusing the --output path")

    monkeypatch.setattr("attn_cli.run.runner.compute", compute)


def test_output_into_a_missing_folder_is_refused_before_computing(
    invoke, tmp_path, nothing_computed
):
    path = tmp_path / "no" / "out.txt"
    assert_user_error(invoke("scaled", "--output", str(path)), "the folder", "does not exist")
    assert not path.parent.exists()


@pytest.mark.skipif(
    hasattr(__import__("os"), "geteuid") and __import__("os").geteuid() == 0,
    reason="root can write to read-only files and folders",
)
def test_output_to_a_read_only_folder_is_refused_before_computing(
    invoke, tmp_path, nothing_computed
):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert_user_error(invoke("scaled", "-o", str(folder / "x.md")), "cannot write there")
    finally:
        folder.chmod(stat.S_IRWXU)


def test_output_to_a_read_only_file_is_refused_before_computing(
    invoke, tmp_path, nothing_computed, monkeypatch
):
    path = tmp_path / "x.md"
    path.write_text("keep", encoding="utf-8")
    monkeypatch.setattr("os.access", lambda target, mode: Path(target) != path)
    assert_user_error(invoke("scaled", "-o", str(path)), "cannot write there")
    assert path.read_text(encoding="utf-8") == "keep"


def test_a_user_error_while_computing_writes_no_file(invoke, tmp_path):
    path = tmp_path / "out.json"
    result = invoke("scaled", "--q", "1,0", "--k", "1,1,1", "--v", "1", "-o", str(path))
    assert_user_error(result, "Q has 2 columns but K has 3")
    assert not path.exists()


def test_quiz_and_list_examples_with_files(invoke, tmp_path):
    assert_user_error(invoke("scaled", "--quiz", "-o", str(tmp_path / "q")), "leave out --output")
    assert_user_error(invoke("scaled", "--quiz", "--plot", str(tmp_path / "q.png")), "--plot")
    listing = tmp_path / "examples.txt"
    result = invoke("scaled", "--list-examples", "-o", str(listing))
    assert result.exit_code == 0 and result.stdout == ""
    assert "two-tokens" in listing.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["html", "svg"])
def test_the_library_writes_the_same_pages(invoke, fmt):
    walk = attn.selfattn()
    method = getattr(walk, f"to_{fmt}")
    assert method() + "\n" == invoke("selfattn", "--format", fmt).stdout
