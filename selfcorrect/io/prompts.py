"""Render the prompt templates (rules §8, §9.1, §12, §17) in a Jinja2 sandbox.

Prompts are Markdown for agents, so nothing is HTML-escaped. Context values are written by agents:
Jinja substitutes them as text and never evaluates them, so `{{ 7*7 }}` inside a value stays
literal. Templates come from humans (the shipped `templates/`, or the user's overrides folder,
`DIR/templates/`, whose files win) and still run sandboxed with strict undefined variables: a
typo or a reach for Python internals is an `InputError` naming the template file and line, never
a blank or an exploit.

Every render is bounded (docs/containment.md, "Templates"): it runs at most RENDER_S seconds
and writes at most MAX_RENDER_CHARS characters, an operator (`*`, `**`, `+`), a filter or a call
given a size past that cap is refused, and a render that grows the process by more than
MAX_RENDER_GROWTH bytes is stopped. An override that passes a bound is not rendered: the shipped
template of the same name is, with one warning line on stderr (the run's output, or the hook's
note), and the override is not tried again by this process. A nested loop that yields nothing,
a doubling string and a huge output all end that way within seconds.

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
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io.resources import data_dir

if TYPE_CHECKING:  # jinja2 is imported lazily: start-up time matters (rules §18)
    from jinja2 import BaseLoader, BytecodeCache, Environment, FileSystemLoader, Template

# The bounds of one render (docs/containment.md, "Templates").
RENDER_S = 2.0
MAX_RENDER_CHARS = 8 * 1024 * 1024
MAX_RENDER_GROWTH = 256 * 1024 * 1024  # bytes the process may grow by while one render runs
_POLL_S = 0.02
# Override files (as they are now) that passed a bound, with which: not tried again.
_EXCEEDED: dict[str, str] = {}

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
    built_in = _environment(None)
    try:
        # Which file it is, and whether it is trusted, before Jinja compiles it: compiling
        # folds constants (`'%09999d' % 1`), and an agent's template is never worth that.
        filename = _source_file(env, name)
        shipped = not _is_override(filename)
        if not shipped and not _trusted(filename):
            _warn(
                f"{filename}:1:1: warning: this override template is not trusted (not "
                "the committed version, and no person allowed it: agents can write templates/); "
                "selfcorrect's built-in template was rendered instead. Check it, then run "
                "`selfcorrect allow` on its workflow folder"
            )
            return _bounded(built_in, name, dict(context))
        version = "" if shipped else _version(filename)
        if shipped or version not in _EXCEEDED:
            try:
                return _bounded(env, name, dict(context))
            except Exceeded as exc:
                if shipped:
                    raise
                _EXCEEDED[version] = str(exc)
        _warn(f"{filename}:1:1: warning: {_EXCEEDED[version]}")
        return _bounded(built_in, name, dict(context))
    except (
        TemplateError,
        TypeError,
        ValueError,
        ArithmeticError,
        LookupError,
        RecursionError,
        MemoryError,
        Exceeded,
        OSError,  # an unreadable template file
    ) as exc:
        raise _input_error(exc, name, context, overrides) from exc


class Exceeded(Exception):
    """A render passed one of its bounds (its time, its output, its memory)."""


class _Stopped(BaseException):
    """Raised inside a render's thread that ran out of time (never caught by template code)."""


def _source_file(env: Environment, name: str) -> str:
    """The file `name` is loaded from (an override, else the shipped one), read but not
    compiled."""
    assert env.loader is not None
    return env.loader.get_source(env, name)[1] or name


def _version(filename: str) -> str:
    """The override file as it is now: an edited one is tried again."""
    try:
        return f"{filename}@{os.stat(filename).st_mtime_ns}"
    except OSError:
        return filename


def _trusted(filename: str) -> bool:
    """An override renders only as committed or allowed (io/trust.py, docs/containment.md)."""
    from selfcorrect.io.trust import trusted_template

    return trusted_template(filename)


