"""What a finding says, how many there are and how severe they are (issue 10), on layouts built by hand.

The analysis fills ``Segment.timing``, ``granularity`` and ``cardinality``; these tests build the
segments directly, so the rules' side of the contract is checked whatever the analysis gives today.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from prefixlint.model.edits import Applicability, Fix
from prefixlint.model.findings import Finding, Severity
from prefixlint.model.layout import (
    Cardinality,
    DynamicKind,
    Granularity,
    Layout,
    Nondeterminism,
    Section,
    Segment,
    SourceLocation,
    Timing,
    count_layout_tokens,
)
from prefixlint.model.settings import Settings
from prefixlint.report import ReportContext, render
from prefixlint.rules.base import RuleContext, all_rules, get_rule

GUIDE = (
    "You plan train journeys across Europe. Suggest at most three connections, list the changes, say "
    "which tickets need a reservation, and never invent timetables or prices you do not know. "
)
LONG = GUIDE * 40  # about 1,400 tokens: the prompt reaches OpenAI's 1,024-token minimum
SHORT = GUIDE * 4  # about 140 tokens: above the reporting floor, far below the minimum


def value(
    line: int,
    label: str,
    kind: DynamicKind = DynamicKind.TIMESTAMP,
    timing: Timing = Timing.REQUEST,
    granularity: Granularity | None = None,
    cardinality: Cardinality | None = None,
    fixes: tuple[Fix, ...] = (),
) -> Segment:
    return Segment(
        Section.SYSTEM,
        text=label,
        static=False,
        kind=kind,
        timing=timing,
        label=label,
        location=SourceLocation("app.py", line, 4),
        granularity=granularity,
        cardinality=cardinality,
        fixes=fixes,
    )


def text(body: str) -> Segment:
    return Segment(Section.SYSTEM, text=body)


def layout(*segments: Segment) -> Layout:
    return count_layout_tokens(Layout(segments=list(segments), provider="openai", model="gpt-4.1"))


def run(code: str, lay: Layout, **settings: Any) -> list[Finding]:
    rule = get_rule(code)
    assert rule is not None
    return list(rule().check(lay, RuleContext(settings=Settings(**settings))))


def codes(lay: Layout, **settings: Any) -> list[str]:
    ctx = RuleContext(settings=Settings(**settings))
    return sorted(f.code for rule in all_rules() for f in rule().check(lay, ctx))


# --- unknown is not per request -------------------------------------------------------------------


def test_an_unknown_value_gets_its_own_code_and_never_claims_per_request() -> None:
    lay = layout(value(3, "self.tone", DynamicKind.UNKNOWN, Timing.UNKNOWN), text(LONG))
    assert codes(lay) == ["PFX120"]
    (finding,) = run("PFX120", lay)
    assert "per request" not in finding.message
    assert "unknown nature" in finding.message
    assert finding.severity is Severity.LOW and finding.blocking
    assert finding.extra["timing"] == "unknown"


def test_an_unknown_value_ahead_of_little_text_is_not_reported() -> None:
    short = layout(value(3, "self.tone", DynamicKind.UNKNOWN, Timing.UNKNOWN), text(SHORT))
    assert codes(short) == []
    # the prompt reaches the minimum, but fewer than 100 tokens are at stake
    little = GUIDE * 2
    big_prefix = layout(text(LONG), value(3, "self.tone", DynamicKind.UNKNOWN, Timing.UNKNOWN), text(little))
    assert run("PFX120", big_prefix) == []
    # a higher min-impact-tokens raises the bar
    big = layout(value(3, "self.tone", DynamicKind.UNKNOWN, Timing.UNKNOWN), text(LONG))
    assert run("PFX120", big) and run("PFX120", big, **{"min-impact-tokens": 100_000}) == []


def test_pfx109_is_only_for_per_request_values_of_unknown_kind() -> None:
    lay = layout(value(3, "plans.note()", DynamicKind.UNKNOWN, Timing.REQUEST), text(LONG))
    assert codes(lay) == ["PFX109"]
    (finding,) = run("PFX109", lay)
    assert "is computed per request" in finding.message


# --- one finding per prompt and per cause ---------------------------------------------------------


def three_stamps() -> Layout:
    return layout(
        value(3, "datetime.now()"),
        text("Now. "),
        value(4, "time.time()"),
        text(LONG),
        value(5, "time.monotonic()"),
        text(SHORT),
    )


def test_one_finding_per_prompt_and_cause_lists_the_others() -> None:
    findings = run("PFX101", three_stamps())
    assert len(findings) == 1
    (finding,) = findings
    assert finding.location.line == 3
    assert [(a["line"], a["label"]) for a in finding.also] == [(4, "time.time()"), (5, "time.monotonic()")]


def test_other_causes_in_the_same_prompt_keep_their_own_finding() -> None:
    lay = layout(value(3, "datetime.now()"), value(4, "uuid4()", DynamicKind.IDENTIFIER), text(LONG))
    assert codes(lay) == ["PFX101", "PFX102"]


def test_text_and_json_show_the_other_values() -> None:
    findings = run("PFX101", three_stamps())
    out = render("text", findings, ReportContext())
    assert "= also: app.py:4:5 `time.time()`" in out and "= also: app.py:5:5 `time.monotonic()`" in out
    (doc,) = json.loads(render("json", findings, ReportContext()))
    assert [(a["location"]["row"], a["label"]) for a in doc["also"]] == [
        (4, "time.time()"),
        (5, "time.monotonic()"),
    ]
    sarif = json.loads(render("sarif", findings, ReportContext()))
    related = sarif["runs"][0]["results"][0]["relatedLocations"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in related] == [4, 5]


# --- severity follows what is at stake -----------------------------------------------------------


def test_a_prompt_that_can_never_reach_the_minimum_is_informational() -> None:
    (finding,) = run("PFX101", layout(value(3, "time.time()"), text(SHORT)))
    assert finding.impact is not None and not finding.impact.can_reach_minimum
    assert finding.impact.at_stake == 0
    assert finding.severity is Severity.INFO and "nothing is cached" in finding.message
    # by default every finding fails the run, as ruff's do; a threshold lets this one pass
    assert finding.blocking
    (passing,) = run("PFX101", layout(value(3, "time.time()"), text(SHORT)), **{"min-impact-tokens": 100})
    assert passing.severity is Severity.INFO and not passing.blocking


def test_history_after_the_value_can_make_the_prompt_reach_the_minimum() -> None:
    history = Segment(Section.MESSAGES, static=False, kind=DynamicKind.HISTORY, label="history")
    lay = layout(value(3, "time.time()"), text(GUIDE * 4), history)
    (finding,) = run("PFX101", lay)
    assert finding.impact is not None and finding.impact.can_reach_minimum
    assert finding.blocking


def test_a_value_ahead_of_a_label_or_one_sentence_is_not_reported() -> None:
    # an "Answer:" label or one closing sentence behind a per-request value is not worth moving it for
    for tail in ("\nAnswer:", "Reply in one short sentence and cite the order number.", GUIDE * 2):
        assert codes(layout(value(3, "time.time()"), text(tail))) == []
        assert codes(layout(value(3, "question", DynamicKind.USER_INPUT), text(tail))) == []
    # a paragraph behind it and it is reported again (informational: nothing can be cached yet)
    (finding,) = run("PFX101", layout(value(3, "time.time()"), text(SHORT)))
    assert finding.impact is not None and finding.impact.tokens_lost >= 100
    # conversation history behind the short text still makes the value worth moving
    history = Segment(Section.MESSAGES, static=False, kind=DynamicKind.HISTORY, label="history")
    assert codes(layout(value(3, "time.time()"), text("\nAnswer:"), history)) == ["PFX101"]


def test_min_impact_tokens_decides_what_blocks() -> None:
    lay = layout(text(LONG), value(3, "time.time()"), text(GUIDE * 5))  # ~175 tokens at stake
    (default,) = run("PFX101", lay)
    assert default.blocking and default.severity is Severity.LOW
    (strict,) = run("PFX101", lay, **{"min-impact-tokens": 500})
    assert strict.severity is Severity.INFO and not strict.blocking
    small = layout(value(3, "time.time()"), text(SHORT))
    (everything,) = run("PFX101", small, **{"min-impact-tokens": 0})
    assert everything.blocking


def test_a_per_request_value_ahead_of_a_long_prompt_is_high() -> None:
    (finding,) = run(
        "PFX101", layout(value(3, "time.time()", granularity=Granularity.SUB_SECOND), text(LONG))
    )
    assert finding.severity is Severity.HIGH


@pytest.mark.parametrize(
    ("card", "ceiling", "words"),
    [
        (Cardinality.FEW, Severity.LOW, "a few warm copies"),
        (Cardinality.PER_USER, Severity.MEDIUM, "per user"),
        (Cardinality.PER_SESSION, Severity.MEDIUM, "per conversation"),
        (Cardinality.PER_REQUEST, Severity.HIGH, "every request misses"),
    ],
)
def test_cardinality_is_said_and_priced(card: Cardinality, ceiling: Severity, words: str) -> None:
    lay = layout(value(3, "plan", DynamicKind.USER_IDENTITY, cardinality=card), text(LONG))
    (finding,) = run("PFX104", lay)
    assert words in finding.message
    assert finding.severity is ceiling
    (doc,) = json.loads(render("json", [finding], ReportContext()))
    assert doc["value"]["cardinality"] == card.value


def test_a_user_identity_is_per_user_even_when_the_analysis_leaves_cardinality_unset() -> None:
    (finding,) = run("PFX104", layout(value(3, "user.name", DynamicKind.USER_IDENTITY), text(LONG)))
    assert "per user" in finding.message and finding.severity is Severity.MEDIUM


def test_an_unknown_cardinality_is_not_claimed() -> None:
    (finding,) = run("PFX107", layout(value(3, "memory", DynamicKind.MEMORY), text(LONG)))
    assert "every request misses" not in finding.message and "per user" not in finding.message
    assert finding.extra["cardinality"] is None


# --- time values priced by granularity ----------------------------------------------------------


def test_a_date_is_pfx111_low_and_says_once_a_day() -> None:
    lay = layout(value(3, "date.today()", granularity=Granularity.DAY), text(LONG))
    assert codes(lay) == ["PFX111"]
    (finding,) = run("PFX111", lay)
    assert finding.severity is Severity.LOW
    assert "once a day" in finding.message and "(a date)" in finding.message
    assert finding.extra["granularity"] == "day"


@pytest.mark.parametrize(
    ("grain", "words"),
    [
        (Granularity.DAY, "once a day"),
        (Granularity.MONTH, "once a month"),
        (Granularity.MINUTE, "every minute"),
    ],
)
def test_a_time_value_with_the_cardinality_its_grain_implies_says_how_often_it_changes(
    grain: Granularity, words: str
) -> None:
    """The analysis sets a date's cardinality to ``few`` (and a minute's to ``per_request``): the
    message still says how often it changes, not "a few warm copies"."""
    card = Cardinality.PER_REQUEST if grain.sub_day else Cardinality.FEW
    lay = layout(value(3, "stamp", granularity=grain, cardinality=card), text(LONG))
    (finding,) = [f for code in codes(lay) for f in run(code, lay)]
    assert words in finding.message and "warm copies" not in finding.message


def test_a_date_can_be_turned_off() -> None:
    from prefixlint.rules.base import iter_selected

    assert "PFX111" not in {r.code for r in iter_selected(Settings(ignore=["PFX111"]))}
    assert "PFX111" in {r.code for r in iter_selected(Settings())}


@pytest.mark.parametrize(
    ("granularity", "words"),
    [
        (Granularity.SECOND, "to the second"),
        (Granularity.MINUTE, "to the minute"),
        (Granularity.HOUR, "to the hour"),
    ],
)
def test_a_sub_day_timestamp_stays_pfx101_and_offers_the_date(granularity: Granularity, words: str) -> None:
    lay = layout(value(3, "datetime.now()", granularity=granularity), text(LONG))
    assert codes(lay) == ["PFX101"]
    (finding,) = run("PFX101", lay)
    assert words in finding.message and "coarsen it to the date" in finding.message


def test_a_coarsening_fix_from_the_analysis_is_offered_beside_the_move() -> None:
    move = Fix("Move the dynamic part after the static text", (), Applicability.UNSAFE, "move-to-end")
    coarsen = Fix("Format the time as the date", (), Applicability.UNSAFE, "coarsen-to-date")
    seg = value(3, "datetime.now()", granularity=Granularity.SECOND, fixes=(move, coarsen))
    (finding,) = run("PFX101", layout(seg, text(LONG)))
    assert finding.fix is move
    assert finding.extra["alternative_fixes"] == [
        {"message": "Format the time as the date", "applicability": "unsafe", "purpose": "coarsen-to-date"}
    ]
    out = render("text", [finding], ReportContext())
    assert "= help: or: Format the time as the date (unsafe fix)" in out


def test_a_date_ahead_of_the_history_alone_is_not_reported() -> None:
    history = Segment(Section.MESSAGES, static=False, kind=DynamicKind.HISTORY, label="history")
    lay = layout(text(LONG), value(3, "date.today()", granularity=Granularity.DAY), history)
    assert codes(lay) == []


def test_text_summary_counts_informational_findings() -> None:
    findings = run("PFX101", layout(value(3, "time.time()"), text(SHORT)), **{"min-impact-tokens": 100})
    out = render("text", findings, ReportContext())
    assert "1 is informational" in out and "does not fail the run" in out


# --- serialization after a per-request value -------------------------------------------------------


def test_unsorted_json_after_a_per_request_value_is_not_reported() -> None:
    # the JSON's bytes never reach a prefix two requests share once a per-request value sits ahead
    # of it: sorting its keys saves nothing (the value ahead has its own finding)
    dumped = Segment(
        Section.SYSTEM,
        text='{"plan": "pro"}',
        location=SourceLocation("app.py", 9, 4),
        nondeterminism=Nondeterminism.UNSORTED_JSON,
    )
    assert run("PFX401", layout(text(LONG), dumped, text(LONG)))  # nothing ahead of it: reported
    question = value(3, "question", DynamicKind.USER_INPUT)
    assert run("PFX401", layout(question, text(SHORT), dumped, text(LONG))) == []
    # the conversation history is append-only: it does not end the shared prefix
    history = Segment(Section.MESSAGES, static=False, kind=DynamicKind.HISTORY, label="history")
    assert run("PFX401", layout(text(LONG), history, dumped, text(LONG)))


def test_only_a_value_of_a_known_or_unknown_kind_breaks_the_cache() -> None:
    """``breaking_values`` skips static text, the history and a dynamic piece with no kind at all
    (its kind is not stated, e.g. only an ordering); a value of unknown kind is still one."""
    from prefixlint.rules.impact import breaking_values

    no_kind = Segment(Section.SYSTEM, text="items", static=False, kind=None, timing=Timing.REQUEST)
    history = value(4, "history", DynamicKind.HISTORY)
    unknown = value(5, "note", DynamicKind.UNKNOWN)
    lay = layout(no_kind, history, unknown, text(LONG))
    assert [i for i, _ in breaking_values(lay)] == [2]
    assert codes(layout(no_kind, text(LONG))) == []
