"""``min-impact-tokens``: what makes ``prefixlint check`` exit 1 (issue 10), through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import invoke, needs_analyzer, run_cli

from prefixlint.lint.config import ConfigError, load_settings_file
from prefixlint.model.settings import DEFAULT_MIN_IMPACT_TOKENS, Settings
from prefixlint.model.settings_schema import SettingsModel

GUIDE = (
    "You plan train journeys across Europe. Suggest at most three connections, list the changes, "
    "say which tickets need a reservation, and never invent timetables or prices you do not know. "
)
SOURCE = (
    "import time\n\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
    "GUIDE = {guide!r} * {times}\n\n\n"
    "def ask(question):\n"
    '    system = f"Epoch {{time.time()}}\\n" + GUIDE\n'
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{{"role": "system", '
    '"content": system}}, {{"role": "user", "content": question}}])\n'
)


def write(root: Path, times: int) -> None:
    (root / "app.py").write_text(SOURCE.format(guide=GUIDE, times=times), "utf-8")


def test_the_default_is_the_same_in_both_settings_shapes() -> None:
    assert Settings().min_impact_tokens == DEFAULT_MIN_IMPACT_TOKENS
    assert SettingsModel().min_impact_tokens == DEFAULT_MIN_IMPACT_TOKENS


def test_config_key_is_read_and_validated(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.prefixlint]\nmin-impact-tokens = 400\n")
    assert load_settings_file(config).min_impact_tokens == 400
    config.write_text("[tool.prefixlint]\nmin-impact-tokens = -1\n")
    try:
        load_settings_file(config)
    except ConfigError as exc:
        assert "min-impact-tokens" in exc.message or "min_impact_tokens" in exc.message
    else:
        raise AssertionError("a negative threshold was accepted")


@needs_analyzer
def test_a_short_prompt_is_informational_and_a_threshold_lets_it_pass(tmp_path: Path) -> None:
    write(tmp_path, 4)  # a paragraph, far below the 1,024-token minimum: nothing is at stake
    # the default, 0: every finding fails the run, as ruff's do; its severity says it is informational
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "app.py"], tmp_path)
    (finding,) = json.loads(out)
    assert code == 1 and finding["severity"] == "info" and finding["blocking"] is True
    assert finding["impact"]["can_reach_minimum"] is False and finding["impact"]["at_stake"] == 0
    code, out, _ = invoke(["check", "--no-cache", "--min-impact-tokens", "100", "app.py"], tmp_path)
    assert code == 0
    assert "PFX101" in out and "1 is informational" in out
    (tmp_path / "pyproject.toml").write_text("[tool.prefixlint]\nmin-impact-tokens = 100\n")
    code, out, _ = invoke(["check", "--no-cache", "--output-format", "json", "app.py"], tmp_path)
    assert code == 0 and json.loads(out)[0]["blocking"] is False


@needs_analyzer
def test_a_long_prompt_fails_the_run_unless_the_threshold_is_above_it(tmp_path: Path) -> None:
    write(tmp_path, 40)
    code, out, _ = invoke(["check", "--no-cache", "--min-impact-tokens", "100", "app.py"], tmp_path)
    assert code == 1 and "informational" not in out
    assert invoke(["check", "--no-cache", "--min-impact-tokens", "100000", "app.py"], tmp_path)[0] == 0
    (tmp_path / "pyproject.toml").write_text("[tool.prefixlint]\nmin-impact-tokens = 100000\n")
    assert invoke(["check", "--no-cache", "app.py"], tmp_path)[0] == 0
    # the command line wins over the config, through the fast path of a real process too
    proc = run_cli(["check", "--no-cache", "--min-impact-tokens", "10", "app.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()


def test_a_negative_threshold_on_the_command_line_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    code, _, err = invoke(["check", "--min-impact-tokens", "-5", "ok.py"], tmp_path)
    assert code == 2 and "--min-impact-tokens" in err
