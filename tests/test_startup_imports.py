"""What `check` and `--version` import (rules §18: heavy imports only where they are used).

Start-up time is the benchmark's to measure (bench/); these tests only hold the import graph, a
fact that does not depend on the machine: a fresh interpreter runs the command as the console
script does, then lists the modules it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from selfcorrect.cli.main import main

# Modules `check` on a small valid folder has no use for: validation messages (jsonschema,
# referencing), rendering (jinja2), writing human-edited files (ruamel), git and file watching,
# OpenSSL's hashes, the typed policy model and the did-you-mean matcher (an unedited policy is
# the defaults), and the writer.
NOT_FOR_CHECK = (
    "jsonschema",
    "referencing",
    "jinja2",
    "ruamel",
    "git",
    "watchdog",
    "hashlib",
    "_hashlib",
    "difflib",
    "selfcorrect.core.policy",
    "selfcorrect.io.atomic",
    "selfcorrect.io.journal",
)

_RUN = """
import sys
sys.argv = ["selfcorrect", *sys.argv[1:]]
from selfcorrect.entry import main
try:
    main()
except SystemExit as exc:
    code = exc.code
modules = sorted(sys.modules)  # before this script's own json import
import json
print(json.dumps({"code": code, "modules": modules}))
"""


def _loaded(*args: str, cwd: Path) -> tuple[int, set[str]]:
    """Exit code and every module a fresh `selfcorrect ARGS` loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *args], capture_output=True, text=True, cwd=cwd, check=False
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], set(result["modules"])


def _tops(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The `names` loaded, each a module or the root of a package of them."""
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.fixture
def small_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "workflow"
    assert main(["init", "-q", str(folder)]) == 0
    return folder


def test_check_on_a_small_folder_imports_nothing_heavy(small_folder: Path) -> None:
    code, modules = _loaded("check", str(small_folder), cwd=small_folder.parent)
    assert code == 0
    assert "yaml" in modules  # it does read every file: the test runs the real check
    assert _tops(modules, NOT_FOR_CHECK) == []


def test_check_with_an_edited_policy_still_imports_no_validator(small_folder: Path) -> None:
    """An edited policy is loaded and built in full; still no jsonschema when it is valid."""
    policy = small_folder / "selfcorrect.yaml"
    policy.write_text("caps:\n  global_cycles: 5\n", encoding="utf-8")
    code, modules = _loaded("check", str(small_folder), cwd=small_folder.parent)
    assert code == 0
    assert "selfcorrect.core.policy" in modules
    assert _tops(modules, ("jsonschema", "referencing", "jinja2", "ruamel", "git")) == []


def test_version_imports_no_yaml_library(tmp_path: Path) -> None:
    code, modules = _loaded("--version", cwd=tmp_path)
    assert code == 0
    assert _tops(modules, ("yaml", "ruamel", "json", "selfcorrect.commands", *NOT_FOR_CHECK)) == []


def test_status_after_a_run_renders_nothing_again(tmp_path: Path) -> None:
    """`status` (and `report`, a rerun) reads back the prompts the last run wrote, unchanged
    since, rather than rendering them again: the template engine is not even loaded, and what
    it shows is what the run wrote (docs/hooks.md, the output memo)."""
    from tests.conftest import copy_example

    folder = copy_example(tmp_path / "workflow")  # as shipped, whatever a run left in the clone
    code, modules = _loaded("run", "-q", "workflow", cwd=tmp_path)
    assert code == 1 and "jinja2" in modules  # the run rendered the prompts
    prompt = (folder / "recovery" / "WI-3.md").read_text(encoding="utf-8")
    code, modules = _loaded("status", "workflow", cwd=tmp_path)
    assert code == 1
    assert _tops(modules, ("jinja2",)) == []
    assert (folder / "recovery" / "WI-3.md").read_text(encoding="utf-8") == prompt
