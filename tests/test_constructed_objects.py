"""An attribute of an object built by a project class's constructor takes the kind of the argument
bound to it (issue 10: a result object's ``answer`` was called a timestamp because another argument,
its duration, was one).

Each case is a small fresh project run through the real analyzer.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from cli_support import needs_analyzer, project_findings, write_project

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.model.layout import DynamicKind, Segment, Timing
from prefixlint.model.settings import Settings

RULES = (
    "You are the tide-table assistant of a harbour office. Answer in three sentences, cite the "
    "table you read, give times in local time, never guess a depth, and hand over to the harbour "
    "master when a skipper reports damage or a missing crew member. "
) * 3

HEAD = f"""
import asyncio
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from openai import OpenAI

client = OpenAI()
RULES = {RULES!r}
"""

SEND = """
def answer(question, hit):
    system = f"Tide notes:\\nVALUE\\n" + RULES
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": question}])
"""


def value_of(tmp_path: Path, classes: str, build: str, expr: str) -> Segment:
    """The one dynamic piece of the system prompt that interpolates ``expr`` of ``hit = build``."""
    code = (
        HEAD
        + textwrap.dedent(classes)
        + textwrap.dedent(
            f"""
        def lookup(question):
            start = time.time()
            notes = store.similarity_search(question)
            return {build}
        """
        )
    )
    code += (
        SEND.replace("VALUE", expr)
        + "\n\ndef main(question):\n    return answer(question, lookup(question))\n"
    )
    path = tmp_path / "app.py"
    path.write_text(code)
    settings = Settings()
    result = analyze_python(str(path), code, settings, ProjectContext(tmp_path, settings))
    assert not result.errors, result.errors
    segs = {
        (s.label, s.location): s
        for lay in result.layouts  # the sink's own layout and the one its caller's values fill
        for s in lay.segments
        if not s.static and not s.is_last_user_message
    }
    assert len(segs) == 1, segs
    return next(iter(segs.values()))


DATACLASS = """
@dataclass
class Hit:
    found: list
    took: float
    source: str = "tide tables"
    page: str | None = None
    marks: list = field(default_factory=list)
    at: float = field(default_factory=time.time)
"""
NAMED_TUPLE = """
class Hit(NamedTuple):
    found: list
    took: float
"""
PLAIN_CLASS = """
class Hit:
    def __init__(self, found, seconds):
        self.found = found
        self.took = seconds
"""


@pytest.mark.parametrize(
    ("classes", "build"),
    [
        (DATACLASS, "Hit(found=notes, took=time.time() - start)"),
        (DATACLASS, "Hit(notes, time.time() - start)"),
        (NAMED_TUPLE, "Hit(notes, took=time.time() - start)"),
        (PLAIN_CLASS, "Hit(notes, time.time() - start)"),
        (PLAIN_CLASS, "Hit(seconds=time.time() - start, found=notes)"),
    ],
)
def test_an_attribute_takes_the_kind_of_the_argument_bound_to_it(
    tmp_path: Path, classes: str, build: str
) -> None:
    seg = value_of(tmp_path, classes, build, "{hit.found}")
    assert (seg.kind, seg.timing) == (DynamicKind.RETRIEVED_CONTEXT, Timing.REQUEST)
    seg = value_of(tmp_path, classes, build, "{hit.took}")
    assert seg.kind is DynamicKind.TIMESTAMP


def test_a_field_left_at_its_default_is_its_default(tmp_path: Path) -> None:
    code = HEAD + textwrap.dedent(DATACLASS)
    code += (
        "\ndef lookup(question):\n    return Hit(found=store.similarity_search(question), took=time.time())\n"
    )
    code += SEND.replace("VALUE", "{hit.source} {hit.page} {hit.marks}")
    code += "\n\ndef main(q):\n    return answer(q, lookup(q))\n"
    path = tmp_path / "app.py"
    path.write_text(code)
    settings = Settings()
    result = analyze_python(str(path), code, settings, ProjectContext(tmp_path, settings))
    dynamic = [
        s for lay in result.layouts for s in lay.segments if not s.static and not s.is_last_user_message
    ]
    assert dynamic == []


def test_an_attribute_the_call_does_not_tell_is_of_unknown_kind(tmp_path: Path) -> None:
    # ``**extra`` may set any field: the attribute is read per request, but its kind is not claimed
    seg = value_of(tmp_path, DATACLASS, "Hit(**dict(found=notes, took=time.time() - start))", "{hit.found}")
    assert seg.kind is DynamicKind.UNKNOWN
    # the object as a whole, built from values of different kinds, claims none of them
    seg = value_of(tmp_path, DATACLASS, "Hit(found=notes, took=time.time() - start)", "{hit}")
    assert (seg.kind, seg.timing) == (DynamicKind.UNKNOWN, Timing.REQUEST)


@needs_analyzer
def test_results_gathered_from_a_map_step_keep_their_fields(tmp_path: Path) -> None:
    """A map step returns one result object per batch (``try`` and ``except`` alike) through
    ``asyncio.gather``; the reduce step's prompt reads each result's answer: retrieved context per
    query, not the duration that each result also carries."""
    write_project(
        tmp_path,
        {
            "tides/results.py": """
                from dataclasses import dataclass


                @dataclass
                class Partial:
                    answer: str
                    took: float
                """,
            "tides/search.py": HEAD
            + """
from tides.results import Partial


async def read_batch(batch):
    start = time.time()
    try:
        found = store.similarity_search(batch)
        return Partial(answer=found, seconds=time.time() - start)
    except ValueError:
        return Partial(answer="", seconds=time.time() - start)


async def search(question):
    partials = await asyncio.gather(*[read_batch(b) for b in question.split(";")])
    return reduce(partials, question)


def reduce(partials, question):
    notes = "\\n".join(p.answer for p in partials)
    system = f"Analyst notes:\\n{notes}\\n" + RULES
    return client.chat.completions.create(model="gpt-4.1", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": question}])
""",
        },
    )
    found = [f for f in project_findings(tmp_path) if f["filename"].endswith("search.py")]
    assert [(f["code"], f["value"]["kind"]) for f in found] == [("PFX105", "retrieved_context")]
    assert "p.answer" in found[0]["message"] or "similarity_search" in found[0]["message"]
