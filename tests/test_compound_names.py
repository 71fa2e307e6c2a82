"""How a compound name is read when only its name can tell what a value is (issue 10).

Its head noun says what it is (``archived_passages`` are documents); a content noun (``feedback``,
``reply``, ``instructions``) is text someone wrote, and the person who qualifies it
(``reviewer_comment``) is its author, not the value: user input, never a user identity.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import needs_analyzer, project_findings, write_project

from prefixlint.analysis.catalog import builtin_catalog
from prefixlint.model.layout import DynamicKind

CATALOG = builtin_catalog()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        # a content noun a person qualifies: what that person wrote
        ("reviewer_comment", DynamicKind.USER_INPUT),
        ("customer_reply_text", DynamicKind.USER_INPUT),
        ("tester_feedback_excerpt", DynamicKind.USER_INPUT),
        ("user_instructions", DynamicKind.USER_INPUT),
        ("add_customer_message", DynamicKind.USER_INPUT),
        # content with no person: no identity from the other words
        ("org_description", None),
        ("tenant_report", None),
        # the head noun decides
        ("customer_passages", DynamicKind.RETRIEVED_CONTEXT),
        ("archived_chat_history", DynamicKind.HISTORY),
        ("current_customer_id", DynamicKind.USER_IDENTITY),
        ("session_customer", DynamicKind.USER_IDENTITY),
        ("ticket_passages_text", DynamicKind.RETRIEVED_CONTEXT),
        # a weak head says nothing, so the qualifier still may
        ("customer_name", DynamicKind.USER_IDENTITY),
        ("report_date_format", None),
    ],
)
def test_a_compound_name_takes_the_kind_its_head_or_author_tells(name: str, kind: DynamicKind | None) -> None:
    assert CATALOG.classify_name(name)[0] is kind


def test_the_content_and_person_words_are_catalog_data() -> None:
    assert {"feedback", "comment", "instructions"} <= CATALOG.content_words
    assert {"user", "customer", "reviewer"} <= CATALOG.person_words


PROMPT = (
    "You grade pull-request reviews for a small open-source team. Read the comment, decide whether it "
    "is actionable, name the file it concerns, suggest one concrete next step, and keep a friendly "
    "tone; never quote secrets, never guess at code you cannot see, and answer in at most five lines. "
) * 2


@needs_analyzer
def test_a_persons_comment_ahead_of_static_text_is_user_input_not_an_identity(tmp_path: Path) -> None:
    write_project(
        tmp_path,
        {
            "grader.py": f"""
                from openai import OpenAI

                client = OpenAI()
                RULES = {PROMPT!r}


                def grade(reviewer_comment):
                    system = f"Comment under review:\\n{{reviewer_comment}}\\n" + RULES
                    return client.chat.completions.create(model="gpt-4.1", messages=[
                        {{"role": "system", "content": system}},
                        {{"role": "user", "content": "Grade it."}},
                    ])
                """,
        },
    )
    found = project_findings(tmp_path)
    assert [(f["code"], f["value"]["kind"]) for f in found] == [("PFX109", "user_input")]
