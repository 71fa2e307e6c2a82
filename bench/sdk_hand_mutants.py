"""The seven hand mutants of issue 11: each applied to a fresh copy of HEAD; the SDK tests must fail.

    python bench/sdk_hand_mutants.py   # prints KILLED or SURVIVED per mutant; exits 1 if one survives

Each mutant is a list of (file, old text, new text) replacements; a pattern that is no longer in the
file is reported, so the script says when the code moved under it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/test_sdk.py",
    "tests/test_sdk_anthropic.py",
    "tests/test_sdk_units.py",
    "tests/test_sdk_traffic.py",
    "tests/test_sdk_details.py",
]
_AFTER_TRY = "        try:\n            raw = _raw_mode(kwargs, call)\n"
_AFTER_EXCEPT = '            account.done(call, getattr(result, "usage", None))\n        except Exception:'
MUTANTS: dict[str, list[tuple[str, str, str]]] = {
    "no try/except around preparing": [
        (
            "prefixlint/sdk/state.py",
            "        try:\n            out, call = self._prepare(api, kwargs, call_kw, who)\n"
            "        except Exception as exc:\n",
            "        if True:\n            out, call = self._prepare(api, kwargs, call_kw, who)\n"
            "        else:\n            exc = RuntimeError()\n",
        )
    ],
    "no try/except in _finish": [
        (
            "prefixlint/sdk/accounting.py",
            "        try:\n            if wait:\n                self.wait(call)\n"
            "            report = self.report(call, usage)\n        except Exception:",
            "        if True:\n            if wait:\n                self.wait(call)\n"
            "            report = self.report(call, usage)\n        else:",
        )
    ],
    "no try/except in after": [
        ("prefixlint/sdk/state.py", _AFTER_TRY, _AFTER_TRY.replace("try:", "if True:")),
        ("prefixlint/sdk/state.py", _AFTER_EXCEPT, _AFTER_EXCEPT.replace("except Exception:", "if False:")),
    ],
    "NFC off": [("prefixlint/sdk/canonical.py", "    if nfc and not out.isascii():", "    if False:")],
    "volatile blocks get breakpoints": [
        (
            "prefixlint/sdk/breakpoints.py",
            "    stable = [i for i, p in enumerate(pieces) if p.stable]",
            "    stable = list(range(len(pieces)))",
        )
    ],
    "no 1h-to-5m demotion": [
        (
            "prefixlint/sdk/breakpoints.py",
            '        ordered.append((idx, "5m" if seen_5m else ttl))',
            "        ordered.append((idx, ttl))",
        )
    ],
    "no cap of 4 breakpoints": [
        (
            "prefixlint/sdk/breakpoints.py",
            "    return ordered[-rules.max_breakpoints :]",
            "    return ordered",
        )
    ],
}


def check(name: str, edits: list[tuple[str, str, str]]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {tmp}", shell=True, check=True)
        for path, old, new in edits:
            f = Path(tmp) / path
            text = f.read_text()
            if old not in text:
                return f"PATTERN MOVED ({path})"
            f.write_text(text.replace(old, new, 1))
        env = {**os.environ, "PYTHONPATH": tmp}
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS]
        r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        failed = next((line for line in r.stdout.splitlines() if line.startswith("FAILED")), "")
        return (
            f"KILLED {failed}"
            if r.returncode == 1
            else ("SURVIVED" if r.returncode == 0 else f"rc {r.returncode}")
        )


def main() -> int:
    results = {name: check(name, edits) for name, edits in MUTANTS.items()}
    for name, result in results.items():
        print(f"{name}: {result}")
    return 0 if all(r.startswith("KILLED") for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
