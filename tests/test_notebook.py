"""docs/examples/attention.ipynb, executed in a real Jupyter kernel: its outputs hold the values.

The values each lesson cell shows are checked against float64 formulas written out here (or,
for lessons whose formula the lesson's own tests check, against the same call made in this
process), so the notebook proves the library works where students use it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.course import lesson_names
from tests.conftest import softmax_rows
from tests.waits import HANG_GUARD_SECONDS

LESSONS = lesson_names()

# A kernel in a subprocess: slow. One xdist group, so that the module-scoped notebook run
# happens once (on one worker) rather than once on each worker that gets one of its tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("notebook")]

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "examples" / "attention.ipynb"
# The notebook's own inputs.
Q = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
K = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
X = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]])
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?")


def numbers(text: str) -> np.ndarray:
    """The numbers in a printed numpy array (its repr), in order."""
    return np.array([float(x) for x in _NUMBER.findall(text.replace("float64", ""))])


@pytest.fixture(scope="module")
def executed() -> dict[str, dict]:
    """Run the notebook in a fresh kernel; each lesson cell's shown HTML and result text."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extra")
    pytest.importorskip("ipykernel", reason="ipykernel (the Python kernel) is in the dev extra")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=HANG_GUARD_SECONDS,
        kernel_name="python3",
        resources={"metadata": {"path": "."}},
    )
    client.execute()
    cells: dict[str, dict] = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        errors = [out for out in cell.outputs if out.output_type == "error"]
        assert not errors, (index, errors)
        name = cell.metadata.get("lesson", f"cell{index}")
        cells[name] = {
            "html": "".join(
                out.data.get("text/html", "")
                for out in cell.outputs
                if out.output_type == "display_data"
            ),
            "result": "".join(
                out.data["text/plain"]
                for out in cell.outputs
                if out.output_type == "execute_result"
            ),
            "stdout": "".join(out.text for out in cell.outputs if out.output_type == "stream"),
        }
    return cells


def test_the_last_cell_runs_every_lesson_on_its_example(executed):
    """A lesson needs no cell of its own: the loop over attn.lessons() shows it."""
    lines = executed["every"]["stdout"].splitlines()
    assert [line.split(":")[0] for line in lines] == list(LESSONS)
    for line, name in zip(lines, LESSONS, strict=True):
        w = getattr(attn, name)()
        assert line == f"{name}: {len(w.steps)} steps, {w.title}"


def test_scaled_cell(executed):
    weights = softmax_rows(Q @ K.T / np.sqrt(3))
    cell = executed["scaled"]
    np.testing.assert_array_equal(numbers(cell["result"]), weights.round(4).ravel())
    assert "background-color" in cell["html"]  # shaded as in the terminal
    assert f"{weights[0, 2]:.4f}" in cell["html"] and f"{(weights @ V)[1, 0]:.4f}" in cell["html"]


def test_selfattn_and_causal_cells(executed):
    scores = X @ X.T / np.sqrt(4)  # identity projections: Q = K = V = X
    np.testing.assert_array_equal(
        numbers(executed["selfattn"]["result"]), softmax_rows(scores).round(4).ravel()
    )
    masked = np.where(np.tri(3, dtype=bool), scores, -np.inf)
    causal = softmax_rows(masked)
    np.testing.assert_array_equal(numbers(executed["causal"]["result"]), causal.round(4).ravel())
    for token in ("the", "cat", "sat"):
        assert token in executed["causal"]["html"]


def test_posenc_cell(executed):
    positions, pairs = np.arange(6)[:, None], np.arange(4)[None, :]
    angles = positions / 10000.0 ** (2 * pairs / 8)
    pe = np.empty((6, 8))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    np.testing.assert_array_equal(numbers(executed["posenc"]["result"]), pe.round(4).ravel())


def test_variance_cell(executed):
    found = numbers(executed["variance"]["result"]).reshape(3, 3)
    np.testing.assert_array_equal(found[:, 0], [1, 16, 256])
    np.testing.assert_allclose(found[:, 1], found[:, 0], rtol=0.1)  # var(q·k) ≈ d_k
    np.testing.assert_allclose(found[:, 2], 1.0, atol=0.1)  # ≈ 1 once divided by √d_k


def test_cost_cell(executed):
    # (time, memory) of vanilla, FlashAttention, linear (r = d) and a window of 2·256 + 1 keys.
    n, d, k = 1000, 512, 513
    expected = [n * n * d, n * n, n * n * d, n, n * d * d, n * d, n * k * d, n * k]
    np.testing.assert_array_equal(numbers(executed["cost"]["result"]), expected)


def test_flash_cell_equals_plain_attention(executed):
    (error,) = numbers(executed["flash"]["result"])
    assert error < 1e-12


def test_linear_and_kvcache_cells(executed):
    (gap,) = numbers(executed["linear"]["result"])
    assert gap == round(attn.linear(Q, K, V).meta["softmax_gap"], 4) > 0
    (error,) = numbers(executed["kvcache"]["result"])
    assert error < 1e-12  # the cached rows are causal attention's


def test_bahdanau_and_multihead_cells_match_this_process(executed):
    np.testing.assert_array_equal(
        numbers(executed["bahdanau"]["result"]), attn.bahdanau().output.round(4).ravel()
    )
    heads = attn.multihead(n=4, d_model=8, heads=2, seed=0)
    np.testing.assert_array_equal(
        numbers(executed["multihead"]["result"]), heads.output.round(4).ravel()
    )


def test_errors_and_json_cell(executed):
    (last,) = [cell for name, cell in executed.items() if "UserError" in cell["stdout"]]
    assert "scaled ['scores', 'scaled', 'weights', 'output']" in last["stdout"]
    assert "UserError: Q has 3 columns but K has 2" in last["stdout"]


def test_window_cell(executed):
    """Window 1 over three tokens: token 0 and token 2 do not see each other."""
    scores = X @ X.T / np.sqrt(4)
    band = np.abs(np.subtract.outer(np.arange(3), np.arange(3))) <= 1
    weights = softmax_rows(np.where(band, scores, -np.inf))
    np.testing.assert_array_equal(numbers(executed["window"]["result"]), weights.round(4).ravel())


def test_graph_cell(executed):
    """The path 0-1-2: node 0 and node 2 see only node 1, node 1 sees both ends."""
    scores = X @ X.T / np.sqrt(4)
    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)
    weights = softmax_rows(np.where(path, scores, -np.inf))
    np.testing.assert_array_equal(numbers(executed["graph"]["result"]), weights.round(4).ravel())
