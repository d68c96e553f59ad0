"""The files a shell command recognisably writes (docs/hooks.md, "The gate").

The gate asks this before every shell call (Bash) whether it writes one of the person's files.
The command is agent text: it is split into words here (never run, never given to a shell),
in time linear in its length. What counts as a write:
- an output redirection (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `N>`; not a duplication `2>&1`);
- `tee` and `sed -i`/`--in-place`: every file named (a sed script names no file of ours);
- `cp`, `ln`, `install`: the destination (the last argument, or `-t DIR`), and in a folder
  that exists the source's name in it; `mv`: the destination and every source (moved away);
- `rm`, `rmdir`, `unlink`, `truncate`, `shred`, `touch`: every file named; `dd of=FILE`.
Words are taken as the shell would take them: quotes removed, `~` and `$VAR` expanded from
this process's environment (the agent's shell has the host's), globs matched, and a `cd DIR`
earlier in the command moves where the rest is. Anything this reading cannot follow (a command
substitution, `eval`, an interpreter's own file calls) is not recognised: the gate guards
against careless and casual writes, and the run's trust check against the rest
(docs/containment.md). Standard library only: the gate imports this.
"""

from __future__ import annotations

import os
import shlex

_SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&", ";;", "(", ")", "{", "}"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
# Words before the program that leave the program what it is.
_WRAPPERS = frozenset({"sudo", "env", "command", "nohup", "time", "exec", "nice", "builtin"})
# Their options that take the next word as a value (`sudo -u root`, `nice -n 5`, `env -u X`).
_VALUED = {
    "sudo": frozenset({"-u", "-g", "-U", "-C", "-D", "-h", "-p", "-r", "-t"}),
    "nice": frozenset({"-n"}),
    "env": frozenset({"-u", "-C"}),
    "time": frozenset({"-o", "-f"}),
}
_ALL_ARGS = frozenset({"tee", "rm", "rmdir", "unlink", "truncate", "shred", "touch"})
_DESTINATION = frozenset({"cp", "ln", "install"})
_MAX_WORDS = 4096
_MAX_GLOB = 64  # paths a glob is expanded to, at most


def written(command: str, cwd: str) -> list[tuple[str, bool]]:
    """Each path `command` writes, absolute and expanded, with whether the write takes a whole
    folder (`rm -r`, `mv`: a folder holding one of the person's files counts then)."""
    words = _words(command)
    found: list[tuple[str, bool]] = []
    here = cwd
    for segment in _segments(words[:_MAX_WORDS]):
        args: list[str] = []
        at = 0
        while at < len(segment):
            word = segment[at]
            op = word.lstrip("0123456789") if word[:1].isdigit() else word
            if op in _REDIRECTS and at + 1 < len(segment):
                target = segment[at + 1]
                at += 2
                if op == ">&" and (target.isdigit() or target == "-"):
                    continue  # 2>&1: a duplication, no file
                found += [(p, False) for p in _paths(target, here)]
                continue
            if word.isdigit() and at + 1 < len(segment) and segment[at + 1] in _REDIRECTS:
                at += 1  # `2 >` as the lexer splits `2>`
                continue
            if op in ("<", "<<", "<<<", "<&") and at + 1 < len(segment):
                at += 2  # an input: nothing written
                continue
            args.append(word)
            at += 1
        program, rest = _program(args)
        if program == "cd":
            named = [a for a in rest if not a.startswith("-")]
            if named:
                here = os.path.join(here, _expand(named[0]))
            continue
        found += [(p, whole) for raw, whole in _targets(program, rest) for p in _paths(raw, here)]
    return found


def allows(command: str) -> bool:
    """Whether `command` runs `selfcorrect allow` (also as `python -m selfcorrect allow`): a
    person's act, which trusts the policy's commands (docs/containment.md)."""
    for segment in _segments(_words(command)[:_MAX_WORDS]):
        program, rest = _program(segment)
        if program.startswith("python") and rest[:2] == ["-m", "selfcorrect"]:
            program, rest = "selfcorrect", rest[2:]
        if program == "selfcorrect" and "allow" in [w for w in rest if not w.startswith("-")][:1]:
            return True
    return False


