"""The agent-host commands: `selfcorrect hook HOST EVENT [DIR]` and `selfcorrect install HOST`
(docs/hooks.md). A host runs `hook` on every tool call through the front door
(`selfcorrect/entry.py`), which skips click; this is the command `--help` shows and that runs
when options are given.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import click.shell_completion

from selfcorrect.cli.options import common_options, make_common
from selfcorrect.errors import ExitCode
from selfcorrect.hooks.codex import EVENTS as CODEX_EVENTS
from selfcorrect.hooks.copilot import EVENTS as COPILOT_EVENTS
from selfcorrect.hooks.dispatch import EVENTS, HOSTS
from selfcorrect.hooks.gemini import EVENTS as GEMINI_EVENTS

# Each host's hook names, and all of them, each once: what `hook HOST EVENT` accepts.
HOST_EVENTS = {"gemini": GEMINI_EVENTS, "copilot": COPILOT_EVENTS, "codex": CODEX_EVENTS}
ALL_EVENTS = list(dict.fromkeys([*EVENTS, *GEMINI_EVENTS, *COPILOT_EVENTS, *CODEX_EVENTS]))

F = TypeVar("F", bound=Callable[..., Any])


def _host_events(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion of EVENT: the events of the HOST given before it, each once."""
    events = HOST_EVENTS.get(str(ctx.params.get("host")), EVENTS)
    return [click.shell_completion.CompletionItem(e) for e in events if e.startswith(incomplete)]


@click.command(name="hook")
@click.argument("host", type=click.Choice(HOSTS))
@click.argument("event", type=click.Choice(ALL_EVENTS), shell_complete=_host_events)
@click.argument("folder", metavar="[DIR]", required=False)
def hook_command(host: str, event: str, folder: str | None) -> int:
    """Answer one agent-host hook event: the JSON event on stdin, the answer on stdout.

    \b
    post-tool-use-failure  append the failure to DIR/tool_failures.yaml, decide
                           (no fixer, no validator), and tell the agent when it
                           is stuck (the advisory and the prompt to read) or
                           blocked (stop working on it); a probe, an interrupted
                           call and the agent running its verification (the
                           validator, `selfcorrect validate`, a check command)
                           are logged and count nothing
    post-tool-use          log a success, only for a call the gate's state
                           awaits (a repeat, an edit after one, a task on the
                           recovery ladder); otherwise read one file, write none
    post-tool-batch        log the calls the host rejected before they ran
                           (<tool_use_error>), which no other hook sees
    pre-tool-use           the gate: deny an edit of the person's files or of a
                           file whose work item is blocked, and a call that has
                           failed gate.repeat_threshold times for that agent
                           unchanged; allow everything else silently
    pre-compact            write a waypoint (repeated compaction is a signal)
    subagent-start         bind the subagent to the task the lead's Agent call
                           named (else to the one task assigned to its type)
    subagent-stop, stop    keep an agent working while its micro-tasks or an open
                           directive are out, once per directive; tell the lead
                           which tasks wait for an agent that never started; the
                           stop that lets it go ends the turn of the tasks that
                           agent owns (the lead: its own tasks only)
    session-start          start the folder's warm answerer (or join it): one
                           process that answers the deciding hooks above (not
                           the gate or the success hook) with selfcorrect
                           loaded, the same answers in about 40 ms; it stops
                           with the host, at session-end, or after 30 min idle
                           (DIR/.selfcorrect/warm/last.json says why)
    session-end            leave it; the last session to leave stops it
    \b
    Gemini CLI (`hook gemini EVENT`): before-tool is the gate, after-tool the
    failure hook (an error in tool_response) or the success hook, after-agent
    the stop hook, pre-compress the waypoint, session-start and session-end
    as above.
    \b
    Copilot CLI (`hook copilot EVENT`): pre-tool-use is the gate,
    post-tool-use-failure the failure hook (its guidance on stderr, exit 2),
    post-tool-use the success hook, or the failure hook for a command that
    ended with a non-zero exit code; agent-stop and subagent-stop the stop
    hooks; pre-compact, session-start and session-end as above.
    \b
    Codex CLI (`hook codex EVENT`): pre-tool-use is the gate; post-tool-use
    reads the call's outcome in the session log (a failure is the failure
    hook, a success the success hook); stop and subagent-stop also log every
    failed call of the session log not logged yet; pre-compact and
    session-start as above.
    \b
    DIR defaults to workflow/ under $CLAUDE_PROJECT_DIR. A hook never breaks the
    agent: bad stdin, a missing folder or an internal error exits 0 with one line
    on stderr. `selfcorrect install claude-code` adds these to Claude Code's
    settings; docs/hooks.md describes each answer.
    """
    from selfcorrect.hooks.dispatch import run_hook

    return run_hook([host, event, *([folder] if folder else [])])


