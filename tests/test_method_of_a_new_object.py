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

    def ask(self, customer_name, question):
        system = customer_name + RULES
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
    # ``customer_name`` would otherwise be read by its name (a user's identity) and reported
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
    # (the project's own ``Bot.ask`` has no caller in view and reads ``customer_name`` by its name)
    assert ("PFX101", "shop/app.py", 8) not in findings(tmp_path, app)


KEPT = f'''
from openai import OpenAI

RULES = """{RULES}"""


class Keeper:
    def __init__(self, customer_name):
        self.client = OpenAI()
        self.customer_name = customer_name

    def ask(self, question):
        resp = self.client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {{"role": "system", "content": self.customer_name + RULES}},
                {{"role": "user", "content": question}},
            ],
        )
        return resp.choices[0].message.content
'''


@pytest.mark.parametrize(
    "use",
    [
        "bots.Bot().ask(PERSONA, q)",
        "keeper.Keeper(PERSONA).ask(q)",
        "k = keeper.Keeper(PERSONA)\n    return k.ask(q)",
    ],
    ids=["method", "init", "init-then-method"],
)
def test_a_class_made_through_its_module_is_followed(tmp_path: Path, use: str) -> None:
    """``bots.Bot(...)`` with ``from shop import bot as bots``: the module's class, and a caller of
    its ``__init__`` (``customer_name`` is then the static text passed, not a user's identity)."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "keeper.py").write_text(KEPT)
    body = use if use.startswith("k =") else f"return {use}"
    app = f"""
    from shop import bot as bots
    from shop import keeper

    PERSONA = "You are Ava.\\n"


    def handle(q):
        {body}
    """
    got = findings(tmp_path, app)
    used, unused = ("shop/bot.py", "shop/keeper.py") if "bots." in use else ("shop/keeper.py", "shop/bot.py")
    assert [f for f in got if f[1] == used] == []
    # the class nobody makes in view: its ``customer_name`` is read by its name (what the call prevents)
    assert [f[:2] for f in got if f[1] == unused] == [("PFX104", unused)]
