"""The fixer: applicability, fixable/unfixable, overlaps, parse verification, atomic writes, idempotence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import invoke, needs_analyzer, use_analyzers

from prefixlint.lint.fixer import fix_files, fix_text, is_fix_allowed
from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.findings import Finding
from prefixlint.model.layout import SourceLocation
from prefixlint.model.settings import Settings

SRC = 'import json\nPAYLOAD = json.dumps(data)\nSYSTEM = "static"\n'


def with_fix(
    code: str, edits: tuple[Edit, ...], applicability: Applicability = Applicability.SAFE, path: str = "a.py"
) -> Finding:
    fix = Fix("do it", edits, applicability, path=path)
    return Finding(code=code, message="m", location=SourceLocation(path, 1), fix=fix)


def sort_keys_edit(text: str) -> Edit:
    at = text.index("(data)") + len("(data")
    return Edit(at, at, ", sort_keys=True")


def test_safe_fix_applies_and_result_parses() -> None:
    out = fix_text("a.py", SRC, [with_fix("PFX401", (sort_keys_edit(SRC),))])
    assert out.changed and "json.dumps(data, sort_keys=True)" in out.fixed


def test_applicability_and_fixable_settings() -> None:
    settings = Settings()
    safe = with_fix("PFX401", (Edit(0, 0, "#"),))
    unsafe = with_fix("PFX101", (Edit(0, 0, "#"),), Applicability.UNSAFE)
    display = with_fix("PFX501", (Edit(0, 0, "#"),), Applicability.DISPLAY_ONLY)
    assert is_fix_allowed(safe, settings, unsafe=False)
    assert not is_fix_allowed(unsafe, settings, unsafe=False)
    assert is_fix_allowed(unsafe, settings, unsafe=True)
    assert is_fix_allowed(unsafe, Settings(**{"unsafe-fixes": True}), unsafe=False)
    assert not is_fix_allowed(display, settings, unsafe=True)
    assert not is_fix_allowed(safe, Settings(unfixable=["PFX4"]), unsafe=False)
    assert not is_fix_allowed(safe, Settings(fixable=["PFX1"]), unsafe=False)


def test_overlapping_fix_waits_for_next_round() -> None:
    first = with_fix("PFX401", (Edit(12, 19, "PAYLOAD2"),))
    second = with_fix("PFX402", (Edit(15, 20, "X"),))
    out = fix_text("a.py", SRC, [second, first])
    assert out.applied == [first]


def test_fix_that_breaks_parsing_leaves_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text(SRC)
    broken = with_fix("PFX401", (Edit(0, 6, "imp ort"),), path=str(path))
    [outcome] = fix_files([broken], lambda p: Settings(), unsafe=False)
    assert outcome.error and "does not parse" in outcome.error
    assert not outcome.changed and path.read_text() == SRC


def test_fix_in_template_is_verified_with_jinja(tmp_path: Path) -> None:
    path = tmp_path / "t.j2"
    path.write_text("Hello {{ name }}\n")
    broken = with_fix("PFX101", (Edit(6, 8, "{%"),), path=str(path))
    [outcome] = fix_files([broken], lambda p: Settings(), unsafe=False)
    assert outcome.error and "template" in outcome.error and path.read_text() == "Hello {{ name }}\n"


def test_fix_files_writes_other_file_named_by_fix(tmp_path: Path) -> None:
    target = tmp_path / "prompts.py"
    target.write_bytes(SRC.replace("\n", "\r\n").encode())
    text = target.read_bytes().decode()
    f = with_fix("PFX401", (sort_keys_edit(text),), path=str(target))
    f = Finding(code=f.code, message="m", location=SourceLocation(str(tmp_path / "main.py"), 3), fix=f.fix)
    [outcome] = fix_files([f], lambda p: Settings(), unsafe=False)
    assert outcome.changed
    # CRLF line endings survive (offsets index the undecoded newlines).
    assert target.read_bytes() == text.replace("(data)", "(data, sort_keys=True)").encode()
    # A second run with the same findings re-read from disk finds nothing to apply at those offsets.
    assert fix_files([], lambda p: Settings(), unsafe=False) == []


def test_diff_mode_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text(SRC)
    [outcome] = fix_files(
        [with_fix("PFX401", (sort_keys_edit(SRC),), path=str(path))],
        lambda p: Settings(),
        unsafe=False,
        write=False,
    )
    assert outcome.changed and path.read_text() == SRC
    assert "+PAYLOAD = json.dumps(data, sort_keys=True)" in outcome.diff()


def test_cli_fix_removes_unused_suppression_and_is_idempotent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_analyzers(monkeypatch)
    path = tmp_path / "a.py"
    path.write_text("x = 1  # prefixlint: ignore[PFX001]\n")
    code, out, _ = invoke(["check", "--no-cache", "--diff", "a.py"], tmp_path)
    assert code == 1 and "-x = 1  # prefixlint: ignore[PFX001]" in out and "+x = 1" in out
    assert path.read_text() == "x = 1  # prefixlint: ignore[PFX001]\n"
    code, out, _ = invoke(["check", "--no-cache", "--fix", "--show-fixes", "a.py"], tmp_path)
    assert code == 0, out
    assert path.read_text() == "x = 1\n"
    assert "Fixed 1 error" in out and "(1 fixed, 0 remaining)" in out
    code, out, _ = invoke(["check", "--no-cache", "--fix", "a.py"], tmp_path)
    assert code == 0 and path.read_text() == "x = 1\n" and "All checks passed!" in out


def _sort_keys_app(dumped: str) -> str:
    return (
        "import json\n\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
        'RULES = "Follow the rules carefully and answer in English. " * 150\n\n\n'
        "def ask(tools_data, question):\n"
        f'    system = "Tools:\\n" + json.dumps({dumped}) + "\\n" + RULES\n'
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        "        messages=[\n"
        '            {"role": "system", "content": system},\n'
        '            {"role": "user", "content": question},\n'
        "        ],\n"
        "    )\n"
    )


@needs_analyzer
def test_cli_fix_sort_keys_end_to_end(tmp_path: Path) -> None:
    """``sort_keys=True`` is a safe fix for ``json.loads`` output (string keys at every depth)."""
    path = tmp_path / "app.py"
    path.write_text(_sort_keys_app("json.loads(tools_data)"))
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise", "app.py"], tmp_path)
    assert code == 1 and "PFX401 [*]" in out
    code, out, _ = invoke(["check", "--no-cache", "--fix", "app.py"], tmp_path)
    fixed = path.read_text()
    assert "json.dumps(json.loads(tools_data), sort_keys=True)" in fixed, out
    # what is left is the tools text ahead of the rules: a parameter with no visible caller, so of
    # unknown nature (PFX120), whose fix is unsafe
    assert code == 1 and "PFX401" not in out and "PFX120" in out and "1 hidden fix" in out, out
    import libcst

    libcst.parse_module(fixed)
    code, _, _ = invoke(["check", "--no-cache", "--fix", "app.py"], tmp_path)
    assert code == 1 and path.read_text() == fixed


@needs_analyzer
def test_sort_keys_on_a_dict_of_unknown_keys_is_an_unsafe_fix(tmp_path: Path) -> None:
    """A dict built at run time may mix key types, and ``sort_keys=True`` would then raise."""
    path = tmp_path / "app.py"
    path.write_text(_sort_keys_app("tools_data"))
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise", "app.py"], tmp_path)
    assert code == 1 and "PFX401" in out and "PFX401 [*]" not in out, out
    before = path.read_text()
    invoke(["check", "--no-cache", "--fix", "app.py"], tmp_path)
    assert path.read_text() == before
    invoke(["check", "--no-cache", "--fix", "--unsafe-fixes", "app.py"], tmp_path)
    assert "json.dumps(tools_data, sort_keys=True)" in path.read_text()


def test_declared_source_encoding_is_read_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_analyzers(monkeypatch)
    path = tmp_path / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'  # prefixlint: ignore[PFX001]\n")
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise", "latin.py"], tmp_path)
    assert code == 1 and "PFX900" in out and "not valid" not in out
    code, _, _ = invoke(["check", "--no-cache", "--fix", "latin.py"], tmp_path)
    assert code == 0
    assert path.read_bytes() == b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n"


@needs_analyzer
def test_cli_unsafe_fix_moves_placeholder_line_of_template_constant(tmp_path: Path) -> None:
    """A ``.format`` template defined in one module and filled in another: the unsafe fix moves the
    per-request line to the end of the constant, in the module that defines it."""
    policy = "".join(
        f"Rule {i}: follow the refund policy, cite the help centre and never guess numbers.\n"
        for i in range(90)
    )  # about 1,700 tokens: the prompt reaches the provider's minimum, so the finding blocks
    prompts = tmp_path / "prompts.py"
    prompts.write_text(f'SYSTEM_TEMPLATE = """Now: {{now}}.\n{policy}"""\n')
    (tmp_path / "agent.py").write_text(
        "from datetime import datetime\n\nfrom openai import OpenAI\n\n"
        "from prompts import SYSTEM_TEMPLATE\n\n"
        "client = OpenAI()\n\n\ndef ask(q):\n"
        "    system = SYSTEM_TEMPLATE.format(now=datetime.now())\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4.1",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],\n'
        "    )\n"
    )
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "concise", "agent.py"], tmp_path)
    assert code == 1 and "prompts.py:1:27: PFX101" in out, out
    code, out, _ = invoke(["check", "--no-cache", "--fix", "agent.py"], tmp_path)
    assert code == 1 and "1 hidden fix can be enabled with the `--unsafe-fixes` option" in out, out
    code, out, _ = invoke(["check", "--no-cache", "--fix", "--unsafe-fixes", "agent.py"], tmp_path)
    fixed = prompts.read_text()
    assert code == 0, out
    assert fixed.startswith('SYSTEM_TEMPLATE = """Rule 0: follow the refund policy')
    assert fixed.endswith('never guess numbers.\nNow: {now}.\n"""\n')
    import libcst

    libcst.parse_module(fixed)
    code, _, _ = invoke(["check", "--no-cache", "--fix", "--unsafe-fixes", "agent.py"], tmp_path)
    assert code == 0 and prompts.read_text() == fixed


