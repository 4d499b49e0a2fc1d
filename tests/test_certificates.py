"""Certificates from someone else: checking one never runs code it names, forged ones fail,
hostile files are refused in one line, honest ones still check.

Each attack is checked through the command line in a separate process whose working folder
holds the attacker's module, with a marker file the attack would write: the marker never
appears and the verdict is one line (not checked, or bad input), never ``CERTIFICATE OK``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactspec import Dist, verify
from exactspec.checker import (EXIT_BAD_INPUT, EXIT_NOT_CHECKED, EXIT_OK, EXIT_REJECTED,
                               CertificateError, exact_number, load_certificate)
from exactspec.generic_checker import parse_expression
from exactspec.replay import check, check_certificate, main as checker_main

ROOT = Path(__file__).resolve().parent.parent
P, Q = "1/2,3/10,1/5", "1/5,1/5,3/5"


def _cert(method="sps", k=1, p=P, q=Q, **options):
    return verify(method, Dist.parse(p), Dist.parse(q), k, keep_paths=True,
                  **options).certificate()


def _check(tmp_path, cert, *options, checker="exactspec.checker", env=None, capsys=None):
    """``(exit code, stdout, stderr)`` of a checker run in a fresh process in ``tmp_path``
    (in this process with ``capsys``: both checkers' command lines are :func:`main`)."""
    name = tmp_path / "cert.json"
    name.write_text(cert if isinstance(cert, str) else json.dumps(cert))
    if capsys is not None:
        capsys.readouterr()
        code = checker_main([*options, str(name)])
        out, err = capsys.readouterr()
        return code, out, err
    environment = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    done = subprocess.run([sys.executable, "-m", checker, *options, str(name)],
                          capture_output=True, text=True, cwd=tmp_path, env=environment,
                          timeout=120)
    return done.returncode, done.stdout, done.stderr


def _refused(code, out, err):
    assert "Traceback" not in out + err
    assert "CERTIFICATE OK" not in out
    assert code in (EXIT_BAD_INPUT, EXIT_NOT_CHECKED, EXIT_REJECTED)
    if code == EXIT_BAD_INPUT:
        assert out == "" and err.count("\n") == 1 and err.startswith("error: ")


# -- attacks: nothing the certificate names runs ------------------------------------------
def test_a_module_that_acts_at_import_is_never_imported(tmp_path):
    marker = tmp_path / "MARKER"
    (tmp_path / "evilmod.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "def rule(s, p, q):\n    return s.draw(p)\n")
    for method in ("evilmod:rule", f"{tmp_path / 'evilmod.py'}:rule"):
        code, out, err = _check(tmp_path, dict(_cert(), method=method))
        _refused(code, out, err)
        assert code == EXIT_NOT_CHECKED and "not checked: not replayed" in out
        assert "--trust" in out and not marker.exists()


def test_a_named_function_with_side_effects_runs_only_when_trusted(tmp_path):
    marker = tmp_path / "MARKER"
    rule = tmp_path / "rule.py"
    rule.write_text("from exactspec.methods.sps import sps\n"
                    "def rule(s, p, q):\n"
                    f"    open({str(marker)!r}, 'w').write('called')\n"
                    "    return sps(s, p, q)\n")
    cert = dict(_cert(), method=f"{rule}:rule")
    code, out, err = _check(tmp_path, cert)
    _refused(code, out, err)
    assert code == EXIT_NOT_CHECKED and not marker.exists()
    # the person checking names the method: then, and only then, it runs (and replays)
    code, out, _ = _check(tmp_path, cert, "--trust", f"{rule}:rule")
    assert code == EXIT_OK and "CERTIFICATE OK" in out and marker.exists()


_GENERIC = []


def _generic_with(field_value=None):
    """A small certificate of a proof for every vocabulary size (naive's, refuted), with
    one expression replaced."""
    if not _GENERIC:
        from exactspec.claims.generic import generic_certificate
        from exactspec.engine.generic import prove_generic
        from exactspec.methods.naive import naive

        _GENERIC.append(json.dumps(generic_certificate(prove_generic(naive), "naive")))
    cert = json.loads(_GENERIC[0])
    if field_value is not None:
        cert["cases"][0]["law"]["t"] = field_value
    return cert


PAYLOAD = "__import__('os').system('touch MARKER')"


@pytest.mark.parametrize("checker", ["exactspec.checker", "exactspec.generic_checker"])
def test_a_sympify_payload_is_never_evaluated(tmp_path, checker):
    code, out, err = _check(tmp_path, _generic_with(PAYLOAD), checker=checker)
    _refused(code, out, err)
    assert code == EXIT_BAD_INPUT and "expression" in err
    assert not (tmp_path / "MARKER").exists()


def test_an_environment_variable_trick_through_a_library_is_never_reached(tmp_path):
    """``webbrowser.open`` runs the program in ``$BROWSER``: a certificate naming it as its
    method is not replayed, and the library is not even imported."""
    cert = dict(_cert(), method="webbrowser:open")
    name = tmp_path / "cert.json"
    name.write_text(json.dumps(cert))
    script = ("import sys\nfrom exactspec.replay import main\n"
              f"code = main([{str(name)!r}])\n"
              "print('imported' if 'webbrowser' in sys.modules else 'not imported')\n"
              "sys.exit(code)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), BROWSER=f"touch {tmp_path / 'MARKER'}")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == EXIT_NOT_CHECKED and "not imported" in done.stdout
    assert "Traceback" not in done.stderr and not (tmp_path / "MARKER").exists()


def test_the_exact_value_grammar():
    assert exact_number("-3/5") == Fraction(-3, 5) and exact_number(7) == 7
    for bad in ("1e999999999", "0x10", "1/0", "1.5", " 1", "1_000", True, 0.5, None,
                "9" * 2001, "__import__('os')"):
        with pytest.raises(CertificateError):
            exact_number(bad)
    x = parse_expression("x")
    assert parse_expression("-(x - 1)**2/(2*x + 1)") == -(x - 1)**2 / (2 * x + 1)
    assert parse_expression("3/4") == Fraction(3, 4)
    for bad in (PAYLOAD, "x.y", "sqrt(x)", "x**x", "2**65", "9**9**9", "1.5", "x[0]",
                "lambda: 0", "(" * 200 + "x" + ")" * 200, "x" * 200_001, "1/0", "x y"):
        with pytest.raises(CertificateError):
            parse_expression(bad)


# -- forged certificates fail -------------------------------------------------------------
def _naive_lossless(cert):
    """sps's lossless paths presented as naive's (naive is lossy on these rows)."""
    return dict(cert, method="naive")


def test_forgery_renamed_to_naive_with_a_float_format(tmp_path, capsys):
    forged = dict(_naive_lossless(_cert()), arith="float64")
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    _refused(code, out, err)
    assert code == EXIT_REJECTED and "float64" in out
    # the honest float run checks
    honest = _cert("naive", arith="float32")
    assert check(honest).verdict == "OK"


def test_forgery_dressed_as_a_sequence_certificate(tmp_path, capsys):
    forged = _naive_lossless(_cert())
    forged.update(context="", m=1)
    del forged["draft"]
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    _refused(code, out, err)
    # stripped down to a well-formed sequence certificate it is still not OK: nothing in it
    # binds the paths to a model or a verifier
    for key in ("k", "grid", "labels", "acceptance"):
        del forged[key]
    forged["version"] = 1
    for path in forged["paths"]:
        del path["choices"], path["accepted"]
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    assert code == EXIT_NOT_CHECKED and "records no models" in out
    code, out, _ = _check(tmp_path, forged, "--no-replay", capsys=capsys)
    assert code == EXIT_OK and "not replayed" in out


def test_forgery_a_part_with_an_unimportable_method_in_a_claim(tmp_path, capsys):
    part = dict(_cert(), method="no_such_module:rule")
    forged = {"kind": "exactspec-claim-certificate", "claim": "x", "parts": [_cert(), part]}
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    _refused(code, out, err)
    assert code == EXIT_NOT_CHECKED and "part 1: not replayed" in out


def test_forgery_an_unimportable_method_in_a_symbolic_certificate(tmp_path, capsys):
    from exactspec.claims.base import symbolic_certificate
    from exactspec.engine.symbolic import prove_symbolic
    from exactspec.methods.sps import sps

    cert = symbolic_certificate(prove_symbolic(sps, 2, witnesses=1), "sps on two tokens")
    assert check(cert).verdict == "OK"
    forged = json.loads(json.dumps(dict(cert, method="no_such_module:rule")))
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    _refused(code, out, err)
    assert code == EXIT_REJECTED and "a witness names method 'sps'" in out
    for case in forged["cases"]:
        for point in case["witnesses"]:
            point["certificate"]["method"] = "no_such_module:rule"
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    _refused(code, out, err)
    assert code == EXIT_NOT_CHECKED and "not replayed" in out


def test_forgery_a_verdict_the_checkers_never_read(tmp_path, capsys):
    """A proof for every vocabulary size recorded as proved whose cases are refuted: the
    path checker used to look at its witnesses only, the sympy checker ignored the verdict;
    'outside' (nothing claimed) skipped every check."""
    honest = _generic_with()
    assert honest["verdict"] == "refuted" and check(honest).verdict == "OK"
    forged = dict(honest, verdict="proved")
    code, out, err = _check(tmp_path, forged, capsys=capsys)
    _refused(code, out, err)
    assert code == EXIT_REJECTED and "the cases make it 'refuted'" in out
    outside = dict(honest, outside="left the abstraction")
    code, out, err = _check(tmp_path, outside, capsys=capsys)
    _refused(code, out, err)
    # and the sympy checker checks a claim's other parts too
    claim = {"kind": "exactspec-claim-certificate", "parts": [
        honest, dict(_cert(), method="no_such_module:rule")]}
    code, out, err = _check(tmp_path, claim, checker="exactspec.generic_checker")
    assert code == EXIT_NOT_CHECKED


@pytest.mark.parametrize("change", ["unknown key", "missing key", "unknown kind",
                                    "unknown path key", "float"])
def test_the_schema_is_strict(change):
    cert = _cert()
    if change == "unknown key":
        cert["comment"] = "trust me"
    elif change == "missing key":
        del cert["acceptance"]
    elif change == "unknown kind":
        cert = {"kind": "exactspec-claim-certificate", "parts": [{"kind": "other"}]}
    elif change == "unknown path key":
        cert["paths"][0]["note"] = "x"
    else:
        cert["paths"][0]["probability"] = 0.5
    problems = check_certificate(cert)
    assert len(problems) == 1 and problems[0].startswith("bad input: ")


# -- hostile files: refused in one line, having read little --------------------------------
class _CountedFile:
    """A file whose reads are counted (the bytes of each ``read`` go to ``sizes``)."""

    def __init__(self, handle, sizes):
        self.handle, self.sizes = handle, sizes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def fileno(self):
        return self.handle.fileno()

    def read(self, size=-1):
        data = self.handle.read(size)
        self.sizes.append(len(data))
        return data


@pytest.mark.parametrize("checker", ["exactspec.checker", "exactspec.generic_checker"])
def test_hostile_files_refused_in_one_line(tmp_path, capsys, monkeypatch, checker):
    """Each refused in one line, having read at most the byte budget and one byte more: the
    sparse 2 GiB file not at all (its size says so), ``/dev/zero`` up to the budget and one
    byte, the deep file once (its nesting is measured on the bytes, before parsing)."""
    import builtins

    import exactspec.checker.reading as checker_module

    sizes: list = []
    monkeypatch.setattr(checker_module, "open", lambda name, mode="r": _CountedFile(
        builtins.open(name, mode), sizes), raising=False)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(2 * 2**30)                  # sparse: 2 GiB that take no disk
    cases = ((deep, "nested more than", [400_000]), (big, "larger than", []),
             ("/dev/zero", "larger than", [checker_module.MAX_BYTES + 1]),
             (tmp_path / "none.json", "cannot read", []))
    for path, why, read in cases:                    # in this process: one line
        sizes.clear()
        assert checker_main([str(path)]) == EXIT_BAD_INPUT
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and why in err, err
        assert sizes == read, (path, sizes)
    monkeypatch.undo()
    # and one through the command line, in its own process
    path, why, _ = cases[0 if checker == "exactspec.checker" else 2]
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", checker, str(path)],
                          capture_output=True, text=True, env=environment, timeout=120)
    assert done.returncode == EXIT_BAD_INPUT and done.stdout == ""
    assert done.stderr.count("\n") == 1 and why in done.stderr, done.stderr


def test_reading_is_bounded(tmp_path):
    name = tmp_path / "c.json"
    name.write_text(json.dumps(_cert()))
    assert load_certificate(str(name))["kind"] == "exactspec-certificate"
    with pytest.raises(CertificateError, match="larger than 100 bytes"):
        load_certificate(str(name), max_bytes=100)
    with pytest.raises(CertificateError, match="nested more than 3 deep"):
        load_certificate(str(name), max_depth=3)
    name.write_text('{"a": "[[[[[[[[[["}')             # brackets inside strings do not count
    assert load_certificate(str(name), max_depth=1) == {"a": "[[[[[[[[[["}


def test_budgets_of_paths_and_seconds(tmp_path, capsys):
    cert = _cert("rrs", 2)
    code, out, err = _check(tmp_path, cert, "--max-paths", "3", capsys=capsys)
    assert code == EXIT_BAD_INPUT and "more than the budget of 3" in err
    huge_k = dict(cert, k=10**9)
    assert check_certificate(huge_k)[0].startswith("bad input: ")



class FakeClock:
    """A clock that advances by ``step`` seconds at every reading."""

    def __init__(self, step):
        self.step, self.now, self.readings = step, 0.0, 0

    def __call__(self):
        self.readings += 1
        self.now += self.step
        return self.now


def test_the_seconds_budget_on_an_injected_clock(monkeypatch):
    """The check reads its clock between steps of the work: on a clock that moves a second
    a reading, a budget of 5 s runs out after the fifth step (not checked, never OK, the
    reason in one line); a budget longer than every reading lets the check finish."""
    import exactspec.checker.report as checker_module

    cert = _cert("rrs", 2)
    clock = FakeClock(1.0)
    monkeypatch.setattr(checker_module, "_clock", clock)
    report = check(cert, deadline=5)
    assert report.verdict == "NOT CHECKED" and report.problems == []
    assert report.unchecked == ["the check ran past its budget of 5 s"]
    assert clock.readings == 7                # the start, five steps within it, the sixth
    clock.readings = 0
    assert check(cert, deadline=10**6).verdict == "OK"
    assert 7 < clock.readings < 10**6         # every step read the clock, none ran out


# -- honest certificates still check ------------------------------------------------------
def test_honest_certificates_of_every_writer(tmp_path, capsys):
    from exactspec.cli import main as cli_main

    written = tmp_path / "verify.json"
    assert cli_main(["verify", "rrs", "--p", P, "--q", Q, "--k", "2",
                     "--certificate", str(written)]) == 0
    floats = tmp_path / "float.json"
    assert cli_main(["verify", "sps", "--p", P, "--q", Q, "--arith", "bfloat16",
                     "--certificate", str(floats)]) in (0, 1)
    capsys.readouterr()
    for cert in (written, floats):
        code, out, _ = _check(tmp_path, cert.read_text())
        assert code == EXIT_OK and out.strip().splitlines()[-1].startswith("CERTIFICATE OK"), out
    for method, k in (("sps", 1), ("naive", 1), ("rrs-wor", 2), ("kseq", 2), ("key", 2)):
        assert check_certificate(_cert(method, k)) == [], method


def test_values_that_made_the_checkers_loop_are_refused_fast(tmp_path, capsys):
    """An exponent in an exact value (``Fraction("1e999999999")`` builds a billion-digit
    integer) and a tower of powers in an expression (sympy evaluates ``9**9**9**9``)."""
    cert = _cert()
    cert["paths"][0]["probability"] = "1e999999999"
    tower = _generic_with("9**9**9**9")
    # each refused by the grammar, before any arithmetic on it: the exponent is not a
    # form of an exact value, and no power is built with an exponent over 64 (9**9 is)
    for bad, words in ((cert, "'1e999999999' is not an integer or a fraction N/D"),
                       (tower, "'9**9**9**9': an exponent is an integer of at most 64")):
        code, out, err = _check(tmp_path, bad, capsys=capsys)
        assert code == EXIT_BAD_INPUT and out == "" and err.count("\n") == 1
        assert words in err, err


def test_witness_points_and_targets_are_bound_to_the_witness_rows():
    honest = _generic_with()
    case = next(c for c in honest["cases"] if c["witnesses"] and "p_t" in
                c["witnesses"][0]["point"])
    row = case["witnesses"][0]["certificate"]["target"]["t"]
    moved = json.loads(json.dumps(honest))
    index = honest["cases"].index(case)
    moved["cases"][index]["witnesses"][0]["point"]["p_t"] = str(1 - Fraction(row) / 2)
    assert any("point's p_t" in m for m in check_certificate(moved))
    retargeted = json.loads(json.dumps(honest))
    retargeted["cases"][index]["target"]["t"] = "1/3"
    assert any("the target at a witness" in m for m in check_certificate(retargeted))
    cert = _cert("naive", p="1/2,1/2", q="3/4,1/4")            # lossy: claim 'law'
    cert["target"] = {"0": "1/2", "1": "2/3"}
    assert any("not a distribution" in m for m in check_certificate(cert, replay=False))


# -- sequence certificates: the model pair and the verifier recorded, the generation replayed
SEQ_SPEC = ROOT / "examples" / "chain_user.json"
SEQ_USER = ROOT / "examples" / "chain_user.py"


def _sequence_cert(verifier=None, pair=None, m=2):
    from exactspec.sequences.chains import Chain
    from exactspec.sequences.context import ContextPair
    from exactspec.sequences.multitoken import prove_sequence

    pair = pair or ContextPair.from_table({"target": {"": "1/2,1/2", "0": "1/4,3/4"},
                                           "draft": {"": "1/3,2/3"}})
    return prove_sequence(verifier or Chain(1), pair, m, full_paths=True,
                          keep_paths=True).certificate()


def test_an_honest_tree_certificate_of_a_user_verifier(tmp_path, capsys):
    """``tree SPEC --verifier F --certificate``: not checked until the person checking trusts
    ``F`` (the reason says how), then replayed and OK; a tampered probability is rejected."""
    from exactspec.cli import main as cli_main

    written = tmp_path / "tree.json"
    assert cli_main(["tree", str(SEQ_SPEC), "--verifier", f"{SEQ_USER}:chain",
                     "--certificate", str(written)]) == 0
    cert = json.loads(written.read_text())
    assert cert["user"] is True and cert["method"] == f"{SEQ_USER}:chain"
    assert cert["gamma"] == 3 and cert["m"] == 2 and cert["model"]["labels"] == ["a", "b", "c"]
    assert cert["model"]["target"]["a"] == ["1/5", "1/2", "3/10"]
    code, out, _ = _check(tmp_path, cert, capsys=capsys)
    assert code == EXIT_NOT_CHECKED and "a user's" in out and f"--trust {SEQ_USER}:chain" in out
    code, out, _ = _check(tmp_path, cert, "--trust", f"{SEQ_USER}:chain", capsys=capsys)
    assert code == EXIT_OK and out.strip().splitlines()[-1].startswith("CERTIFICATE OK"), out
    # trusting another function of the file replays nothing of this certificate
    code, out, _ = _check(tmp_path, cert, "--trust", f"{SEQ_USER}:stale_residual_chain",
                          capsys=capsys)
    assert code == EXIT_NOT_CHECKED
    tampered = json.loads(json.dumps(cert))
    tampered["paths"][0]["probability"] = "1/2"
    code, out, _ = _check(tmp_path, tampered, "--trust", f"{SEQ_USER}:chain", capsys=capsys)
    assert code == EXIT_REJECTED and "path 0: branches multiply to" in out


def test_an_honest_verify_tokens_certificate(tmp_path, capsys):
    """``verify F --tokens M --certificate`` on a context-free pair, replayed with --trust;
    the stale-residual chain's paths (``tree``, a context-dependent pair) presented as the
    correct chain's are rejected."""
    from exactspec.cli import main as cli_main

    written = tmp_path / "tokens.json"
    assert cli_main(["verify", f"{SEQ_USER}:chain", "--tokens", "2", "--gamma", "2", "--p", P,
                     "--q", Q, "--certificate", str(written)]) == 0
    cert = json.loads(written.read_text())
    assert cert["model"]["target"] == {"": ["1/2", "3/10", "1/5"]} and cert["gamma"] == 2
    code, out, _ = _check(tmp_path, cert, capsys=capsys)
    assert code == EXIT_NOT_CHECKED and "--trust" in out
    code, out, _ = _check(tmp_path, cert, "--trust", f"{SEQ_USER}:chain", capsys=capsys)
    assert code == EXIT_OK, out
    stale = tmp_path / "stale.json"           # lossy where the rows change with the context
    assert cli_main(["tree", str(SEQ_SPEC), "--certificate", str(stale)]) == 1
    forged = dict(json.loads(stale.read_text()), method=f"{SEQ_USER}:chain")
    code, out, _ = _check(tmp_path, forged, "--trust", f"{SEQ_USER}:chain", capsys=capsys)
    assert code == EXIT_REJECTED and "replayed law is not the recorded one" in out


def test_registered_sequence_verifiers_replay_by_name(tmp_path, capsys):
    """A chain's certificate names ``chain`` and its parameters: OK with no --trust; its paths
    under another model, another verifier, or a lossy law relabelled as the target fail."""
    from exactspec.sequences.trees import first_row_bonus_chain

    cert = _sequence_cert()
    assert (cert["method"], cert["user"], cert["gamma"], cert["parameters"]) == \
        ("chain", False, 1, {"lazy": False})
    code, out, _ = _check(tmp_path, cert, capsys=capsys)
    assert code == EXIT_OK and out.strip().splitlines()[-1].startswith("CERTIFICATE OK"), out
    remodelled = json.loads(json.dumps(cert))
    remodelled["model"]["target"]["0"] = ["1/2", "1/2"]
    code, out, _ = _check(tmp_path, remodelled, capsys=capsys)
    assert code == EXIT_REJECTED and "target: the recorded model's joint law" in out
    renamed = dict(cert, method="first-row-bonus", parameters={})
    code, out, _ = _check(tmp_path, renamed, capsys=capsys)
    assert code == EXIT_REJECTED and "path " in out
    lossy = _sequence_cert(first_row_bonus_chain(1))
    assert lossy["claim"] == "law"
    assert check_certificate(lossy) == []
    # the lossy law presented as the target, claim lossless: the paths add up, the model not
    dressed = dict(lossy, target=lossy["law"], claim="lossless")
    code, out, _ = _check(tmp_path, dressed, capsys=capsys)
    assert code == EXIT_REJECTED and "target: " in out
    assert check(dressed, replay=False).verdict == "OK"      # the arithmetic alone holds


@pytest.mark.parametrize("change, words", [
    ("unknown parameter", "unknown parameter 'x'"),
    ("missing model", "missing key 'model'"),
    ("unregistered name", "not one of exactspec's sequence verifiers"),
    ("short row", "a row of 1 values"),
])
def test_the_sequence_schema_is_strict(tmp_path, capsys, change, words):
    cert = _sequence_cert()
    if change == "unknown parameter":
        cert["parameters"]["x"] = 1
    elif change == "missing model":
        del cert["model"]
    elif change == "unregistered name":
        cert["method"] = "os:system"
    else:
        cert["model"]["draft"][""] = ["1"]
    code, out, err = _check(tmp_path, cert, capsys=capsys)
    assert code == EXIT_BAD_INPUT and out == "" and words in err, err


def test_a_user_sequence_verifier_is_never_imported_untrusted(tmp_path):
    marker = tmp_path / "MARKER"
    (tmp_path / "evilseq.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "def rule(s, pair, ctx):\n    return (s.draw(pair.target(ctx)),)\n")
    cert = dict(_sequence_cert(), method=f"{tmp_path / 'evilseq.py'}:rule", user=True)
    code, out, err = _check(tmp_path, cert)
    _refused(code, out, err)
    assert code == EXIT_NOT_CHECKED and "--trust" in out and not marker.exists()


def test_a_claims_sequence_certificates_check(tmp_path, capsys):
    """The sequence-bugs claim's certificate: the buggy laws and their fixes, each replayed
    through exactspec's registry by name."""
    from exactspec.claims.trees import check_sequence_bugs

    result = check_sequence_bugs()
    claim = {"kind": "exactspec-claim-certificate", "claim": "sequence-bugs",
             "parts": result.certificate["parts"]}
    assert {part["method"] for part in claim["parts"]} == {
        "first-row-bonus", "chain", "stale-residual-bonus", "tree-rrs", "rejected-draft-kept"}
    code, out, _ = _check(tmp_path, claim, capsys=capsys)
    assert code == EXIT_OK and out.strip().splitlines()[-1].startswith("CERTIFICATE OK"), out


def test_a_pytorch_rule_sequence_certificate_replays_with_trust(tmp_path, capsys):
    """``verify FILE:fn --tokens M`` with a PyTorch rule: the trusted reference is loaded as
    the command line loads it (the whole call for M tokens)."""
    from exactspec.cli import main as cli_main

    rule = f"{ROOT / 'examples' / 'engines' / 'flashinfer_chain.py'}:chain"
    written = tmp_path / "torch.json"
    assert cli_main(["verify", rule, "--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2", "--tokens",
                     "2", "--certificate", str(written)]) == 0
    code, out, _ = _check(tmp_path, written.read_text(), capsys=capsys)
    assert code == EXIT_NOT_CHECKED and f"--trust {rule}" in out
    code, out, _ = _check(tmp_path, written.read_text(), "--trust", rule, capsys=capsys)
    assert code == EXIT_OK, out


def test_a_float_run_records_its_sum_order_for_the_replay():
    """A one-position float run that sums a long row in a declared order: its certificate
    records the order (``sum_order``) and the replay sums in it; without the record the
    replay is refused its sum (rejected), and an unknown order is bad input."""
    rule = f"{ROOT / 'examples' / 'engines' / 'hf_speculative_sampling.py'}:sample"
    p, q = ",".join(["1/5"] * 5), ",".join(["1/10"] * 4 + ["3/5"])
    cert = _cert(rule, p=p, q=q, arith="float32", sum_order="torch-avx2")
    assert cert["sum_order"] == "torch-avx2" and cert["arith"] == "float32"
    assert check(cert, trust=(rule,)).verdict == "OK"
    bare = {key: value for key, value in cert.items() if key != "sum_order"}
    assert check(bare, trust=(rule,)).verdict == "REJECTED"
    with pytest.raises(CertificateError, match="sum_order 'torch-avx2:0'"):
        check({**cert, "sum_order": "torch-avx2:0"}, trust=(rule,))
    assert "sum_order" not in _cert(rule, p=p, q=q)          # exact runs record none


# -- every recorded field is bound: replayed, refused, or the honest record of that run ----
UNIFORMS = "exactspec.methods.sps:sps_uniforms"


def _edited(cert, change):
    """A deep copy of ``cert`` with ``change(copy)`` applied."""
    copy = json.loads(json.dumps(cert))
    change(copy)
    return copy


def _path(field, value, number=0):
    return lambda c: c["paths"][number].__setitem__(field, value)


def _first_branch_probability(c):
    c["paths"][3]["branches"][0][2] = "1/2"


def _swap_branches(c):                 # the same product, in another order than the choices
    c["paths"][3]["branches"].reverse()


# (which certificate, what is edited, the exit code, words of the one-line reason)
FIELD_EDITS = [
    ("sps", "k", lambda c: c.update(k=2), EXIT_REJECTED, "sps takes only k = 1, not k = 2"),
    ("sps float", "k", lambda c: c.update(k=2), EXIT_REJECTED,
     "sps takes only k = 1, not k = 2"),
    ("rrs", "k", lambda c: c.update(k=3), EXIT_REJECTED, "replay through rrs: draft"),
    ("rrs-wor", "k", lambda c: c.update(k=4), EXIT_REJECTED,
     "k=4 exceeds the 3 tokens q gives positive probability"),
    ("uniforms", "grid", lambda c: c.update(grid=4), EXIT_REJECTED,
     "uniform: the method's alternatives"),
    ("sps float", "grid", lambda c: c.update(grid=4), EXIT_REJECTED,
     "the method in bfloat16 goes another way"),
    ("sps", "method", lambda c: c.update(method="naive"), EXIT_REJECTED, "replay through naive"),
    ("sps", "target", lambda c: c["target"].update({"0": "3/10", "1": "1/2"}), EXIT_REJECTED,
     "token 0: paths give 1/2, target 3/10"),
    ("sps", "draft", lambda c: c["draft"].update({"0": "3/5", "2": "1/5"}), EXIT_REJECTED,
     "replay through sps: draft: the method's alternatives"),
    ("sps", "claim", lambda c: c.update(claim="law"), EXIT_REJECTED, "claim 'law' (lossy)"),
    ("sps", "law", lambda c: c["law"].update({"0": "3/10", "1": "1/2"}), EXIT_REJECTED,
     "token 0: paths give 1/2, certificate says 3/10"),
    ("sps", "acceptance", lambda c: c.update(acceptance="1/2"), EXIT_REJECTED,
     "acceptance: paths give 3/5"),
    ("sps", "arith", lambda c: c.update(arith="float16"), EXIT_REJECTED,
     "the method in float16 goes another way"),
    ("sps float", "arith", lambda c: c.pop("arith"), EXIT_REJECTED,
     "replay through sps: accept: the method's alternatives"),
    ("sps float", "arith", lambda c: c.update(arith="float16"), EXIT_REJECTED,
     "the method in float16 goes another way"),
    ("sps", "sum_order", lambda c: c.update(sum_order="sequential"), EXIT_BAD_INPUT,
     "sum_order 'sequential' is not one of"),
    ("sps", "labels", lambda c: c.update(labels=["a", "b", "c"]), EXIT_BAD_INPUT,
     "the labels are not the target's tokens"),
    ("sps", "labels", lambda c: c.update(labels=[2, 1, 0]), EXIT_BAD_INPUT,
     "the labels are not the target's tokens"),
    ("sps", "version", lambda c: c.update(version=1), EXIT_BAD_INPUT,
     "version: 1 is out of range"),
    ("sps", "output", _path("output", "1"), EXIT_REJECTED,
     "token 0: paths give 3/10, target 1/2"),
    ("sps", "drafts", _path("drafts", ["0", "0"]), EXIT_REJECTED,
     "replay drafts [0], recorded ['0', '0']"),
    ("sps", "accepted", _path("accepted", False), EXIT_REJECTED,
     "path 0: replay through sps accepts its output, recorded accepted = false"),
    ("sps", "choices", _path("choices", [[1, ["1/5", "1/5", "3/5"]]]), EXIT_REJECTED,
     "path 1: the same choices as an earlier path"),
    ("sps", "branches", _first_branch_probability, EXIT_REJECTED,
     "path 3: branches multiply to"),
    ("sps", "branches", _swap_branches, EXIT_REJECTED,
     "path 3: its 3 branches are not its 3 choices' alternatives taken, in order"),
    ("sps", "probability", _path("probability", "1/4"), EXIT_REJECTED,
     "path 0: branches multiply to 1/5, recorded 1/4"),
]


def _field_certs():
    return {"sps": _cert(), "sps float": _cert(arith="bfloat16"), "rrs": _cert("rrs", 2),
            "rrs-wor": _cert("rrs-wor", 3), "uniforms": _cert(UNIFORMS)}


@pytest.mark.parametrize("which, field, change, code, words", FIELD_EDITS,
                         ids=[f"{w}-{f}-{i}" for i, (w, f, *_) in enumerate(FIELD_EDITS)])
def test_every_recorded_field_edited_is_refused(tmp_path, capsys, which, field, change, code,
                                                words):
    """An edited field of a path certificate: rejected by the replay or the arithmetic (exit
    1, each problem one line, the reason first) or refused as bad input (exit 2, one line);
    never OK.  The certificate as written checks."""
    honest = _field_certs()[which]
    got, out, err = _check(tmp_path, honest, capsys=capsys)
    assert got == EXIT_OK and out.strip().splitlines()[-1].startswith("CERTIFICATE OK"), out
    got, out, err = _check(tmp_path, _edited(honest, change), capsys=capsys)
    _refused(got, out, err)
    assert got == code, out + err
    if code == EXIT_REJECTED:
        lines = out.strip().splitlines()
        assert lines[-1] == "CERTIFICATE REJECTED" and err == ""
        assert words in lines[0], lines[0]
    else:
        assert words in err, err


def test_an_sps_certificate_edited_to_k_2_is_rejected_in_one_line(tmp_path):
    """The report: ``verify sps --certificate`` edited to ``"k": 2`` printed CERTIFICATE OK
    (the replay ran sps, which ignores k, and never asked sps's contract)."""
    from exactspec.cli import main as cli_main

    written = tmp_path / "sps.json"
    assert cli_main(["verify", "sps", "--p", P, "--q", Q, "--certificate", str(written)]) == 0
    edited = dict(json.loads(written.read_text()), k=2)
    code, out, err = _check(tmp_path, edited)                # the command line, its own process
    assert (code, err) == (EXIT_REJECTED, "")
    assert out.splitlines() == [
        "k = 2: the recorded run is outside the method's contract: sps takes only k = 1, "
        "not k = 2", "CERTIFICATE REJECTED"]
    # sps named by its function, and a trusted rule of (s, p, q): k = 1 alone too
    named = dict(_cert("exactspec.methods.sps:sps"), k=2)
    assert named["method"] == "exactspec.methods.sps:sps"
    assert check(named).problems == ["k = 2: the recorded run is outside the method's "
                                     "contract: sps takes only k = 1, not k = 2"]
    rule = tmp_path / "rule.py"
    rule.write_text("from exactspec.methods.sps import sps\n"
                    "def rule(s, p, q):\n    return sps(s, p, q)\n")
    trusted = dict(_cert(f"{rule}:rule"), k=2)
    code, out, _ = _check(tmp_path, trusted, "--trust", f"{rule}:rule")
    assert code == EXIT_REJECTED and f"{rule}:rule takes only k = 1, not k = 2" in out


@pytest.mark.parametrize("which, change, honest", [
    ("sps", lambda c: c.update(grid=4), lambda: _cert(grid=4)),
    ("sps", lambda c: c.update(labels=["0", "1", "2"]),
     lambda: verify("sps", Dist.parse(P, labels=["0", "1", "2"]),
                    Dist.parse(Q, labels=["0", "1", "2"]), keep_paths=True).certificate()),
    ("uniforms", lambda c: c.update(k=2), lambda: _cert(UNIFORMS, 2)),
    ("sps float", lambda c: c.update(sum_order="sequential"),
     lambda: _cert(arith="bfloat16", sum_order="sequential")),
], ids=["grid of a rule without uniforms", "labels as strings", "k of a rule that takes k",
        "sum_order of a run without long sums"])
def test_an_edit_the_replay_accepts_is_the_honest_certificate_of_that_run(which, change,
                                                                          honest):
    """The edits that still check change nothing the method does: each edited certificate is
    the very one that exactspec writes for the edited run (sps draws no uniform, so a grid
    changes none of its paths; sps_uniforms takes k and ignores it)."""
    edited = _edited(_field_certs()[which], change)
    assert edited == honest()
    assert check(edited).verdict == "OK"


def test_every_recorded_field_of_a_sequence_certificate_is_bound(tmp_path, capsys):
    """A sequence certificate's recorded model, m, context, gamma, parameters, float format
    and paths: each edit rejected by the replay (the generation enumerated again from the
    record) or refused as bad input; an edit that leaves the generation unchanged (chain's
    ``lazy``: the same paths) is the certificate that verifier writes."""
    from exactspec.sequences.chains import Chain
    from exactspec.sequences.user import replay_certificate

    cert = _sequence_cert()
    assert check(cert).verdict == "OK"
    rejected = [
        ("m", lambda c: c.update(m=1), "target: the recorded model's joint law"),
        ("context", lambda c: c.update(context="0"), "target: the recorded model's joint law"),
        ("gamma", lambda c: c.update(gamma=2), "the verifier makes 34 paths"),
        ("model", lambda c: c["model"]["draft"].update({"": ["1/2", "1/2"]}),
         "the verifier makes 4 paths, the certificate records 9"),
        ("arith", lambda c: c.update(arith="float16"), "path 0: the replay through chain"),
        ("branches", lambda c: c["paths"][0]["branches"][0].__setitem__(1, "draft1 1"),
         "path 0: the replay through chain gives branches"),
        ("drafts", lambda c: c["paths"][0].update(drafts=[]), "gives drafts ['0'], recorded []"),
    ]
    for field, change, words in rejected:
        code, out, err = _check(tmp_path, _edited(cert, change), capsys=capsys)
        _refused(code, out, err)
        assert code == EXIT_REJECTED and words in out.splitlines()[0], (field, out)
    for field, change, words in [
            ("elementwise", lambda c: c.update(elementwise="numpy"),
             "elementwise 'numpy' of an exact run"),
            ("gamma", lambda c: c.update(gamma=None), "gamma None"),
            ("version", lambda c: c.update(version=3), "version: 3 is out of range")]:
        code, out, err = _check(tmp_path, _edited(cert, change), capsys=capsys)
        assert code == EXIT_BAD_INPUT and out == "" and words in err, (field, err)
    lazy = _edited(cert, lambda c: c["parameters"].update(lazy=True))
    assert replay_certificate(lazy, verifier=Chain(1, lazy=True)) == lazy
    assert check(lazy).verdict == "OK"


def test_every_recorded_field_of_a_symbolic_certificate_is_bound(tmp_path, capsys,
                                                                  monkeypatch):
    """A symbolic certificate's cases are derived again through its method (conditions, laws,
    acceptances, verdicts, witness points, infeasible cases) on its n, k and sign assumption:
    each edit rejected; the same law written another way, a proved case recorded as
    undecided (which claims nothing) and the statement still check; an expression is read by
    the grammar, never evaluated."""
    from exactspec.claims.base import symbolic_certificate
    from exactspec.engine.symbolic import prove_symbolic
    from exactspec.methods.sps import sps

    monkeypatch.chdir(tmp_path)                   # where the payload would leave its marker
    cert = json.loads(json.dumps(symbolic_certificate(prove_symbolic(sps, 2, witnesses=1),
                                                      "sps on two tokens")))
    assert cert["cases"][0]["conditions"] == ["p0 - q0 > 0"]
    assert cert["cases"][0]["law"] == {"0": "p0", "1": "1 - p0"}
    code, out, _ = _check(tmp_path, cert, capsys=capsys)
    assert code == EXIT_OK and out.strip().splitlines()[-1].startswith("CERTIFICATE OK"), out
    first = lambda c: c["cases"][0]                                  # noqa: E731
    rejected = [
        (lambda c: first(c).update(verdict="refuted"),
         "case 0: verdict 'refuted' recorded, proved derived"),
        (lambda c: first(c)["law"].update({"0": "q0"}), "case 0: law[0] = 'q0' recorded, p0 "
                                                        "derived"),
        (lambda c: first(c).update(acceptance="1"),
         "case 0: acceptance '1' recorded, -p0 + q0 + 1 derived"),
        (lambda c: first(c).update(conditions=["p0 - q0 < 0"]), "case 0: conditions"),
        (lambda c: c.update(n=3), "cases: 13 derived, 3 recorded"),
        (lambda c: c.update(positive_entries_assumed=False), "cases: 11 derived, 3 recorded"),
        (lambda c: c.update(infeasible_cases=1), "infeasible_cases: 0 derived, recorded 1"),
        (lambda c: c["cases"].pop(), "cases: 3 derived, 2 recorded"),
        (lambda c: first(c)["witnesses"][0]["point"].update(p0="3/4"), "case 0: witness points"),
        (lambda c: first(c)["law"].update({"0": PAYLOAD}), "case 0: law[0] = "),
    ]
    for change, words in rejected:
        code, out, err = _check(tmp_path, _edited(cert, change), capsys=capsys)
        _refused(code, out, err)
        assert code == EXIT_REJECTED and words in out.splitlines()[0], (words, out)
    assert not (tmp_path / "MARKER").exists()
    for change in (lambda c: first(c)["law"].update({"1": "-p0 + 1"}),
                   lambda c: first(c).update(verdict="undecided"),
                   lambda c: c.update(statement="anything")):
        assert check(_edited(cert, change)).verdict == "OK"
    # k: the witnesses are bound to it, and sps's contract refuses k = 2 before a derivation
    code, out, _ = _check(tmp_path, _edited(cert, lambda c: c.update(k=2)), capsys=capsys)
    assert code == EXIT_REJECTED and "sps takes only k = 1, not k = 2" in out
    # a method outside the registry: its cases are not derived, never OK
    code, out, _ = _check(tmp_path, dict(json.loads(json.dumps(cert)), method="evil:rule"),
                          capsys=capsys)
    assert code in (EXIT_REJECTED, EXIT_NOT_CHECKED) and "CERTIFICATE OK" not in out


def test_a_symbolic_certificate_of_a_law_other_than_p_records_it_and_checks_it(tmp_path):
    """naive's claim is that its law is q: the certificate records that target law, the
    replay derives the cases' verdicts against it (OK), and a target edited to p is refused."""
    from exactspec.cli import main as cli_main

    assert cli_main(["prove", "naive-bias", "--certificate-dir", str(tmp_path)]) == 0
    cert = json.loads((tmp_path / "naive-bias.json").read_text())
    part = cert["parts"][0]
    assert part["target_law"] == {"0": "q0", "1": "q1"}
    assert check_certificate(part) == []
    part["target_law"] = {"0": "p0", "1": "p1"}
    assert any("verdict 'proved' recorded" in problem for problem in check_certificate(part))
