"""What --time times: each step's computation alone, warm, on the device (Backend.timed).

A backend owns its clock; here a backend whose clock and conversions write to a log proves, on
the CPU, what happens between the clock's start and its stop: the computation and nothing else
(no copy to the host, no summary, no claims check), after an untimed warm-up run, with the
median of the timed runs shown. Without --time nothing is timed and each step is computed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

from attn_cli.core.backend import TIMED_RUNS, Backend, Clock, median
from attn_cli.core.model import Summary, Walkthrough
from attn_cli.course import recorder
from attn_cli.mechanisms import attention
from attn_cli.run import runner
from attn_cli.run.runner import RunRequest
from tests.lesson_runs import lessons_with_runs, runs_of

# The readings the logging clock gives, run after run: their median is what a step shows.
READINGS = (0.003, 0.001, 0.002)


class LoggingClock(Clock):
    """A clock that logs "start" and "stop" and reads READINGS in turn."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> float:
        self.log.append("stop")
        stops = self.log.count("stop")
        return READINGS[(stops - 1) % len(READINGS)]


@dataclass(frozen=True)
class LoggingBackend(Backend):
    """numpy's backend, logging its clock and each summary it computes."""

    log: list[str] = field(default_factory=list, compare=False)

    def clock(self) -> Clock:
        return LoggingClock(self.log)

    def summary(self, array: Any) -> Summary | None:
        self.log.append("summary")
        return super().summary(array)


def logged_run(lesson: str, argv: tuple[str, ...], backend: Backend, *, time: bool) -> Any:
    """The lesson's run of ``argv`` (as its command parses them) on ``backend``."""
    from attn_cli import course as cards
    from attn_cli.cli import tour
    from attn_cli.cli.options import lesson_request

    request, _ = lesson_request(cards.card(lesson), tour.parsed(tour.Stop(lesson, "", argv)))
    run = runner.prepare(replace(request, time_steps=time))
    return replace(run, backend=backend, time_steps=time)


def pairs_hold_nothing_else(log: list[str]) -> None:
    """Every start is followed by one computation and its stop, and nothing else."""
    inside = False
    for event in log:
        if event == "start":
            assert not inside, log
            inside = True
        elif event == "stop":
            assert inside, log
            inside = False
        else:
            assert not inside or event == "compute", (event, log)
    assert not inside, log


def test_a_step_is_timed_warm_alone_and_shows_the_median(monkeypatch):
    backend = LoggingBackend("numpy", "cpu", "float64")
    log = backend.log
    for name in ("scores", "scale", "weighted_sum"):
        computed = getattr(attention, name)
        monkeypatch.setattr(attention, name, logging(log, computed))
    monkeypatch.setattr(recorder, "softmax_parts", logging(log, recorder.softmax_parts))
    monkeypatch.setattr(recorder, "keep_true_claims", claims(log, recorder.keep_true_claims))
    run = logged_run("scaled", ("--n", "5", "--dk", "3", "--seed", "1"), backend, time=True)
    walkthrough = runner.build(run)
    # Each of the four steps: one untimed run, then TIMED_RUNS runs each alone between the
    # clock's start and stop; its summaries after the last stop; the claims at the very end.
    timed_step = ["compute", *(["start", "compute", "stop"] * TIMED_RUNS)]
    assert log[: len(timed_step)] == timed_step
    assert log.count("compute") == 4 * (1 + TIMED_RUNS)
    assert log.count("start") == 4 * TIMED_RUNS
    pairs_hold_nothing_else(log)
    assert log[-1] == "claims" and log.count("claims") == 1
    assert log.index("summary") > len(timed_step) - 1  # summaries follow the timed runs
    assert [step.seconds for step in walkthrough.steps] == [median(list(READINGS))] * 4


def test_without_time_nothing_is_timed_and_each_step_runs_once(monkeypatch):
    backend = LoggingBackend("numpy", "cpu", "float64")
    log = backend.log
    monkeypatch.setattr(attention, "scores", logging(log, attention.scores))
    run = logged_run("scaled", ("--n", "5", "--dk", "3"), backend, time=False)
    walkthrough = runner.build(run)
    assert "start" not in log and "stop" not in log
    assert log.count("compute") == 1
    assert all(step.seconds is None for step in walkthrough.steps)


