"""Every file selfcorrect writes names its schema as `init` does: the copy in the workflow
folder's .selfcorrect/schemas/, relative to the file, so editors resolve it offline; never an
`$id` URL, which resolves nowhere (docs/ci.md, "Editor schemas")."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import example

MODELINE = "# yaml-language-server: $schema="


def schema_of(path: Path) -> Path:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(MODELINE), first
    return path.parent / first.removeprefix(MODELINE)


def test_validate_force_run_and_validate_output_write_relative_modelines(
    tmp_path: Path, run_line
) -> None:
    folder = example(tmp_path)
    assert run_line(["init", "-q", folder]).exit_code == 0  # the schema copies
    assert run_line(["validate", folder, "--force"]).exit_code in (0, 1)
    assert run_line(["run", folder]).exit_code == 1  # BLOCKED: escalations.yaml is written
    elsewhere = tmp_path / "reports" / "deep" / "report.yaml"
    elsewhere.parent.mkdir(parents=True)
    assert run_line(["validate", folder, "--output", elsewhere]).exit_code in (0, 1)
    for path in (
        folder / "validation_report.yaml",
        folder / "escalations.yaml",
        folder / "selfcorrect.yaml",
        elsewhere,
    ):
        assert "selfcorrect.dev" not in path.read_text(encoding="utf-8"), path
        schema = schema_of(path)
        assert schema.is_file(), (path, schema)  # it resolves, offline
        assert schema.resolve().parent == (folder / ".selfcorrect" / "schemas").resolve()
