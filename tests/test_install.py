"""Install advice that can be followed: one function (attn_cli.core.install.install_command) says the
command for the way attn was installed (pip from an index, an editable clone, pipx, uv tool, uv's
pip), each installer faked here; library errors name the Python call, the CLI's the flag."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import attn_cli as attn
from attn_cli.core import install
from attn_cli.core.errors import UserError
from attn_cli.core.install import Facts, install_command, installation
from tests.conftest import assert_user_error

ROOT = Path(__file__).resolve().parent.parent
REAL_FACTS = install.facts  # before the suite's autouse fixture fakes pip from an index
EDITABLE = json.dumps({"url": "file:///home/ada/attn", "dir_info": {"editable": True}})
WHEEL = json.dumps({"url": "file:///tmp/attn_cli-0.1.0-py3-none-any.whl", "archive_info": {}})
# As the installed metadata declares the extras (pyproject.toml's optional-dependencies).
REQUIRES = (
    "numpy>=2.0",
    "torch>=2.1; extra == 'torch'",
    "matplotlib>=3.8; extra == 'plot'",
    'triton>=3; extra == "kernel"',
    "torch>=2.1; extra == 'kernel'",
)


def pipx_env(tmp_path: Path) -> Path:
    prefix = tmp_path / "pipx" / "venvs" / "attn-cli"
    prefix.mkdir(parents=True)
    (prefix / "pipx_metadata.json").write_text("{}", encoding="utf-8")
    return prefix


def uv_tool_env(tmp_path: Path) -> Path:
    prefix = tmp_path / "uv" / "tools" / "attn-cli"
    prefix.mkdir(parents=True)
    (prefix / "uv-receipt.toml").write_text("[tool]\n", encoding="utf-8")
    return prefix


# installer -> (facts, under tmp_path), the advice for the torch extra, for the plot extra
CASES = {
    "pip": (
        lambda tmp: Facts(tmp / "venv", None, "pip\n", REQUIRES),
        "pip install 'attn-cli[torch]'",
        "pip install 'attn-cli[plot]'",
    ),
    "pip, a wheel file": (
        lambda tmp: Facts(tmp / "venv", WHEEL, "pip\n", REQUIRES),
        "pip install 'attn-cli[torch]'",
        "pip install 'attn-cli[plot]'",
    ),
    "editable": (
        lambda tmp: Facts(tmp / "venv", EDITABLE, "pip\n", REQUIRES),
        "pip install -e '.[torch]' (in /home/ada/attn)",
        "pip install -e '.[plot]' (in /home/ada/attn)",
    ),
    "pipx": (
        lambda tmp: Facts(pipx_env(tmp), None, "pip\n", REQUIRES),
        "pipx inject attn-cli 'torch>=2.1'",
        "pipx inject attn-cli 'matplotlib>=3.8'",
    ),
    "pipx, editable": (
        lambda tmp: Facts(pipx_env(tmp), EDITABLE, "pip\n", REQUIRES),
        "pipx inject attn-cli 'torch>=2.1'",
        "pipx inject attn-cli 'matplotlib>=3.8'",
    ),
    "uv tool": (
        lambda tmp: Facts(uv_tool_env(tmp), None, "uv\n", REQUIRES),
        "uv tool install --with 'torch>=2.1' attn-cli",
        "uv tool install --with 'matplotlib>=3.8' attn-cli",
    ),
    "uv pip": (
        lambda tmp: Facts(tmp / ".venv", None, "uv\n", REQUIRES),
        "uv pip install 'attn-cli[torch]'",
        "uv pip install 'attn-cli[plot]'",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_installer_gets_its_own_command(tmp_path, case):
    make, torch_advice, plot_advice = CASES[case]
    found = make(tmp_path)
    assert install_command("torch", found=found) == torch_advice
    assert install_command("plot", found=found) == plot_advice


@pytest.mark.parametrize(
    ("facts", "installer"),
    [
        (Facts(Path("/home/ada/.local/share/pipx/venvs/attn-cli"), None, "pip"), "pipx"),
        (Facts(Path("/home/ada/.local/pipx/venvs/attn-cli"), None, "pip"), "pipx"),  # older pipx
        (Facts(Path("/home/ada/.local/share/uv/tools/attn-cli"), None, "uv"), "uv-tool"),
        (Facts(Path("/home/ada/.venv"), None, "uv"), "uv"),
        (Facts(Path("/home/ada/.venv"), None, None), "pip"),  # nothing says otherwise
        (Facts(Path("/home/ada/venvs/x"), None, "pip"), "pip"),  # a venvs folder not pipx's
        (Facts(Path("/venv"), "not json", "pip"), "pip"),
        (Facts(Path("/venv"), json.dumps({"dir_info": {}}), "pip"), "pip"),  # pip install .
    ],
)
def test_detection_by_folder_alone_and_what_is_not_a_sign(facts, installer):
    """pipx's and uv's environments are recognised by where they lie even without their marker
    files; a non-editable install from a folder is pip's."""
    assert installation(facts).installer == installer


