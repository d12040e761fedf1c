"""How to install what attn is missing, said for the way attn itself was installed.

Every message that gives install advice calls :func:`install_command`: an extra (torch, plot,
kernel, explore) or a few packages, as the command that works where attn lives:

- pip from an index: ``pip install 'attn-cli[torch]'``;
- an editable clone (``pip install -e .``; its dist-info's direct_url.json says
  ``"dir_info": {"editable": true}``): ``pip install -e '.[torch]'``, in the clone's folder;
- pipx (attn's environment is one of pipx's: ``pipx_metadata.json`` beside it, or a ``venvs``
  folder under a ``pipx`` one): ``pipx inject attn-cli 'torch>=2.1'``;
- uv tool (``uv-receipt.toml`` beside the environment, or a folder under uv's ``tools``):
  ``uv tool install --with 'torch>=2.1' attn-cli``;
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

# Each extra's packages, as pyproject.toml declares them (read from the installed metadata when
# it is there; this when it is not, as when run from a source tree without installing).
EXTRAS: dict[str, tuple[str, ...]] = {
    "torch": ("torch>=2.1",),
    "plot": ("matplotlib>=3.8",),
    "kernel": ("triton>=3", "torch>=2.1"),
    "explore": ("textual>=8.0", "textual-serve>=1.1"),
}

Installer = Literal["pip", "editable", "pipx", "uv-tool", "uv"]


@dataclass(frozen=True)
class Installation:
    """How attn was installed: the installer, and for an editable install its clone's folder."""

    installer: Installer
    clone: str | None = None


@dataclass(frozen=True)
class Facts:
    """What the detection reads (tests fake these): attn's environment (sys.prefix), its
    dist-info's direct_url.json and INSTALLER files (None: absent), and the extras' packages as
    the installed metadata declares them."""

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
        return Facts(Path(sys.prefix), None, None)
    return Facts(
        Path(sys.prefix),
        dist.read_text("direct_url.json"),
        dist.read_text("INSTALLER"),
        tuple(dist.requires or ()),
    )


def installation(found: Facts | None = None) -> Installation:
    """How attn was installed (pip from an index when nothing says otherwise)."""
    found = facts() if found is None else found
    clone = _editable_clone(found.direct_url)
    if _is_pipx(found.prefix):
        return Installation("pipx")
    if _is_uv_tool(found.prefix):
        return Installation("uv-tool")
    if clone is not None:
        return Installation("editable", clone)
    if (found.installer or "").strip() == "uv":
        return Installation("uv")
    return Installation("pip")


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
        return f"uv tool install {withs} {DISTRIBUTION}"
    pip = "uv pip" if how.installer == "uv" else "pip"
    if extra is None:
        return f"{pip} install {'-U ' if upgrade else ''}{quoted}"
    if how.installer == "editable":
        return f"pip install -e '.[{extra}]' (in {how.clone})"
    return f"{pip} install '{DISTRIBUTION}[{extra}]'"


def _extra_packages(extra: str | None, requires: Sequence[str]) -> tuple[str, ...]:
    if extra is None:
        raise ValueError("name an extra or the packages to install")
    declared = tuple(
        requirement.split(";")[0].strip()
        for requirement in requires
        if requirement.replace('"', "'").replace(" ", "").endswith(f"extra=='{extra}'")
    )
    return declared or EXTRAS[extra]


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
