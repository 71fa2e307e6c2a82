"""Objects whose methods return per-request values (``analysis/python/kinds.py``): a retriever known by
the call that made it (module level, local, awaited, kept on ``self``), by its annotation or by its
name; an object known by none of these is an unknown call. And lists a class fills while it runs
(``self.notes.append(...)`` in a method): what they hold is what is appended, or, when that is
static text, what the list's name says (``notes``: memory).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row

pytestmark = needs_analyzer

CASES = {
    "module-level": (
        """
        finder = store.as_retriever()
        def ask(q):
            docs = finder.invoke(q)
            system = f"Docs {docs}\\n" + RULES
            return @SEND@
        """,
        ("PFX105", 4, 12, "retrieved_context", "finder.invoke(q)"),
    ),
    "local-awaited": (
        """
        async def ask(q, store):
            finder = store.as_retriever()
            docs = await finder.ainvoke(q)
            system = f"Docs {docs}\\n" + RULES
            return @SEND@
        """,
        ("PFX105", 4, 18, "retrieved_context", "finder.ainvoke(q)"),
    ),
    "kept-on-self": (
        """
        class Bot:
            def __init__(self, store):
                self.finder = store.as_retriever()

            def ask(self, q):
                docs = self.finder.invoke(q)
                system = f"Docs {docs}\\n" + RULES
                return @SEND@
        """,
        ("PFX105", 7, 16, "retrieved_context", "self.finder.invoke(q)"),
    ),
    "typed": (
        """
        def ask(q, finder: VectorStoreRetriever):
            docs = finder.invoke(q)
            system = f"Docs {docs}\\n" + RULES
            return @SEND@
        """,
        ("PFX105", 3, 12, "retrieved_context", "finder.invoke(q)"),
    ),
    "named": (
        """
        def ask(q, retriever):
            docs = retriever.invoke(q)
            system = f"Docs {docs}\\n" + RULES
            return @SEND@
        """,
        ("PFX105", 3, 12, "retrieved_context", "retriever.invoke(q)"),
    ),
    "not-known": (
        """
        def ask(q, finder):
            docs = finder.invoke(q)
            system = f"Docs {docs}\\n" + RULES
            return @SEND@
        """,
        ("PFX109", 3, 12, "unknown", "finder.invoke(q)"),
    ),
    "named-attribute": (
        """
        class Bot:
            def __init__(self, store):
                self.tools = Tools(store)

            def ask(self, q):
                docs = self.tools.retriever.invoke(q)
                system = f"Docs {docs}\\n" + RULES
                return @SEND@
        """,
        ("PFX105", 7, 16, "retrieved_context", "self.tools.retriever.invoke(q)"),
    ),
    "grown-list": (
        """
        class Bot:
            def __init__(self):
                self.notes = []

            def note(self):
                self.notes.append(datetime.now())

            def ask(self, q):
                system = f"Notes {self.notes}\\n" + RULES
                return @SEND@
        """,
        ("PFX101", 7, 27, "timestamp", "datetime.now()"),
    ),
    "grown-with-text": (
        """
        class Bot:
            def __init__(self):
                self.notes = []

            def note(self):
                self.notes.append("fixed")

            def ask(self, q):
                system = f"Notes {self.notes}\\n" + RULES
                return @SEND@
        """,
        ("PFX107", 7, 9, "memory", "self.notes"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_what_a_method_of_an_object_returns(tmp_path: Path, case: str) -> None:
    body, (code, line, col, kind, snippet) = CASES[case]
    got = found(tmp_path, body)
    assert [
        (f["code"], f["location"]["row"], f["location"]["column"], f["value"]["kind"], f["snippet"])
        for f in got
    ] == [(code, row(line), col, kind, snippet)]