def _words(command: str) -> list[str]:
    """The command's words and operators; an unbalanced quote reads the rest as plain words."""
    text = command.replace("\r", " ").replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    try:
        for word in lexer:
            words.append(word)
            if len(words) > _MAX_WORDS:
                break
    except ValueError:  # no closing quotation: the words as they stand
        return text.split()[:_MAX_WORDS]
    return words


def _segments(words: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _program(args: list[str]) -> tuple[str, list[str]]:
    """The program (its base name) and its arguments, past assignments and wrappers."""
    at, wrapper = 0, ""
    while at < len(args):
        word = args[at]
        name = os.path.basename(word)
        assignment = "=" in word and word.split("=", 1)[0].isidentifier()
        option = bool(wrapper) and word.startswith("-")  # an option of the wrapper before
        if not (assignment or option or name in _WRAPPERS):
            return name, args[at + 1 :]
        wrapper = name if name in _WRAPPERS else wrapper
        at += 2 if option and word in _VALUED.get(wrapper, ()) else 1
    return "", []


def _targets(program: str, args: list[str]) -> list[tuple[str, bool]]:
    named = _operands(args)
    if program in _ALL_ARGS:
        recursive = program == "rm" and any(_flag(a, "r", "recursive") for a in args)
        return [(a, recursive or program == "rmdir") for a in named]
    if program == "sed":
        if any(_flag(a, "i", "in-place") for a in args):
            return [(a, False) for a in named]
        return []
    if program in _DESTINATION or program == "mv":
        moved = [(a, True) for a in named] if program == "mv" else []  # moved away: written
        folders = _target_dirs(args)
        if folders:
            into = [os.path.join(f, os.path.basename(s)) for f in folders for s in named]
            return moved + [(a, False) for a in folders + into]
        if len(named) < 2:
            return moved + ([(a, False) for a in named[-1:]] if program == "install" else [])
        destination = named[-1]
        into = [os.path.join(destination, os.path.basename(s)) for s in named[:-1]]
        return moved + [(a, False) for a in [destination, *into]]
    if program == "dd":
        return [(a[3:], False) for a in args if a.startswith("of=")]
    return []


def _operands(args: list[str]) -> list[str]:
    found, options = [], True
    for word in args:
        if options and word == "--":
            options = False
        elif options and word.startswith("-") and word != "-":
            continue
        else:
            found.append(word)
    return found


def _flag(word: str, short: str, long: str) -> bool:
    """Whether `word` sets the option (`-i`, `-i.bak`, `-ni`, `--in-place=.bak`)."""
    if word.startswith("--"):
        return word[2:].split("=", 1)[0] == long
    if short == "i":  # sed's -i takes its suffix glued on: only the letters before it count
        return word.startswith("-") and "i" in word[1:].split(".", 1)[0]
    return word.startswith("-") and short in word[1:].casefold()


def _target_dirs(args: list[str]) -> list[str]:
    found = []
    for at, word in enumerate(args):
        if word in ("-t", "--target-directory") and at + 1 < len(args):
            found.append(args[at + 1])
        elif word.startswith("--target-directory="):
            found.append(word.split("=", 1)[1])
    return found


def _expand(word: str) -> str:
    return os.path.expandvars(os.path.expanduser(word))


def _paths(raw: str, here: str) -> list[str]:
    """The absolute paths a word names: expanded, a glob matched (itself when it matches none)."""
    word = _expand(raw)
    if not word or word == "/dev/null":
        return []
    path = os.path.join(here, word)
    if any(mark in word for mark in "*?["):
        import glob  # only for a glob: the gate's start-up counts

        matched = [m for _, m in zip(range(_MAX_GLOB), glob.iglob(path), strict=False)]
        return matched or [path]
    return [path]
