"""The commands' help and the checker's command: every ``--help`` ends with an example and
the exit codes, ``verify`` lists every method, ``exactspec check`` says OK (with the
certificate's own verdict), REJECTED or NOT CHECKED (with the ``--trust`` command that would
check it)."""

import json
import shlex
from pathlib import Path

import pytest

from exactspec.cli import COMMANDS, METHOD_NAMES, main

ROOT = Path(__file__).resolve().parent.parent
USER = str(ROOT / "examples" / "my_rule.py")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def help_text(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_shows_an_example_and_its_exit_codes(capsys, command):
    text = help_text(capsys, command)
    example = text.partition("\nexample:\n")[2]
    assert example, text
    assert f"  exactspec {command}" in example or f"exactspec {command} " in example
    codes = text.partition("\nexit codes: ")[2]
    assert codes.startswith("0 ") and " 2 bad input" in codes, text


def test_top_level_help_says_the_exit_codes_and_where_each_command_is_described(capsys):
    text = help_text(capsys)
    assert "exit codes (every command): 0 success, 1 a refuted claim, 2 bad input" in text
    assert "exactspec check: 4 not checked" in text
    assert "exactspec COMMAND --help" in text


def test_verify_help_lists_every_method(capsys):
    from exactspec.methods import METHODS

    assert list(METHOD_NAMES) == list(METHODS)
    text = "".join(help_text(capsys, "verify").split())   # argparse wraps at hyphens too
    assert ",".join(METHOD_NAMES) in text and "top1,..." not in text
    assert "--exact" in text


def test_example_help_and_output_say_what_the_example_is(capsys):
    text = help_text(capsys, "example")
    assert "seed" not in text and "p = 1/2,3/10,1/5 and q = 1/5,1/5,3/5" in text
    code, out, _ = run(capsys, "example")
    assert code == 0 and "seed" not in out
    assert out.startswith("The one-draft rule on p = (1/2, 3/10, 1/5), q = (1/5, 1/5, 3/5)")


def _certificate(capsys, tmp_path, *argv) -> Path:
    path = tmp_path / "c.json"
    assert run(capsys, "verify", *argv, "--certificate", path)[0] in (0, 1)
    return path


def test_check_ok_restates_the_certificates_verdict(capsys, tmp_path):
    cert = _certificate(capsys, tmp_path, "sps", "--p", "1/2,1/2", "--q", "1/4,3/4")
    code, out, err = run(capsys, "check", cert)
    assert code == 0 and err == ""
    assert out.strip().splitlines()[-1] == "CERTIFICATE OK: LOSSLESS"
    code, out, _ = run(capsys, "check", cert, "--json")
    obj = json.loads(out)
    assert code == 0 and obj["verdict"] == "OK" and obj["exit"] == 0
    assert obj["certificate_verdict"] == "LOSSLESS" and obj["problems"] == []
    code, out, _ = run(capsys, "check", cert, "--no-replay")
    assert code == 0 and out.strip().splitlines()[-1] == (
        "CERTIFICATE OK: LOSSLESS (method-free check: the paths were not replayed)")


def test_check_not_checked_prints_the_trust_command_that_checks_it(capsys, tmp_path):
    cert = _certificate(capsys, tmp_path, f"{USER}:shortcut", "--p", "1/2,1/4,1/4", "--q",
                        "1,0,0")
    code, out, _ = run(capsys, "check", cert)
    lines = out.strip().splitlines()
    assert code == 4 and "CERTIFICATE NOT CHECKED" in lines and "CERTIFICATE OK" not in out
    command = f"exactspec check {shlex.quote(str(cert))} --trust {shlex.quote(USER + ':shortcut')}"
    assert lines[-1] == f"to check it, trusting that code to run: {command}"
    code, out, _ = run(capsys, "check", cert, "--json")
    assert code == 4 and json.loads(out)["trust_command"] == command
    # the command it printed checks it, and OK restates the lossy verdict with its TV
    code, out, _ = run(capsys, *shlex.split(command)[1:])
    assert code == 0 and out.strip().splitlines()[-1] == "CERTIFICATE OK: LOSSY (TV 1/4)"


def test_check_rejected_and_bad_input(capsys, tmp_path):
    cert = _certificate(capsys, tmp_path, "sps", "--p", "1/2,1/2", "--q", "1/4,3/4")
    data = json.loads(cert.read_text())
    data["law"] = {"0": "3/4", "1": "1/4"}
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data))
    code, out, _ = run(capsys, "check", forged)
    assert code == 1 and out.strip().splitlines()[-1] == "CERTIFICATE REJECTED"
    assert "CERTIFICATE OK" not in out
    code, out, err = run(capsys, "check", tmp_path / "missing.json", "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert json.loads(out)["exit"] == 2


def test_module_checker_entry_point_prints_the_same_lines(tmp_path, capsys):
    from exactspec.replay import main as checker_main

    cert = _certificate(capsys, tmp_path, f"{USER}:shortcut", "--p", "1/2,1/4,1/4", "--q",
                        "1,0,0")
    assert checker_main([str(cert)]) == 4
    out = capsys.readouterr().out
    assert "to check it, trusting that code to run: python -m exactspec.checker " in out
    assert checker_main([str(cert), "--trust", f"{USER}:shortcut"]) == 0
    assert capsys.readouterr().out.strip() == "CERTIFICATE OK: LOSSY (TV 1/4)"


def test_two_acceptance_figures_are_said_in_words(capsys):
    code, out, _ = run(capsys, "verify", "kseq", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5",
                       "--k", "2")
    lines = out.splitlines()
    first = [line for line in lines if line.startswith("acceptance P(Y in X) = ")]
    second = [line for line in lines if line.startswith("explicit acceptance = ")]
    assert len(first) == len(second) == 1
    assert first[0].endswith(": the probability that the emitted token is one of the drafts")
    assert "the probability that the rule takes a draft by s.accept" in second[0]
    assert "(exactly 34217436/43570775)" in first[0]


def test_help_examples_run(capsys, monkeypatch):
    """Every example line of the help whose files are in the repository runs and exits with
    one of its command's codes (0 or 1 here); the others name files of the user's."""
    import os

    from exactspec.cli import EPILOGS

    monkeypatch.chdir(ROOT)
    ran = 0
    for command, (example, _) in EPILOGS.items():
        for line in example.splitlines():
            argv = shlex.split(line.partition("#")[0])[1:]
            if argv[1:2] == ["--jobs"] or any(
                    ("." in a and "/" not in a and not a[0].isdigit() and not a.startswith("-"))
                    or (a.startswith("examples/") and not os.path.exists(a.partition(":")[0]))
                    for a in argv[1:]):
                continue                  # a user's file (p.json, c.json), or every claim
            code = main(argv)
            capsys.readouterr()
            assert code in (0, 1), line
            ran += 1
    assert ran >= 8


def test_check_a_sequence_certificate_names_the_trust_it_needs(capsys, tmp_path, monkeypatch):
    """A tree certificate of a user's verifier records its file as the spec gave it: NOT
    CHECKED prints the --trust command and says to give the file as a path from here; the
    verifier trusted by that path checks it, and OK restates the lossy verdict and TV."""
    monkeypatch.chdir(ROOT)
    cert = tmp_path / "tree.json"
    assert run(capsys, "tree", "examples/chain_user.json", "--certificate", cert)[0] == 1
    code, out, _ = run(capsys, "check", cert)
    lines = out.strip().splitlines()
    assert code == 4 and lines[-3] == "CERTIFICATE NOT CHECKED"
    assert lines[-2].endswith("--trust chain_user.py:stale_residual_chain")
    assert lines[-1].startswith("  (chain_user.py as a path from here")
    code, out, _ = run(capsys, "check", cert, "--trust",
                       "examples/chain_user.py:stale_residual_chain")
    assert code == 0 and out.strip().splitlines()[-1] == "CERTIFICATE OK: LOSSY (TV 3/25)"
