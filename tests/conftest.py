"""Suite-wide set-up: the claims' full corpora start at once, in the background.

``exactspec prove --full`` (every claim, as many at a time as there are cores) is the
slowest single piece of the suite.  When a test that needs it is collected, it is started as
soon as collection ends, so that it runs beside the unit tests instead of after them, and
those tests are moved to the end of the run, where they wait for it.  They are marked
``slow``: the default run (``-m "not slow"`` in ``pyproject.toml``) deselects them and nothing
starts; ``-m slow`` runs them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROVE_FIXTURE = "full_prove_run"


class _Background:
    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="exactspec-claims-"))
        self.stdout = open(self.folder / "prove.json", "w")
        self.stderr = open(self.folder / "prove.err", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "exactspec", "prove", "--full", "--json",
             "--certificate-dir", str(self.folder / "certificates")],
            stdout=self.stdout, stderr=self.stderr, cwd=ROOT, stdin=subprocess.DEVNULL)

    def wait(self, timeout: float) -> tuple[int, str, str]:
        code = self.process.wait(timeout=timeout)
        self.stdout.close()
        self.stderr.close()
        return (code, (self.folder / "prove.json").read_text(),
                (self.folder / "prove.err").read_text())

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for handle in (self.stdout, self.stderr):
            if not handle.closed:
                handle.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def pytest_collection_modifyitems(session, config, items):
    waiting = [item for item in items if PROVE_FIXTURE in getattr(item, "fixturenames", ())]
    if not waiting:
        return
    items[:] = [item for item in items if item not in waiting] + waiting


def pytest_collection_finish(session):
    if any(PROVE_FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        if not session.config.option.collectonly:
            session.config.stash[_KEY] = _Background()


def pytest_unconfigure(config):
    background = config.stash.get(_KEY, None)
    if background is not None:
        background.stop()


_KEY = pytest.StashKey[_Background]()


@pytest.fixture(scope="session")
def full_prove_run(request):
    """``(exit code, stdout, stderr, certificate folder)`` of ``exactspec prove --full
    --json`` run in the background since collection ended."""
    background = request.config.stash.get(_KEY, None)
    if background is None:           # collected in an unusual way: run it now
        background = request.config.stash[_KEY] = _Background()
    code, out, err = background.wait(timeout=1800)
    return code, out, err, background.folder / "certificates"
