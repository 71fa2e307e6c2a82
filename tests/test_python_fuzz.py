"""Generated programs never make the analyzer or the rules raise."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from prefixlint.analysis.python import ProjectContext, analyze_python
from prefixlint.model.layout import count_layout_tokens
from prefixlint.model.settings import Settings
from prefixlint.rules.base import RuleContext, all_rules

NAMES = st.sampled_from(
    [
        "system",
        "prompt",
        "messages",
        "history",
        "docs",
        "q",
        "user",
        "x",
        "SYSTEM_PROMPT",
        "tools",
        "now",
        "self.system",
        "ctx.received_at",
    ]
)
EXPRS = st.sampled_from(
    [
        '"static text"',
        'f"Today {datetime.now()}"',
        "datetime.now().isoformat()",
        "uuid.uuid4().hex",
        '"\\n".join(docs)',
        "TEMPLATE.format(date=now, user=user)",
        '"%s and %s" % (a, b)',
        "RULES + x",
        "[m for m in history]",
        '{"role": "system", "content": system}',
        "json.dumps(tools)",
        "sorted(names)",
        "helper(x)",
        "helper()",
        "self.build(q)",
        "store.similarity_search(q)",
        "x if cond else y",
        "*history",
        "Path(__file__).parent.joinpath('p.txt').read_text()",
        "env.get_template('t.j2').render(u=user)",
        "string.Template('$a').substitute(a=x)",
        "repr(object())",
        "id(x)",
        "[*history, {'role': 'user'}]",
        "{n for n in names}",
        "await x",
        "lambda: x",
        "None",
        "1 + 2",
        "x[0]",
        "os.environ['HOME']",
    ]
)
STMTS = st.one_of(
    st.builds(lambda n, e: f"{n} = {e}", NAMES, EXPRS),
    st.builds(lambda n, e: f"{n} += {e}", NAMES, EXPRS),
    st.builds(lambda n, e: f"{n}.append({e})", NAMES, EXPRS),
    st.builds(lambda n, e: f"{n}.extend({e})", NAMES, EXPRS),
    st.builds(lambda n, e: f"for {n} in {e}:\n        tools.append({n})", st.sampled_from(["n", "d"]), EXPRS),
    st.builds(lambda e: f"return {e}", EXPRS),
    st.builds(
        lambda e, f: f"client.chat.completions.create(model='gpt-4.1', messages={e}, tools={f})", EXPRS, EXPRS
    ),
    st.builds(
        lambda e, f: f"client.messages.create(system={e}, messages=[{{'role': 'user', 'content': {f}}}])",
        EXPRS,
        EXPRS,
    ),
    st.builds(lambda e: f"client.responses.create(instructions={e}, input=q, prompt_cache_key={e})", EXPRS),
    st.builds(lambda e: f"litellm.completion(model='m', messages={e})", EXPRS),
)
HEADER = (
    "import json, os, uuid, string\nfrom datetime import datetime\nfrom pathlib import Path\n"
    "RULES = 'static rules'\nTEMPLATE = 'Today {date}. ' + RULES\n"
    "def helper(x=datetime.now()):\n    return f'{x}' + RULES\n"
)
PROGRAMS = st.one_of(
    st.builds(
        lambda mod_stmts, body, decorate: (
            HEADER
            + "\n".join(s.replace("\n    ", "\n") for s in mod_stmts)
            + f"\n{decorate}def fn(q, history, docs, user, names: set[str], tools, x, cond):\n    "
            + "\n    ".join(body or ["pass"])
            + "\n"
        ),
        st.lists(STMTS.filter(lambda s: not s.startswith("return")), max_size=3),
        st.lists(STMTS, max_size=8),
        st.sampled_from(["", "@agent.system_prompt\n", "@staticmethod\n"]),
    ),
    st.text(max_size=200),
)

RULE_CLASSES = all_rules()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PROGRAMS)
@example(program="\U00031350")  # the native parser takes it, libcst's Name node rejects it
def test_generated_programs_never_raise(tmp_path: Path, program: str) -> None:
    conf = Settings()
    path = tmp_path / "gen.py"
    result = analyze_python(str(path), program, conf, ProjectContext(tmp_path, conf))
    assert not any("internal analysis error" in e.message for e in result.errors), result.errors
    ctx = RuleContext(settings=conf, path=str(path), source=program)
    for layout in result.layouts:
        counted = count_layout_tokens(layout)
        for rule in RULE_CLASSES:
            for finding in rule().check(counted, ctx):
                assert finding.location.line >= 1