def test_diff_without_final_newline_applies_with_git_apply(tmp_path: Path) -> None:
    original = "a = 1\nx = 1  # prefixlint: ignore[PFX001]"  # the changed line is the last, unterminated
    path = tmp_path / "a.py"
    path.write_text(original)
    code, out, _ = invoke(["check", "--no-cache", "--diff", "a.py"], tmp_path)
    assert code == 1
    assert out.endswith(
        "-x = 1  # prefixlint: ignore[PFX001]\n\\ No newline at end of file\n"
        "+x = 1\n\\ No newline at end of file\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "fix.patch").write_text(out)
    subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, check=True, capture_output=True)
    assert path.read_text() == "a = 1\nx = 1"


def test_diff_marks_only_the_side_without_final_newline() -> None:
    from prefixlint.lint.fixer import FixOutcome

    added = FixOutcome("t.py", "a = 1", "a = 1\nb = 2\n").diff()
    assert added.endswith("-a = 1\n\\ No newline at end of file\n+a = 1\n+b = 2\n")


def test_fixed_template_is_rechecked_with_the_analyzers_extensions(tmp_path: Path) -> None:
    # `{% do %}` needs jinja2.ext.do, which the analyzer enables: the fixed text must still be checked.
    src = "{% set items = [] %}{% do items.append(1) %}{% if items %}Hi {{ name }}{% endif %}\n"
    path = tmp_path / "t.j2"
    path.write_text(src)
    at = src.index("{% endif %}")
    broken = with_fix("PFX101", (Edit(at, at + len("{% endif %}"), ""),), path=str(path))
    [outcome] = fix_files([broken], lambda p: Settings(), unsafe=False)
    assert outcome.error is not None
    assert outcome.error.startswith("fixed template does not parse: Unexpected end of template.")
    assert path.read_text() == src
    fine = with_fix("PFX101", (Edit(src.index("Hi"), src.index("Hi") + 2, "Hello"),), path=str(path))
    [outcome] = fix_files([fine], lambda p: Settings(), unsafe=False)
    assert outcome.changed and path.read_text() == src.replace("Hi", "Hello")


@needs_analyzer
@pytest.mark.parametrize(
    ("names", "applicability"),
    [
        ('{"lookup", "list_runs", "tax_form"}', "safe"),
        ('frozenset(["lookup", "list_runs"])', "safe"),
        ('set(os.environ["TOOLS"].split(","))', "unsafe"),  # built at run time: not known to compare
        ('{"lookup", 3}', "unsafe"),
    ],
)
def test_sorted_over_a_set_is_safe_only_for_literal_strings(
    tmp_path: Path, names: str, applicability: str
) -> None:
    (tmp_path / "app.py").write_text(
        "import os\n\nimport openai\n\n"
        f"NAMES = {names}\n\n\n"
        "def ask(q, tool_names):\n"
        '    system = "You can call: " + ", ".join(NAMES) + ". " + "Always call a tool first. " * 300\n'
        "    return openai.OpenAI().chat.completions.create(\n"
        '        model="gpt-4o",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],\n'
        "    )\n"
    )
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "app.py"], tmp_path)
    found = [f for f in json.loads(out) if f["code"] == "PFX402"]
    assert code == 1 and len(found) == 1, out
    assert found[0]["fix"]["applicability"] == applicability