@click.group(name="install")
@click.pass_context
def install_group(ctx: click.Context) -> None:
    """Install selfcorrect's agent hooks into an agent host's settings.

    \b
    Hosts:
      claude-code  Claude Code: .claude/settings.json when selfcorrect is inside
                   the project (its .venv), else .claude/settings.local.json
                   (or ~/.claude/ with --user)
      gemini       Gemini CLI: .gemini/settings.json (or ~/.gemini/ with --user)
      copilot      Copilot CLI: .github/hooks/selfcorrect.json (or ~/.copilot/hooks/)
      codex        Codex CLI: .codex/hooks.json (or ~/.codex/ with --user)
    """
    # `selfcorrect -q install claude-code`: the global options reach the host's command too.
    if ctx.default_map:
        ctx.default_map = {name: dict(ctx.default_map) for name in install_group.commands}


def _install_options(
    settings: str, variable: str | None, file: str = "settings.json", user: str | None = None
) -> Callable[[F], F]:
    """The options every host's install takes; `settings` is its settings folder, `file` the
    file in it, `user` the user's file when it is not `~/{settings}/{file}`, `variable` the
    project's root as the host names it to hooks (None: the hook finds it from the event)."""
    mine = f"{settings}/{file}"
    theirs = user or f"~/{mine}"
    where = f'"${variable}"/DIR' if variable else "DIR"
    default = f"${variable}" if variable else "the project"

    def decorate(command: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--user",
                    is_flag=True,
                    help=f"Install in {theirs} (every project of this user) instead of the "
                    "project's settings.",
                ),
                click.option(
                    "--project",
                    type=click.Path(path_type=Path, file_okay=False, exists=True),
                    default=Path("."),
                    show_default=True,
                    help=f"The project's root folder, whose {settings}/ settings are changed.",
                ),
                click.option(
                    "--folder",
                    metavar="DIR",
                    help="The workflow folder, relative to the project root; each hook gets "
                    f"{where} as its last argument. It must exist (`selfcorrect init DIR`). "
                    f"Default: none (the hooks use workflow/ under {default}).",
                ),
                click.option(
                    "--dry-run",
                    is_flag=True,
                    help="Print the change as a unified diff; write nothing.",
                ),
                click.option(
                    "--uninstall",
                    is_flag=True,
                    help="Remove selfcorrect's hooks (whatever their --folder) from every "
                    "settings file of the project (or the user), and nothing else.",
                ),
                common_options,
            ]
        ):
            command = option(command)
        return command

    return decorate


