"""Hostile input, round 5 (issue 54), part B: a closed stdout, the ring's interface variables,
a sweep's texts from --from, a page's size and end under --serve, and a float16 underflow.

- A stdout closed before the command started (``>&-``) is one line and exit 2 for every command
  that would write to it, before any work; with -o FILE the file is written as usual (the ring
  too: its processes are forked, and it flushed a stdout that Python had made None).
- GLOO_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME) naming another interface, or none at all, is
  overridden for the ring's processes, which use the loopback interface, and the output says so;
  their connections are read from /proc to be on 127.0.0.1 indeed.
- A sweep read with --from is untrusted: a control character in any of its texts is written as
  an escape (``\\x1b``) in every format, rich markup in it is shown as written, and a $ in it
  is no mathtext in the plot.
- A browser tab's explorer gets a screen's size at most, and ends when its page's socket
  closes or the server stops (killed if it reads no quit); the server leaves no folder behind.
- rope and posenc with a frequency that underflows to 0 (float16, base 1e30) warn nothing.

Every wait here is for a state (a file written, a process gone, a port open), never for a
duration; where a deadline is needed it is minutes, generous on purpose: the suite must pass
beside six busy processes on a two-core machine, where a start of Python alone can take seconds.
"""

from __future__ import annotations

import asyncio
import csv
import io
import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from attn_cli.cli.app import main
from attn_cli.core.usertext import printable
from tests.conftest import assert_user_error

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "tests" / "data" / "gpu-runs" / "2026-11-26-h200" / "bench-default.json"

# A deadline for what is waited for (a process to start, end or write): minutes, as the
# module's docstring says, so that only a real hang fails, never a slow machine.
PATIENCE = 300.0

# The one line a closed stdout gets: for a command with -o FILE, and for one without.
CLOSED_WITH_OUTPUT = (
    "attn: error: stdout is closed (as >&- leaves it), so the output has nowhere to go; write "
    "it to a file with -o FILE, or run the command with stdout open (> FILE, | less)."
)
CLOSED = (
    "attn: error: stdout is closed (as >&- leaves it), so the output has nowhere to go; run the "
    "command with stdout open (> FILE, | less)."
)


def wait_until(condition, what: str, seconds: float = PATIENCE) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``seconds`` (see
    PATIENCE: the deadline only catches a hang)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)  # the next look at the state, not a guess at how long it takes
    raise AssertionError(f"{what}: not so after {seconds:.0f} s")


# --- 3. a closed stdout --------------------------------------------------------------------------


def run_main(monkeypatch, args: list[str]) -> int:
    """attn ARGS through the console script's main, as Python starts it under ``>&-`` (its
    sys.stdout None); the exit code."""
    monkeypatch.setattr(sys, "argv", ["attn", *args])
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as exited:
        main()
    return int(exited.value.code or 0)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["rope"], CLOSED_WITH_OUTPUT),
        (["rope", "--format", "json"], CLOSED_WITH_OUTPUT),
        (["scaled", "--code"], CLOSED_WITH_OUTPUT),
        (["scaled", "--list-examples"], CLOSED_WITH_OUTPUT),
        (["scaled", "--quiz"], CLOSED_WITH_OUTPUT),
        (["flash", "--kernel"], CLOSED_WITH_OUTPUT),
        (["kinds"], CLOSED),
        (["tour", "--only", "scaled", "--no-pause"], CLOSED),
        (["check", str(ROOT / "lessons" / "scaled.toml")], CLOSED),
        (["bench", "--from", str(SWEEP)], CLOSED),
        (["--help"], CLOSED),
        (["--version"], CLOSED),
        (["rope", "--help"], CLOSED),
    ],
)
def test_a_closed_stdout_is_one_line_and_exit_2(monkeypatch, capsys, args, line):
    """`attn rope >&-` exited 0 with its output thrown away; now, as every command where
    output was expected: one line, exit 2 (a broken pipe midway stays a quiet exit 0, and a
    full disk one line and exit 1: tests/test_hostile_outputs.py)."""
    code = run_main(monkeypatch, args)
    captured = capsys.readouterr()
    assert (code, captured.err.splitlines(), captured.out) == (2, [line], "")