def _is_override(filename: str) -> bool:
    shipped = os.path.realpath(data_dir("templates"))
    return not os.path.realpath(filename).startswith(shipped + os.sep)


def _warn(line: str) -> None:
    """One line on stderr: the run prints it among its warnings, a hook as its note."""
    text = " ".join(line.split())
    sys.stderr.write(f"{text}; selfcorrect's built-in template was rendered instead\n")
    sys.stderr.flush()


def _bounded(env: Environment, name: str, context: dict[str, Any]) -> str:
    """Template `name` compiled and rendered within RENDER_S seconds, MAX_RENDER_CHARS
    characters and MAX_RENDER_GROWTH bytes of growth, else Exceeded. It runs in a thread of its
    own (the render chunk by chunk, through `generate`): a loop that yields nothing for seconds
    is stopped from outside, by an exception raised in that thread, which the template's code
    cannot catch."""
    box: dict[str, Any] = {}
    deadline = time.monotonic() + RENDER_S

    def work() -> None:
        try:
            chunks: list[str] = []
            size = 0
            template: Template = env.get_template(name)
            stream = template.generate(context)
            try:
                for chunk in stream:
                    size += len(chunk)
                    if size > MAX_RENDER_CHARS:
                        raise Exceeded(
                            f"the template wrote more than {MAX_RENDER_CHARS:,} characters"
                        )
                    if time.monotonic() > deadline:
                        raise Exceeded(f"the template ran longer than {RENDER_S:g} s")
                    chunks.append(chunk)
            finally:
                stream.close()  # type: ignore[attr-defined]  # a generator
            box["text"] = "".join(chunks)
        except _Stopped:
            box["error"] = Exceeded(f"the template ran longer than {RENDER_S:g} s")
        except MemoryError:
            box["error"] = Exceeded("the template ran out of memory")
        except BaseException as exc:  # handed to the caller, with its template frames
            box["error"] = exc

    start = _resident()
    thread = threading.Thread(target=work, name="selfcorrect-render", daemon=True)
    thread.start()
    why = None
    while thread.is_alive():
        thread.join(_POLL_S)
        if not thread.is_alive():
            break
        if time.monotonic() > deadline:
            why = f"the template ran longer than {RENDER_S:g} s"
        elif start is not None and (_resident() or 0) - start > MAX_RENDER_GROWTH:
            why = f"the template used more than {MAX_RENDER_GROWTH >> 20} MiB of memory"
        if why is not None:
            _stop(thread)
            thread.join(_POLL_S * 10)  # it stops at its next bytecode; a daemon if it cannot
            raise Exceeded(why)
    if "error" in box:
        raise box["error"]
    return str(box["text"])


def _stop(thread: threading.Thread) -> None:
    """Raise _Stopped in `thread` at its next bytecode (CPython's documented C API)."""
    try:
        import ctypes

        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread.ident or 0), ctypes.py_object(_Stopped)
        )
    except (ImportError, AttributeError, OSError):  # not CPython: the daemon thread ends with us
        return