@install_group.command(name="claude-code", short_help="Claude Code's .claude/ settings.")
@_install_options(".claude", "CLAUDE_PROJECT_DIR")
@click.option(
    "--shared",
    is_flag=True,
    help="Write .claude/settings.json (committed) even when the command is this machine's "
    "path; install says so.",
)
def install_claude_code(**options: Any) -> int:
    """Add selfcorrect's hooks to Claude Code's settings (or remove them).

    \b
    One matcher group per event, each running `SELFCORRECT hook claude-code EVENT`
    with a timeout (the gate and the session hooks 10 s, the others 60 s):
      PostToolUseFailure  post-tool-use-failure  (matcher "*")
      PostToolUse         post-tool-use          (matcher "*")
      PostToolBatch       post-tool-batch
      PreToolUse          pre-tool-use           (matcher "*")
      PreCompact          pre-compact
      SubagentStart       subagent-start
      SubagentStop        subagent-stop
      Stop                stop
      SessionStart        session-start
      SessionEnd          session-end
    \b
    A command that works in every clone of the project: when the selfcorrect
    running install is inside the project (e.g. its .venv), SELFCORRECT is
    "$CLAUDE_PROJECT_DIR"/.venv/bin/selfcorrect, written to .claude/settings.json;
    else it is its absolute path (Claude Code's PATH may lack it), written to
    the personal .claude/settings.local.json, or with --shared to settings.json
    (install says so). Hooks of selfcorrect in the project's other file move.
    The workflow folder (workflow/, or --folder DIR) must exist: without it
    install refuses, naming `selfcorrect init`.

    A hook is selfcorrect's when its command runs `selfcorrect hook claude-code`
    by any path. Other settings and hooks are kept byte for byte, formatting
    included: the file is edited in place, never rewritten from scratch, and
    written atomically with its mode kept. A missing file (and .claude/) is
    created. Installing twice writes nothing the second time; --uninstall
    removes exactly what install added, from both files, and the file and the
    .claude/ folder when install had created them. When `claude --version`
    answers, install notes the version the hooks were tested with. When
    cAgents' own failure logger runs for the project (in its settings, the
    local or the user's, or in a plugin they enable), install says where:
    selfcorrect's failure hook then decides from cAgents' entries and logs none
    (companion mode), so each failure is counted once. The repository is also
    a Claude Code plugin with the same hooks (docs/hooks.md).

    \b
    Exit codes: 0 done (or nothing to do), 2 no workflow folder, invalid
    settings (file:line:col), a symlinked settings file or .claude/, or a bad
    --folder: nothing written.
    """
    return _install_host("claude-code", **options)


@install_group.command(name="gemini", short_help="Gemini CLI's .gemini/settings.json.")
@_install_options(".gemini", "GEMINI_PROJECT_DIR")
def install_gemini(**options: Any) -> int:
    """Add selfcorrect's hooks to Gemini CLI's settings (or remove them).

    \b
    One group per event, each running `SELFCORRECT hook gemini EVENT` with a
    timeout in milliseconds (the gate and the session hooks 10,000, the others
    60,000):
      BeforeTool    before-tool    (matcher ".*")
      AfterTool     after-tool     (matcher ".*")
      AfterAgent    after-agent
      PreCompress   pre-compress
      SessionStart  session-start
      SessionEnd    session-end
    Everything else is as for claude-code, but Gemini CLI has no personal
    settings file: SELFCORRECT is "$GEMINI_PROJECT_DIR"/… when selfcorrect is
    inside the project, else its absolute path in .gemini/settings.json, and
    install says so. The folder's last argument, with --folder, is
    "$GEMINI_PROJECT_DIR"/DIR.

    \b
    Exit codes: 0 done (or nothing to do), 2 no workflow folder, invalid
    settings (file:line:col), a symlinked settings file or .gemini/, or a bad
    --folder: nothing written.
    """
    return _install_host("gemini", shared=False, **options)


@install_group.command(name="codex", short_help="Codex CLI's .codex/hooks.json.")
@_install_options(".codex", None, "hooks.json")
def install_codex(**options: Any) -> int:
    """Add selfcorrect's hooks to Codex CLI's hooks.json (or remove them).

    \b
    One matcher group per event, each running `SELFCORRECT hook codex EVENT`
    with a timeout in seconds (the gate and session-start 10, the others 60):
      PostToolUse   post-tool-use   (matcher "*")
      PreToolUse    pre-tool-use    (matcher "*")
      PreCompact    pre-compact
      SubagentStop  subagent-stop
      Stop          stop
      SessionStart  session-start
    Everything else is as for claude-code: the absolute command, other hooks
    kept byte for byte, --uninstall removing exactly what install added. Codex
    sets no project variable for hooks: with --folder, DIR is relative to the
    project, which the hook finds from the event's working folder. Codex runs
    a project's .codex/hooks.json only when the project is trusted, and asks
    you to review new hooks before they run (its /hooks).

    \b
    Exit codes: 0 done (or nothing to do), 2 invalid hooks.json (file:line:col),
    a symlinked file or .codex/, or a bad --folder: nothing written.
    """
    return _install_host("codex", shared=False, **options)


