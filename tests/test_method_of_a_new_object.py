"""A method called on an object made in the same expression (``Bot(config).ask(q)``): the call is
resolved to the class's method, so its callers bind its parameters and its sends are followed, as for
``bot = Bot()`` then ``bot.ask(q)``.

Each test writes a small project under ``tmp_path`` and runs the real checker in-process.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "You are the store assistant. Answer only from the catalogue, and quote prices exactly. " * 40

BOT = f'''
from openai import OpenAI

RULES = """{RULES}"""


class Bot:
    def __init__(self, model="gpt-4o"):
        self.client = OpenAI()
        self.model = model

    def ask(self, persona, question):
        system = persona + RULES
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": question}}],
        )
        return resp.choices[0].message.content
'''


def findings(root: Path, app: str) -> list[tuple[str, str, int]]:
    files = {"shop/__init__.py": "", "shop/bot.py": BOT, "shop/app.py": textwrap.dedent(app)}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return [(f["code"], Path(f["filename"]).as_posix(), f["location"]["row"]) for f in json.loads(out)]


@pytest.mark.parametrize("made", ["Bot()", 'Bot(model="gpt-4o-mini")'])
def test_a_static_argument_through_a_new_object_is_static(tmp_path: Path, made: str) -> None:
    # ``persona`` would otherwise be read by its name (a user's identity) and reported
    app = f"""
    from shop.bot import Bot

    PERSONA = "You are Ava.\\n"


    def handle(q):
        return {made}.ask(PERSONA, q)
    """
    assert findings(tmp_path, app) == []


def test_a_per_request_argument_through_a_new_object_is_reported_at_the_caller(tmp_path: Path) -> None:
    app = """
    from datetime import datetime

    from shop.bot import Bot


    def handle(q):
        return Bot().ask(f"Now: {datetime.now().isoformat()}\\n", q)
    """
    assert findings(tmp_path, app) == [("PFX101", "shop/app.py", 8)]


def test_a_call_on_something_that_is_not_a_project_class_is_not_followed(tmp_path: Path) -> None:
    app = """
    from datetime import datetime

    from other import Bot


    def handle(q):
        return Bot().ask(f"Now: {datetime.now().isoformat()}\\n", q)
    """
    # ``other.Bot`` is not in the project: what its ``ask`` does is not known, nothing is claimed
    # (the project's own ``Bot.ask`` has no caller in view and reads ``persona`` by its name)
    assert ("PFX101", "shop/app.py", 8) not in findings(tmp_path, app)
