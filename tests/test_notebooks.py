"""Every notebook in ``notebooks/`` runs top to bottom (docs/notebooks.md).

Each notebook is executed in memory with nbclient, in a fresh kernel whose working directory is
``notebooks/``; nothing is written back to the source tree.  The kernel is the interpreter
running the tests: a ``python3`` kernelspec pointing at ``sys.executable`` is installed into a
temporary directory and put first on ``JUPYTER_PATH``, so a ``python3`` kernel from some other
Python on the machine can never be picked up.  The repository root goes first on the kernel's
``PYTHONPATH`` so the notebooks import this checkout's ``exactspec``.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 300

# Appended (in memory only) after the notebook's own cells: reports which interpreter and
# which exactspec the kernel used.
_PROBE = (
    "import json as _json, sys as _sys, exactspec as _exactspec\n"
    "print('EXACTSPEC-KERNEL ' + _json.dumps({'prefix': _sys.prefix, "
    "'executable': _sys.executable, 'exactspec': _exactspec.__file__}))"
)


def _poll_in_short_steps(channel, step: float = 0.5) -> None:
    """Make ``channel.get_msg(timeout)`` wait in polls of at most ``step`` seconds.

    A cell that opens widget comms (notebook 02's slider) sometimes gets its execute reply
    only when the poll on the shell channel times out, with the reply already waiting
    (jupyter/nbclient#312): the test then sat idle for the whole cell timeout, 300 s, and
    passed.  A poll that starts afresh every ``step`` seconds sees the waiting reply at once;
    the overall timeout is unchanged.
    """
    get_msg = channel.get_msg

    async def stepped(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = step if deadline is None else max(0.0, min(step, deadline - time.monotonic()))
            try:
                return await get_msg(timeout=wait)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = stepped


def notebook_client(nb, **kwargs):
    """An nbclient ``NotebookClient`` whose shell channel is polled in short steps."""
    import nbclient

    class Client(nbclient.NotebookClient):
        async def async_start_new_kernel_client(self):
            client = await super().async_start_new_kernel_client()
            _poll_in_short_steps(client.shell_channel)
            return client

    return Client(nb, **kwargs)


@pytest.fixture(scope="session")
def kernel_home(tmp_path_factory) -> Path:
    """A temporary Jupyter data directory holding a ``python3`` kernelspec for this Python."""
    kernelspec = pytest.importorskip("ipykernel.kernelspec")
    prefix = tmp_path_factory.mktemp("jupyter-kernel")
    with pytest.MonkeyPatch.context() as mp:  # so the installer sees where it will be found
        mp.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
        kernelspec.install(prefix=str(prefix), kernel_name="python3",
                           display_name="Python 3 (exactspec tests)")
    spec = json.loads((prefix / "share" / "jupyter" / "kernels" / "python3" / "kernel.json")
                      .read_text())
    assert spec["argv"][0] == sys.executable, spec["argv"]
    return prefix


@pytest.fixture
def kernel_env(kernel_home, tmp_path, monkeypatch):
    """Environment for the kernel: our kernelspec first, scratch dirs outside the tree."""
    jupyter_path = str(kernel_home / "share" / "jupyter")
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(
        [jupyter_path] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)
    return jupyter_path


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path, kernel_env):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    assert Path(spec.resource_dir).parent.parent == Path(kernel_env)
    assert spec.argv[0] == sys.executable

    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), (
        f"{path.name} is saved with outputs; clear them before committing")
    nb.cells.append(nbformat.v4.new_code_cell(_PROBE))

    client = notebook_client(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()

    probe = "".join(out.get("text", "") for out in nb.cells[-1].outputs
                    if out.get("output_type") == "stream")
    line = next(s for s in probe.splitlines() if s.startswith("EXACTSPEC-KERNEL "))
    seen = json.loads(line.split(" ", 1)[1])
    assert Path(seen["prefix"]).resolve() == Path(sys.prefix).resolve(), seen
    assert Path(seen["exactspec"]).resolve().is_relative_to(ROOT / "exactspec"), seen