@pytest.mark.parametrize("lesson", lessons_with_runs())
def test_every_lesson_times_its_computations_alone_and_gives_the_same_numbers(lesson):
    """Every lesson, timed: nothing but computations between a start and its stop (the
    summaries, which the backend logs, never), and the same walkthrough as untimed (the
    warm-up and the repeated runs change no number: what a step draws, it draws from its
    seed)."""
    argv = runs_of(lesson).random
    timed_backend = LoggingBackend("numpy", "cpu", "float64")
    timed = runner.build(logged_run(lesson, argv, timed_backend, time=True))
    log = timed_backend.log
    pairs_hold_nothing_else(log)
    assert log.count("start") == log.count("stop") > 0
    assert log.count("start") % TIMED_RUNS == 0
    untimed = runner.build(
        logged_run(lesson, argv, LoggingBackend("numpy", "cpu", "float64"), time=False)
    )
    assert_same_numbers(timed, untimed)
    shown = [step.seconds for step in timed.steps if step.seconds is not None]
    assert shown and not any(step.seconds is not None for step in untimed.steps)


def assert_same_numbers(first: Walkthrough, second: Walkthrough) -> None:
    assert [step.key for step in first.steps] == [step.key for step in second.steps]
    for one, other in zip(first.steps, second.steps, strict=True):
        assert_equal(one.value, other.value, one.key)
        for part, same in zip(one.parts, other.parts, strict=True):
            assert_equal(part.value, same.value, f"{one.key}: {part.label}")
    assert_equal(first.output, second.output, "output")


def assert_equal(value: Any, other: Any, where: str) -> None:
    if isinstance(value, np.ndarray):
        assert np.array_equal(value, other, equal_nan=value.dtype.kind == "f"), where
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        # A timed run's records may hold its times (variance's "seconds"): the rest is equal.
        assert [without_seconds(row) for row in value] == [without_seconds(row) for row in other], (
            where
        )
    else:
        assert str(value) == str(other), where


def without_seconds(row: dict[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in row.items() if key != "seconds"}


def logging(log: list[str], compute: Any) -> Any:
    def logged(*args: Any, **kwargs: Any) -> Any:
        log.append("compute")
        return compute(*args, **kwargs)

    return logged


def claims(log: list[str], check: Any) -> Any:
    def logged(*args: Any, **kwargs: Any) -> Any:
        log.append("claims")
        return check(*args, **kwargs)

    return logged


def test_the_median_of_the_timed_runs():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0]) == 2.5


def test_the_copy_to_the_host_and_the_summaries_follow_the_timed_runs(monkeypatch):
    """On the torch backend a step's value is copied to the host (and summarised) once, after
    its last timed run, never between a start and a stop."""
    torch = pytest.importorskip("torch")
    from attn_cli.core.torch_backend import TorchBackend

    @dataclass(frozen=True)
    class LoggingTorchBackend(TorchBackend):
        """The torch backend on the CPU, logging its clock, copies to the host and summaries."""

        log: list[str] = field(default_factory=list, compare=False)

        def clock(self) -> Clock:
            return LoggingClock(self.log)

        def to_numpy(self, array: Any) -> np.ndarray:
            if isinstance(array, torch.Tensor):
                self.log.append("copy")
            return super().to_numpy(array)

        def summary(self, array: Any) -> Summary | None:
            self.log.append("summary")
            return super().summary(array)

    backend = LoggingTorchBackend("torch", "cpu", "float64")
    log = backend.log
    monkeypatch.setattr(attention, "scores", logging(log, attention.scores))
    request = RunRequest("scaled", sizes={"n": 5, "dk": 3}, backend="torch", time_steps=True)
    run = replace(runner.prepare(request), backend=backend)
    walkthrough = runner.build(run)
    pairs_hold_nothing_else(log)
    first_copy = log.index("copy")
    assert log[:first_copy] == ["compute", *(["start", "compute", "stop"] * TIMED_RUNS)]
    assert log[first_copy : first_copy + 2] == ["copy", "summary"]
    assert walkthrough.steps[0].seconds == median(list(READINGS))


def test_the_cuda_clock_reads_the_events_between_its_start_and_stop(monkeypatch):
    """CudaClock: an event recorded at the start (after the queue drained) and one at the stop,
    waited for; the time is the GPU's between them (elapsed_time, in ms)."""
    pytest.importorskip("torch")
    from attn_cli.core import torch_backend as module

    calls: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            self.name = "begin" if not any(c.startswith("new") for c in calls) else "end"
            calls.append(f"new {self.name}")

        def record(self) -> None:
            calls.append(f"record {self.name}")

        def synchronize(self) -> None:
            calls.append(f"wait {self.name}")

        def elapsed_time(self, other: Event) -> float:
            calls.append(f"elapsed {self.name} to {other.name}")
            return 2.5

    monkeypatch.setattr(module.torch.cuda, "Event", Event)
    monkeypatch.setattr(module.torch.cuda, "synchronize", lambda: calls.append("synchronize"))
    clock = module.TorchBackend("torch", "cuda", "float32").clock()
    clock.start()
    calls.append("compute")
    assert clock.stop() == 0.0025
    assert calls == [
        "new begin",
        "new end",
        "synchronize",
        "record begin",
        "compute",
        "record end",
        "wait end",
        "elapsed begin to end",
    ]
