"""Whether a Python file imports torch: read from its syntax tree, without running it (and
without loading the tensor layer, so that a plain rule file costs nothing here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["imports_torch"]


def imports_torch(path) -> bool:
    """Whether the Python file ``path`` imports torch (``import torch``, ``import torch.nn``,
    ``from torch import ...``) anywhere in it."""
    try:
        source = Path(path).read_bytes()
    except OSError:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # a file Python cannot compile: judged by its lines, so
        text = source.decode("utf-8", "replace")      # that the error named is Python's own
        return bool(re.search(r"^\s*(import\s+torch\b|from\s+torch(\.\w+)*\s+import\b)", text,
                              re.MULTILINE))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name == "torch" or a.name.startswith("torch.") for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                (node.module == "torch" or node.module.startswith("torch.")):
            return True
    return False
