"""What text an expression builds (``analysis/python/evaluate.py``): defaults with ``or``, choices with
``if``/``else``, conditional and list-built prompts, ``%`` templates and free names.

Each test writes a small project under ``tmp_path`` and runs the real checker in-process.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer

pytestmark = needs_analyzer

RULES = "\n".join(
    f"Rule {i}: answer only questions about billing, quote the invoice line, and never guess an amount."
    for i in range(12)
)
# Four lines: the imports, the client, and a long static body (``RULES``) on line 5.
HEAD = (
    f'from datetime import datetime\nfrom openai import OpenAI\nclient = OpenAI()\n\nRULES = """{RULES}"""\n'
)
BODY_LINES = RULES.count("\n")  # lines the body adds after line 5
SEND = (
    'client.chat.completions.create(model="gpt-4o", messages=['
    '{"role": "system", "content": system}, {"role": "user", "content": q}])'
)


def found(root: Path, body: str, files: dict[str, str] | None = None) -> list[dict]:
    """The findings of ``prefixlint check`` on ``app.py`` = HEAD + ``body`` (plus ``files``)."""
    app = HEAD + textwrap.dedent(body).replace("@SEND@", SEND)
    for name, text in {"app.py": app, **(files or {})}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return json.loads(out)


def row(n: int) -> int:
    """Line ``n`` of the body (1-based) in ``app.py``."""
    return 5 + BODY_LINES + n


def where(f: dict) -> tuple[str, int, int]:
    return f["code"], f["location"]["row"], f["location"]["column"]


def prefix_tokens(f: dict) -> int:
    got = re.search(r"prefix (\d+) tokens", f["message"])
    assert got, f["message"]
    return int(got.group(1))


def test_a_default_after_or_keeps_the_value_ahead_of_it(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q, session_id):
            sid = session_id or "anon"
            system = f"Session {sid}\\n" + RULES
            return @SEND@
        """,
    )
    assert [where(f) for f in got] == [("PFX102", row(3), 11)]  # where the value is read
    assert got[0]["value"]["kind"] == "identifier"
    assert got[0]["value"]["conditional"] is False
    assert "Identifier `session_id` is computed per request ahead of static text" in got[0]["message"]


def test_an_empty_constant_or_a_value_is_the_value_and_only_maybe(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        PREFIX = ""
        def ask(q, session_id):
            sid = PREFIX or session_id
            system = f"Session {sid}\\n" + RULES
            return @SEND@
        """,
    )
    assert [where(f) for f in got] == [("PFX102", row(4), 21)]
    assert got[0]["value"]["conditional"] is True


def test_of_two_values_joined_by_or_the_first_is_the_one_reported(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q, session_id, user_id):
            who = session_id or user_id
            system = f"Caller {who}\\n" + RULES
            return @SEND@
        """,
    )
    assert [(f["code"], f["snippet"], f["value"]["conditional"]) for f in got] == [
        ("PFX102", "session_id", False)
    ]


def test_two_static_choices_give_no_finding_and_the_longer_one_counts(tmp_path: Path) -> None:
    long = "Hello there, you are the billing assistant of the shop and you answer briefly"
    body = f"""
        def ask(q, short):
            greet = "Hi" if short else "{long}"
            system = f"{{greet}} {{datetime.now()}}\\n" + RULES
            return @SEND@
        """
    got = found(tmp_path, body)
    assert [where(f) for f in got] == [("PFX101", row(4), 25)]
    assert prefix_tokens(got[0]) > 10  # the longer text precedes the time
    flipped = body.replace(f'"Hi" if short else "{long}"', f'"{long}" if short else "Hi"')
    assert prefix_tokens(found(tmp_path / "b", flipped)[0]) > 10
    none = found(tmp_path / "c", body.replace("{datetime.now()}", "today"))
    assert none == []


def test_a_dynamic_branch_of_a_choice_is_reported_as_conditional(tmp_path: Path) -> None:
    choices = ("datetime.now() if short else 'never'", "'never' if short else datetime.now()")
    for n, expr in enumerate(choices):
        got = found(
            tmp_path / str(n),
            f"""
            def ask(q, short):
                stamp = {expr}
                system = f"{{stamp}}\\n" + RULES
                return @SEND@
            """,
        )
        assert [f["code"] for f in got] == ["PFX101"]
        assert got[0]["location"]["row"] == row(3)
        assert got[0]["value"]["conditional"] is True
        assert "(conditionally)" in got[0]["message"]


