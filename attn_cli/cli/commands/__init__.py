"""One module per command: Typer signatures that parse and dispatch, nothing more."""
