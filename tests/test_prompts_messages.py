"""How message lists are read (``analysis/python/messages.py``), seen in the findings a user gets.

Each test writes one small project with a module per way of building a message list or a joined
prompt part, runs the real ``prefixlint check`` on it once, and compares every finding's code, file,
line and column: a timestamp ahead of the static rules is reported where it is computed, a value
behind them or a sorted set is not (issue 16: broad behaviour coverage for mutation testing).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = " ".join(
    f"Rule {i}: answer only questions about billing, quote the invoice line, and never guess an amount."
    for i in range(12)
)
HEAD = "from datetime import datetime\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
HEAD += f"RULES = {RULES!r}\n\n\n"
NOW = "f'Now {datetime.now()}.\\n'"
USER = "{'role': 'user', 'content': q}"


def send(msgs: str) -> str:
    return f"    return client.chat.completions.create(model='gpt-4o', messages={msgs})\n"


def findings(root: Path, modules: dict[str, str]) -> list[tuple[str, str, int, int]]:
    """(code, file, line, column) of each finding of ``prefixlint check`` on a project of
    ``modules`` (each a body put after the shared imports and ``RULES``)."""
    for name, body in modules.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body if name.startswith("plain/") else HEAD + body, encoding="utf-8")
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return sorted(
        (f["code"], f["filename"], f["location"]["row"], f["location"]["column"]) for f in json.loads(out)
    )


def test_message_list_forms(tmp_path: Path) -> None:
    """Tuples, ``dict(...)`` calls, ``insert(0, ...)``, copies of a module list, a module-level
    message, a helper's message, a local message, an enum role: the timestamp is found in each."""
    modules = {
        "tuples.py": f"def ask(q):\n    msgs = [('system', {NOW} + RULES), ('user', q)]\n" + send("msgs"),
        "dict_call.py": (
            f"def ask(q):\n    msgs = [dict(role='system', content={NOW} + RULES), "
            "dict(role='user', content=q)]\n" + send("msgs")
        ),
        # inserted at the front: the rules come first and the timestamp after them (no finding)
        "insert_front.py": (
            f"def ask(q):\n    msgs = [{{'role': 'user', 'content': {NOW}}}]\n"
            "    msgs.insert(0, {'role': 'system', 'content': RULES})\n" + send("msgs")
        ),
        # inserted at 1 of a one-message list: it goes last
        "insert_end.py": (
            "def ask(q):\n    msgs = [{'role': 'user', 'content': q}]\n"
            "    msgs.insert(1, {'role': 'system', 'content': RULES})\n" + send("msgs")
        ),
        "list_copy.py": (
            f"BASE = [{{'role': 'system', 'content': {NOW} + RULES}}]\n\n\ndef ask(q):\n"
            f"    msgs = list(BASE)\n    msgs.append({USER})\n" + send("msgs")
        ),
        "dot_copy.py": (
            f"def ask(q):\n    base = [{{'role': 'system', 'content': {NOW} + RULES}}]\n"
            f"    msgs = base.copy()\n    msgs.append({USER})\n" + send("msgs")
        ),
        "module_msg.py": f"SYSTEM = {{'role': 'system', 'content': {NOW} + RULES}}\n\n\ndef ask(q):\n"
        + send(f"[SYSTEM, {USER}]"),
        "helper_msg.py": f"def system():\n    return {{'role': 'system', 'content': {NOW} + RULES}}\n\n\n"
        f"def ask(q):\n" + send(f"[system(), {USER}]"),
        "local_msg.py": f"def ask(q):\n    s = {{'role': 'system', 'content': {NOW} + RULES}}\n"
        + send(f"[s, {USER}]"),
        "enum_role.py": (
            "import enum\n\n\nclass Role(enum.Enum):\n    SYSTEM = 'system'\n\n\n"
            f"def ask(q):\n    msgs = [{{'role': Role.SYSTEM, 'content': {NOW} + RULES}}, {USER}]\n"
            + send("msgs")
        ),
        "docs_first.py": (
            "def ask(q, docs):\n"
            "    msgs = [{'role': 'user', 'content': d} for d in docs]"
            " + [{'role': 'system', 'content': RULES}]\n" + send("msgs")
        ),
        "conditional.py": (
            "def ask(q, admin):\n    msgs = []\n    if admin:\n"
            f"        msgs.append({{'role': 'system', 'content': {NOW}}})\n"
            "    msgs.append({'role': 'system', 'content': RULES})\n" + send("msgs")
        ),
        "plain/prompts.py": (
            f"from datetime import datetime\n\nRULES = {RULES!r}\n"
            f"CHAT = [{{'role': 'system', 'content': {NOW} + RULES}}]\n"
        ),
        "imported_list.py": "from plain import prompts\n\n\ndef ask(q):\n" + send(f"prompts.CHAT + [{USER}]"),
        "plain/msgs.py": (
            f"from datetime import datetime\n\nRULES = {RULES!r}\n\n"
            f"SYSTEM_MSG = {{'role': 'system', 'content': {NOW} + RULES}}\n"
        ),
        "imported_msg.py": "from plain.msgs import SYSTEM_MSG\n\n\ndef ask(q):\n"
        + send(f"[SYSTEM_MSG, {USER}]"),
        "helper_param.py": (
            "def post(msgs):\n    return client.chat.completions.create(model='gpt-4o', messages=msgs)\n\n\n"
            f"def ask(q):\n    return post([{{'role': 'system', 'content': {NOW} + RULES}}, {USER}])\n"
        ),
        "history_last.py": (
            f"def ask(q, history):\n    msgs = [{{'role': 'system', 'content': RULES}}, *history, {USER}]\n"
            + send("msgs")
        ),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "conditional.py", 11, 58),
        ("PFX101", "dict_call.py", 9, 48),
        ("PFX101", "dot_copy.py", 9, 50),
        ("PFX101", "enum_role.py", 16, 53),
        ("PFX101", "helper_msg.py", 9, 49),
        ("PFX101", "helper_param.py", 13, 55),
        ("PFX101", "local_msg.py", 9, 46),
        ("PFX101", "tuples.py", 9, 31),
        ("PFX105", "docs_first.py", 9, 53),
        ("PFX109", "insert_end.py", 9, 41),
        ("PFX201", "list_copy.py", 8, 46),
        ("PFX201", "module_msg.py", 8, 47),
        ("PFX201", "plain/msgs.py", 5, 51),
        ("PFX201", "plain/prompts.py", 4, 46),
    ]


def test_content_blocks(tmp_path: Path) -> None:
    """Content blocks: a timestamp block ahead of a rules block is found; an image block is static."""
    cc = "{'type': 'ephemeral', 'ttl': '1h'}"
    modules = {
        "blocks.py": (
            "def ask(q):\n    msgs = [{'role': 'system', 'content': ["
            f"{{'type': 'text', 'text': {NOW}}}, {{'type': 'text', 'text': RULES, 'cache_control': {cc}}}"
            f"]}}, {USER}]\n" + send("msgs")
        ),
        "image.py": (
            "def ask(q, url):\n    msgs = [{'role': 'user', 'content': ["
            "{'type': 'image_url', 'image_url': {'url': url}}, {'type': 'text', 'text': RULES}]}]\n"
            + send("msgs")
        ),
    }
    # the rules block is marked for caching, but below the minimum size (PFX503)
    assert findings(tmp_path, modules) == [("PFX101", "blocks.py", 9, 76), ("PFX503", "blocks.py", 9, 147)]