def test_a_part_added_under_an_if_is_conditional_and_keeps_the_text_before_it(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q, verbose):
            system = "Intro.\\n"
            if verbose:
                system += f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
    )
    assert [where(f) for f in got] == [("PFX101", row(5), 27)]
    assert got[0]["value"]["conditional"] is True
    assert prefix_tokens(got[0]) == 5  # "Intro.\nNow: "


def test_a_part_added_in_a_loop_and_without_condition(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q):
            system = "Intro.\\n"
            system += f"Now: {datetime.now()}\\n"
            system += RULES
            return @SEND@
        """,
    )
    assert [where(f) for f in got] == [("PFX101", row(4), 23)]
    assert got[0]["value"]["conditional"] is False


def test_parts_appended_to_a_list_then_joined(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q):
            parts = ["Intro."]
            parts.append(f"Now: {datetime.now()}")
            parts.append(RULES)
            system = "\\n".join(parts)
            return @SEND@
        """,
    )
    assert [where(f) for f in got] == [("PFX101", row(4), 26)]
    assert prefix_tokens(got[0]) == 6  # "Intro.\nNow: "
    late = found(
        tmp_path / "late",
        """
        def ask(q):
            parts = ["Intro."]
            parts.append(RULES)
            parts.append(f"Now: {datetime.now()}")
            system = "\\n".join(parts)
            return @SEND@
        """,
    )
    assert late == []


def test_a_percent_template_filled_from_a_tuple_a_dict_or_one_value(tmp_path: Path) -> None:
    for n, (tmpl, fill) in enumerate(
        (
            ('"Now: %s\\n" + RULES', "(datetime.now(),)"),
            ('"Now: %(now)s\\n" + RULES', '{"now": datetime.now()}'),
            ('"Now: %s\\n" + RULES', "datetime.now()"),
        )
    ):
        got = found(
            tmp_path / str(n),
            f"""
            TEMPLATE = {tmpl}
            def ask(q):
                system = TEMPLATE % {fill}
                return @SEND@
            """,
        )
        assert [f["code"] for f in got] == ["PFX101"], tmpl
        assert got[0]["location"]["row"] == row(2)  # the placeholder, in the template
        assert got[0]["value"]["kind"] == "timestamp"
        assert prefix_tokens(got[0]) == 3


def test_a_sorted_or_listed_value_is_the_value(tmp_path: Path) -> None:
    for n, call in enumerate(("sorted(user_ids)", "list(user_ids)", "tuple(user_ids)")):
        got = found(
            tmp_path / str(n),
            f"""
            def ask(q, user_ids):
                system = f"Users: {{{call}}}\\n" + RULES
                return @SEND@
            """,
        )
        assert [f["code"] for f in got] == ["PFX104"], call
        assert got[0]["value"]["kind"] == "user_identity"
        assert got[0]["snippet"] == "user_ids"


def test_a_free_name_is_dynamic_only_when_its_name_says_so(tmp_path: Path) -> None:
    body = """
        from helpers import *
        def ask(q):
            system = f"Session: {session_id}\\n" + RULES
            return @SEND@
        """
    got = found(tmp_path, body)
    assert [where(f) for f in got] == [("PFX102", row(4), 26)]
    assert got[0]["value"]["timing"] == "request"
    assert found(tmp_path / "plain", body.replace("session_id", "banner_text")) == []


def test_the_id_of_an_object_is_a_memory_address(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q, ctx):
            system = f"Obj {id(ctx)}\\n" + RULES
            return @SEND@
        """,
    )
    assert [where(f) for f in got] == [("PFX403", row(3), 21)]
    assert "memory address" in got[0]["message"]


def test_names_unpacked_from_a_tuple_of_values_take_their_own_item(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def ask(q):
            header, persona = f"Now {datetime.now().isoformat()}\\n", "You are Ava.\\n"
            system = header + persona + RULES
            return @SEND@
        """,
    )
    # the time is reported where it is made; ``persona`` is the static text it was given, not a
    # user's identity read from its name
    assert [where(f) for f in got] == [("PFX101", row(3), 30)]


def test_names_unpacked_from_a_call_are_not_split(tmp_path: Path) -> None:
    got = found(
        tmp_path,
        """
        def parts():
            return "You are Ava.\\n", RULES

        def ask(q):
            persona, rules = parts()
            system = persona + rules
            return @SEND@
        """,
    )
    # what each name holds is not read from a call's result, and a name alone claims nothing here
    assert got == []