@install_group.command(name="copilot", short_help="Copilot CLI's .github/hooks/selfcorrect.json.")
@_install_options(
    ".github/hooks", None, "selfcorrect.json", user="~/.copilot/hooks/selfcorrect.json"
)
def install_copilot(**options: Any) -> int:
    """Add selfcorrect's hook file for Copilot CLI (or remove it).

    \b
    Copilot CLI loads every .github/hooks/*.json of the repository; install
    writes selfcorrect.json there, a file wholly selfcorrect's, with one hook
    per event, each running `SELFCORRECT hook copilot EVENT` (timeoutSec: the
    gate and the session hooks 10, the others 60):
      postToolUseFailure  post-tool-use-failure
      postToolUse         post-tool-use
      preToolUse          pre-tool-use
      preCompact          pre-compact
      subagentStop        subagent-stop
      agentStop           agent-stop
      sessionStart        session-start
      sessionEnd          session-end
    Installing again for another --folder rewrites it; --uninstall deletes it.
    A selfcorrect.json there that install did not write is left alone (exit 2).
    Copilot runs a repository's hooks once you trust the folder (in prompt
    mode, -p, a trusted folder or GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true).

    \b
    Exit codes: 0 done (or nothing to do), 2 a selfcorrect.json that is not
    selfcorrect's, a symlinked file or folder, or a bad --folder: nothing written.
    """
    return _install_host("copilot", shared=False, **options)


def _install_host(
    host: str,
    *,
    user: bool,
    project: Path,
    folder: str | None,
    dry_run: bool,
    uninstall: bool,
    shared: bool,
    policy: Path | None,
    color: str,
    verbose: int,
    quiet: bool,
) -> int:
    """docs/hooks.md, "Where install writes": the file whose command works in every clone."""
    from selfcorrect.cli.install_report import show_installs
    from selfcorrect.commands.install import (
        companion_notes,
        hook_commands,
        host_notes,
        install,
        local_notes,
        machine_path_notes,
        require_workflow_folder,
        self_command,
        settings_path,
        settings_paths,
    )

    common = make_common(policy, color, verbose, quiet)

    if user and project != Path("."):
        raise click.UsageError("give --user or --project, not both")
    if user and shared:
        raise click.UsageError("give --user or --shared, not both")
    program, travels = self_command(None if user else project, host)
    if host == "copilot":  # a file of its own, not a settings file (commands/install_copilot.py)
        return _install_copilot(user, project, folder, dry_run, uninstall, program, common)
    try:
        commands = hook_commands(None if uninstall else folder, program, host=host)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--folder") from exc
    paths = settings_paths(project, user, host)
    if uninstall:
        results = [install(path, commands, uninstall=True, dry_run=dry_run) for path in paths]
        show_installs(results, common)
        return ExitCode.PASS
    if not user:
        require_workflow_folder(project, folder)
    local = host == "claude-code" and not (user or travels or shared)
    target = settings_path(project, user, host, local=local)
    # selfcorrect's hooks in the project's other file move to this one: each hook runs once.
    others = [path for path in paths if path != target]
    for path in [target, *others]:  # every file checked before any is written
        install(path, commands, uninstall=path != target, dry_run=True)
    results = [install(target, commands, dry_run=dry_run)]
    results += [install(path, commands, uninstall=True, dry_run=dry_run) for path in others]
    notes = []
    if not (user or travels):
        notes = local_notes(target, project) if local else machine_path_notes(target, program, host)
    if host == "claude-code":
        notes += companion_notes(project) + host_notes()
    results[0].warnings += notes
    show_installs(results, common)
    return ExitCode.PASS


def _install_copilot(
    user: bool,
    project: Path,
    folder: str | None,
    dry_run: bool,
    uninstall: bool,
    program: str,
    common: Any,
) -> int:
    from selfcorrect.cli.install_report import show_installs
    from selfcorrect.commands import install_copilot as copilot
    from selfcorrect.commands.install import machine_path_notes, require_workflow_folder

    try:
        commands = copilot.hook_commands(None if uninstall else folder, program)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--folder") from exc
    path = copilot.hooks_path(project, user)
    if not (uninstall or user):
        require_workflow_folder(project, folder)
    result = copilot.install(path, commands, uninstall=uninstall, dry_run=dry_run)
    if not (uninstall or user):
        result.warnings += machine_path_notes(path, program, "copilot")
    show_installs([result], common)
    return ExitCode.PASS
