"""Template files: styles by suffix and globs, prompty/dotprompt files, suppressions, file analysis."""

from __future__ import annotations

from pathlib import Path

from prefixlint.analysis.templates import (
    analyze_template_file,
    render_segments,
    template_style_for,
    template_suppressions,
)
from prefixlint.model.layout import DynamicKind, Section, SourceLocation
from prefixlint.model.settings import Settings

PROMPTY = """---
name: Support
model:
  api: chat
  configuration:
    type: azure_openai
    azure_deployment: gpt-4o
sample:
  firstName: Seth
  context: The Alpine Explorer Tent boasts a detachable divider for privacy and ventilation.
  question: What should I wear?
---
system:
You are an AI assistant. Help {{firstName}} find answers.
# Context
{{context}}

{% for item in chat_history %}
{{item.role}}:
{{item.content}}
{% endfor %}

user:
{{question}}
"""


def settings(root: Path, **kw) -> Settings:
    s = Settings.model_validate(kw)
    s.root = str(root)
    return s


def test_style_by_suffix_and_config_globs(tmp_path: Path):
    globs = ["*.j2", "*.tmpl", "*.prompty", "*.prompt"]
    s = settings(tmp_path, **{"plain-prompt-globs": ["prompts/*.txt"], "template-globs": globs})
    assert template_style_for(tmp_path / "a.j2", s) == "jinja"
    assert template_style_for(tmp_path / "x" / "a.tmpl", s) == "jinja"
    assert template_style_for(tmp_path / "a.prompty", s) == "prompty"
    assert template_style_for(tmp_path / "a.prompt", s) == "plain"
    assert template_style_for(tmp_path / "prompts" / "system.txt", s) == "plain"
    assert template_style_for(tmp_path / "notes" / "system.txt", s) is None
    assert template_style_for(tmp_path / "a.jinja2", s) is None  # not in this config's globs
    assert template_style_for(tmp_path / "a.jinja2", settings(tmp_path)) == "jinja"
    assert template_style_for(tmp_path / "app.py", settings(tmp_path)) is None


def test_prompty_roles_sections_and_front_matter_lines():
    r = render_segments(PROMPTY, style="prompty", path="support.prompty")
    assert r.errors == []
    system = [s for s in r.segments if s.section is Section.SYSTEM]
    assert {s.role for s in system} == {"system"} and {s.message_index for s in system} == {0}
    assert system[0].text.startswith("You are an AI assistant.")
    assert system[0].location == SourceLocation("support.prompty", 14, 0)
    first_name = next(s for s in r.segments if s.dynamic)
    assert first_name.kind is DynamicKind.USER_IDENTITY  # camelCase name
    assert first_name.location == SourceLocation("support.prompty", 14, 30, 14, 43)
    history = [s for s in r.segments if s.kind is DynamicKind.HISTORY]
    assert len(history) == 2 and all(s.section is Section.MESSAGES and s.repeated for s in history)
    question = r.segments[-1] if r.segments[-1].dynamic else r.segments[-2]
    assert question.kind is DynamicKind.USER_INPUT
    assert question.section is Section.MESSAGES and question.role == "user"
    assert question.is_last_user_message
    assert question.message_index > history[0].message_index > 0


def test_prompty_without_role_lines_is_one_system_message():
    r = render_segments("---\nname: x\n---\nHello {{ name }}", style="prompty", path="x.prompty")
    assert [(s.section, s.role) for s in r.segments] == [(Section.SYSTEM, "system")] * 2
    assert r.segments[1].location.line == 4


def test_prompty_bad_front_matter_is_reported():
    r = render_segments("---\nmodel: [unclosed\n---\nHi", style="prompty", path="x.prompty")
    assert [e.code for e in r.errors] == ["PFX001"]
    assert "front matter" in r.errors[0].message


def test_analyze_prompty_uses_header_model_and_samples(tmp_path: Path):
    path = tmp_path / "support.prompty"
    path.write_text(PROMPTY)
    fa = analyze_template_file(str(path), PROMPTY, settings(tmp_path), tmp_path)
    (layout,) = fa.layouts
    assert (layout.provider, layout.model) == ("azure", "gpt-4o")
    assert layout.sink_name == "template support.prompty"
    context = next(s for s in layout.segments if s.label == "context")
    assert context.kind is DynamicKind.RETRIEVED_CONTEXT and context.tokens > 8  # sized by the sample
    assert all(s.tokens > 0 for s in layout.segments if s.text.strip())


