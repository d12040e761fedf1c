"""The process entry: `python -m attn_cli` and the `attn` console script.

The cyclic garbage collector is off from the first import on: start-up only creates objects
that live until the process ends (see attn_cli.cli.commands.streams.start_up_done, which freezes
them and turns it back on once the command has imported what it needs).
"""

import gc


def main() -> None:
    gc.disable()
    from attn_cli.cli.app import main as run

    run()


if __name__ == "__main__":
    main()
