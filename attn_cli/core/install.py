"""How to install what attn is missing, said for the way attn itself was installed.

Every message that gives install advice calls :func:`install_command`: an extra (torch, plot,
kernel, explore) or a few packages, as the command that works where attn lives:

- pip from an index: ``pip install 'attn-cli[torch]'``; from a clone's folder, not editable
  (``pip install .``; direct_url.json names the folder): ``pip install '/the/clone[torch]'``;
- an editable clone (``pip install -e .``; its dist-info's direct_url.json says
  ``"dir_info": {"editable": true}``): ``pip install -e '.[torch]'``, in the clone's folder;
- pipx (attn's environment is one of pipx's: ``pipx_metadata.json`` beside it, or a ``venvs``
  folder under a ``pipx`` one): ``pipx inject attn-cli 'torch>=2.1'``;
- uv tool (``uv-receipt.toml`` beside the environment, or a folder under uv's ``tools``):
  ``uv tool install --with 'torch>=2.1' attn-cli``, or the clone's folder in place of attn-cli
  where the receipt says it was installed from one (``uv tool install .``);
- uv's pip (the dist-info's INSTALLER file says ``uv``, in an environment of one's own):
  ``uv pip install 'attn-cli[torch]'``.

Light: imported only when a message needs it (importlib.metadata, no numpy).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DISTRIBUTION = "attn-cli"

Installer = Literal["pip", "editable", "pipx", "uv-tool", "uv"]


@dataclass(frozen=True)
class Installation:
    """How attn was installed: the installer, and the clone's folder it was installed from (an
    editable install, ``pip install .`` or ``uv tool install .``), if any."""

    installer: Installer
    clone: str | None = None


@dataclass(frozen=True)
class Facts:
    """What the detection reads (tests fake these): attn's environment (sys.prefix), its
    dist-info's direct_url.json and INSTALLER files (None: absent), and its requirements as
    Requires-Dist lines (the source tree's pyproject.toml, else the installed metadata)."""

    prefix: Path
    direct_url: str | None
    installer: str | None
    requires: tuple[str, ...] = ()


def facts() -> Facts:
    """The facts of this process."""
    from importlib import metadata

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree, never installed
        return Facts(Path(sys.prefix), None, None, _source_tree_requires())
    return Facts(
        Path(sys.prefix),
        dist.read_text("direct_url.json"),
        dist.read_text("INSTALLER"),
        # A source tree's pyproject.toml is the running code's own (an editable install's
        # metadata is as old as its last pip install -e)
        _source_tree_requires() or tuple(dist.requires or ()),
    )


def installation(found: Facts | None = None) -> Installation:
    """How attn was installed (pip from an index when nothing says otherwise)."""
    found = facts() if found is None else found
    clone = _editable_clone(found.direct_url)
    if _is_pipx(found.prefix):
        return Installation("pipx")
    if _is_uv_tool(found.prefix):
        return Installation("uv-tool", _uv_tool_folder(found.prefix))
    if clone is not None:
        return Installation("editable", clone)
    if (found.installer or "").strip() == "uv":
        return Installation("uv")
    return Installation("pip", _folder(found.direct_url))


def install_command(
    extra: str | None = None,
    *,
    packages: Sequence[str] = (),
    upgrade: bool = False,
    found: Facts | None = None,
) -> str:
    """The command that installs ``extra`` (an extra of attn-cli: torch, plot, kernel) or
    ``packages`` (requirements such as "torch>=2.1"; ``upgrade``: over an older one) into
    attn's own environment."""
    found = facts() if found is None else found
    how = installation(found)
    wanted = tuple(packages) or _extra_packages(extra, found.requires)
    quoted = " ".join(_quoted(package) for package in wanted)
    if how.installer == "pipx":
        return f"pipx inject {DISTRIBUTION} {quoted}"
    if how.installer == "uv-tool":
        withs = " ".join(f"--with {_quoted(package)}" for package in wanted)
        return f"uv tool install {withs} {_quoted(how.clone) if how.clone else DISTRIBUTION}"
    pip = "uv pip" if how.installer == "uv" else "pip"
    if extra is None:
        return f"{pip} install {'-U ' if upgrade else ''}{quoted}"
    if how.installer == "editable":
        return f"pip install -e '.[{extra}]' (in {how.clone})"
    if how.clone is not None:  # pip install . from a clone: the folder again, with the extra
        return f"{pip} install '{how.clone}[{extra}]'"
    return f"{pip} install '{DISTRIBUTION}[{extra}]'"


def declared(package: str, extra: str | None = None, found: Facts | None = None) -> str:
    """``package`` as attn-cli requires it, in ``extra`` (None: a core dependency), from
    pyproject.toml, the one place the bounds are written: "array-api-compat>=1.9",
    "torch>=2.1"; the bare name where nothing declares it."""
    found = facts() if found is None else found
    for requirement in _requirements(extra, found.requires):
        if _name(requirement) == package:
            return requirement
    return package


def _extra_packages(extra: str | None, requires: Sequence[str]) -> tuple[str, ...]:
    if extra is None:
        raise ValueError("name an extra or the packages to install")
    return _requirements(extra, requires) or (f"{DISTRIBUTION}[{extra}]",)


def _requirements(extra: str | None, requires: Sequence[str]) -> tuple[str, ...]:
    """The requirements of ``extra`` (None: the core ones) among ``requires`` (Requires-Dist
    lines), else among the source tree's pyproject.toml (attn run from a clone, or metadata
    that says nothing)."""
    for lines in (requires, _source_tree_requires()):
        found = tuple(
            spec.strip()
            for spec, _, marker in (line.partition(";") for line in lines)
            if _extra_of(marker) == extra
        )
        if found:
            return found
    return ()


def _extra_of(marker: str) -> str | None:
    """The extra a Requires-Dist marker names ("extra == 'torch'"), or None."""
    compact = marker.replace('"', "'").replace(" ", "")
    return compact.partition("extra=='")[2].partition("'")[0] or None


def _name(requirement: str) -> str:
    """A requirement's project name, normalised: "Array_API_Compat>=1.9" -> "array-api-compat"."""
    name = requirement
    for mark in "<>=!~[ ;":
        name = name.split(mark)[0]
    return name.strip().lower().replace("_", "-")


def _source_tree_requires() -> tuple[str, ...]:
    """pyproject.toml's dependencies as Requires-Dist lines, where attn runs from its source
    tree (the file beside the package, naming attn-cli); () elsewhere."""
    path = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        import tomllib

        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return ()
    if project.get("name") != DISTRIBUTION:
        return ()
    extras = project.get("optional-dependencies", {})
    return (
        *project.get("dependencies", ()),
        *(f"{spec}; extra == '{extra}'" for extra, specs in extras.items() for spec in specs),
    )


def _quoted(package: str) -> str:
    """A requirement as typed in a shell: quoted when it has a character the shell reads."""
    return f"'{package}'" if any(mark in package for mark in "<>=![]*; ") else package


def _editable_clone(direct_url: str | None) -> str | None:
    """The clone's folder of an editable install, or None."""
    if not direct_url:
        return None
    try:
        recorded = json.loads(direct_url)
    except ValueError:
        return None
    if not isinstance(recorded, dict) or not recorded.get("dir_info", {}).get("editable"):
        return None
    url = str(recorded.get("url", ""))
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(url).path) or "."
    return url or "."


