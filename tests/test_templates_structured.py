"""Template text kept under a key of a YAML or TOML file: the text, and the line and column it starts
at (where placeholders in it are reported); and the named templates a prompt registry looks up."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from prefixlint.analysis.templates.files import clear_caches
from prefixlint.analysis.templates.named import named_templates, placeholders_of
from prefixlint.analysis.templates.structured import KeyedText, keyed_value
from tests.cli_support import invoke

YAML = """agent:
  system: |

    You are {name}.
    Answer {question}.
  folded: >

    Line one {a}
    line two {b}

  next: 1
  quoted: "Hi {x}"
  single: 'Yo {y}'
  plain: hey {z}
  items:
    - first {p}
    - second {q}
  num: 3
  last: >
    end {e}"""

TOML = '''top = "T {a}"

[pr_review]
system = """
Review {diff}."""
'other' = 'lit {x}'
raw = \'\'\'R {y}\'\'\'
inline = """Same line {z}"""
n = 3
[ "quoted" . sub ]  # a comment
key = "v {k}"
'''


def test_yaml_values_and_where_they_start() -> None:
    def at(*keys: str | int) -> KeyedText | None:
        return keyed_value(YAML, keys, "yaml")

    # a block starts on the line after its indicator, blank lines included, at its indentation
    assert at("agent", "system") == KeyedText("\nYou are {name}.\nAnswer {question}.\n", 2, 4, 4)
    assert at("agent", "folded") == KeyedText("\nLine one {a}\nline two {b}\n", 6, 4, 4)
    assert at("agent", "last") == KeyedText("end {e}", 19, 4, 4)
    assert at("agent", "quoted") == KeyedText("Hi {x}", 11, 11)
    assert at("agent", "single") == KeyedText("Yo {y}", 12, 11)
    assert at("agent", "plain") == KeyedText("hey {z}", 13, 9)
    assert at("agent", "items", 1) == at("agent", "items", -1) == KeyedText("second {q}", 16, 6)
    assert at("agent", "items", 0) == KeyedText("first {p}", 15, 6)
    assert at("agent", "num") == KeyedText("3", 17, 7)
    for keys in (
        ("agent", "items", 2),
        ("agent", "items", -3),
        ("agent", "items", "x"),
        ("agent", "missing"),
    ):
        assert at(*keys) is None
    assert at("agent", "system", "x") is None and at("agent") is None
    assert keyed_value("a: [1", ["a"], "yaml") is None  # does not parse
    assert keyed_value("a: x", ["a"], "json") is None  # not a kind it reads
    assert keyed_value("a:\n  - [1, 2]\n", ["a", 0], "yaml") is None


def test_toml_values_and_where_they_start() -> None:
    def at(*keys: str | int) -> KeyedText | None:
        return keyed_value(TOML, keys, "toml")

    assert at("top") == KeyedText("T {a}", 0, 7)
    assert at("pr_review", "system") == KeyedText("Review {diff}.", 4, 0)
    assert at("pr_review", "other") == KeyedText("lit {x}", 5, 11)
    assert at("pr_review", "raw") == KeyedText("R {y}", 6, 9)
    assert at("pr_review", "inline") == KeyedText("Same line {z}", 7, 12)
    assert at("quoted", "sub", "key") == KeyedText("v {k}", 10, 7)
    for keys in (("pr_review", "n"), ("nope",), (), ("pr_review",), ("top", "x")):
        assert at(*keys) is None
    assert keyed_value("a = [", ["a"], "toml") is None
    assert keyed_value('a = ["x {y}"]', ["a", 0], "toml") is None
    # a key written only inside an inline table is not found on a line of its own
    assert keyed_value('t = { s = "x {y}" }', ["t", "s"], "toml") is None


def test_named_templates_are_the_top_level_entries_with_a_placeholder(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "tasks.yaml").write_text(
        textwrap.dedent(
            """\
            summarise:
              description: Short summary.
              template: |
                Summarise {doc}
                for {reader}.
            translate:
              meta:
                inner:
                  deeper:
                    text: |
                      Too deep {x}
                      to count.
            chat:
              prompt: |
                Hello {{ user }},
                welcome.
            one_line: "Just {x}"
            - not a mapping key
            """
        ).replace("- not a mapping key\n", "")
    )
    (tmp_path / "prompts" / "list.yml").write_text("- a: |\n    x {y}\n    z\n")
    (tmp_path / "prompts" / "plain.yaml").write_text("note: no placeholders here\n")
    (tmp_path / "prompts" / "broken.yaml").write_text("a: {x}\n  b: [\n")
    (tmp_path / "prompts" / "other.txt").write_text("t: |\n  {x}\n  y\n")
    (tmp_path / "prompts" / "latin.yaml").write_bytes(b"t: |\n  {x}\n  \xe9\n")
    (tmp_path / "compose.yaml").write_text("env: |\n  ${HOME}\n  ${{ github.ref }}\n")
    clear_caches()
    found = {t.name: t for t in named_templates(str(tmp_path))}
    assert sorted(found) == ["chat", "summarise"]
    s = found["summarise"]
    assert (s.keys, s.placeholders, s.style) == (
        ("summarise", "template"),
        frozenset({"doc", "reader"}),
        "format",
    )
    assert s.path == str(tmp_path / "prompts" / "tasks.yaml") and (s.body.line, s.body.col) == (3, 4)
    c = found["chat"]
    assert (c.keys, c.placeholders, c.style, c.body.line) == (
        ("chat", "prompt"),
        frozenset({"user"}),
        "jinja",
        14,
    )


def test_placeholders_and_their_style() -> None:
    assert placeholders_of("a {x} and {{ y }}") == (frozenset({"x"}), "format")
    assert placeholders_of("{{- y }} and {{z}}") == (frozenset({"y", "z"}), "jinja")
    assert placeholders_of("${HOME} ${{ github.ref }} {{x}}") == (frozenset({"x"}), "jinja")
    assert placeholders_of("nothing") == (frozenset(), "jinja")


RULES = "\n".join(f"Rule {i}: answer carefully and cite every source you used, precisely." for i in range(60))
APP = """\
import datetime
from pathlib import Path
import yaml
from openai import OpenAI
client = OpenAI()
HERE = Path(__file__).parent

