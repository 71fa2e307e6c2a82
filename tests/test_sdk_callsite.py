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


def test_skipped_folders_are_this_package_and_both_client_sdks() -> None:
    dirs = callsite._skip_dirs()
    assert dirs == (
        str(Path(callsite.__file__).parent),
        str(Path(openai.__file__).parent),
        str(Path(anthropic.__file__).parent),
    )
    assert callsite._skip_dirs() is dirs  # computed once


def test_the_call_site_is_the_first_frame_outside_the_sdks_and_wrappers() -> None:
    def probe() -> str:
        return callsite.call_site(2)  # 0: call_site, 1: probe, 2: the innermost relay

    chain: Callable[[], str] = probe
    for filename in (
        Path(openai.__file__).parent / "resources.py",
        Path(anthropic.__file__).parent / "resources.py",
        Path(callsite.__file__).parent / "wrap.py",
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
    def probe() -> str:
        return callsite.call_site(2)

    relay = _relay("/srv/app/agent.py", probe)
    assert relay() == "/srv/app/agent.py:2"


def test_more_than_twelve_frames_inside_give_unknown() -> None:
    inside = str(Path(openai.__file__).parent / "deep.py")

    def probe() -> str:
        return callsite.call_site(2)

    def chain_of(depth: int) -> Callable[[], str]:
        fn: Callable[[], str] = probe
        for _ in range(depth):
            fn = _relay(inside, fn)
        return fn

    assert chain_of(11)().startswith(f"{__file__}:")  # 11 frames inside, the 12th is this file
    assert chain_of(12)() == "unknown"
