"""Tables fit the terminal in display cells (cli/cells.py): a visible ellipsis that keeps the
file name, and CJK paths that stay aligned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfcorrect.cli.cells import fit_end, fit_middle, ljust, width

LONG = (
    "migrations/2026/very/deeply/nested/folder/of/migrations/"
    "20260805_add_refresh_tokens/migration.sql"
)
CJK = "設定/認証/とても長いフォルダの名前/さらに長い名前/認証.yaml"


def test_width_counts_cells_not_characters() -> None:
    assert width("abc") == 3
    assert width("認証") == 4
    assert width("e\u0301") == 1  # a combining accent takes no cell
    assert width(ljust("認証", 6)) == 6


@pytest.mark.parametrize("text", [LONG, CJK, "a" * 200, "x/" + "名" * 40])
@pytest.mark.parametrize("cells", [5, 12, 20, 33, 48])
def test_fit_middle_stays_within_its_cells_and_shows_the_cut(text: str, cells: int) -> None:
    shown = fit_middle(text, cells)
    assert width(shown) <= cells
    assert "…" in shown
    assert shown[0] == text[0]


def test_fit_middle_keeps_the_file_name() -> None:
    assert fit_middle(LONG, 40).endswith("…/migration.sql")
    assert fit_middle(CJK, 24).endswith("…/認証.yaml")
    assert fit_middle("short.txt", 40) == "short.txt"
    assert fit_end("strategy targeted_fix", 10) == "strategy …"


def failure_log(folder: Path, subjects: list[str]) -> None:
    lines = ["failures:"]
    for n, path in enumerate(subjects):
        for k in range(3):
            lines += [
                f"  - id: TF-{n}-{k}",
                "    tool: Edit",
                '    error: "the edit did not apply"',
                f'    timestamp: "2026-11-29T10:0{k}:0{n}Z"',
                f'    file_path: "{path}"',
            ]
    (folder / "tool_failures.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_subjects_table_fits_the_terminal_and_keeps_names_readable(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    failure_log(folder, [LONG, CJK, "src/a.py"])
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", str(folder), "--shadow", "-v"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode in (1, 3), done.stderr
    lines = done.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Subjects")))
    rows = lines[start + 1 : start + 5]
    assert rows[0].split()[0] == "SUBJECT"
    assert all(width(row) <= 80 for row in rows), rows
    assert any(row.strip().startswith("migrations") and "…/migration.sql " in row for row in rows)
    assert any("…/認証.yaml " in row for row in rows)
    # The TYPE column starts at the same cell on every row, CJK or not.
    starts = {
        width(row[: row.index(word)])
        for row, word in zip(rows, ["TYPE", "unknown", "unknown", "unknown"], strict=True)
    }
    assert len(starts) == 1, rows


def test_piped_output_is_never_cut(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    failure_log(folder, [LONG])
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", str(folder), "--shadow", "-v"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert f"  {LONG}  " in done.stdout
