"""The command line: Typer parses and dispatches, nothing more."""
