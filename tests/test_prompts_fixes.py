"""The fixes offered with prompt findings (``analysis/python/fixes.py``), applied to the source.

Each module of a small fresh project has one finding whose fix is applied here to the module's text,
and the line that the fix rewrites is compared: a per-request line moved to the end of its template
or f-string, ``dynamic + static`` swapped, a set iterated in ``sorted`` order, ``sort_keys=True``
added to ``json.dumps`` (issue 16: broad behaviour coverage for mutation testing).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer
from tests.test_prompts_messages import HEAD, send

pytestmark = needs_analyzer

SYSTEM = send("[{'role': 'system', 'content': system}, {'role': 'user', 'content': q}]")


def fixed(root: Path, modules: dict[str, str]) -> dict[str, tuple[str, str, str | None]]:
    """For each module: (code of its finding, applicability of its fix, the lines the fix changes,
    or None without a fix); a module without a finding is left out."""
    for name, body in modules.items():
        (root / name).write_text(HEAD + body, encoding="utf-8")
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    got: dict[str, tuple[str, str, str | None]] = {}
    for f in json.loads(out):
        fix = f["fix"]
        if fix is None:
            got[f["filename"]] = (f["code"], "", None)
            continue
        new = (root / fix["path"]).read_text(encoding="utf-8")
        for edit in sorted(fix["edits"], key=lambda e: -e["start"]):
            new = new[: edit["start"]] + edit["content"] + new[edit["end"] :]
        old, lines = (root / fix["path"]).read_text(encoding="utf-8").splitlines(), new.splitlines()
        first = next(i for i, (a, b) in enumerate(zip(old, lines, strict=False)) if a != b)
        same = next(i for i, (a, b) in enumerate(zip(old[::-1], lines[::-1], strict=False)) if a != b)
        got[f["filename"]] = (
            f["code"],
            fix["applicability"],
            "\n".join(lines[first : len(lines) - same]).strip(),
        )
    return got


def test_fixes_of_prompt_findings(tmp_path: Path) -> None:
    """Each fix rewrites the line as a user would by hand; a raw one-line template has no fix."""
    fill = "\n\ndef ask(q):\n    system = TEMPLATE.format(today=datetime.now()) + RULES\n" + SYSTEM
    modules = {
        "template_line.py": "TEMPLATE = 'Intro.\\nToday is {today}.\\nBe brief.'" + fill,
        "template_triple.py": 'TEMPLATE = """Intro.\nToday is {today}.\nBe brief.\n"""' + fill,
        "fstring_triple.py": (
            'def ask(q):\n    system = f"""Intro.\nNow {datetime.now()}.\nBe brief.\n{RULES}"""\n' + SYSTEM
        ),
        "template_raw.py": "TEMPLATE = r'Intro. Today is {today}. Be brief.'" + fill,
        "fstring_line.py": (
            "def ask(q):\n    system = f'Intro.\\nNow {datetime.now()}.\\nBe brief.\\n{RULES}'\n" + SYSTEM
        ),
        "swap.py": "def ask(q):\n    system = str(datetime.now()) + RULES\n" + SYSTEM,
        "sorted_set.py": (
            "NAMES = {'search', 'lookup'}\n\n\ndef ask(q):\n    system = ', '.join(NAMES) + RULES\n" + SYSTEM
        ),
        "json_keys.py": (
            "import json\n\n\ndef ask(q, profile: dict):\n    system = json.dumps(profile) + RULES\n" + SYSTEM
        ),
        "json_comma.py": (
            "import json\n\n\ndef ask(q, profile: dict):\n"
            "    system = json.dumps(\n        profile,\n    ) + RULES\n" + SYSTEM
        ),
    }
    assert fixed(tmp_path, modules) == {
        "fstring_line.py": (
            "PFX101",
            "unsafe",
            "system = f'Intro.\\nBe brief.\\n{RULES}\\nNow {datetime.now()}.'",
        ),
        "fstring_triple.py": ("PFX101", "unsafe", 'Be brief.\n{RULES}\nNow {datetime.now()}."""'),
        "json_comma.py": ("PFX401", "unsafe", "profile, sort_keys=True,"),
        "json_keys.py": ("PFX401", "unsafe", "system = json.dumps(profile, sort_keys=True) + RULES"),
        "sorted_set.py": ("PFX402", "safe", "system = ', '.join(sorted(NAMES)) + RULES"),
        "swap.py": ("PFX101", "unsafe", "system = RULES + str(datetime.now())"),
        "template_line.py": ("PFX101", "unsafe", "TEMPLATE = 'Intro.\\nBe brief.\\nToday is {today}.'"),
        # no line of a raw one-line string can move: the fix swaps the concatenation instead
        "template_raw.py": ("PFX101", "unsafe", "system = RULES + TEMPLATE.format(today=datetime.now())"),
        "template_triple.py": ("PFX101", "unsafe", "Be brief.\nToday is {today}."),
    }
