"""The start-up floor: a minimal Typer app that imports numpy, parses one matrix option and
prints one rich table. `attn scaled` must start within 1.2x of this (benchmarks/startup.py)."""

from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer()


@app.command()
def main(q: Annotated[str, typer.Option("--q")] = "1,0;0,1") -> None:
    matrix = np.array([[float(x) for x in row.split(",")] for row in q.split(";")])
    table = Table("", *(str(c + 1) for c in range(matrix.shape[1])))
    for index, row in enumerate(matrix, start=1):
        table.add_row(str(index), *(f"{x:.4f}" for x in row))
    Console().print(table)


if __name__ == "__main__":
    app()
