"""Every claim: its proof script runs, prints PROVED, exits 0, and its certificate re-checks
with the independent checker.  The index in proofs/README.md names every claim."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exactspec.checker import check_certificate
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


def _run_script(name, folder):
    cert = folder / f"{name}.json"
    out = subprocess.run([sys.executable, str(SCRIPTS[name]), "--certificate", str(cert)],
                         capture_output=True, text=True, cwd=folder, timeout=900)
    return out, cert


@pytest.fixture(scope="module")
def script_runs(tmp_path_factory):
    """Every proof script, run once, as many at a time as there are cores."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    folder = tmp_path_factory.mktemp("certificates")
    names = sorted(SCRIPTS)
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda n: _run_script(n, folder), names))
    return dict(zip(names, results))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_proof_script(name, script_runs):
    out, cert = script_runs[name]
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[0].startswith(f"Claim {name}:")
    assert "PROVED" in out.stdout.splitlines()[-1]
    data = json.loads(cert.read_text())
    assert data["verdict"] == "PROVED" and data["claim"] == name
    assert check_certificate(data) == []


def test_a_tampered_claim_certificate_is_rejected():
    from exactspec.claims import get_claim

    result = get_claim("top1-lossy").run()
    cert = json.loads(json.dumps(result.certificate))
    assert check_certificate(cert) == []
    cert["parts"][0]["paths"][0]["branches"][0][2] = "1/3"
    assert check_certificate(cert)
