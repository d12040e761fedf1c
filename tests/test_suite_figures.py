"""The README's test figures are measured, not typed (benchmarks/suite.py --write), and a test
count that has drifted from the suite's fails here, naming the command that measures it anew."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- BEGIN suite-figures: measured by python benchmarks/suite.py --write -->"
END = "<!-- END suite-figures -->"


def stated(doc: Path) -> str:
    text = doc.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"{doc.name}: no suite-figures markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def test_the_readme_and_the_development_guide_state_the_same_figures():
    readme = stated(ROOT / "README.md")
    assert readme == stated(ROOT / "docs" / "development.md")
    assert re.search(r"Measured on \d{4}-\d\d-\d\d with `python benchmarks/suite.py`", readme)
    assert re.search(r"the install took .+ at a load average of [\d.]+ to [\d.]+", readme)


def test_the_stated_test_count_is_todays(request):
    """Only in a run of the whole suite as the README runs it (no paths, -k, -m, --ignore or
    --deselect of one's own): then every test is in this session's items."""
    config = request.config
    default = config.getini("addopts")
    whole = not config.args or [Path(a).resolve() for a in config.args] == [ROOT / "tests"]
    own = config.option.keyword or config.option.ignore or config.option.deselect
    if not whole or own or f"-m '{config.option.markexpr}'" not in default:
        pytest.skip("counts the whole suite's tests: run `pytest` with no selection of its own")
    numbers = re.findall(r"([\d,]+) (?:passed|failed|skipped|errors)", stated(ROOT / "README.md"))
    count = sum(int(n.replace(",", "")) for n in numbers)
    collected = len(request.session.items)
    assert abs(collected - count) <= 0.1 * collected, (
        f"README.md states {count:,} tests, the suite has {collected:,}: measure again with "
        "`python benchmarks/suite.py --write`"
    )
