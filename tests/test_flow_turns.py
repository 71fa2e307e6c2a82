"""A template filled per request that becomes the newest user turn of a conversation an object keeps
(``analysis/python/uses.py``): only that conversation precedes it, so it is no finding. Any other use
(a list built afresh, a message of another role, a send we cannot see) keeps the fill reportable.

Each case writes an agent whose ``plan`` fills ``NEXT`` with the time and whose ``step`` uses it, and
runs the real checker in-process. A reportable fill is PFX101 on ``{stamp}`` (line 7, column 22).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Rule {i}: answer only questions about billing, quote the invoice line, and never guess an amount."
    for i in range(12)
)
AGENT = f'''from datetime import datetime
from openai import OpenAI
import logging
client = OpenAI()
logger = logging.getLogger(__name__)
SYSTEM = "You are a billing agent."
NEXT = """Checked at {{stamp}}.
{RULES}
"""


def user_message(text):
    return {{"role": "user", "content": text}}


class Agent:
    def __init__(self):
        self.history = []
        self.pending = ""

    def plan(self):
@PLAN@

    def step(self):
@STEP@
        system = {{"role": "system", "content": SYSTEM}}
        return client.chat.completions.create(model="gpt-4o", messages=[system, *self.history])
'''
PLAN = "        self.pending = NEXT.format(stamp=datetime.now().isoformat())"
APPEND = "        self.history.append(user_message(self.pending))"
REPORTED = [("PFX101", 7, 22)]


def found(root: Path, step: str, plan: str = PLAN) -> list[tuple]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(AGENT.replace("@PLAN@", plan).replace("@STEP@", step))
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return [(f["code"], f["location"]["row"], f["location"]["column"]) for f in json.loads(out)]


@pytest.mark.parametrize(
    "step",
    [
        APPEND,
        "        self.history += [user_message(self.pending)]",
        "        self.history.extend([user_message(self.pending)])",
        '        msg = {"role": "user", "content": self.pending}\n        self.history.append(msg)',
        "        if self.pending:\n" + "    " + APPEND,  # a test of the value is no use
        "        logger.info(self.pending)\n" + APPEND,  # nor is a log line
    ],
    ids=["append", "plus-equals", "extend", "named-dict", "under-if", "logged"],
)
def test_a_fill_that_becomes_the_newest_user_turn_is_not_a_finding(tmp_path: Path, step: str) -> None:
    assert found(tmp_path, step) == []


@pytest.mark.parametrize(
    "step",
    [
        "        history = []\n        history += [user_message(self.pending)]",  # a list built afresh
        '        self.history.append({"role": "assistant", "content": self.pending})',
        "        self.history.append(self.pending)",  # not a message
        "        self.history.insert(0, user_message(self.pending))",  # ahead of the conversation
        "        if self.pending:\n            pass",  # no turn at all
        "        extra = [user_message(self.pending)]\n        self.sent = extra",  # a list kept elsewhere
        "        print([user_message(self.pending)])",  # handed to a function, not appended
    ],
    ids=["fresh-list", "assistant", "bare-text", "inserted-first", "only-tested", "listed", "printed"],
)
def test_a_fill_used_otherwise_is_reported(tmp_path: Path, step: str) -> None:
    assert found(tmp_path, step) == REPORTED


def test_a_fill_through_a_local_name_or_a_returning_helper_is_followed(tmp_path: Path) -> None:
    local = "        text = NEXT.format(stamp=datetime.now().isoformat())\n        self.pending = text"
    assert found(tmp_path / "local", APPEND, local) == []
    helper = (
        "        self.pending = self.make()\n\n    def make(self):\n"
        "        return NEXT.format(stamp=datetime.now().isoformat())"
    )
    assert found(tmp_path / "helper", APPEND, helper) == []
    # the helper's value is also returned by ``plan`` to callers we cannot see: still reported
    leaked = helper.replace(
        "self.pending = self.make()", "self.pending = self.make()\n        return self.make()"
    )
    assert found(tmp_path / "leaked", APPEND, leaked) == REPORTED
