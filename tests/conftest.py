"""Suite-wide settings."""

from __future__ import annotations

import os

from hypothesis import settings

# In CI the property tests replay a fixed set of examples (derandomized), so a run is reproducible;
# locally they explore new inputs each time, and regressions they find become explicit @example cases.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    """Snapshots that a run does not use (a ``-k`` selection, ``--collect-only``) are a warning,
    not a failure; ``--snapshot-update`` still removes them."""
    if hasattr(config.option, "warn_unused_snapshots"):
        config.option.warn_unused_snapshots = True