def answer(question):
    with open(HERE / "agents.yaml") as f:
        data = yaml.safe_load(f)
    system = data["support"]["system"].format(today=datetime.datetime.now().isoformat())
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
"""


def test_a_block_that_opens_with_a_blank_line_is_reported_on_the_placeholders_line(tmp_path: Path) -> None:
    body = "\nYou are a support assistant.\nToday is {today}.\n" + RULES + "\n"
    (tmp_path / "agents.yaml").write_text("support:\n  system: |\n" + textwrap.indent(body, "    "))
    (tmp_path / "app.py").write_text(APP)
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "."], cwd=tmp_path)
    found = [f for f in json.loads(out) if f["filename"].endswith("agents.yaml")]
    assert code == 1 and [(f["code"], f["location"]["row"], f["location"]["column"]) for f in found] == [
        ("PFX101", 5, 14)
    ]


def test_prompt_files_holding_at_least_two_of_the_replaced_markers(tmp_path: Path) -> None:
    from prefixlint.analysis.templates.marked import files_with_markers, is_marker

    (tmp_path / "both.txt").write_text("Goals: {goals}\nTools: {tools}\n")
    (tmp_path / "one.md").write_text("Goals: {goals} only\n")
    (tmp_path / "code.py").write_text("x = '{goals} {tools}'\n")
    (tmp_path / "plain.txt").write_text("no markers at all\n")
    clear_caches()
    found = files_with_markers(str(tmp_path), ["{goals}", "{tools}", "not a marker"])
    assert [Path(p).name for p, _ in found] == ["both.txt"]
    assert found[0][1] == "Goals: {goals}\nTools: {tools}\n"
    assert files_with_markers(str(tmp_path), ["{goals}", "plain words"]) == []  # one marker says too little
    assert [is_marker(m) for m in ("{x}", "{{ x }}", "$X", "${X}", "<X>", "x", "{x y}")] == [
        True,
        True,
        True,
        True,
        True,
        False,
        False,
    ]
