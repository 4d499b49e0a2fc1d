"""Whether a Python file imports torch: read from its syntax tree, without running it (and
without loading the tensor layer, so that a plain rule file costs nothing here)."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["imports_torch"]


def imports_torch(path) -> bool:
    """Whether the Python file ``path`` imports torch (``import torch``, ``import torch.nn``,
    ``from torch import ...``) anywhere in it."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name == "torch" or a.name.startswith("torch.") for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                (node.module == "torch" or node.module.startswith("torch.")):
            return True
    return False
