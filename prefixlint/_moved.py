"""Old import paths of modules that moved when the package was split by stage.

Importing one still works, with a :class:`DeprecationWarning` naming the new home; the module you
get forwards every attribute to it (the same objects, not copies).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType

# old module -> new module(s); attributes are looked up in that order.
MOVED: dict[str, tuple[str, ...]] = {
    "prefixlint.testing_rules": ("prefixlint.testing.rules",),
    "prefixlint.cachemodel": ("prefixlint.model.prefix_cache",),
    "prefixlint.layout": ("prefixlint.model.layout",),
    "prefixlint.tokens": ("prefixlint.model.tokens",),
    "prefixlint.providers": ("prefixlint.model.providers",),
    "prefixlint.diagnostics": ("prefixlint.model.findings",),
    "prefixlint.edits": ("prefixlint.model.edits",),
    "prefixlint.config": ("prefixlint.lint.config", "prefixlint.model.settings"),
}


class _MovedModules:
    """Finds the old names of :data:`MOVED` and loads a forwarding module for each.

    A meta path finder and loader by protocol (``find_spec``, ``create_module``, ``exec_module``);
    not a subclass of ``importlib.abc``'s classes, whose import costs every command about 25 ms.
    """

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        targets = [importlib.import_module(name) for name in MOVED[module.__name__]]
        warnings.warn(
            f"{module.__name__} moved to {MOVED[module.__name__][0]}; import from there",
            DeprecationWarning,
            stacklevel=2,
        )
        for target in reversed(targets):
            module.__dict__.update({k: v for k, v in vars(target).items() if not k.startswith("__")})
        module.__all__ = sorted(k for k in module.__dict__ if not k.startswith("_"))


def install() -> None:
    """Register the finder once per process."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
