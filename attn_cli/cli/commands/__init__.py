"""One module per command but the tour's (attn_cli.cli.tour_command: the tour runs these
commands, so it sits above them): Typer signatures that parse and dispatch, nothing more."""
