"""Probes by shape (docs/rules.md §7): a shell call whose exit status is a probe program's "no".

Every row is a real Bash call and the real error text Claude Code gave for it, copied from
public session logs. Sources (repository, then the file in it):

- goodsch/brain_explore @ 027527979c4b: Claude Code sessions exported to Markdown under
  claude-prompts/ (file named in each row).
- entireio/cli, theogbrand/napoli-matcha, obsessiondb/chkit, ElixirTrials/medgemma-hackathon:
  Entire checkpoints of Claude Code sessions (the raw transcript, branch
  entire/checkpoints/v1, file named in each row).

The rows marked "probe" were counted as failures before probes were recognised by shape.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from selfcorrect.core.model import Failure
from selfcorrect.core.probes import Probes
from selfcorrect.io import documents
from tests.helpers import policy_with
from tests.test_hooks import failure, hook, project  # noqa: F401  (project: a fixture)

PROBES = Probes(policy_with().probe_commands)

BRAIN = "goodsch/brain_explore claude-prompts/"
ENTIRE = "entireio/cli entire/checkpoints/v1 "

REAL_PROBES = [
    # ls of a named path that is not there: GNU ls exits 2 with "cannot access".
    (  # BRAIN agent-6d41c64b-untitled-full.md
        "ls -lh extracted_entities/",
        "Exit code 2\nls: cannot access 'extracted_entities/': No such file or directory",
    ),
    (  # BRAIN e6f53930-e490-429f-b66a-a75c8c7d736e-untitled-full.md
        "ls -la .venv/bin/activate",
        "Exit code 2\nls: cannot access '.venv/bin/activate': No such file or directory",
    ),
    (  # BRAIN agent-eafef800-untitled-full.md
        "ls -la /home/chris/dev/projects/codex/brain_explore/extracted/",
        "Exit code 2\nls: cannot access '/home/chris/dev/projects/codex/brain_explore/extracted/':"
        " No such file or directory",
    ),
    (  # BRAIN 857c88ff-a87c-45b2-8f2a-5325ecc42d72-command-messagecatchup-is-running-...-full.md
        "ls -la /home/chris/dev/projects/codex/brain_explore/ies-backend 2>&1",
        "Exit code 2\nls: cannot access '/home/chris/dev/projects/codex/brain_explore/ies-backend':"
        " No such file or directory",
    ),
    (  # BRAIN 857c88ff-a87c-45b2-8f2a-5325ecc42d72-command-messagecatchup-is-running-...-full.md
        "ls -la /home/chris/dev/projects/codex/brain_explore/ies-backend/tests/conftest.py 2>&1",
        "Exit code 2\nls: cannot access"
        " '/home/chris/dev/projects/codex/brain_explore/ies-backend/tests/conftest.py':"
        " No such file or directory",
    ),
    # macOS ls exits 1 and names the path without "cannot access".
    (  # ENTIRE 13/db96e5c261/0/full.jsonl
        "ls -la /Users/soph/Work/entire/devenv/cli/cmd/entire/cli/commands/",
        "Exit code 1\nls: /Users/soph/Work/entire/devenv/cli/cmd/entire/cli/commands/:"
        " No such file or directory",
    ),
    (  # ENTIRE b8/659b3a4dd4/0/full.jsonl
        "ls -la /Users/alex/workspace/cli/cmd/entire/cli/commands/",
        "Exit code 1\nls: /Users/alex/workspace/cli/cmd/entire/cli/commands/:"
        " No such file or directory",
    ),
    (  # ENTIRE cc/90f6622c5b/1/full.jsonl
        "ls -la /Users/alex/workspace/cli/.worktrees/4/scripts/",
        "Exit code 1\nls: /Users/alex/workspace/cli/.worktrees/4/scripts/:"
        " No such file or directory",
    ),
    (  # obsessiondb/chkit entire/checkpoints/v1 44/16197b2108/0/full.jsonl
        "ls /Users/marc/conductor/workspaces/chx/tallahassee/node_modules/@chkit/ 2>&1",
        "Exit code 1\nls: /Users/marc/conductor/workspaces/chx/tallahassee/node_modules/@chkit/:"
        " No such file or directory",
    ),
    # stderr thrown away: the exit code is the whole answer.
    (  # theogbrand/napoli-matcha entire/checkpoints/v1 05/a737f62fb9/4/full.jsonl
        "ls -la ~/.claude/skills/execPlan/ 2>/dev/null",
        "Exit code 1",
    ),
    # after a `cd`: one named path is there (ls prints it), the other is not.
    (  # ElixirTrials/medgemma-hackathon entire/checkpoints/v1 0a/707194e390/1/full.jsonl
        "cd /Users/noahdolevelixir/Code/medgemma-hackathon && ls package.json"
        " apps/hitl-ui/package.json 2>&1",
        "Exit code 1\nls: package.json: No such file or directory\napps/hitl-ui/package.json\n\n"
        "ls: package.json: No such file or directory\napps/hitl-ui/package.json",
    ),
    # grep as the last stage of a pipeline, after a `cd`.
    (  # ENTIRE a7/e6172c3842/0/full.jsonl
        'cd /tmp/entire.io && git show 765563b6 --format="%B" --no-patch'
        ' | /usr/bin/grep "Entire-Checkpoint"',
        "Exit code 1",
    ),
]

REAL_FAILURES = [
    # grep's own error: exit 2.
    (  # ENTIRE 89/7eb280e769/12/full.jsonl
        'grep -n "paths\\." session/state.go',
        "Exit code 2\ngrep: session/state.go: No such file or directory",
    ),
    (  # ENTIRE 5a/fc89b34b6c/0/full.jsonl
        "go test ./cmd/entire/cli/ -v 2>&1 | grep -E '--- FAIL'",
        "Exit code 2\ngrep: unrecognized option `--- FAIL'\n"
        "usage: grep [REDACTED] [-A num] [-B num] [-C[num]]\n\t"
        "[-e pattern] [-f file] [--binary-files=value] [--color=when]\n\t"
        "[--context[=num]] [--directories=action] [--label] [--line-buffered]\n\t"
        "[--null] [pattern] [file ...]",
    ),
    # zsh refused the glob: ls never ran.
    (  # BRAIN agent-a026a6ff-untitled-full.md
        "ls -lh /home/chris/dev/projects/codex/brain_explore/output/*.json",
        "Exit code 1\n(eval):1: no matches found:"
        " /home/chris/dev/projects/codex/brain_explore/output/*.json",
    ),
    (  # ENTIRE 1a/8a83a35a9b/0/full.jsonl
        "ls ~/Library/LaunchAgents/*git* 2>&1",
        "Exit code 1\n(eval):1: no matches found: /Users/alex/Library/LaunchAgents/*git*",
    ),
    # the first stage of the && is not navigation (and the glob failed anyway).
    (  # ENTIRE 13/db96e5c261/0/full.jsonl
        "rm -f /tmp/hook-from-settings.txt /tmp/hook-from-settings-local.txt"
        " && ls -la /tmp/hook-from-settings*.txt 2>&1",
        "Exit code 1\n(eval):1: no matches found: /tmp/hook-from-settings*.txt",
    ),
    # a `;` list: the status is the last command's, the others may have failed.
    (  # ENTIRE 1a/8a83a35a9b/0/full.jsonl
        'ls /Users/alex/workspace/cli/.git/objects/info/packs 2>&1; echo "---";'
        " cat /Users/alex/workspace/cli/.git/objects/info/commit-graph 2>/dev/null | wc -c;"
        ' echo "---"; ls -la /Users/alex/workspace/cli/.git/gc.log 2>&1',
        "Exit code 1\n/Users/alex/workspace/cli/.git/objects/info/packs\n---\n  119932\n---\n"
        "ls: /Users/alex/workspace/cli/.git/gc.log: No such file or directory",
    ),
    (  # obsessiondb/chkit entire/checkpoints/v1 44/16197b2108/0/full.jsonl
        "ls /Users/marc/conductor/workspaces/chx/tallahassee/packages/core/src/index.ts 2>&1;"
        " ls /Users/marc/conductor/workspaces/chx/tallahassee/packages/core/dist/ 2>&1",
        "Exit code 1\n/Users/marc/conductor/workspaces/chx/tallahassee/packages/core/src/index.ts\n"
        "ls: /Users/marc/conductor/workspaces/chx/tallahassee/packages/core/dist/:"
        " No such file or directory",
    ),
    # the pipeline's last stage is not a probe, and the cd failed.
    (  # obsessiondb/chkit entire/checkpoints/v1 5c/f1a2ae0760/0/full.jsonl
        "cd packages/cli && npx biome lint src 2>&1 | tail -10",
        "Exit code 1\n(eval):cd:1: no such file or directory: packages/cli\n\n"
        "(eval):cd:1: no such file or directory: packages/cli",
    ),
    # not probe programs, whatever they print.
    (  # ENTIRE ed/51f6581660/0/full.jsonl
        "gh pr diff 343 -- cmd/entire/cli/strategy/manual_commit_hooks.go 2>/dev/null",
        "Exit code 1",
    ),
    (  # ENTIRE 44/785715c3f5/2/full.jsonl
        "cat ~/.claude/projects/-Users-alex-workspace-cli/current_session.txt 2>/dev/null",
        "Exit code 1",
    ),
    (  # BRAIN agent-22c9736a-untitled-full.md
        "head -80 /home/chris/dev/projects/claude/synapse/src/cortex/neural/decay.py",
        "Exit code 1\nhead: cannot open '/home/chris/dev/projects/claude/synapse/src/cortex/neural/"
        "decay.py' for reading: No such file or directory",
    ),
]


@pytest.mark.parametrize(("command", "error"), REAL_PROBES)
def test_a_real_probe_call_is_an_answer(command: str, error: str) -> None:
    assert PROBES.is_probe("Bash", command, error)


@pytest.mark.parametrize(("command", "error"), REAL_FAILURES)
def test_a_real_failure_stays_a_failure(command: str, error: str) -> None:
    assert not PROBES.is_probe("Bash", command, error)


@pytest.mark.parametrize(
    ("command", "error", "probe"),
    [
        # Shapes the rule names, with the texts these programs print.
        ("which foo 2>/dev/null", "Exit code 1", True),
        ("git check-ignore -q build/out.o", "Exit code 1", True),
        ("crontab -l", "Exit code 1\nno crontab for alice", True),
        ("crontab -l 2>/dev/null | grep -q backup.sh", "Exit code 1", True),
        ("command -v pnpm >/dev/null 2>&1", "Exit code 1", True),
        ("cd src && grep -q refreshToken auth.py", "Exit code 1", True),
        ("test -f a.txt && grep -q x a.txt", "Exit code 1", True),
        ("ls a.txt 2>/dev/null || ls b.txt 2>/dev/null", "Exit code 2", True),
        # Not probes.
        ("make && grep -q ok out", "Exit code 1", False),  # make may have failed
        ("cd src 2>/dev/null && grep -q x f", "Exit code 1", False),  # cd may have failed silently
        ("make || grep -q x f", "Exit code 1", False),  # make failed for sure
        ("grep -q x f | wc -l", "Exit code 1", False),  # the last stage is wc
        ("grep -q x < input.txt", "Exit code 1", False),  # the input may be missing
        ("grep -q x f > out.txt", "Exit code 1", False),  # the output may not be writable
        ("grep -q $(cat pattern) f", "Exit code 1", False),
        ("grep -q `cat pattern` f", "Exit code 1", False),
        ("grep -q x f &", "Exit code 1", False),
        ("(grep -q x f)", "Exit code 1", False),
        ("grep -q x f\ngrep -q y f", "Exit code 1", False),
        ("git check-ignore -q x", "Exit code 128\nfatal: not a git repository", False),
        ("ls x", "Exit code 2", False),  # stderr not thrown away, yet nothing said
        ("ls y", "Exit code 2\nls: cannot access 'x': No such file or directory", False),
        # GNU ls's message for a directory it may not read (coreutils' wording).
        ("ls /root", "Exit code 2\nls: cannot open directory '/root': Permission denied", False),
        ("ls -z", "Exit code 2\nls: invalid option -- 'z'", False),
        ("grep -q x f", "Exit code 2", False),
    ],
)
def test_probe_shapes(command: str, error: str, probe: bool) -> None:
    assert PROBES.is_probe("Bash", command, error) is probe


def test_hostile_text_is_read_in_linear_time() -> None:
    command = "cd a && " * 20_000 + "grep -q x f" + " | cat" * 20_000 + " 2>/dev/null" * 20_000
    assert not PROBES.is_probe("Bash", command, "Exit code 1" + "\nls: x" * 20_000)
    assert not PROBES.is_probe("Bash", "'" * 100_001, "Exit code 1")


def test_the_failure_hook_logs_real_probe_shapes_as_probes(project: Path) -> None:  # noqa: F811
    calls = [*REAL_PROBES[-3:], REAL_FAILURES[0]]
    for command, error in calls:
        hook(
            project,
            "post-tool-use-failure",
            failure("agent-9", "Bash", {"command": command}, error),
        )

    log = documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
    assert [raw.data.get("outcome") for raw in log] == ["probe", "probe", "probe", None]


def test_the_reader_applies_the_rule_to_another_writers_entry() -> None:
    command, error = REAL_PROBES[-1]
    logged = Failure(
        id="F-1",
        index=0,
        tool="Bash",
        error=error,
        timestamp="2026-02-02T10:00:00Z",
        extra={"command": command},
    )
    assert not PROBES.counted(logged)
    failing = Failure(
        id="F-2",
        index=1,
        tool="Bash",
        error="Exit code 1",
        timestamp="2026-02-02T10:00:01Z",
        extra={"command": "make && grep -q ok out"},
    )
    assert PROBES.counted(failing)
