"""The call site that names a request's default template: the first frame outside the SDKs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anthropic
import openai
import pytest

from prefixlint.sdk import callsite


@pytest.fixture(autouse=True)
def fresh_memos(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from empty memos, so that each test runs the code that fills them."""
    monkeypatch.setattr(callsite, "_SKIP_DIRS", ())
    monkeypatch.setattr(callsite, "_OWN_FILE", {})


def _relay(filename: str, inner: Callable[[], str]) -> Callable[[], str]:
    """A function whose code claims to live in ``filename`` and calls ``inner``."""
    namespace: dict[str, object] = {"inner": inner}
    exec(compile("def relay():\n    return inner()\n", filename, "exec"), namespace)
    return namespace["relay"]  # type: ignore[return-value]


def _line() -> int:
    return sys._getframe(1).f_lineno


def _probe() -> Callable[[], str]:
    """``call_site(1)`` called from a function of this package: its own frame is passed over too, so
    the answer does not depend on how many wrapper frames sit around ``call_site`` itself."""
    namespace: dict[str, object] = {"call_site": callsite.call_site}
    source = "def probe():\n    return call_site(1)\n"
    exec(compile(source, str(Path(callsite.__file__).parent / "accounting.py"), "exec"), namespace)
    return namespace["probe"]  # type: ignore[return-value]


def test_skipped_folders_are_this_package_and_both_client_sdks() -> None:
    dirs = callsite._skip_dirs()
    assert dirs == (
        str(Path(callsite.__file__).parent),
        str(Path(openai.__file__).parent),
        str(Path(anthropic.__file__).parent),
    )
    assert callsite._skip_dirs() is dirs  # computed once


def test_the_call_site_is_the_first_frame_outside_the_sdks_and_wrappers() -> None:
    chain = _probe()
    for filename in (
        Path(openai.__file__).parent / "resources.py",
        Path(anthropic.__file__).parent / "resources.py",
        Path("/usr/lib/python3/functools.py"),
        Path("/venv/site-packages/mutmut/mutation/trampoline.py"),
    ):
        chain = _relay(str(filename), chain)
    line = _line() + 1
    site = chain()
    assert site == f"{__file__}:{line}"
    assert callsite._OWN_FILE[str(Path(openai.__file__).parent / "resources.py")] is True
    assert callsite._OWN_FILE[__file__] is False


def test_a_user_frame_is_not_passed_over() -> None:
    relay = _relay("/srv/app/agent.py", _probe())
    assert relay() == "/srv/app/agent.py:2"


def test_a_long_run_of_frames_inside_gives_unknown() -> None:
    inside = str(Path(openai.__file__).parent / "deep.py")

    def chain_of(depth: int) -> Callable[[], str]:
        fn = _probe()
        for _ in range(depth):
            fn = _relay(inside, fn)
        return fn

    assert chain_of(7)().startswith(f"{__file__}:")  # 8 frames inside (and any wrappers): within 12
    assert chain_of(11)() == "unknown"  # 12 frames or more inside: the search gives up
