"""Every claim: proved on its full corpus (``exactspec prove --full``, the work of every proof
script, run once in the background from the start of the suite), and its certificate
re-checks with the independent checker.  Every script is the thin entry point for its claim,
one runs end to end, and the index in proofs/README.md names every claim."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exactspec.checker import check_certificate
from exactspec.replay import check_certificate as replayed
from exactspec.claims import all_claims

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "proofs"
SCRIPTS = {}
for script in sorted(PROOFS.glob("*.py")):
    match = re.search(r'run_claim_main\("([^"]+)"\)', script.read_text())
    if match:
        SCRIPTS[match.group(1)] = script


def test_every_claim_has_a_script_and_an_index_entry():
    index = (PROOFS / "README.md").read_text()
    for claim in all_claims():
        assert claim.name in SCRIPTS, f"no script in proofs/ for {claim.name}"
        assert f"`{claim.name}`" in index, f"proofs/README.md does not list {claim.name}"
        assert SCRIPTS[claim.name].name in index


@pytest.fixture(scope="module")
def full_results(full_prove_run):
    """Every claim's full corpus, run once by ``exactspec prove --full`` (see conftest.py)."""
    code, out, err, folder = full_prove_run
    assert out.strip(), f"exactspec prove --full printed nothing (exit {code}): {err[-2000:]}"
    results = {r["name"]: r for r in json.loads(out)["claims"]}
    return code, results, folder


@pytest.mark.slow
def test_prove_full_exits_0(full_results):
    code, results, _ = full_results
    assert code == 0, {name: r["verdict"] for name, r in results.items()}
    assert sorted(results) == sorted(c.name for c in all_claims())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_claim_proved_on_its_full_corpus(name, full_results):
    _, results, folder = full_results
    assert results[name]["verdict"] == "PROVED", results[name]["details"]
    data = json.loads((folder / f"{name}.json").read_text())
    assert data["verdict"] == "PROVED" and data["claim"] == name
    assert data["corpus_run"] == "full"
    assert data["statement"] == results[name]["statement"]
    assert check_certificate(data) == []


def test_every_proof_script_is_the_thin_entry_point():
    """What a script runs is ``run_claim_main(NAME)``: the claim itself runs above."""
    for name, script in SCRIPTS.items():
        code = [line for line in script.read_text().splitlines()
                if line.strip() and not line.lstrip().startswith(("#", "import", "from"))]
        assert any(f'run_claim_main("{name}")' in line for line in code), script


def test_a_proof_script_runs_and_writes_its_certificate(tmp_path):
    cert = tmp_path / "top1-lossy.json"
    out = subprocess.run([sys.executable, str(SCRIPTS["top1-lossy"]), "--certificate",
                          str(cert)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[0].startswith("Claim top1-lossy:")
    assert "PROVED" in out.stdout.splitlines()[-1]
    data = json.loads(cert.read_text())
    assert data["verdict"] == "PROVED" and data["corpus_run"] == "full"
    assert check_certificate(data) == [] and replayed(data) == []


def test_a_tampered_claim_certificate_is_rejected():
    from exactspec.claims import get_claim

    result = get_claim("top1-lossy").run()
    cert = json.loads(json.dumps(result.certificate))
    assert check_certificate(cert) == [] and replayed(cert) == []
    cert["parts"][0]["paths"][0]["branches"][0][2] = "1/3"
    assert check_certificate(cert) and replayed(cert)
