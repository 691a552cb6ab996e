"""The tables and files every GPU evidence script prints and writes: one ``Report`` per run.

``Report.table`` prints a table as its section ends and keeps it for the markdown file; ``figures`` holds
what goes into the JSON file; ``write`` puts both under ``$OUT`` with the command that produced them.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_started = time.monotonic()


def elapsed_s() -> float:
    """Seconds since this run started (since this module was imported)."""
    return time.monotonic() - _started


def say(*parts: object) -> None:
    print(*parts, flush=True)


@dataclass
class Report:
    """What the run found: figures for JSON, tables for the terminal and markdown, and what went wrong."""

    name: str = "gpu_evidence"  # the files written: NAME.json and NAME.md
    title: str = "GPU evidence"  # the markdown file's heading
    figures: dict[str, Any] = field(default_factory=dict)
    markdown: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # sections that raised
    mismatches: list[str] = field(default_factory=list)  # verdicts other than expected

    def table(self, title: str, headers: list[str], rows: list[list[Any]]) -> None:
        cells = [[cell(value) for value in row] for row in rows]
        widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
        say(f"\n{title}")
        say("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        for row in cells:
            say("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        self.markdown += [
            f"### {title}",
            "",
            "| " + " | ".join(headers) + " |",
            "|" + "---|" * len(headers),
            *("| " + " | ".join(row) + " |" for row in cells),
            "",
        ]

    def note(self, text: str) -> None:
        say(text)
        self.markdown += [text, ""]

    def run_section(self, name: str, section: Callable[[], None]) -> None:
        say(f"\n=== {name} ({elapsed_s():.0f} s into the run)")
        try:
            section()
        except Exception:
            self.broken.append(name)
            self.note(f"Section {name} broke:\n```\n{traceback.format_exc()}```")

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        summary = {"broken_sections": self.broken, "mismatches": self.mismatches, "elapsed_s": elapsed_s()}
        (folder / f"{self.name}.json").write_text(json.dumps({**self.figures, "summary": summary}, indent=1))
        command = " ".join(["python3", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]])
        (folder / f"{self.name}.md").write_text(
            "\n".join([f"# {self.title}", "", f"Command: `{command}`", "", *self.markdown])
        )
        say(f"wrote {folder / f'{self.name}.json'} and {folder / f'{self.name}.md'}")


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def listed(items: list[str]) -> str:
    return f" ({', '.join(items)})" if items else ""


def percent(x: float | None) -> str:
    return "-" if x is None else f"{x:.2%}"


def shape_label(spec: dict[str, Any]) -> str:
    """A benchmark shape as a table cell: its arguments without the seed."""
    return " ".join(f"{k}={v}" for k, v in spec.items() if k != "seed")
