"""Calls that never ran, told by the text the host gave for them (docs/rules.md §7).

Pure. A call the host cancelled, one a person declined and one a PreToolUse hook denied did
nothing: they are not the agent's failures, and count toward no signal, budget or gate. The host
says which in the call's result, in these words (each as a real host wrote it):

- cancelled: "Sibling tool call errored" (Claude Code 2.1.38 to 2.1.41 and later cancel a parallel
  batch's siblings when one errors), "Cancelled: parallel tool call Bash(…) errored" (2.1.15x),
  any result that opens with "cancelled";
- denied: "The user doesn't want to proceed with this tool use…" (a person declined the
  permission prompt), "User rejected tool use", "PreToolUse:Bash hook error: …" (a hook's
  denial, as Claude Code 2.1.332 reports it), "Hook PreToolUse:Bash denied this tool",
  "Permission to use WebSearch has been denied…" (a permission rule), and selfcorrect's own
  gate's reason ("selfcorrect: …", hooks/gate.py).

The words may come inside `<tool_use_error>…</tool_use_error>` and after "Error: ".

A batch result carries no error flag (PostToolBatch): `validation_rejection` says whether its
text is one of the host's input-validation errors, the only other results of a call that did
not run, so that a call whose output merely opens with `<tool_use_error>` is not taken for one,
nor a shell call whose output is wholly one element in a file tool's words (a `cat` of notes).
"""

from __future__ import annotations

import re

from selfcorrect.core.model import Outcome

ERROR_OPEN, ERROR_CLOSE = "<tool_use_error>", "</tool_use_error>"
_HEAD = 300  # characters looked at: every wording below is at the start
_WRAP = re.compile(r"\A\s*(?:<tool_use_error>\s*)?(?:error:\s*)?", re.IGNORECASE)
_CANCELLED = re.compile(r"sibling\s+tool\s+call\s+errored|cancell?ed\b", re.IGNORECASE)
_DENIED = re.compile(
    r"the\s+user\s+doesn['\u2019]t\s+want\s+to\s+(?:proceed\s+with\s+this\s+tool\s+use|take\s+this"
    r"\s+action)|user\s+rejected\s+tool\s+use|pretooluse:\S+\s+hook\s+error:"
    r"|hook\s+pretooluse:\S+\s+denied\s+this\s+tool|permission\s+to\s+use\s+\S+\s+has\s+been"
    r"\s+denied|selfcorrect:\s",
    re.IGNORECASE,
)
# How Claude Code's tools word an input they refuse before running (their validateInput): the
# calls no PreToolUse or PostToolUseFailure hook sees (docs/hooks.md, `post-tool-batch`).
_VALIDATION = re.compile(
    r"string\s+to\s+replace\s+not\s+found|file\s+has\s+not\s+been\s+read\s+yet"
    r"|file\s+does\s+not\s+exist|file\s+has\s+been\s+(?:unexpectedly\s+)?modified\s+since"
    r"|found\s+\d+\s+matches\s+of\s+the\s+string\s+to\s+replace|no\s+changes\s+to\s+make"
    r"|cannot\s+create\s+new\s+file|inputvalidationerror|no\s+such\s+tool\s+available"
    r"|file\s+content\s+\(.{0,40}?\)\s+exceeds\s+maximum|this\s+tool\s+cannot\s+read",
    re.IGNORECASE,
)


# Of those, the words any tool's input may be refused in: a shell call's command is refused in
# no other (the rest are the file tools' words), so a `cat` whose output is wholly one element in
# an edit tool's words ran, and its output is output.
_ANY_TOOL = re.compile(r"inputvalidationerror|no\s+such\s+tool\s+available", re.IGNORECASE)
_SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command"})


# Of those, the words a call's own output is unlikely to open with: what a batch result with no
# tags must say to be taken for a denial (selfcorrect's own commands print "selfcorrect: …").
_HOST_DENIED = re.compile(r"the\s+user\s+doesn|user\s+rejected|pretooluse:|hook\s+pretooluse:",
                          re.IGNORECASE)  # fmt: skip


def not_run(text: str) -> Outcome | None:
    """`cancelled` or `denied` when the host's text says the call never ran, else None."""
    head = text[:_HEAD]
    start = _WRAP.match(head)
    rest = head[start.end() :] if start else head
    if _CANCELLED.match(rest):
        return Outcome.CANCELLED
    if _DENIED.match(rest):
        return Outcome.DENIED
    return None


def declined(text: str) -> bool:
    """A result with no tags that is a person's or a hook's denial in the host's own words."""
    return not_run(text) is Outcome.DENIED and _HOST_DENIED.match(text.lstrip()) is not None


def validation_rejection(text: str, tool: str | None = None) -> str | None:
    """The error of a batch result that is wholly one `<tool_use_error>` element (as the host
    wraps a call it did not run) holding the host's validation or not-run wording (for a shell
    `tool`, only the wording any tool's input is refused in), its tags taken off; None for
    anything else, whatever it opens with (a call's own output)."""
    body = text.strip()
    if not (body.startswith(ERROR_OPEN) and body.endswith(ERROR_CLOSE)):
        return None
    inner = body[len(ERROR_OPEN) : -len(ERROR_CLOSE)]
    if ERROR_OPEN in inner or ERROR_CLOSE in inner:
        return None  # several elements: output that quotes errors
    start = _WRAP.match(inner[:_HEAD])
    rest = inner[start.end() if start else 0 : _HEAD]
    shell = tool is not None and tool.casefold() in _SHELL_TOOLS
    if (_ANY_TOOL if shell else _VALIDATION).match(rest) or not_run(inner) is not None:
        return inner
    return None
