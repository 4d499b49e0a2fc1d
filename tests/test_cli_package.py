"""The command line as a package (``exactspec/cli/``): one module per command, each named
after it and registered once; the parser offers exactly the registered commands; ``python -m
exactspec.cli`` is the same command line as ``exactspec``; a failure's line still tells user
code's frames from exactspec's own, wherever the module that reports it sits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import exactspec.cli
from exactspec.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exactspec" / "cli"


def _subcommands() -> list[str]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.dest == "command"]
    return list(action.choices)


def test_every_command_is_one_module_named_after_it():
    assert list(COMMANDS) == _subcommands()
    for name, command in COMMANDS.items():
        assert command.__module__ == f"exactspec.cli.{name}", name
        assert (PACKAGE / f"{name}.py").is_file()


def test_no_module_of_the_package_is_long():
    """The split keeps each concern short: no module over 800 lines."""
    lengths = {path.name: len(path.read_text().splitlines()) for path in PACKAGE.glob("*.py")}
    assert set(COMMANDS) <= {name[:-3] for name in lengths}
    assert max(lengths.values()) <= 800, lengths


def test_python_m_exactspec_cli_is_the_command_line():
    argv = ["rho", "2", "--json"]
    runs = [subprocess.run([sys.executable, "-m", module, *argv], capture_output=True,
                           text=True, cwd=ROOT) for module in ("exactspec.cli", "exactspec")]
    assert [r.returncode for r in runs] == [0, 0]
    assert runs[0].stdout == runs[1].stdout
    assert json.loads(runs[0].stdout)["k"] == 2


def test_a_failure_inside_exactspec_names_the_callers_frame(capsys):
    """The innermost frame outside the whole package (not only outside ``exactspec/cli``):
    an error raised in :mod:`exactspec.core.dist` is named at this file's line."""
    from exactspec.cli.process import user_frame
    from exactspec.core.dist import Dist

    try:
        Dist.parse(None)                                  # fails inside exactspec.core.dist
    except Exception as err:                              # noqa: BLE001 - its frames read
        where = user_frame(err)
    assert where.startswith(f" (in {__file__} line ")
    assert "dist.py" not in where


def test_a_usage_error_is_one_line_and_exit_2(capsys):
    assert main(["verify", "sps", "--p", "1/2,1/2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "error: both --p and --q are required\n"
    assert exactspec.cli.EXIT_USAGE == 2