def test_a_closed_stdout_is_refused_before_the_work(monkeypatch, capsys):
    """Said before anything is computed: the lesson's build is never reached."""
    from attn_cli.run import runner

    built = []
    monkeypatch.setattr(runner, "build", lambda run: built.append(run))
    assert run_main(monkeypatch, ["scaled"]) == 2
    assert built == []
    assert capsys.readouterr().err.splitlines() == [CLOSED_WITH_OUTPUT]


def test_explore_serve_with_a_closed_stdout_is_one_line_before_it_serves(monkeypatch, capsys):
    pytest.importorskip("textual_serve")
    from attn_cli.explore import serve

    monkeypatch.setattr(serve, "serve_app", lambda *args: pytest.fail("it served"))
    assert run_main(monkeypatch, ["explore", "--serve", "--port", "8000"]) == 2
    assert capsys.readouterr().err.splitlines() == [CLOSED]


@pytest.mark.parametrize(
    "args",
    [
        ["rope", "-o", "out.txt"],
        ["rope", "--format", "json", "-o", "out.txt"],
        ["flash", "--kernel", "-o", "out.txt"],
        ["scaled", "--code", "-o", "out.txt"],
    ],
)
def test_with_o_the_file_is_written_though_stdout_is_closed(
    monkeypatch, capsys, tmp_path, invoke, args
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    reference = invoke(*args[:-1], "reference.txt")
    assert reference.exit_code == 0, reference.output
    assert run_main(monkeypatch, args) == 0
    assert capsys.readouterr().err == ""
    written = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert written == (tmp_path / "reference.txt").read_text(encoding="utf-8")
    assert len(written) > 100


def test_a_plain_write_to_a_closed_stdout_says_so():
    """What writes without a console (a print, Typer's echo) meets ClosedStdout: the same error,
    which user_errors and main make one line; flushing what was never written is no error."""
    from attn_cli.cli.commands.streams import ClosedStdout, StdoutClosed

    stream = ClosedStdout()
    stream.flush()
    assert stream.write("") == 0
    with pytest.raises(StdoutClosed) as closed:
        print("x", file=stream)
    assert f"attn: error: {closed.value}" == CLOSED
    assert closed.value.exit_code == 2


def closed_stdout(
    args: list[str], cwd: Path, closing: str = ">&-"
) -> subprocess.CompletedProcess[str]:
    """``attn ARGS >&-`` for real: a fresh Python started with descriptor 1 closed (and others,
    as ``closing`` says)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {closing}', "sh", sys.executable, "-m", "attn_cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "closing", "code", "stdout"),
    [
        (["rope"], ">&- 2>&-", 2, None),  # was exit 1: rich wrote the error to stdout
        (["rope", "-o", "out.txt"], ">&- 2>&- <&-", 0, None),
        (["rope", "--bogus"], "2>&-", 2, ""),  # the error nowhere, and not on stdout
        (["rope", "-o", "out.txt"], "2>&-", 0, ""),
    ],
)
def test_a_closed_stderr_is_no_error_of_its_own(tmp_path, args, closing, code, stdout):
    completed = closed_stdout(args, tmp_path, closing)
    assert completed.returncode == code, completed
    if stdout is not None:
        assert completed.stdout == stdout
    if "-o" in args:
        assert "Rotary position embedding" in (tmp_path / "out.txt").read_text(encoding="utf-8")


@pytest.mark.slow
def test_descriptor_1_closed_is_held_by_dev_null_so_no_file_takes_it(tmp_path):
    """With descriptor 1 closed, the next file opened would get number 1, and whatever writes
    there (a library's warning, a C printf, a forked process) would land in it: /dev/null holds
    it from the start."""
    probe = textwrap.dedent(
        """
        import json, os, sys
        from attn_cli.cli.commands.streams import reserve_standard_descriptors
        closed = reserve_standard_descriptors()
        opened = open("opened.txt", "w")
        same = os.path.samestat(os.fstat(1), os.stat(os.devnull))
        json.dump([closed, opened.fileno(), same], open("said.json", "w"))
        """
    )
    completed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-c", probe],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    closed, number, held = json.loads((tmp_path / "said.json").read_text())
    assert (closed, held) == (True, True)
    assert number > 2


# The ring's ways to run: its default (gloo where torch is, else pipes), one process, pipes.
RING_VARIANTS = [[], ["--processes", "1"], ["--dist-backend", "pipes"]]


@pytest.mark.slow
@pytest.mark.parametrize("variant", RING_VARIANTS)
def test_the_ring_with_a_closed_stdout_is_one_line_and_exit_2(tmp_path, variant):
    """It was a traceback, AttributeError: 'NoneType' object has no attribute 'flush' (the
    flush before the fork)."""
    completed = closed_stdout(["ring", *variant], tmp_path)
    assert (completed.returncode, completed.stderr.splitlines()) == (2, [CLOSED_WITH_OUTPUT])


@pytest.mark.slow
@pytest.mark.parametrize("variant", RING_VARIANTS)
def test_the_ring_writes_its_o_file_with_a_closed_stdout(tmp_path, variant):
    """It was the same traceback, and no file: now the file, as with stdout open."""
    completed = closed_stdout(["ring", *variant, "-o", "closed.txt"], tmp_path)
    assert (completed.returncode, completed.stderr) == (0, "")
    opened = subprocess.run(
        [sys.executable, "-m", "attn_cli", "ring", *variant, "-o", "open.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    assert (opened.returncode, opened.stderr, opened.stdout) == (0, "", "")
    written = (tmp_path / "closed.txt").read_text(encoding="utf-8")
    assert written == (tmp_path / "open.txt").read_text(encoding="utf-8")
    assert "Ring attention" in written
    assert sorted(path.name for path in tmp_path.iterdir()) == ["closed.txt", "open.txt"]


# --- 4 and 10. the interface the ring's connections use ------------------------------------------

OVERRIDDEN = (
    "The environment set {variable}={value}; the lesson's processes used {interface}, the "
    "loopback interface, instead, so that their connections stayed on this machine."
)


def ring_notes(invoke, *args: str) -> dict[str, str]:
    result = invoke("ring", "--dist-backend", "gloo", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert document["meta"]["max_abs_difference"] < 1e-12  # the ring ran, and ran right
    return {note["key"]: note["text"] for note in document["notes"]}


def loopback_name() -> str:
    return next(name for _index, name in socket.if_nameindex() if name.startswith("lo"))


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("bogus0", "bogus0"),  # no such interface: gloo failed, a 160-line traceback
        ("eth0,lo", "eth0,lo"),
        ("\x1b[2Jx", "\\x1b[2Jx"),  # the environment's text, printable
    ],
)
@pytest.mark.parametrize("shape", [[], ["--n", "8", "--processes", "4"]])
def test_a_gloo_interface_of_the_users_is_overridden_and_said(
    invoke, torch, monkeypatch, value, shown, shape
):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", value)
    notes = ring_notes(invoke, *shape)
    interface = loopback_name()
    assert notes["interface_overridden"] == OVERRIDDEN.format(
        variable="GLOO_SOCKET_IFNAME", value=shown, interface=interface
    )
    assert "over the loopback address 127.0.0.1 only" in notes["transport_gloo"]
    assert os.environ["GLOO_SOCKET_IFNAME"] == value  # the command's own environment untouched


@pytest.mark.parametrize(
    "environment",
    [
        {},
        {"GLOO_SOCKET_IFNAME": ""},  # empty: none named
        {"GLOO_SOCKET_IFNAME": "LOOPBACK"},  # the loopback interface itself (its name here)
        {"NCCL_SOCKET_IFNAME": "bogus0"},  # nccl's, which gloo does not read
    ],
)
def test_no_override_no_note(invoke, torch, monkeypatch, environment):
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, loopback_name() if value == "LOOPBACK" else value)
    notes = ring_notes(invoke)
    assert "interface_overridden" not in notes
    assert "transport_gloo" in notes


def external_interface() -> str | None:
    """An interface of this machine with an IPv4 address off the loopback (eth0), or None."""
    import fcntl
    import struct

    for _index, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:  # SIOCGIFADDR: the interface's IPv4 address
                packed = fcntl.ioctl(
                    probe.fileno(), 0x8915, struct.pack("256s", name[:15].encode())
                )
            except OSError:
                continue
        if not ipaddress.ip_address(socket.inet_ntoa(packed[20:24])).is_loopback:
            return name
    return None


# Run in each of the ring's processes (forked, so the patch holds there): the TCP connections it
# holds as it gathers, read from /proc, written to SOCKETS_DIR/rankR.json.
SOCKET_DRIVER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from attn_cli.course.ring import rank

    def connections():
        inodes = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                link = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:["):-1])
        found = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes and fields[3] == "01":  # established
                    found.append([fields[1], fields[2]])
        return found

    gather = rank.DistributedLink.gather

    def gathered(self, rows, shards):
        path = Path(os.environ["SOCKETS_DIR"], f"rank{self.rank}.json")
        path.write_text(json.dumps(connections()))
        return gather(self, rows, shards)

    rank.DistributedLink.gather = gathered
    from attn_cli.__main__ import main
    sys.argv = ["attn", *sys.argv[1:]]
    main()
    """
)


def address(hexadecimal: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp(6) writes it ("0100007F:1F90": 127.0.0.1, words
    little-endian); an IPv4 address mapped into IPv6 as that IPv4 address."""
    raw = bytes.fromhex(hexadecimal.split(":")[0])
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    ip = ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
    return ip.ipv4_mapped or ip


@pytest.mark.slow
def test_the_rings_connections_are_on_loopback_whatever_gloo_socket_ifname_says(torch, tmp_path):
    """GLOO_SOCKET_IFNAME=eth0: 24 connections between the machine's external address and
    itself, while the output said "over the loopback address 127.0.0.1 only". Each process's
    connections are read as it gathers: every one on the loopback, at both ends."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("reads the connections from Linux's /proc")
    external = external_interface()
    if external is None:
        pytest.skip("this machine has no interface off the loopback to name")
    driver = tmp_path / "driver.py"
    driver.write_text(SOCKET_DRIVER, encoding="utf-8")
    environment = {**os.environ, "GLOO_SOCKET_IFNAME": external, "SOCKETS_DIR": str(tmp_path)}
    completed = subprocess.run(
        [sys.executable, str(driver), "ring", "--n", "8", "--processes", "4", "--format", "json"],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    notes = {note["key"]: note["text"] for note in json.loads(completed.stdout)["notes"]}
    assert notes["interface_overridden"] == OVERRIDDEN.format(
        variable="GLOO_SOCKET_IFNAME", value=external, interface=loopback_name()
    )
    for rank in range(4):
        connections = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert len(connections) >= 3, connections  # one to each other process at least
        ends = [address(end) for connection in connections for end in connection]
        assert all(end.is_loopback for end in ends), (rank, [str(end) for end in ends])


# --- 9. a sweep's texts, untrusted --------------------------------------------------------------

# Clears the screen, retitles the window (OSC 0 … BEL), a C1 CSI, a carriage return, a backspace.
HOSTILE = "\x1b[2J\x1b]0;pwn\x07evil\x9b31m\r\b"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_sweep(tmp_path: Path, impl: str = HOSTILE, note: str = "note " + HOSTILE) -> Path:
    """The H200's sweep with naive renamed ``impl``, every row's note ``note``, and the
    machine's name, one machine key and the attn version hostile too."""
    document = json.loads(SWEEP.read_text(encoding="utf-8"))
    for row in document["rows"]:
        row["impl"] = impl if row["impl"] == "naive" else row["impl"]
        row["note"] = note
    config = document["config"]
    config["impls"] = [impl if name == "naive" else name for name in config["impls"]]
    document["machine"]["name"] = "GPU " + HOSTILE
    document["machine"]["key " + HOSTILE] = "value " + HOSTILE
    document["attn_version"] = "0.1 " + HOSTILE
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["rich", "csv", "json"])
def test_a_sweeps_control_characters_are_written_escaped_in_every_format(invoke, tmp_path, fmt):
    """`bench --from` wrote the file's strings verbatim: an impl of "\\x1b[2J\\x1b]0;pwn\\x07evil"
    cleared the screen and retitled the window, in the table, the CSV and the notes; the JSON
    escaped C0 but wrote the C1 CSI (\\x9b) raw."""
    result = invoke("bench", "--from", str(hostile_sweep(tmp_path)), "--format", fmt)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert CONTROL.findall(result.stdout) == []
    shown = printable(HOSTILE)
    assert shown == "\\x1b[2J\\x1b]0;pwn\\x07evil\\x9b31m\\x0d\\x08"
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        assert {row["impl"] for row in rows} >= {shown, "sdpa"}
        assert {row["note"] for row in rows} == {"note " + shown}
    elif fmt == "json":
        document = json.loads(result.stdout)
        assert {row["impl"] for row in document["rows"]} >= {shown, "sdpa"}
        assert document["config"]["impls"][0] == shown
        assert document["machine"]["name"] == "GPU " + shown
        assert document["machine"]["key " + shown] == "value " + shown
    else:
        assert shown in result.stdout
        assert f"[1] {shown} (every n): note {shown}" in " ".join(result.stdout.split())


def test_rich_markup_in_a_sweep_is_shown_as_written(invoke, tmp_path, monkeypatch):
    """The table's impl cell read the file's text as rich markup: "[link=...]" became a
    terminal hyperlink (OSC 8), "[reverse]" reverse video."""
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich writes its escapes, as on a terminal
    markup = "[link=http://evil.example]x[/link][reverse]y"
    result = invoke("bench", "--from", str(hostile_sweep(tmp_path, markup, "")))
    assert result.exit_code == 0, result.output
    assert "\x1b]8;" not in result.stdout  # no hyperlink
    assert "\x1b[7m" not in result.stdout  # no reverse video
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    assert "[link=http://evil.example]x" in plain


def test_a_dollar_in_a_sweep_is_no_mathtext_in_the_plot(invoke, mpl, tmp_path):
    """An impl "$\\frac{$" was a traceback from matplotlib's mathtext parser."""
    plot = tmp_path / "sweep.png"
    sweep = hostile_sweep(tmp_path, "$\\frac{$ " + HOSTILE)
    result = invoke("bench", "--from", str(sweep), "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"plot written to {plot}"]
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_an_error_about_a_sweeps_value_is_printable(invoke, tmp_path):
    document = json.loads(SWEEP.read_text(encoding="utf-8"))
    document["rows"][0]["n"] = HOSTILE
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("bench", "--from", str(path))
    assert_user_error(result, "row 1 n", "is not a whole number")
    assert CONTROL.findall(result.stderr.rstrip("\n")) == []


# --- 7 and 11. a browser tab's size and end; no folder left ---------------------------------------

# Stands in for a tab's explorer (no Textual): says it is one, records its size and every
# packet of meta it is sent (one JSON line each, in LOG), and quits on "quit" or at the end of
# its input; the stubborn one ignores both, and SIGTERM, as an explorer busy drawing does.
STAND_IN = textwrap.dedent(
    """
    import json, os, signal, sys, time
    log, stubborn = open(sys.argv[1], "a"), sys.argv[2] == "stubborn"
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    def say(entry):
        log.write(json.dumps(entry) + "\\n")
        log.flush()
    say({"pid": os.getpid(), "columns": os.environ["COLUMNS"], "rows": os.environ["ROWS"]})
    sys.stdout.write("__GANGLION__\\n")
    sys.stdout.flush()
    read = sys.stdin.buffer.read
    while (kind := read(1)):
        payload = read(int.from_bytes(read(4), "big"))
        if kind == b"M":
            meta = json.loads(payload)
            say(meta)
            if meta["type"] == "quit" and not stubborn:
                sys.exit(0)
    while stubborn:
        time.sleep(1)
    """
)


def logged(log: Path) -> list[dict]:
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return [json.loads(line) for line in text.splitlines()]


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended and been reaped (the server waits for its tabs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def until(condition, what: str, seconds: float = PATIENCE) -> None:
    """wait_until, in the server's event loop (which must run for the state to change)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}: not so after {seconds:.0f} s")


async def with_tab(tmp_path: Path, kind: str, scenario, query: str = "") -> None:
    """The guarded server in this process (aiohttp's test server) with a stand-in explorer;
    ``scenario(server, client, websocket, log)`` drives it from a tab's open socket."""
    from aiohttp.test_utils import TestClient, TestServer

    from attn_cli.explore.serve import explore_server

    script, log = tmp_path / "stand_in.py", tmp_path / f"{kind}.log"
    script.write_text(STAND_IN, encoding="utf-8")
    server = explore_server(f"exec {sys.executable} {script} {log} {kind}", port=0)
    test_server = TestServer(await server._make_app(), host="127.0.0.1")
    async with TestClient(test_server) as client:
        server.port = test_server.port
        origin = {"Origin": f"http://localhost:{server.port}"}
        websocket = await client.ws_connect(f"/ws{query}", headers=origin)
        await until(lambda: logged(log), "the tab's explorer started")
        await scenario(server, client, websocket, log)
    return None


@pytest.mark.parametrize(
    ("query", "columns", "rows"),
    [
        ("?width=20000&height=20000", "700", "200"),
        ("?width=120&height=40", "120", "40"),
        ("?width=0&height=-3", "1", "24"),
        ("?width=abc&height=1e9", "80", "24"),
        ("", "80", "24"),
    ],
)
def test_a_tab_starts_at_a_screens_size_at_most(tmp_path, query, columns, rows):
    pytest.importorskip("textual_serve")
    from attn_cli.explore.serve import MAX_TAB_COLUMNS, MAX_TAB_ROWS

    assert (MAX_TAB_COLUMNS, MAX_TAB_ROWS) == (700, 200)

    async def scenario(server, client, websocket, log) -> None:
        started = logged(log)[0]
        assert (started["columns"], started["rows"]) == (columns, rows)
        await websocket.close()

    asyncio.run(with_tab(tmp_path, "polite", scenario, query))


def test_a_pages_resize_is_held_to_a_screens_size(tmp_path):
    """One ["resize", {"width": 20000, "height": 20000}] grew the tab's process from 70 MB to
    1.5-2.6 GB: the explorer is now told 700 × 200 at most; what is no size is 80 × 24."""
    pytest.importorskip("textual_serve")
    asked = [
        ({"width": 20000, "height": 20000}, (700, 200)),
        ({"width": 10**400, "height": 1e308}, (700, 200)),
        ({"width": 132, "height": 43}, (132, 43)),
        ({"width": -5, "height": 0}, (1, 1)),
        ({"width": "wide", "height": None}, (80, 24)),
        ({"width": True, "height": [3]}, (80, 24)),
        ({"width": 99.7, "height": 30.2}, (99, 30)),
    ]

    async def scenario(server, client, websocket, log) -> None:
        for size, _told in asked:
            await websocket.send_str(json.dumps(["resize", size]))
        await until(lambda: len(logged(log)) == 1 + len(asked), "every resize reached the tab")
        told = [(entry["width"], entry["height"]) for entry in logged(log)[1:]]
        assert told == [expected for _size, expected in asked]
        await websocket.close()

    asyncio.run(with_tab(tmp_path, "polite", scenario))


@pytest.mark.parametrize("kind", ["polite", "stubborn"])
def test_a_tabs_explorer_ends_when_its_page_goes(tmp_path, monkeypatch, kind):
    """It kept running (and growing) after the socket closed, and SIGTERM did not stop it: now
    it is asked to quit, and killed when it has not within QUIT_SECONDS."""
    pytest.importorskip("textual_serve")
    from attn_cli.explore import serve

    monkeypatch.setattr(serve, "QUIT_SECONDS", 0.5)  # the stubborn one is killed sooner

    async def scenario(server, client, websocket, log) -> None:
        pid = logged(log)[0]["pid"]
        assert not gone(pid)
        await websocket.close()
        await until(lambda: not server.tabs and gone(pid), "the tab's explorer ended")
        assert server.sessions == 0
        said = [entry.get("type") for entry in logged(log)[1:]]
        assert said == ["quit"]  # asked first, either way

    asyncio.run(with_tab(tmp_path, kind, scenario))


def test_the_server_stopping_ends_every_tabs_explorer(tmp_path, monkeypatch):
    pytest.importorskip("textual_serve")
    from attn_cli.explore import serve

    monkeypatch.setattr(serve, "QUIT_SECONDS", 0.5)

    async def scenario(server, client, websocket, log) -> None:
        pid = logged(log)[0]["pid"]
        await client.server.close()  # the page still open: the server stops (its on_shutdown)
        assert gone(pid)  # stopped before the server's shutdown went on
        assert not server.tabs
        assert websocket.closed or (await websocket.receive()).type.name in ("CLOSE", "CLOSED")

    asyncio.run(with_tab(tmp_path, "stubborn", scenario))


def test_the_served_page_comes_from_memory_and_no_folder_is_made(tmp_path, monkeypatch):
    """explore --serve wrote its page template to attn-explore-XXXXXXXX/ in the temporary
    folder and left it there when it stopped: now the page is served from memory."""
    pytest.importorskip("textual_serve")
    import tempfile

    from aiohttp.test_utils import TestClient, TestServer

    from attn_cli.explore.serve import COLUMNS, explore_server

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    async def scenario() -> str:
        server = explore_server("exec true", port=0)
        test_server = TestServer(await server._make_app(), host="127.0.0.1")
        async with TestClient(test_server) as client:
            server.port = test_server.port
            page = await client.get("/")
            assert page.status == 200
            return await page.text()

    page = asyncio.run(scenario())
    assert "fonts/RobotoMono-VariableFont_wght.ttf" in page
    assert "fonts.googleapis.com" not in page
    assert f"{COLUMNS} columns across" in page
    assert list(tmp_path.iterdir()) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux: /proc/PID/task/*/children)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def ended(pid: int) -> bool:
    """Whether ``pid`` is gone, or a zombie no longer running (its parent exited)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return status.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_explore_serve_stops_with_its_tabs_and_leaves_nothing_behind(tmp_path, stop):
    """The real server, its tab the real explorer: stopped (SIGTERM, or Ctrl+C's SIGINT) with a
    page open, it exits 0, its tab's explorer ends with it, and the temporary folder stays as it
    was (an attn-explore-XXXXXXXX/ was left there)."""
    pytest.importorskip("textual_serve")
    if not Path(f"/proc/{os.getpid()}/task").exists():
        pytest.skip("finds the server's processes in Linux's /proc")
    import aiohttp

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "attn_cli", "explore", "scaled", "--serve", "--port", str(port)],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temporary)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:

        def accepts() -> bool:
            assert server.poll() is None, server.communicate()
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_until(accepts, "the server accepted connections")

        async def open_tab_then_stop() -> list[int]:
            async with aiohttp.ClientSession() as session:
                websocket = await session.ws_connect(
                    f"http://localhost:{port}/ws", headers={"Origin": f"http://localhost:{port}"}
                )
                first = await websocket.receive(timeout=PATIENCE)  # the explorer drew
                assert first.type == aiohttp.WSMsgType.BINARY, first
                tabs = children(server.pid)
                server.send_signal(stop)
                await websocket.receive(timeout=PATIENCE)  # the server's close
                return tabs

        tabs = asyncio.run(open_tab_then_stop())
        assert len(tabs) == 1
        out, err = server.communicate(timeout=PATIENCE)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 0, err
    assert b"Traceback" not in out + err
    wait_until(lambda: all(ended(pid) for pid in tabs), "the tab's explorer ended")
    assert list(temporary.iterdir()) == []


# --- 12. a frequency that underflows: no RuntimeWarning -------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["rope", "--dtype", "float16", "--base", "1e30"],
        ["rope", "--dtype", "float16", "--base", "1e5"],
        ["rope", "--dtype", "float16", "--base", "1e30", "--layout", "split"],
        ["rope", "--dtype", "float16", "--base", "1e30", "--dk", "8", "--rotary-dim", "6"],
        ["rope", "--dtype", "float16", "--base", "1e30", "--format", "markdown"],
        ["rope", "--dtype", "float16", "--base", "1e30", "--format", "latex"],
        ["rope", "--dtype", "float32", "--base", "1e300"],
        ["rope", "--dtype", "float32", "--base", "1e45"],
        ["posenc", "--dtype", "float16", "--base", "1e30"],
        ["posenc", "--dtype", "float16", "--base", "1e5"],
        ["posenc", "--dtype", "float32", "--base", "1e300"],
        ["posenc", "--dtype", "float16", "--base", "1e30", "--d-model", "512"],
    ],
)
def test_an_underflowed_frequency_warns_nothing(invoke, args):
    """`rope --dtype float16 --base 1e30` printed "RuntimeWarning: divide by zero" and its
    source line on stderr: θ underflowed to 0, and 2π / 0 is the wavelength inf (right)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning is an exception: the run would fail
        result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_the_underflowed_pair_never_turns(invoke_json):
    document = invoke_json("rope", "--dtype", "float16", "--base", "1e30")
    frequencies = next(step for step in document["steps"] if step["key"] == "frequencies")
    table = [(row["theta"], row["wavelength"]) for row in frequencies["value"]]
    assert table == [(1.0, 6.28125), (0.0, "inf")]


@pytest.mark.parametrize("module", ["rotary", "posenc"])
def test_a_wavelength_of_a_zero_frequency_is_inf_without_a_warning(module):
    from attn_cli.mechanisms import posenc, rotary

    wavelengths = {"rotary": rotary, "posenc": posenc}[module].wavelengths
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = wavelengths(np.asarray([1.0, 0.0], dtype=np.float16))
    assert found.tolist() == [np.float16(2 * np.pi), np.inf]