def _resident() -> int | None:
    """This process's resident memory in bytes (Linux), else None: the growth bound is off."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


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

    class Bounded(ImmutableSandboxedEnvironment):
        """No single operator, filter or call makes a value past the output cap: the output
        cap alone would see it only once it was made (docs/containment.md)."""

        # `%` too: a format's width is a size (and Jinja folds no intercepted operator while
        # it compiles, so no constant is made outside the render's bounds).
        intercepted_binops = frozenset({"*", "**", "+", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _check_sizes(args, kwargs)
            # The sandbox hands str.format out wrapped: the method is its __wrapped__.
            owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)
            if isinstance(owner, str):
                _check_str_method(getattr(__obj, "__name__", ""), owner, args)
            return super().call(__context, __obj, *args, **kwargs)

    # Immutable: an override template cannot mutate the caller's lists and dicts either.
    env = Bounded(
        loader=_layered_loader([FileSystemLoader(folder) for folder in folders]),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(oneline=_oneline, listing=_listing, quote=_quote, without=_without)
    env.filters.update({name: _sized(name, f) for name, f in env.filters.items()})
    return env


def _check_sizes(args: Iterable[Any], kwargs: Mapping[str, Any]) -> None:
    for value in [*args, *kwargs.values()]:
        if isinstance(value, int) and abs(value) > MAX_RENDER_CHARS:
            raise Exceeded(f"the template asked for a size of {value:,}, past the output cap")


def _sized(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that refuses a size past the output cap (`center(10**9)`, a format's width, a
    replacement's growth)."""
    import functools

    @functools.wraps(function)
    def sized(*args: Any, **kwargs: Any) -> Any:
        _check_sizes(args[1:], kwargs)
        # The filtered value: the first argument, or the second after an eval context.
        at = next((i for i, arg in enumerate(args[:2]) if isinstance(arg, str)), None)
        if at is not None:
            _check_str_method(name, args[at], args[at + 1 :])
        return function(*args, **kwargs)

    return sized


# A width or precision in a format, printf's or str.format's: `%0999d`, `{:>999}`, `{0:.999}`.
_FORMAT_SIZES = re.compile(r"(?:%(?:\([^)]*\))?|:)[^%:{}a-zA-Z]*?(\d{7,})")


def _check_format(text: str) -> None:
    for digits in _FORMAT_SIZES.findall(text):
        if int(digits) > MAX_RENDER_CHARS:
            raise Exceeded(
                f"the template's format asks for a width of {int(digits):,}, past the output cap"
            )


def _check_str_method(name: str, text: str, args: tuple[Any, ...]) -> None:
    """Refuse a string method or filter whose result would pass the output cap, before the
    one C step that would make it (the time limit sees a C step only when it returns)."""
    if name in ("format", "format_map"):
        _check_format(text)
    elif name == "replace" and len(args) >= 2:
        old, new = str(args[0]), str(args[1])
        if (
            len(new) > len(old)
            and (text.count(old) if old else len(text) + 1) * (len(new) - len(old)) + len(text)
            > MAX_RENDER_CHARS
        ):
            raise Exceeded("the template's replace would make a value past the output cap")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    def size(value: Any) -> int:
        if isinstance(value, str | bytes | list | tuple):
            return len(value)
        if isinstance(value, int):
            return value.bit_length() // 8
        return 0

    if operator == "%" and isinstance(left, str):
        _check_format(left)
        _check_sizes(right if isinstance(right, tuple) else (right,), {})
    if operator == "**" and isinstance(left, int) and isinstance(right, int):
        made = max(left.bit_length(), 1) * max(right, 0) // 8
    elif operator == "*" and isinstance(right, int) and not isinstance(left, int):
        made = size(left) * right
    elif operator == "*" and isinstance(left, int) and not isinstance(right, int):
        made = size(right) * left
    else:
        made = size(left) + size(right)
    if made > MAX_RENDER_CHARS:
        raise Exceeded(f"the template's {operator!r} would make a value past the output cap")


# Compiled templates, kept between processes in Jinja's per-user cache folder (see below).
# The version in the name: code compiled before the operators were bounded is never loaded.
CACHE_PATTERN = "selfcorrect-2-%s.cache"


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
        message += "; write that file to define the strategy, or use one that exists: " + (
            ", ".join(strategy_names(overrides)) or "none"
        )
    return message


def strategy_names(overrides: Path | None) -> list[str]:
    """Every strategy a policy may name: a template strategies/<name>.md.j2, shipped or in the
    overrides folder (a name starting with `_` is a shared part, no strategy)."""
    env = _environment(_override_dir(overrides))
    return sorted(
        found.removeprefix("strategies/").removesuffix(".md.j2")
        for found in env.list_templates(filter_func=lambda found: found.endswith(".md.j2"))
        if found.startswith("strategies/") and "/_" not in found and found.count("/") == 1
    )


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
