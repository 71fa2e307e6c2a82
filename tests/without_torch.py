"""A pytest plugin that makes ``import torch`` fail, as on a machine without torch installed.

    python -m pytest -p tests.without_torch

``tests/test_engine_skips.py`` collects the suite with it; ``.ci/run`` also runs the whole suite in
a virtual environment that really has no torch.
"""

from __future__ import annotations

import importlib.abc
import sys


class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (torch is blocked for this run)", name=name)
        return None


if not any(isinstance(f, _NoTorch) for f in sys.meta_path):
    sys.meta_path.insert(0, _NoTorch())
for _name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
    del sys.modules[_name]