def test_analyze_jinja_file_with_include(tmp_path: Path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "header.j2").write_text("Hello {{ user_name }}.\n")
    main = tmp_path / "templates" / "system.j2"
    main.write_text("{% include 'header.j2' %}You are Harbor. " + "Follow the rules. " * 40)
    fa = analyze_template_file(
        str(main),
        main.read_text(),
        settings(tmp_path, provider="anthropic", model="claude-sonnet-4-5"),
        tmp_path,
    )
    (layout,) = fa.layouts
    assert (layout.provider, layout.model) == ("anthropic", "claude-sonnet-4-5")
    assert fa.dependencies == {str((tmp_path / "templates" / "header.j2").resolve())}
    assert layout.segments[1].kind is DynamicKind.USER_IDENTITY
    assert layout.first_breaking_index() == 1 and layout.static_tokens_after(1) > 100
    assert fa.errors == []


def test_analyze_plain_prompt_file_and_syntax_error(tmp_path: Path):
    s = settings(tmp_path, **{"plain-prompt-globs": ["*.txt"]})
    fa = analyze_template_file("system.txt", "Today is {today}.\nRules.", s, tmp_path)
    assert [seg.kind for seg in fa.layouts[0].segments if seg.dynamic] == [DynamicKind.TIMESTAMP]
    broken = analyze_template_file("bad.j2", "{% for x in %}", s, tmp_path)
    assert broken.layouts == [] and [e.code for e in broken.errors] == ["PFX001"]


def test_dotprompt_front_matter_roles_and_history(tmp_path: Path):
    text = (
        '---\nmodel: googleai/gemini-1.5-flash\n---\n{{role "system"}}\nToday is {{currentDate}}.\n'
        '{{history}}\n{{role "user"}}\n{{question}}\n'
    )
    fa = analyze_template_file("chat.prompt", text, settings(tmp_path), tmp_path)
    (layout,) = fa.layouts
    assert (layout.provider, layout.model) == ("gemini", "gemini-1.5-flash")
    segs = layout.segments
    assert segs[0].text == "Today is " and segs[0].location == SourceLocation("chat.prompt", 5, 0)
    assert [s.kind for s in segs if s.dynamic] == [
        DynamicKind.TIMESTAMP,
        DynamicKind.HISTORY,
        DynamicKind.USER_INPUT,
    ]
    question = next(s for s in segs if s.kind is DynamicKind.USER_INPUT)
    assert (question.section, question.role, question.message_index) == (Section.MESSAGES, "user", 1)
    assert question.is_last_user_message


def test_jinja_suppressions_trailing_next_line_and_file():
    text = (
        "{{ now() }} {# prefixlint: ignore[PFX101] #}\n"
        "{# prefixlint: ignore[pfx101, PFX102] #}\n"
        "{{ user_name }}\n"
        "{# prefixlint: ignore #}\n"
        "{{ docs }}\n"
        "{#- prefixlint: ignore-file[PFX110] -#}\n"
        "{# an ordinary comment #}{{ x }}\n"
    )
    assert template_suppressions(text, "jinja") == {
        1: {"PFX101"},
        3: {"PFX101", "PFX102"},
        5: None,
        0: {"PFX110"},
    }
    assert template_suppressions("{# prefixlint: ignore-file #}", "prompty") == {0: None}


def test_jinja_suppression_is_not_taken_from_text_or_strings():
    text = 'prefixlint: ignore[PFX101]\n{{ "prefixlint: ignore" }}\n'
    assert template_suppressions(text, "jinja") == {}


def test_suppressions_in_other_styles():
    mustache = "Hi {{name}} {{! prefixlint: ignore[PFX101] }}"
    assert template_suppressions(mustache, "mustache") == {1: {"PFX101"}}
    plain = "Today is {today}. <!-- prefixlint: ignore[PFX101] -->\n# prefixlint: ignore\n{user}\n"
    assert template_suppressions(plain, "format") == {1: {"PFX101"}, 3: None}
    assert template_suppressions("x\r\n{# prefixlint: ignore #}\r\n{{ y }}", "jinja") == {3: None}


def test_header_model_with_a_router_prefix():
    """``model: router/vendor/name``: only the first part is the router's; the rest names the model."""
    from prefixlint.analysis.templates.prompty import meta_from

    routed = meta_from({"model": "openrouter/anthropic/claude-3-5-sonnet"})
    assert (routed.provider, routed.model) == ("anthropic", "anthropic/claude-3-5-sonnet")
    plain = meta_from({"model": "anthropic/claude-3-5-sonnet"})
    assert (plain.provider, plain.model) == ("anthropic", "claude-3-5-sonnet")
