"""What a sweep runs (BenchConfig) and what each run gives back (Row)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from attn_cli.core.errors import UserError, param
from attn_cli.core.matrices import whole_number
from attn_cli.core.variants import BENCH_HEAD_WIDTH, BENCH_SIZES

if TYPE_CHECKING:
    from attn_cli.bench.machine import Load

Status = Literal["ok", "skipped", "oom", "unsupported", "error"]

# Every implementation, in the order rows are shown. "sdpa" is PyTorch's default dispatch;
# "sdpa-X" forces backend X through torch.nn.attention.sdpa_kernel.
IMPLS = (
    "naive",
    "sdpa",
    "sdpa-flash",
    "sdpa-efficient",
    "sdpa-cudnn",
    "sdpa-math",
    "tiled",
    "triton-flash",
    "numpy",
    "tiled-numpy",
    "sdpa-window",
    "flex-window",
    "window",
    "window-numpy",
    "linear",
    "linear-numpy",
)
DEFAULT_SIZES = BENCH_SIZES  # per device: the doubling range low..high of --sizes
DEFAULT_D = BENCH_HEAD_WIDTH  # per device: the head width d of --d
DEFAULT_DTYPE = {"cpu": "float32", "cuda": "bfloat16", "mps": "float32"}
DEFAULT_BLOCK = 128
DEFAULT_WINDOW = 64
# Forward + backward against the forward alone: six products of 2·n²·d against two.
BACKWARD_FLOPS_FACTOR = 3
# A row is unstable when the interquartile range of its timed runs exceeds this share of their
# median: the rule of torch.utils.benchmark, whose Measurement warns past a tenth.
UNSTABLE_SPREAD = 0.1


def spread_ratio(median: float | None, spread: float | None) -> float | None:
    """The interquartile range as a share of the median (None without a positive median)."""
    if median is None or spread is None or median <= 0:
        return None
    return spread / median


def is_unstable(median: float | None, spread: float | None) -> bool:
    ratio = spread_ratio(median, spread)
    return ratio is not None and ratio > UNSTABLE_SPREAD


@dataclass(frozen=True)
class BenchConfig:
    device: str = "cpu"
    sizes: tuple[int, ...] = (128, 256, 512, 1024, 2048)
    d: int = 64
    heads: int = 8
    batch: int = 1
    dtype: str = "float32"
    causal: bool = False
    impls: tuple[str, ...] = ()
    repeats: int | None = None  # None: enough for a stable median (see devices.auto_repeats)
    block: int = DEFAULT_BLOCK
    seed: int = 0
    window: int = DEFAULT_WINDOW  # w of the window implementations: |i − j| ≤ w
    dims: tuple[int, ...] = ()  # head dimensions to sweep at one n instead of sweeping n
    backward: bool = False  # time the forward and the backward (dQ, dK, dV for a fixed dO)

    @property
    def variable(self) -> str:
        """What the sweep varies: "n", or "d" with --dims."""
        return "d" if self.dims else "n"

    def points(self) -> list[tuple[int, int]]:
        """The (n, d) of every size of the sweep, in order."""
        if self.dims:
            return [(n, d) for n in self.sizes for d in self.dims]
        return [(n, self.d) for n in self.sizes]

    def flops(self, n: int) -> float:
        """The FLOPs of the work timed: the forward's Q Kᵀ and A V are 2·n²·d each; with
        --backward also dV = Aᵀ dO, dA = dO Vᵀ, dQ = dS K and dK = dSᵀ Q, 2·n²·d each
        (BACKWARD_FLOPS_FACTOR × the forward's; a flash backward's recomputed Q Kᵀ is not
        counted); causal does half the pairs."""
        total = 4.0 * self.batch * self.heads * n * n * self.d
        if self.backward:
            total *= BACKWARD_FLOPS_FACTOR
        return total / 2 if self.causal else total


@dataclass
class Row:
    """One (implementation, n) result. Failure is a result too: see ``status`` and ``note``."""

    impl: str
    n: int
    d: int
    heads: int
    batch: int
    dtype: str
    causal: bool
    ms_median: float | None = None
    ms_spread: float | None = None  # interquartile range of the timed runs, in ms
    tflops: float | None = None
    peak_fraction: float | None = None  # of the device's published dense peak, when known
    peak_mem_bytes: int | None = None
    max_abs_err: float | None = None  # against a float64 reference on a slice of the output
    status: Status = "ok"
    note: str = ""
    memory_method: str | None = None  # how peak_mem_bytes was measured (or "estimate")
    repeats: int = 0
    unstable: bool = False  # the spread stayed above UNSTABLE_SPREAD of the median, re-measured
    backward: bool = False  # the time and memory are of the forward and the backward together

    @classmethod
    def for_run(cls, config: BenchConfig, impl: str, n: int, **values: Any) -> Row:
        return cls(
            impl=impl,
            n=n,
            d=config.d,
            heads=config.heads,
            batch=config.batch,
            dtype=config.dtype,
            causal=config.causal,
            backward=config.backward,
            **values,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BenchResult:
    config: BenchConfig
    device_info: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    interrupted: bool = False
    load: Load | None = None  # the threads used and the machine's load around the sweep

    def machine(self) -> dict[str, Any]:
        """Where it ran: the device description, the threads used and the load."""
        info = dict(self.device_info)
        if self.load is not None:
            info.update(threads=dict(self.load.threads), load=self.load.as_dict())
        return info


def doubling(low: int, high: int) -> tuple[int, ...]:
    """low, 2·low, 4·low, ... up to high."""
    sizes = [low]
    while sizes[-1] * 2 <= high:
        sizes.append(sizes[-1] * 2)
    return tuple(sizes)


_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*$")


def parse_sizes(text: str | None, device: str, option: str = param("sizes")) -> tuple[int, ...]:
    """--sizes: "512,1024,4096" or a doubling range "128..2048"; None: the device's default.
    (--dims takes the same forms; ``option`` names the option in errors, core.errors.param
    of its keyword or the flag itself.)"""
    if text is None:
        return doubling(*DEFAULT_SIZES[device])
    match = _RANGE.match(text)
    if match:
        low, high = whole_number(match[1], option), whole_number(match[2], option)
        if low < 1 or high < low:
            raise UserError(f"{option} {text!r}: a range needs 1 <= low <= high, e.g. 128..2048.")
        return doubling(low, high)
    sizes = []
    for part in re.split(r"[,\s]+", text.strip()):
        if not part.isdigit() or whole_number(part, option) < 1:
            raise UserError(
                f"{option} {text!r}: {part!r} is not a positive whole number; write e.g. "
                "512,1024,2048 or 128..2048."
            )
        sizes.append(int(part))
    return tuple(sorted(set(sizes)))


def parse_impls(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """--impl: comma-separated names (in the order of IMPLS); None: the device's default set."""
    if text is None:
        return default
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in IMPLS]
    if unknown or not names:
        raise UserError(
            f"--impl: unknown implementation {unknown[0] if unknown else text!r}; choose from "
            f"{', '.join(IMPLS)} (comma-separated)."
        )
    return tuple(name for name in IMPLS if name in names)
