"""Append dated, machine-stamped entries to a section of ``bench/RESULTS.md``.

Each bench script owns one ``## ...`` section. A new entry goes at the end of its section (the
section is created at the end of the file when missing); every other section is left untouched.
"""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = "# Benchmark results\n\nMeasured numbers, newest entry last in each section.\n"


def machine() -> str:
    """CPU model name and core count (``lscpu``), plus the GPU name when torch sees one."""
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    desc = f"{model}, {cores} cores available"
    try:
        import torch

        if torch.cuda.is_available():
            desc += f", GPU {torch.cuda.get_device_name(0)}"
        desc += f", torch {torch.__version__}"
    except ImportError:
        pass
    return desc


def stamp() -> str:
    """UTC date and time of an entry."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def record(section: str, entry: str, path: Path = RESULTS_MD) -> Path:
    """Append ``entry`` (markdown) at the end of ``## section`` in ``path``."""
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    heading = f"## {section}"
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    except StopIteration:
        text = text.rstrip("\n") + f"\n\n{heading}\n\n{entry.strip()}\n"
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        body = lines[:end]
        while body and not body[-1].strip():
            body.pop()
        rest = lines[end:]
        text = "\n".join([*body, "", entry.strip(), "", *rest]).rstrip("\n") + "\n"
    path.write_text(text, encoding="utf-8")
    return path
