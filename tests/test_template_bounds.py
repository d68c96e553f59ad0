"""Override templates are bounded (docs/containment.md, "Templates").

A template in `workflow/templates/` is rendered in Jinja2's sandbox (3.1.6 or later), within a
time limit and an output cap; one that passes either is not rendered: the built-in template of
the same name is, and the run's output (the hook's note) says so. Each template here is
committed, as a person's override would be, and rendered by the real failure hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from selfcorrect.errors import InputError
from selfcorrect.io import prompts
from tests.conftest import REPO
from tests.helpers import allow, git
from tests.test_hooks import COORDINATION, WAIT_S, failure, make_project

EDIT_LOCKED = {"file_path": "src/locked.py", "old_string": "x = 1", "new_string": "x = 2"}
EDIT_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"
NESTED = (
    "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) %}"
    "{% endfor %}{% endfor %}{% endfor %}STATUS: mine\n"
)
HUGE = (
    "{% for a in range(100000) %}{% for b in range(100000) %}{{ 'x' * 1000 }}"
    "{% endfor %}{% endfor %}"
)
SECRET = "sk-ant-test-0123456789-not-a-real-key"


def with_template(tmp_path: Path, body: str) -> Path:
    project = make_project(tmp_path, COORDINATION)
    templates = project / "workflow/templates"
    templates.mkdir()
    (templates / "status.md.j2").write_text(body, "utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the person's override")
    return project


def fail_until_blocked(project: Path) -> tuple[float, str]:
    """agent-2's Edit fails twice: WI-2 is blocked, and its recovery file rendered. The
    slowest hook's seconds, and everything the hooks said on stderr."""
    slowest, said = 0.0, ""
    for _ in range(2):
        payload = failure("agent-2", "Edit", EDIT_LOCKED, EDIT_ERROR)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "post-tool-use-failure"],
            cwd=project,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=WAIT_S,
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(project), "ANTHROPIC_API_KEY": SECRET},
        )
        slowest = max(slowest, time.monotonic() - started)
        assert done.returncode == 0
        said += done.stdout + done.stderr
    return slowest, said


@pytest.mark.parametrize(
    ("body", "why"),
    [(NESTED, "ran longer than"), (HUGE, "wrote more than")],
    ids=["nested-loop", "huge-output"],
)
def test_an_unbounded_override_gives_the_built_in_prompt_and_says_so(
    tmp_path: Path, body: str, why: str
) -> None:
    project = with_template(tmp_path, body)
    slowest, said = fail_until_blocked(project)
    assert slowest < 30, slowest  # a render stops at 2 s; the rest is the hook's own work
    text = (project / "workflow/recovery/WI-2.md").read_text("utf-8")
    assert text.startswith("STATUS: blocked"), text[:200]
    assert "Stop working on WI-2" in text  # the built-in template's words
    assert "templates/status.md.j2:1:1: warning: the template " + why in said
    assert "built-in template was rendered instead" in said


