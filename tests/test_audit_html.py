"""The HTML report is one self-contained file: every asset inline, and it renders with the network off
in a real headless browser (Debian's ``chromium``), with each plot drawn.

The browser runs in a new network namespace (``unshare -n``: no interface but a downed loopback)
when that is allowed, and with every host resolving nowhere in any case. Each figure is opened alone
(``report.html#fig-...`` shows one section) and screenshotted; the test looks for the figure's data
colour in the pixels, so an empty axis does not pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.cli_support import invoke

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# the data colour of each figure (matplotlib draws it; the axes are black and grey)
FIGURE_COLOURS = {
    "fig-hit-rate": (0x09, 0x69, 0xDA),
    "fig-positions": (0x82, 0x50, 0xDF),
    "fig-causes": (0xBC, 0x4C, 0x00),
    "fig-capacity": (0x1F, 0x77, 0xB4),
}


def _log(path: Path) -> None:
    rows = []
    body = " apple" * 1500
    for i in range(30):
        stamp = f"Now: 2026-09-20T{10 + i // 10}:{i % 60:02d}:00Z."
        system = f"{stamp}\n{body}" if i % 3 == 0 else f"{body}\n{stamp}"
        rows.append(
            {
                "timestamp": 1_790_000_000 + i * 120,
                "tenant": f"tenant-{i % 3}",
                "request": {
                    "model": "gpt-4o",
                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"q{i}"}],
                },
                "usage": {
                    "prompt_tokens": 1530,
                    "prompt_tokens_details": {"cached_tokens": 1408 if i % 3 else 0},
                },
            }
        )
        rows.append(
            {
                "timestamp": 1_790_000_000 + i * 120 + 1,
                "provider": "vllm",
                "request": {
                    "model": "llama",
                    "messages": [{"role": "user", "content": f"doc {i % 5}" + body[:2000]}],
                },
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


class _Assets(HTMLParser):
    """Every reference a page would load: src/href/xlink:href/srcset/poster/data, <link>, url(...)."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "srcset", "poster", "data", "action", "background"):
                self.refs.append(value or "")
            if name == "style" and value and "url(" in value:
                self.refs.append(value)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("html")
    _log(tmp / "log.jsonl")
    code, _, err = invoke(
        ["audit", "log.jsonl", "--html", "report.html", "--capacity-points", "1k,4k,16k"], tmp
    )
    assert code == 0, err
    return tmp / "report.html"


def test_every_asset_is_inline(report: Path) -> None:
    text = report.read_text("utf-8")
    parser = _Assets()
    parser.feed(text)
    assert "link" not in parser.tags and "iframe" not in parser.tags and "img" not in parser.tags
    assert "script" not in parser.tags  # nothing to run, nothing to fetch
    external = [r for r in parser.refs if not (r.startswith("#") or r.startswith("data:"))]
    assert external == [], external
    for chunk in text.split("url(")[1:]:
        assert chunk.lstrip("'\"").startswith(("data:", "#")), chunk[:40]
    assert "@import" not in text and "@font-face" not in text
    assert text.count("<svg") == len(FIGURE_COLOURS)
    for fid in FIGURE_COLOURS:
        assert f"id={fid}" in text


def _chromium(url: str, shot: Path, size: str = "1000,520") -> None:
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        f"--user-data-dir={shot.parent / 'profile'}",
        f"--window-size={size}",
        f"--screenshot={shot}",
        url,
    ]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], check=False).returncode == 0:
        args = ["unshare", "-n", *args]  # no network at all
    proc = subprocess.run(args, capture_output=True, timeout=120, check=False)
    assert shot.exists(), proc.stderr.decode(errors="replace")[-2000:]


def _near(pixel: tuple[int, ...], colour: tuple[int, int, int], tol: int = 40) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(pixel[:3], colour, strict=True))


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="needs Debian's chromium package")
def _pixels(img: Image.Image) -> list[tuple[int, int, int]]:
    """RGB pixels, row by row (``getdata`` is deprecated from Pillow 12.1, gone in 14)."""
    flat = getattr(img, "get_flattened_data", None) or img.getdata
    return list(flat())


@pytest.mark.parametrize("figure", sorted(FIGURE_COLOURS))
def test_each_plot_is_drawn_offline_in_chromium(report: Path, figure: str) -> None:
    assert CHROMIUM is not None, "CI installs chromium (.ci/run); it is missing"
    shot = report.parent / f"{figure}.png"
    _chromium(f"{report.as_uri()}#{figure}", shot)
    img = Image.open(shot).convert("RGB")
    w, h = img.size
    pixels = _pixels(img)
    ink = sum(1 for p in pixels if sum(p) < 700)
    assert ink > 0.01 * w * h, f"{figure}: nearly blank ({ink} dark pixels)"
    data = sum(1 for p in pixels if _near(p, FIGURE_COLOURS[figure]))
    assert data > 150, f"{figure}: its data colour is missing ({data} pixels)"


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="needs Debian's chromium package")
def test_whole_report_renders_offline(report: Path) -> None:
    assert CHROMIUM is not None
    shot = report.parent / "page.png"
    _chromium(report.as_uri(), shot, size="1100,3000")
    img = Image.open(shot).convert("RGB")
    pixels = _pixels(img)
    assert sum(1 for p in pixels if sum(p) < 700) > 0.01 * len(pixels)
    for fid, colour in FIGURE_COLOURS.items():
        assert sum(1 for p in pixels if _near(p, colour)) > 100, fid
