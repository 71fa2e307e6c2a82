"""libcst imported with the code its node classes compiled in an earlier run (``libcst_import``).

Each case runs a fresh interpreter: libcst is imported once per process.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import run_cli

# What every libcst node class's generated methods are, as plain data: the code and the annotations.
_DESCRIBE = r"""
import dataclasses, json, sys
{setup}
from prefixlint.analysis import libcst_import
import libcst

def code(fn):
    c = getattr(fn, "__code__", None)
    if c is None:
        return None
    return [c.co_code.hex(), repr(c.co_consts), c.co_names, c.co_varnames, c.co_flags, c.co_filename]

out = {{}}
for name in sorted(dir(libcst)):
    cls = getattr(libcst, name)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        continue
    out[name] = [
        [m, code(cls.__dict__.get(m)), repr(getattr(cls.__dict__.get(m), "__annotations__", None)),
         repr(getattr(cls.__dict__.get(m), "__defaults__", None))]
        for m in ("__init__", "__setattr__", "__delattr__", "__repr__", "__eq__", "__hash__")
    ]
json.dump({{"classes": out, "stats": libcst_import.last_import,
           "exec_left": "exec" in vars(dataclasses)}}, sys.stdout)
"""


def _run(home: Path, setup: str = "") -> dict:
    env = {**os.environ, "PREFIXLINT_CACHE_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-c", _DESCRIBE.format(setup=setup)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _cache_files(home: Path) -> list[Path]:
    return sorted((home / "prefixlint" / "code").glob("libcst-*.marshal"))


def test_the_first_import_compiles_and_keeps_the_code_the_next_reuses_it(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert first["stats"]["compiled"] > 300 and first["stats"]["reused"] == 0
    [kept] = _cache_files(tmp_path)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # the user's own, like the rest of the cache
    written = kept.stat().st_mtime_ns

    second = _run(tmp_path)
    assert second["stats"] == {"reused": first["stats"]["compiled"], "compiled": 0}
    assert kept.stat().st_mtime_ns == written  # nothing new: not written again
    assert not first["exec_left"] and not second["exec_left"]


def test_reused_code_is_the_code_libcst_makes_without_it(tmp_path: Path) -> None:
    """Every generated method of every node class: same bytecode, constants, names and annotations
    (a compile that inherited this module's ``from __future__ import annotations`` would differ)."""
    _run(tmp_path)  # keeps the code
    reused = _run(tmp_path)
    assert reused["stats"]["compiled"] == 0
    # libcst imported before prefixlint: dataclasses compiles everything itself
    plain = _run(tmp_path / "unused", setup="import libcst")
    assert plain["stats"] == {"reused": 0, "compiled": 0}
    assert len(plain["classes"]) > 150
    assert reused["classes"] == plain["classes"]
    init = dict((m, a) for m, _c, a, _d in reused["classes"]["Name"])["__init__"]
    assert "<class 'str'>" in init  # annotations are objects, not strings


@pytest.mark.parametrize(
    "damage",
    [b"", b"not marshal data", b"\xe3\x00\x01"],
    ids=["empty", "garbage", "truncated"],
)
def test_a_damaged_cache_is_ignored_and_written_anew(tmp_path: Path, damage: bytes) -> None:
    _run(tmp_path)
    [kept] = _cache_files(tmp_path)
    kept.write_bytes(damage)
    again = _run(tmp_path)
    assert again["stats"]["compiled"] > 300
    assert _run(tmp_path)["stats"]["compiled"] == 0  # the damaged file was replaced


def test_a_cache_of_another_interpreter_is_not_used(tmp_path: Path) -> None:
    """A file whose header names another bytecode format holds code this interpreter must not run."""
    import marshal

    _run(tmp_path)
    [kept] = _cache_files(tmp_path)
    fmt, _magic, opt, code = marshal.loads(kept.read_bytes())
    kept.write_bytes(marshal.dumps((fmt, b"\x00\x00\r\n", opt, code)))
    assert _run(tmp_path)["stats"]["compiled"] > 300


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_cache_others_can_write_is_not_trusted(tmp_path: Path) -> None:
    _run(tmp_path)
    [kept] = _cache_files(tmp_path)
    kept.chmod(0o666)
    assert _run(tmp_path)["stats"]["compiled"] > 300
    [kept] = _cache_files(tmp_path)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # replaced by one of the user's own


def test_a_cache_folder_that_cannot_be_written_costs_only_the_reuse(tmp_path: Path) -> None:
    (tmp_path / "prefixlint").write_text("a file where the folder would be")
    for _ in range(2):
        got = _run(tmp_path)
        assert got["stats"]["compiled"] > 300 and not got["exec_left"]


def test_a_check_reads_the_same_findings_with_and_without_kept_code(tmp_path: Path) -> None:
    src = tmp_path / "app.py"
    src.write_text(
        "import datetime\nimport openai\n\n"
        "def ask(q):\n"
        "    system = f'Today is {datetime.datetime.now()}.\\n' + 'You are a careful assistant. ' * 60\n"
        "    return openai.OpenAI().chat.completions.create(model='gpt-4o', messages=[\n"
        "        {'role': 'system', 'content': system}, {'role': 'user', 'content': q}])\n"
    )
    outs = []
    for _ in range(2):  # the first keeps the code, the second reuses it
        home = {"PREFIXLINT_CACHE_HOME": str(tmp_path / "home")}
        proc = run_cli(["check", "--no-cache", "--output-format", "json", "app.py"], tmp_path, env=home)
        assert proc.returncode == 1, proc.stderr
        outs.append(json.loads(proc.stdout))
    assert [f["code"] for f in outs[0]] == ["PFX101"]
    assert outs[0] == outs[1]
    assert _cache_files(tmp_path / "home")


def test_no_home_folder_to_find_only_costs_the_reuse(tmp_path: Path) -> None:
    """``Path.home()`` raises where neither HOME nor the password database names one."""
    setup = "import pathlib\ndef nowhere(): raise RuntimeError('Could not determine home directory')\n"
    setup += "pathlib.Path.home = staticmethod(nowhere)\nimport os\nos.environ.pop('XDG_CACHE_HOME', None)\n"
    setup += "os.environ.pop('PREFIXLINT_CACHE_HOME', None)"
    got = _run(tmp_path, setup=setup)
    assert got["stats"] == {"reused": 0, "compiled": 0} and len(got["classes"]) > 150