def _folder(direct_url: str | None) -> str | None:
    """The folder of a non-editable install from a local folder (``pip install .``), or None."""
    try:
        recorded = json.loads(direct_url or "")
    except ValueError:
        return None
    if not isinstance(recorded, dict) or "dir_info" not in recorded:
        return None
    url = str(recorded.get("url", ""))
    if not url.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(url).path) or None


def _uv_tool_folder(prefix: Path) -> str | None:
    """The folder uv's receipt says attn was installed from (``uv tool install .``), or None."""
    import tomllib

    try:
        receipt = tomllib.loads((prefix / "uv-receipt.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for requirement in receipt.get("tool", {}).get("requirements", []):
        if isinstance(requirement, dict) and requirement.get("name") == DISTRIBUTION:
            folder = requirement.get("directory") or requirement.get("editable")
            return str(folder) if folder else None
    return None


def _is_pipx(prefix: Path) -> bool:
    """pipx's environments: ~/.local/share/pipx/venvs/attn-cli (PIPX_HOME/venvs/...), each
    with a pipx_metadata.json."""
    if (prefix / "pipx_metadata.json").is_file():
        return True
    return prefix.parent.name == "venvs" and any("pipx" in part for part in prefix.parts[:-2])


def _is_uv_tool(prefix: Path) -> bool:
    """uv's tool environments: ~/.local/share/uv/tools/attn-cli (UV_TOOL_DIR/...), each with a
    uv-receipt.toml."""
    if (prefix / "uv-receipt.toml").is_file():
        return True
    return prefix.parent.name == "tools" and "uv" in prefix.parts[:-2]


# The ways of installing attn from its clone (the README's set-up first), each with the
# installer it leaves behind and what that installer records of the folder.
CLONE = "/CLONE"
FROM_A_CLONE: tuple[tuple[str, Installer, dict[str, object] | None], ...] = (
    (".venv/bin/pip install .", "pip", {"url": f"file://{CLONE}", "dir_info": {}}),
    ("pip install -e .", "editable", {"url": f"file://{CLONE}", "dir_info": {"editable": True}}),
    ("pipx install .", "pipx", None),
    ("uv tool install .", "uv-tool", None),
)


def from_a_clone(extras: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each way of installing attn from its clone, with the command that adds each extra there
    (as install_command says it in such an environment, faked here; the clone's folder as ".")."""
    import tempfile

    out = []
    with tempfile.TemporaryDirectory() as folder:
        for how, installer, direct_url in FROM_A_CLONE:
            prefix = Path(folder, ".venv")
            if installer == "pipx":
                prefix = Path(folder, "pipx", "venvs", DISTRIBUTION)
            elif installer == "uv-tool":
                prefix = Path(folder, "uv", "tools", DISTRIBUTION)
                prefix.mkdir(parents=True)
                requirement = f'{{ name = "{DISTRIBUTION}", directory = "{CLONE}" }}'
                receipt = f"[tool]\nrequirements = [{requirement}]\n"
                (prefix / "uv-receipt.toml").write_text(receipt, encoding="utf-8")
            found = Facts(prefix, json.dumps(direct_url) if direct_url else None, "pip")
            assert installation(found).installer == installer, how
            advice = (install_command(extra, found=found) for extra in extras)
            out.append((how, tuple(_in_the_clone(command) for command in advice)))
    return out


def _in_the_clone(command: str) -> str:
    return command.replace(f" (in {CLONE})", "").replace(CLONE, ".")