STATUS_CONTEXT = {
    "work_item": "WI-1",
    "status": "blocked",
    "reason": "a person must look",
    "escalation": None,
    "microtasks": [],
    "microtasks_file": "workflow/microtasks/WI-1.yaml",
    "guidance": None,
    "workflow_dir": "workflow",
}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (NESTED, "ran longer than 2 s"),
        (HUGE, "wrote more than"),
        ("{{ 'x' * 1000000000 }}", "would make a value past the output cap"),
        ("{{ 'x' ~ 'y' * 100000000 }}", "would make a value past the output cap"),
        ("{{ 10 ** 1000000000 }}", "would make a value past the output cap"),
        ("{{ 'x'|center(1000000000) }}", "past the output cap"),
        ("{{ 'x'.ljust(1000000000) }}", "past the output cap"),
        # One C step each (a format's width, a replacement's growth): the time limit sees them
        # only when they return, a gigabyte and most of a minute later.
        ("{{ '%0999999999d' % 1 }}", "past the output cap"),
        ("{{ '%*d' % (999999999, 1) }}", "past the output cap"),
        ("{{ '%0999999999d'|format(1) }}", "past the output cap"),
        ("{{ '{:>999999999}'.format(1) }}", "past the output cap"),
        ("{{ ('a' * 40000)|replace('a', 'a' * 40000) }}", "past the output cap"),
        ("{{ ('a' * 40000).replace('a', 'a' * 40000) }}", "past the output cap"),
        (
            "{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(60) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
            "",  # in time or in memory, whichever the machine runs out of first
        ),
    ],
    ids=[
        "nested", "huge", "times", "concat", "power", "center", "ljust", "percent",
        "percent-star", "format-filter", "format-method", "replace-filter", "replace-method",
        "doubling",
    ],
)  # fmt: skip
def test_every_bound_gives_the_built_in_template_within_seconds(
    tmp_path: Path, body: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = tmp_path / "templates"
    overrides.mkdir()
    (overrides / "status.md.j2").write_text(body, "utf-8")
    allow(tmp_path)  # a person's override: trusted, and bounded all the same
    started = time.monotonic()
    text = prompts.render("status.md.j2", STATUS_CONTEXT, overrides=overrides)
    assert time.monotonic() - started < 20
    assert text.startswith("STATUS: blocked — a person must look")
    said = capsys.readouterr().err
    assert f"{overrides / 'status.md.j2'}:1:1: warning: the template" in said
    assert why in said and "built-in template was rendered instead" in said
    # Asked again (a watcher, the warm answerer): the same prompt, and said again.
    assert prompts.render("status.md.j2", STATUS_CONTEXT, overrides=overrides) == text
    assert "built-in template was rendered instead" in capsys.readouterr().err


def test_an_untrusted_override_is_never_compiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent's template is not even parsed: its syntax error breaks nothing, and a constant
    Jinja would fold while compiling (`'%0999999999d' % 1`: a gigabyte, most of a minute)
    costs nothing."""
    overrides = tmp_path / "templates"
    overrides.mkdir()
    for body in ("{% for %}", "{{ '%0999999999d' % 1 }}"):
        (overrides / "status.md.j2").write_text(body, "utf-8")
        text = prompts.render("status.md.j2", STATUS_CONTEXT, overrides=overrides)
        assert text.startswith("STATUS: blocked — a person must look")
        assert "this override template is not trusted" in capsys.readouterr().err


TRICKS = [
    "{{ self._TemplateReference__context }}",
    "{{ cycler.__init__.__globals__.os.environ }}",
    "{{ lipsum.__globals__['os'].environ['ANTHROPIC_API_KEY'] }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ '{0.__init__.__globals__[os].environ}'.format(cycler) }}",
    "{{ ('{0.__init__.__globals__[os].environ}'|attr('format'))(cycler) }}",
    "{{ joiner|attr('__init__')|attr('__globals__') }}",
    "{{ namespace.__init__.__globals__ }}",
    "{% for k, v in self.__dict__.items() %}{{ v }}{% endfor %}",
    "{{ self|attr('_TemplateReference__context') }}",
]


@pytest.mark.parametrize("trick", TRICKS)
def test_a_template_reaching_for_the_environment_gets_nothing_secret(
    tmp_path: Path, trick: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    overrides = tmp_path / "templates"
    overrides.mkdir()
    (overrides / "status.md.j2").write_text(trick, "utf-8")
    allow(tmp_path)  # trusted, so the sandbox is what stands between it and the secret
    context = {"status": "blocked", "work_item": "WI-1"}
    try:
        out = prompts.render("status.md.j2", context, overrides=overrides)
    except InputError as exc:
        out = str(exc)
    assert SECRET not in out
    assert "sk-ant" not in out


def test_a_template_reading_the_environment_in_a_hook_leaks_nothing(tmp_path: Path) -> None:
    project = with_template(tmp_path, "STATUS: {{ status }}\n" + "\n".join(TRICKS[:6]))
    _, said = fail_until_blocked(project)
    assert SECRET not in said
    for path in (project / "workflow").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_jinja2_is_at_least_3_1_6() -> None:
    import jinja2

    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert any(
        d.replace(" ", "").startswith("Jinja2>=3.1.6") for d in project["project"]["dependencies"]
    )
    assert tuple(int(p) for p in jinja2.__version__.split(".")[:3]) >= (3, 1, 6)