def test_an_extra_with_several_packages_and_plain_packages(tmp_path):
    pipx = Facts(pipx_env(tmp_path), None, "pip", REQUIRES)
    assert install_command("kernel", found=pipx) == "pipx inject attn-cli 'triton>=3' 'torch>=2.1'"
    uv = Facts(uv_tool_env(tmp_path), None, "uv", REQUIRES)
    assert install_command("kernel", found=uv) == (
        "uv tool install --with 'triton>=3' --with 'torch>=2.1' attn-cli"
    )
    pip = Facts(Path("/venv"), None, "pip", ())
    assert install_command("kernel", found=pip) == "pip install 'attn-cli[kernel]'"
    assert install_command(packages=["torch>=2.1"], upgrade=True, found=pip) == (
        "pip install -U 'torch>=2.1'"
    )
    assert install_command(packages=["array-api-compat>=1.9"], found=pipx) == (
        "pipx inject attn-cli 'array-api-compat>=1.9'"
    )
    # Without installed metadata (a source tree on PYTHONPATH): pyproject.toml's extras.
    bare = Facts(pipx_env(tmp_path / "again"), None, None, ())
    assert install_command("plot", found=bare) == "pipx inject attn-cli 'matplotlib>=3.8'"


def test_requirements_are_read_from_pyproject_in_a_source_tree(monkeypatch):
    """Each extra's packages and each bound come from pyproject.toml, where they are written
    once: from the tree's own file when attn runs from one (its metadata, if any, is an older
    pip install -e's), from the installed metadata elsewhere."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = REAL_FACTS()
    for extra, packages in project["optional-dependencies"].items():
        assert install._extra_packages(extra, found.requires) == tuple(packages)
        assert install._extra_packages(extra, ()) == tuple(packages)  # no metadata: the tree's
    assert install.declared("array-api-compat", found=found) in project["dependencies"]
    assert install.declared("torch", "torch") == project["optional-dependencies"]["torch"][0]
    # Installed elsewhere (no pyproject.toml beside the package): the metadata alone.
    monkeypatch.setattr(install, "_source_tree_requires", lambda: ())
    wheel = Facts(Path("/venv"), None, "pip", ("numpy>=9.9", "torch>=3.0; extra == 'torch'"))
    assert install.declared("numpy", found=wheel) == "numpy>=9.9"
    assert install.declared("torch", "torch", found=wheel) == "torch>=3.0"
    assert install.declared("rich", found=wheel) == "rich"  # nothing declares it: the name
    assert install._extra_packages("plot", wheel.requires) == ("attn-cli[plot]",)


class FakeDistribution:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.requires = list(REQUIRES)

    def read_text(self, name: str) -> str | None:
        return self.files.get(name)


@pytest.mark.parametrize(
    ("files", "advice"),
    [
        ({"direct_url.json": EDITABLE, "INSTALLER": "pip\n"}, "pip install -e '.[torch]'"),
        ({"INSTALLER": "pip\n"}, "pip install 'attn-cli[torch]'"),
        ({"INSTALLER": "uv\n"}, "uv pip install 'attn-cli[torch]'"),
    ],
)
def test_facts_are_read_from_the_installed_dist_info(monkeypatch, tmp_path, files, advice):
    from importlib import metadata

    monkeypatch.setattr(install, "facts", REAL_FACTS)
    monkeypatch.setattr(metadata, "distribution", lambda name: FakeDistribution(files))
    monkeypatch.setattr("sys.prefix", str(tmp_path))
    assert install_command("torch").startswith(advice)


def test_facts_of_a_source_tree_never_installed(monkeypatch, tmp_path):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(install, "facts", REAL_FACTS)
    monkeypatch.setattr(metadata, "distribution", missing)
    monkeypatch.setattr("sys.prefix", str(pipx_env(tmp_path)))
    # the torch extra's packages, from pyproject.toml: torch and the safetensors reader
    assert install_command("torch") == "pipx inject attn-cli 'torch>=2.1' 'safetensors>=0.6.1'"


def test_this_checkouts_own_install_is_detected():
    """The real facts of this test run: whatever it is, a command naming torch comes back."""
    found = REAL_FACTS()
    assert installation(found).installer in ("pip", "editable", "pipx", "uv-tool", "uv")
    assert "torch" in install_command("torch", found=found)


# --- the messages that give advice go through it ---------------------------------------------


@pytest.fixture
def without_matplotlib(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )


@pytest.fixture(params=["pipx", "uv tool", "editable"])
def faked(request, monkeypatch, tmp_path):
    """Attn installed by another installer than the suite's pip: (torch advice, plot advice)."""
    make, torch_advice, plot_advice = CASES[request.param]
    found = make(tmp_path)
    monkeypatch.setattr(install, "facts", lambda: found)
    return torch_advice, plot_advice


