"""Render the prompt templates (rules §8, §9.1, §12, §17) in a Jinja2 sandbox.

Prompts are Markdown for agents, so nothing is HTML-escaped. Context values are written by agents:
Jinja substitutes them as text and never evaluates them, so `{{ 7*7 }}` inside a value stays
literal. Templates come from humans (the shipped `templates/`, or the user's overrides folder,
`DIR/templates/`, whose files win) and still run sandboxed with strict undefined variables: a
typo or a reach for Python internals is an `InputError` naming the template file and line, never
a blank or an exploit.

Filters available to every template (shipped or override), all for agent text:
  oneline             collapse whitespace runs (newlines included) to one space, so a value cannot
                      break a line-oriented header
  listing(empty)      "; "-joined one-line items, or `empty` when the list is empty
  quote               Markdown blockquote ("> " on every line)
  without(items)      drop the entries equal (ignoring case and outer spaces) to one of `items`
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io.resources import data_dir

if TYPE_CHECKING:  # jinja2 is imported lazily: start-up time matters (rules §18)
    from jinja2 import BaseLoader, BytecodeCache, Environment, FileSystemLoader, Template

_WHITESPACE = re.compile(r"\s+")
_UNDEFINED_NAME = re.compile(r"^'([^']+)' is undefined$")
_MISSING_ATTRIBUTE = re.compile(r"has no attribute '([^']+)'$")


def render(name: str, context: Mapping[str, Any], *, overrides: Path | None = None) -> str:
    """Render template `name` (e.g. "strategies/add_tests.md.j2") with `context`.

    `overrides` is the user's overrides folder (normally `DIR/templates/`; it need not exist): a
    file there replaces the shipped template of the same name.
    Raises InputError, positioned in the template, for a missing template, a syntax error, an
    undefined variable, a sandbox violation, or any other error the template raises.
    """
    from jinja2 import TemplateError

    env = _environment(_override_dir(overrides))
    try:
        template: Template = env.get_template(name)
        return template.render(dict(context))
    except (
        TemplateError,
        TypeError,
        ValueError,
        ArithmeticError,
        LookupError,
        RecursionError,
        OSError,  # an unreadable template file
    ) as exc:
        raise _input_error(exc, name, context, overrides) from exc


def has_template(name: str, *, overrides: Path | None = None) -> bool:
    """Whether `name` exists among the overrides or the shipped templates (nothing is compiled)."""
    from jinja2 import TemplateNotFound

    env = _environment(_override_dir(overrides))
    assert env.loader is not None
    try:
        env.loader.get_source(env, name)
    except TemplateNotFound:
        return False
    return True


def _override_dir(overrides: Path | None) -> str | None:
    """The override folder as the user spelled it (so diagnostics name their path), if it exists."""
    if overrides is None:
        return None
    return str(overrides) if overrides.is_dir() else None


@lru_cache(maxsize=16)
def _environment(override_dir: str | None) -> Environment:
    """One sandboxed environment per override folder; Jinja caches compiled templates in it."""
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    folders = [override_dir] if override_dir else []
    folders.append(str(data_dir("templates")))
    # Immutable: an override template cannot mutate the caller's lists and dicts either.
    env = ImmutableSandboxedEnvironment(
        loader=_layered_loader([FileSystemLoader(folder) for folder in folders]),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(oneline=_oneline, listing=_listing, quote=_quote, without=_without)
    return env


# Compiled templates, kept between processes in Jinja's per-user cache folder (see below).
CACHE_PATTERN = "selfcorrect-%s.cache"


def _bytecode_cache() -> BytecodeCache | None:
    """Templates compiled once, not in every process: an agent hook is a new process that
    renders a prompt or two, and compiling them cost it about 20 ms (docs/hooks.md).

    Jinja's own cache folder: `_jinja2-cache-<uid>` in the temp folder, kept private (0700)
    and refused when it is a link or another user's. An entry holds code, so one another user
    owns is not read (it is compiled again and replaced). An entry is keyed by the template's
    name and path and holds its source's checksum, so an edited template compiles again. An
    entry that cannot be read is compiled again; one that cannot be written is skipped. None
    (no cache: every process compiles) when the folder cannot be used."""
    from jinja2 import FileSystemBytecodeCache
    from jinja2.bccache import Bucket

    class Quiet(FileSystemBytecodeCache):
        def load_bytecode(self, bucket: Bucket) -> None:
            try:
                if os.stat(self._get_cache_filename(bucket)).st_uid != os.getuid():
                    return  # not ours: compiled again, and replaced by ours
                super().load_bytecode(bucket)
            except FileNotFoundError:
                return  # not compiled yet
            except Exception:  # a damaged entry, whatever the damage: compile again
                bucket.reset()

        def dump_bytecode(self, bucket: Bucket) -> None:
            with contextlib.suppress(OSError):  # a full or read-only disk: compiled again
                super().dump_bytecode(bucket)

    try:
        return Quiet(pattern=CACHE_PATTERN)
    except (OSError, RuntimeError):  # no temp folder, or its cache folder is not ours alone
        return None


def _layered_loader(layers: list[FileSystemLoader]) -> BaseLoader:
    """A ChoiceLoader whose cached templates go stale when an earlier layer gains the file.

    Jinja's ChoiceLoader keeps serving a cached shipped template after the user adds an override
    of the same name (only the shipped file's mtime is checked); a watcher runs for hours, so an
    override written meanwhile must win from the next render on.
    """
    from jinja2 import BaseLoader, ChoiceLoader, TemplateNotFound
    from jinja2.loaders import split_template_path

    class Layered(ChoiceLoader):
        load = BaseLoader.load  # route loads through get_source below, not each layer's own

        def get_source(
            self, environment: Environment, template: str
        ) -> tuple[str, str | None, Callable[[], bool] | None]:
            pieces = split_template_path(template)  # refuses "..": no escape from the folders
            for index, layer in enumerate(layers):
                try:
                    source, filename, uptodate = layer.get_source(environment, template)
                except TemplateNotFound:
                    continue
                if index < len(layers) - 1:  # the user's overrides; the shipped ones are ours
                    _refuse_linked(layer.searchpath[0], pieces)
                shadows = [
                    os.path.join(folder, *pieces)
                    for earlier in layers[:index]
                    for folder in earlier.searchpath
                ]

                def fresh(
                    uptodate: Callable[[], bool] | None = uptodate, shadows: list[str] = shadows
                ) -> bool:
                    unchanged = uptodate is None or uptodate()
                    return unchanged and not any(os.path.isfile(path) for path in shadows)

                return source, filename, fresh
            raise TemplateNotFound(template)

    return Layered(layers)


def _refuse_linked(folder: str, pieces: list[str]) -> None:
    """A template reached through a symlink is refused: a link to /etc/shadow in the overrides
    folder would otherwise be rendered into a prompt that agents read."""
    from selfcorrect.io.safe_paths import refusal

    expected = os.path.join(os.path.realpath(folder), *pieces)
    if os.path.islink(folder) or os.path.realpath(os.path.join(folder, *pieces)) != expected:
        raise refusal(
            os.path.join(folder, *pieces),
            "is reached through a symbolic link; a template must be a regular file in the "
            "templates folder: copy it there instead of linking it",
        )


def _input_error(
    exc: Exception, name: str, context: Mapping[str, Any], overrides: Path | None
) -> InputError:
    """Turn a Jinja failure into a positioned diagnostic that says what to do."""
    from jinja2 import TemplateNotFound, TemplateSyntaxError, UndefinedError
    from jinja2.exceptions import SecurityError

    available = ", ".join(sorted(context)) or "nothing"
    where = _template_frame(exc)
    if isinstance(exc, TemplateSyntaxError):
        path = exc.filename or _expected_path(name, overrides)
        return _error(path, exc.lineno, f"template syntax error: {exc.message}")
    if isinstance(exc, TemplateNotFound):
        if where is None:  # the requested template itself
            return _error(_expected_path(name, overrides), 1, _not_found(name, overrides))
        return _error(
            *where, f"the template includes {exc.name!r}, which is not an existing template"
        )
    path, line = where or (_expected_path(name, overrides), 1)
    if isinstance(exc, OSError):
        path = str(exc.filename or path)
        message = f"the template cannot be read: {exc.strerror or exc}"
    elif isinstance(exc, SecurityError):
        message = (
            f"the template does something the sandbox forbids ({exc}); templates may only read "
            f"the values provided (available: {available}) and use Jinja filters"
        )
    elif isinstance(exc, UndefinedError):
        text = str(exc)
        match = _UNDEFINED_NAME.match(text) or _MISSING_ATTRIBUTE.search(text)
        used = repr(match.group(1)) if match else "a value"
        message = (
            f"the template uses {used}, which is not provided ({text}); available: {available}. "
            "Fix the name, or guard an optional value with {% if ... %}"
        )
    else:
        message = f"the template failed: {type(exc).__name__}: {exc}"
    return _error(path, line, message)


def _error(path: str, line: int | None, message: str) -> InputError:
    return InputError(Diagnostic(path, max(line or 1, 1), 1, message))


def _template_frame(exc: BaseException) -> tuple[str, int] | None:
    """File and line of the innermost template frame in the traceback.

    Jinja rewrites tracebacks so that template code shows as frames of the template file at its
    source line; those frames carry `__jinja_exception__` in their globals.
    """
    found: tuple[str, int] | None = None
    tb = exc.__traceback__
    while tb is not None:
        if "__jinja_exception__" in tb.tb_frame.f_globals:
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _expected_path(name: str, overrides: Path | None) -> str:
    """Where the user would put `name`: their override folder, else the shipped one."""
    return str((overrides if overrides is not None else data_dir("templates")) / name)


def _not_found(name: str, overrides: Path | None) -> str:
    shipped = "selfcorrect's shipped templates/"
    if overrides is None:
        message = f"no template {name!r} in {shipped}"
    else:
        message = f"no template {name!r} in {overrides}/ or in {shipped}"
    if name.startswith("strategies/"):
        # A policy may name any strategy: say where its template goes and which ones exist.
        env = _environment(_override_dir(overrides))
        choices = [
            found.removeprefix("strategies/").removesuffix(".md.j2")
            for found in env.list_templates(filter_func=lambda found: found.endswith(".md.j2"))
            if found.startswith("strategies/") and "/_" not in found and found.count("/") == 1
        ]
        message += "; write that file to define the strategy, or use one that exists: " + (
            ", ".join(sorted(choices)) or "none"
        )
    return message


def _oneline(value: object) -> str:
    return _WHITESPACE.sub(" ", str(value)).strip()


def _listing(values: Iterable[object], empty: str = "none") -> str:
    items = [_oneline(value) for value in values]
    return "; ".join(item for item in items if item) or empty


def _quote(value: object) -> str:
    lines = str(value).splitlines() or [""]
    return "\n".join(f"> {line}".rstrip() for line in lines)


def _without(values: Iterable[object], unwanted: Iterable[object]) -> list[object]:
    drop = {_oneline(item).casefold() for item in unwanted}
    return [value for value in values if _oneline(value).casefold() not in drop]
