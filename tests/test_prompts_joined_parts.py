"""Prompt parts joined from a list (``"".join(parts)``) and tool lists, seen in the findings a user
gets: the items of a list, a comprehension or a loop (``messages.items``), set iteration and its
``sorted`` cure, and parts appended under ``if flag:`` where the flag is false for every caller
(``branches.py``). Each test runs the real ``prefixlint check`` once on a small fresh project
(issue 16: broad behaviour coverage for mutation testing).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.test_prompts_messages import NOW, findings, send

pytestmark = needs_analyzer

TOOLS_CALL = (
    "    return client.chat.completions.create(model='gpt-4o', tools=tools, "
    "messages=[{'role': 'system', 'content': RULES}, {'role': 'user', 'content': q}])\n"
)
SYSTEM = send("[{'role': 'system', 'content': system}, {'role': 'user', 'content': q}]")


def test_joined_items_and_tool_lists(tmp_path: Path) -> None:
    """A timestamp or retrieved documents among the joined items are found where they are; a set
    iterated into the tools or the system text is PFX402 on the set; ``sorted`` makes it stable."""
    modules = {
        "tools_set.py": (
            "TOOLS = {'search', 'lookup'}\n\n\ndef ask(q):\n"
            "    tools = [{'type': 'function', 'function': {'name': n}} for n in TOOLS]\n" + TOOLS_CALL
        ),
        "tools_sorted.py": (
            "TOOLS = {'search', 'lookup'}\n\n\ndef ask(q):\n"
            "    tools = [{'type': 'function', 'function': {'name': n}} for n in sorted(TOOLS)]\n"
            + TOOLS_CALL
        ),
        "join_set.py": "def ask(q, names):\n    system = ', '.join(set(names)) + RULES\n" + SYSTEM,
        "join_sorted_set.py": (
            "def ask(q, names):\n    system = ', '.join(sorted(set(names))) + RULES\n" + SYSTEM
        ),
        "join_list.py": f"def ask(q):\n    parts = [{NOW}, RULES]\n    system = ''.join(parts)\n" + SYSTEM,
        "join_docs.py": "def ask(q, docs):\n    system = ''.join(d for d in docs) + RULES\n" + SYSTEM,
        "join_loop_set.py": (
            "def ask(q, names):\n    parts = []\n    for n in set(names):\n        parts.append(n)\n"
            "    system = ', '.join(parts) + RULES\n" + SYSTEM
        ),
        "join_starred.py": (
            f"HEADER = [{NOW}]\n\n\ndef ask(q):\n    system = ''.join([*HEADER, RULES])\n" + SYSTEM
        ),
        "join_extend.py": (
            f"def ask(q):\n    parts = []\n    parts.extend([{NOW}])\n    parts += [RULES]\n"
            "    system = ''.join(parts)\n" + SYSTEM
        ),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "join_extend.py", 10, 26),
        ("PFX101", "join_list.py", 9, 21),
        ("PFX105", "join_docs.py", 9, 33),
        ("PFX201", "join_starred.py", 8, 18),
        ("PFX402", "join_loop_set.py", 10, 14),
        ("PFX402", "join_set.py", 9, 24),
        ("PFX402", "tools_set.py", 12, 69),
    ]


def _flagged(default: str) -> str:
    """A builder that adds the timestamp only under ``if extra:``, ``extra`` defaulting to ``default``."""
    return (
        f"def build(extra={default}):\n    parts = []\n    if extra:\n        parts.append({NOW})\n"
        "    parts.append(RULES)\n    return ''.join(parts)\n\n\n"
    )


def test_parts_under_a_false_flag(tmp_path: Path) -> None:
    """A part appended under ``if extra:`` is left out where every call leaves ``extra`` false
    (its default, or a falsy literal), and kept where a call passes a true value or ``**options``."""
    modules = {
        "default_false.py": _flagged("False") + "def ask(q):\n    system = build()\n" + SYSTEM,
        "default_none.py": _flagged("None") + "def ask(q):\n    system = build(extra=0)\n" + SYSTEM,
        "default_zero.py": _flagged("0") + "def ask(q):\n    system = build('')\n" + SYSTEM,
        "default_empty.py": _flagged("''") + "def ask(q):\n    system = build()\n" + SYSTEM,
        "passed_true.py": _flagged("False") + "def ask(q):\n    system = build(extra=True)\n" + SYSTEM,
        "default_true.py": _flagged("True") + "def ask(q):\n    system = build()\n" + SYSTEM,
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "default_true.py", 11, 29),
        ("PFX101", "passed_true.py", 11, 29),
    ]


def _sending(callers: str, method: bool = False) -> str:
    """A function that sends the parts, the timestamp only under ``if extra:``; then ``callers``."""
    body = (
        "    parts = []\n    if extra:\n"
        f"        parts.append({NOW})\n    parts.append(RULES)\n    system = ''.join(parts)\n" + SYSTEM
    )
    if method:
        body = "".join("    " + line if line else line for line in body.splitlines(keepends=True))
        return "class Bot:\n    def ask(self, q, extra=False):\n" + body + "\n\n" + callers
    return "def ask(q, extra=False):\n" + body + "\n\n" + callers


def test_a_sending_function_whose_callers_leave_the_flag_false(tmp_path: Path) -> None:
    """Where the prompt is sent inside the function with the flag, the part is left out only when
    every caller in view leaves the flag false; with no caller, or one that passes ``True`` or
    ``**options``, it may run and the timestamp is reported."""
    modules = {
        "no_caller.py": _sending(""),
        "false_callers.py": _sending("def main():\n    ask('hi')\n    ask('ho', extra=False)\n"),
        "true_caller.py": _sending("def main():\n    ask('hi')\n    ask('ho', extra=True)\n"),
        "options_caller.py": _sending("def main(**options):\n    ask('hi', **options)\n"),
        "method_callers.py": _sending("def main():\n    bot = Bot()\n    bot.ask('hi')\n", method=True),
        "method_true.py": _sending("def main():\n    Bot().ask('hi', True)\n", method=True),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "method_true.py", 12, 33),
        ("PFX101", "no_caller.py", 11, 29),
        ("PFX101", "options_caller.py", 11, 29),
        ("PFX101", "true_caller.py", 11, 29),
    ]


def test_items_of_parameters_and_calls(tmp_path: Path) -> None:
    """A parameter typed ``set[str]``, ``enumerate``/``frozenset``/a set comprehension, ``list``,
    ``reversed``, ``zip`` with a set, a dict's ``items()``, ``asyncio.gather`` results and nested loops."""
    modules = {
        "param_set.py": "def ask(q, tags: set[str]):\n    system = ', '.join(tags) + RULES\n" + SYSTEM,
        "param_sorted.py": "def ask(q, tags: set[str]):\n    system = ', '.join(sorted(tags)) + RULES\n"
        + SYSTEM,
        "enum_set.py": (
            "def ask(q, names):\n"
            "    system = ''.join(f'{i}. {n}' for i, n in enumerate(set(names))) + RULES\n" + SYSTEM
        ),
        "frozen.py": "def ask(q, names):\n    system = ', '.join(frozenset(names)) + RULES\n" + SYSTEM,
        "set_comp.py": "def ask(q, names):\n    system = ', '.join({n.upper() for n in names}) + RULES\n"
        + SYSTEM,
        "range_join.py": "def ask(q):\n    system = ''.join(str(i) for i in range(3)) + RULES\n" + SYSTEM,
        "list_call.py": "def ask(q):\n    system = ''.join(list([str(datetime.now())])) + RULES\n" + SYSTEM,
        "reversed_call.py": (
            "def ask(q):\n    system = ''.join(reversed((str(datetime.now()), 'x'))) + RULES\n" + SYSTEM
        ),
        "dict_items.py": (
            "def ask(q, profile):\n    system = '\\n'.join(f'{k}: {v}' for k, v in profile.items()) + RULES\n"
            + SYSTEM
        ),
        "gathered.py": (
            "import asyncio\n\n\nasync def ask(q, fetch):\n"
            "    docs = await asyncio.gather(fetch(1), fetch(2))\n"
            "    system = ''.join(docs) + RULES\n" + SYSTEM
        ),
        "zipped.py": (
            "NAMES = ['a', 'b']\nTAGS = {'x', 'y'}\n\n\ndef ask(q):\n"
            "    system = ', '.join(f'{n}={t}' for n, t in zip(NAMES, TAGS)) + RULES\n" + SYSTEM
        ),
        "nested_for.py": (
            "def ask(q, groups):\n    parts = []\n    for g in groups:\n        for x in g:\n"
            "            parts.append(x)\n    system = ''.join(parts) + RULES\n" + SYSTEM
        ),
    }
    # gathered results, nested loops and numbers of a range: unknown or static, no finding
    assert findings(tmp_path, modules) == [
        ("PFX101", "list_call.py", 9, 32),
        ("PFX101", "reversed_call.py", 9, 36),
        ("PFX104", "dict_items.py", 9, 48),
        ("PFX402", "enum_set.py", 9, 56),
        ("PFX402", "frozen.py", 9, 24),
        ("PFX402", "param_set.py", 9, 24),
        ("PFX402", "set_comp.py", 9, 24),
        ("PFX402", "zipped.py", 13, 58),
    ]