def test_cli_errors_give_the_installers_command(invoke, without_torch, without_matplotlib, faked):
    torch_advice, plot_advice = faked
    assert_user_error(invoke("scaled", "--backend", "torch"), "--backend torch", torch_advice)
    assert_user_error(invoke("scaled", "--device", "cuda"), "--device cuda", torch_advice)
    assert_user_error(invoke("bench", "--device", "cuda"), "--device cuda", torch_advice)
    assert_user_error(invoke("bench", "--impl", "naive"), "--impl naive", torch_advice)
    assert_user_error(invoke("scaled", "--plot", "x.png"), "--plot needs matplotlib", plot_advice)
    assert_user_error(invoke("bench", "--plot", "x.png"), "--plot needs matplotlib", plot_advice)


def test_library_errors_name_the_python_call(without_torch, without_matplotlib, faked):
    torch_advice, plot_advice = faked
    with pytest.raises(UserError) as raised:
        attn.scaled().plot()
    message = str(raised.value)
    assert message.startswith("plot() needs matplotlib") and plot_advice in message
    assert "--plot" not in message
    with pytest.raises(UserError) as raised:
        attn.scaled(backend="torch")
    message = str(raised.value)
    assert message.startswith("backend='torch' needs PyTorch") and torch_advice in message
    assert "--backend" not in message
    with pytest.raises(UserError, match=r"^device='cuda' needs PyTorch"):
        attn.scaled(device="cuda")


def test_library_figure_errors_name_the_method(tmp_path):
    pytest.importorskip("matplotlib")
    with pytest.raises(UserError) as raised:
        attn.scaled().plot(tmp_path / "x.gif")
    assert "plot(" in str(raised.value) and "e.g. w.plot('weights.png')" in str(raised.value)
    assert "--plot" not in str(raised.value)
    with pytest.raises(UserError, match=r"^plot\(\): the cost lesson has no figure"):
        attn.cost().plot()


def _strings(tree: ast.AST) -> list[str]:
    """The string literals of a module, less its docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_no_message_writes_install_advice_of_its_own():
    """Every install command in a message comes from install_command: no other module has
    "pip install", "pipx" or "uv tool" in a string."""
    offenders = []
    for path in sorted((ROOT / "attn_cli").rglob("*.py")):
        if path.name == "install.py":
            continue
        for text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if any(words in text for words in ("pip install", "pipx ", "uv tool", "attn-cli[")):
                offenders.append((path.relative_to(ROOT).as_posix(), text))
    assert not offenders


def test_an_install_from_a_clones_folder_is_advised_with_that_folder(tmp_path):
    """The README's set-up (`pip install .` in the clone) and `uv tool install .` install from a
    folder: the package is not on an index, so the advice names the folder again."""
    folder = json.dumps({"url": "file:///home/ada/my%20attn", "dir_info": {}})
    pip = Facts(tmp_path / ".venv", folder, "pip\n", REQUIRES)
    assert installation(pip) == install.Installation("pip", "/home/ada/my attn")
    assert install_command("torch", found=pip) == "pip install '/home/ada/my attn[torch]'"
    prefix = uv_tool_env(tmp_path)
    (prefix / "uv-receipt.toml").write_text(
        '[tool]\nrequirements = [{ name = "attn-cli", directory = "/home/ada/attn" }]\n',
        encoding="utf-8",
    )
    uv = Facts(prefix, None, "uv\n", REQUIRES)
    assert (
        install_command("torch", found=uv) == "uv tool install --with 'torch>=2.1' /home/ada/attn"
    )
