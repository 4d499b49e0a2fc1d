"""``python -m exactspec.checker CERT.json``: the command line, which replays through
exactspec's registry (:func:`exactspec.replay.main`); the checker itself never looks a method
up."""

import sys

if __name__ == "__main__":   # the command line: replays through exactspec's registry
    from exactspec.replay import main as _main

    sys.exit(_main())
