"""attn graph: attention restricted to a graph's neighbours (graph attention)."""

from __future__ import annotations

from typing import Annotated

import typer

from attn_cli.options import INPUT_PANEL, TokensOpt, input_option, lesson_command, size_option


@lesson_command("graph")
def graph(
    edges: Annotated[
        str | None,
        input_option(
            "--edges",
            'The graph as node pairs from 0, e.g. "0-1,1-2,2-0,2-3" (instead of --adjacency).',
        ),
    ] = None,
    self_loops: Annotated[
        bool,
        typer.Option(
            "--self-loops",
            help="Make each node its own neighbour, so that no row is empty.",
            rich_help_panel=INPUT_PANEL,
        ),
    ] = False,
    directed: Annotated[
        bool,
        typer.Option(
            "--directed",
            help="An edge i-j makes j a neighbour of i only (default: both ways).",
            rich_help_panel=INPUT_PANEL,
        ),
    ] = False,
    n: Annotated[
        int | None,
        size_option("--n", "Random inputs: number of nodes N (default: 5), on a random graph."),
    ] = None,
    d: Annotated[
        int | None, size_option("--d", "Random inputs: feature width d (default: 3).")
    ] = None,
    dk: Annotated[
        int | None,
        size_option("--dk", "Random inputs: also draw W_Q, W_K, W_V of d_k rows."),
    ] = None,
    tokens: TokensOpt = None,
) -> None:
    """Graph attention: node i attends only to its neighbours N(i), from an edge list or adjacency."""
