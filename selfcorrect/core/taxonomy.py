"""Tool-failure taxonomy (rules §6) and the error folding stuck detection relies on (rules §7).

Pure: no I/O. `classify` runs for every entry of logs with 100,000 entries (rules §18), so
`Taxonomy` compiles the policy's patterns once, finds the first match in policy order with a
few searches of joined alternations instead of one search per pattern, and remembers the
types of recent texts (a stuck agent repeats itself).
"""

from __future__ import annotations

import errno
import re
from collections.abc import Callable, Iterable
from enum import StrEnum

from msgspec import Struct

from selfcorrect.core.bounded_regex import compile_policy
from selfcorrect.core.digit_fold import DIGITS, Memo, ShapeKey
from selfcorrect.core.model import Failure
from selfcorrect.core.policy import Policy
from selfcorrect.core.text_window import search, window

UNKNOWN = "unknown"


class TypeSource(StrEnum):
    """What decided a failure's type, in the order of rules §6."""

    EXPLICIT = "explicit"
    CODE = "code"
    PATTERN = "pattern"
    NONE = "none"


class Typed(Struct, frozen=True):
    """A failure's type, how sure we are, and the code or regex that decided."""

    failure_type: str
    confidence: float
    source: TypeSource
    rule: str | None


_UNTYPED = Typed(UNKNOWN, 0.0, TypeSource.NONE, None)
_LAST: list[tuple[Policy, Taxonomy]] = []  # Taxonomy.of's one policy and its taxonomy


class Taxonomy:
    """The policy's `codes` and `patterns`, ready to classify failures."""

    __slots__ = (
        "_cache",
        "_codes",
        "_plain",
        "_searched",
        "_shaped",
        "_shipped",
        "_sources",
        "_typed",
    )

    def __init__(self, policy: Policy) -> None:
        codes = policy.codes
        # Codes match case-insensitively ('etimedout' is ETIMEDOUT); the policy's spelling is
        # reported as the rule.
        self._codes: dict[str, tuple[str, str]] = {
            code.upper(): (kind, code) for code, kind in codes.items()
        }
        patterns = policy.patterns
        self._sources = [entry.regex for entry in patterns]
        self._shipped = policy.shipped_regexes
        self._typed = tuple(
            Typed(entry.type, entry.confidence, TypeSource.PATTERN, src)
            for entry, src in zip(patterns, self._sources, strict=True)
        )
        # The first few texts are searched pattern by pattern: an agent hook types one new
        # failure, and reading the patterns' digits and joining them into alternations would
        # cost it more than the searches (docs/hooks.md, the failure hook's cost). A run over a
        # long log goes on with the shaped, joined search below, which answers the same.
        self._plain: _FirstMatch | None = _FirstMatch(self._sources, self._shipped, joined=False)
        self._searched = 0
        self._shaped: tuple[_Shaped, _Shaped] | None = None  # (digit-blind, digit-sensitive)
        self._cache: dict[tuple[str, str | None], Typed] = {}

    def _shape(self) -> tuple[_Shaped, _Shaped]:
        """The patterns split by whether they tell digits apart, each part searched per shape
        of text."""
        sources, shipped = self._sources, self._shipped
        # Compiled by `re` to be read (digit_fold), never matched: matching is _FirstMatch's.
        regexes = [re.compile(source, re.IGNORECASE) for source in sources]
        # Patterns answer once per shape of text (line numbers, ports and counts folded, see
        # digit_fold.ShapeKey). Those that tell digits apart (HTTP 503 from HTTP 404) are kept
        # apart, so that a text with such words costs its finer shape to them only; the others
        # answer per text when their digits are unreadable (a backreference).
        blind = [DIGITS.blind(rx) for rx in regexes]

        def shaped(indices: list[int]) -> _Shaped:
            shapes = ShapeKey(regexes[i] for i in indices)
            key = shapes.key if shapes.readable else None
            return _Shaped(key, [(i, sources[i]) for i in indices], shipped)

        self._plain = None
        return shaped([i for i, b in enumerate(blind) if b]), shaped(
            [i for i, b in enumerate(blind) if not b]
        )

    @classmethod
    def of(cls, policy: Policy) -> Taxonomy:
        """The taxonomy of `policy`: the one built last when `policy` is the same object (a
        policy is deeply read-only and a taxonomy answers the same for the same text), so a
        process that loads one policy compiles its patterns once."""
        if _LAST and _LAST[0][0] is policy:
            return _LAST[0][1]
        taxonomy = cls(policy)
        _LAST[:] = [(policy, taxonomy)]
        return taxonomy

    def classify(self, failure: Failure) -> Typed:
        """Explicit type, else typed code, else the first matching pattern, else unknown."""
        if failure.failure_type:
            # Used as given even when the policy does not know it: the agent said so.
            return Typed(failure.failure_type, 1.0, TypeSource.EXPLICIT, None)
        code = failure.code
        if code:
            known = self._codes.get(code.strip().upper())
            if known is not None:
                return Typed(known[0], 1.0, TypeSource.CODE, known[1])
        return self.classify_text(failure.error, code)

    def classify_text(self, error: str, code: str | None = None) -> Typed:
        """Type error text by the first matching policy pattern (an unknown code is searched
        too), else unknown."""
        key = (error, code)
        typed = self._cache.get(key)
        if typed is None:
            index = self._first_match(window(f"{error} {code}" if code else error))
            typed = _UNTYPED if index is None else self._typed[index]
            if len(self._cache) >= _CACHE_SIZE:  # bounded: drop the oldest entry
                del self._cache[next(iter(self._cache))]
            self._cache[key] = typed
        return typed

    def _first_match(self, text: str) -> int | None:
        """Index of the first pattern, in policy order, that matches anywhere in `text`."""
        if not text or text.isspace():
            return None  # an empty error says nothing: unknown (rules §6)
        if self._plain is not None and self._searched < _FEW_TEXTS:
            self._searched += 1
            return self._plain.first(text)
        if self._shaped is None:
            self._shaped = self._shape()
        blind, sensitive = self._shaped[0].first(text), self._shaped[1].first(text)
        if blind is None or sensitive is None:
            return sensitive if blind is None else blind
        return min(blind, sensitive)


class _Shaped:
    """Some of the policy's patterns, with their indices: the first that matches a text,
    remembered per `key` of the text (per text when None)."""

    __slots__ = ("_indices", "_key", "_match", "_memo")

    def __init__(
        self,
        key: Callable[[str], bytes] | None,
        patterns: list[tuple[int, str]],
        shipped: frozenset[str],
    ) -> None:
        self._key = key
        self._indices = tuple(index for index, _ in patterns)
        self._match = _FirstMatch([source for _, source in patterns], shipped)
        self._memo: Memo[bytes, int | None] = Memo()

    def first(self, text: str) -> int | None:
        if not self._indices:
            return None
        key = self._key
        if key is None:
            return self._index(text)
        return self._memo.get(key(text), lambda: self._index(text))

    def _index(self, text: str) -> int | None:
        found = self._match.first(text)
        return None if found is None else self._indices[found]


class _FirstMatch:
    """Patterns in order, to find the first one that matches anywhere in a text."""

    __slots__ = ("_linear", "_own", "_prefixes", "_regexes", "_sources")

    def __init__(self, sources: list[str], shipped: frozenset[str], *, joined: bool = True) -> None:
        # The shipped patterns are linear and matched with `re`, joined into alternations; the
        # policy's own, one by one with a time limit (core/bounded_regex.py): joined into one
        # `re` pattern, they would run unbounded.
        self._linear = tuple(i for i, source in enumerate(sources) if source in shipped)
        self._own = tuple(
            (i, compile_policy(source, shipped))
            for i, source in enumerate(sources)
            if source not in shipped
        )
        self._sources = [sources[i] for i in self._linear]
        self._regexes = tuple(re.compile(source, re.IGNORECASE) for source in self._sources)
        # _prefixes[k]: patterns 0..k-1 as one alternation, compiled on first use. One search
        # with it answers "does any earlier pattern match?" at a fraction of k searches.
        self._prefixes: list[re.Pattern[str] | None] | None = (
            _prefixes(self._sources) if joined else None
        )

    def first(self, text: str) -> int | None:
        """Index of the first pattern that matches anywhere in `text`."""
        found = self._first_linear(text)
        best = None if found is None else self._linear[found]
        for index, regex in self._own:
            if best is not None and index > best:
                break
            if regex.search(text):
                return index
        return best

    def _first_linear(self, text: str) -> int | None:
        regexes, prefixes = self._regexes, self._prefixes
        linear = (i for i, rx in enumerate(regexes) if rx.search(text))
        if prefixes is None:
            return next(linear, None)
        found: int | None = None
        limit, start = len(regexes), 0
        try:
            self._prefix(prefixes, limit)  # the whole alternation: the first one compiled
        except re.error:
            self._prefixes = None
            return next(linear, None)
        while limit:
            match = self._prefix(prefixes, limit).search(text, start)
            if match is None:
                break
            # The alternation chose the first pattern matching at the leftmost position; an
            # earlier pattern can still match further right, so look again among those only.
            at = match.start()
            chosen = next((i for i in range(limit) if regexes[i].match(text, at)), None)
            if chosen is None:  # cannot happen with joinable patterns; stay correct anyway
                return next(linear, None)
            found = limit = chosen
            start = at + 1
        return found

    def _prefix(self, prefixes: list[re.Pattern[str] | None], limit: int) -> re.Pattern[str]:
        compiled = prefixes[limit]
        if compiled is None:
            compiled = prefixes[limit] = _alternation(self._sources[:limit])
        return compiled


_CACHE_SIZE = 1024
# Distinct texts a taxonomy searches pattern by pattern before it shapes and joins them.
_FEW_TEXTS = 32
# Patterns that refer to their own groups cannot be joined into one alternation.
_GROUP_REFERENCE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")


def _alternation(sources: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{source})" for source in sources), re.IGNORECASE)


def _prefixes(sources: list[str]) -> list[re.Pattern[str] | None] | None:
    """Lazy prefix alternations, or None when the patterns cannot be joined (then: one by one).
    Whether the whole alternation compiles (global inline flags or duplicate group names make
    it fail) is found when it is first needed: it is the first one a search compiles."""
    if not sources or any(_GROUP_REFERENCE.search(source) for source in sources):
        return None
    return [None] * (len(sources) + 1)


# --------------------------------------------------------------------------- normalise_error

# Applied in this order: quotes first (they may hold paths and digits), then paths, then ids.
_QUOTED = re.compile(
    r"""(?<!\w)'[^'\n]*'(?!\w)|"[^"\n]*"|`[^`\n]*`|\u201c[^\u201d\n]*\u201d|\u2018[^\u2019\n]*\u2019"""
)
_WINDOWS_PATH = re.compile(r"(?<![\w/\\])(?:[a-z]:[\\/]|\\\\)[^\s'\"`()<>,;]*")
# Possessive runs, and a second branch that starts only where a run of path characters starts:
# "a.a.a…!/" made the lazy version try every dot (quadratic); these are linear.
_UNIX_PATH = re.compile(
    r"(?<![\w/<])(?:~|\.{1,2})?(?:/[\w.@+~-]++)+/?|(?<![\w.@+~-])[\w.@+~-]++(?:/[\w.@+~-]++)+"
)
# hex ids and numbers fold to one placeholder: an id's length must not matter either
_IDS = re.compile(
    r"\b0x[0-9a-f]+\b"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    # a long hex run with a letter and a digit: a hash, not a word
    r"|\b(?=\d*[a-f])(?=[a-f]*\d)[0-9a-f]{8,}\b"
    r"|\d+"
)


# What normalise_error matches; its answer also holds the HTTP statuses it finds (http_statuses).
NORMALISER_PATTERNS = (_QUOTED, _WINDOWS_PATH, _UNIX_PATH, _IDS)


def normalise_error(text: str) -> str:
    """Error text with volatile parts folded, so two tries of one mistake compare equal.

    Quoted strings, file paths, hex ids and digits become placeholders; whitespace collapses
    and case folds: "TypeError at handler.ts:45" and "...:46" normalise equal. An HTTP status
    is kept (rules §6): a 503, a 404 and a 429 on three URLs are three errors, not one.
    """
    folded = window(text).lower()
    statuses = http_statuses(folded)
    if "'" in folded or '"' in folded or "`" in folded or "\u201c" in folded or "\u2018" in folded:
        folded = _QUOTED.sub("<str>", folded)
    # Paths hold no spaces: scanning only the words with a slash is several times faster.
    words = [_fold_path(word) if "/" in word or "\\" in word else word for word in folded.split()]
    normalised = _IDS.sub("#", " ".join(words))
    return f"{normalised} [{statuses}]" if statuses else normalised


# Words one of which precedes every status _STATUS_RX reads: most texts skip the search.
_STATUS_HINTS = ("http", "status", "respon")


def http_statuses(text: str) -> str:
    """The HTTP status codes `text` names in context ("HTTP 503", "status code: 404"), joined
    by commas; "" when it names none. A bare number is never a status."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _STATUS_HINTS):
        return ""
    return ",".join(match.group(1) for match in _STATUS_RX.finditer(window(text)))


def _fold_path(word: str) -> str:
    return _UNIX_PATH.sub("<path>", _WINDOWS_PATH.sub("<path>", word))


# --------------------------------------------------------------------------- error_class

_HTTP_STATUS = (
    r"(?i:\bhttp(?:/\d(?:\.\d)?)?(?:\s*error)?|\bstatus(?:[ _-]?code)?|\bresponse(?:[ _-]?code)?"
    # `\s*(?:[:=]\s*)?`, never `\s*[:=]?\s*`: two runs of spaces that can trade characters
    # cost the square of the spaces ("HTTP" and 30,000 spaces took 32 s).
    r"|\bresponded\s+with)[\"']?\s*(?:[:=]\s*)?[\"']?([45]\d\d)\b(?![.,]\d)"
)
_STATUS_RX = re.compile(_HTTP_STATUS)
# errno names this platform knows, plus Node's own: an uppercase word is not a code by itself
# ("EXPECTED", "ERROR").
_ERRNO = "|".join(
    sorted(
        set(errno.errorcode.values())
        | {"ENOENT", "EACCES", "EISDIR", "ENOTDIR", "EEXIST", "EPERM", "EPIPE", "EBUSY"}
        | {"ETIMEDOUT", "ESOCKETTIMEDOUT", "ECONNREFUSED", "ECONNRESET", "ECONNABORTED"}
        | {"ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "ENOMEM", "ENOSPC", "EDQUOT", "EMFILE"},
        key=lambda name: (-len(name), name),
    )
)
_CLASS = re.compile(
    # exception names: TypeError, JSONDecodeError, NullPointerException, KeyboardInterrupt
    r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt)|panic)\b"
    # compiler codes: TS2339 anywhere, error C2065 / error[E0308] after "error"
    r"|\b(TS\d{4,5})\b|(?i:\berror)\s*\[?([A-Z]{1,3}\d{3,5})\b"
    # errno and Node codes: ENOENT, EAI_AGAIN, ERR_MODULE_NOT_FOUND
    rf"|\b({_ERRNO}|EAI_[A-Z]+|ERR_[A-Z0-9_]+)\b"
    # HTTP status codes in context only, never a bare number
    rf"|{_HTTP_STATUS}"
)


def error_class(text: str) -> str | None:
    """The first recognisable error name or code in `text` ('TypeError', 'ENOENT', 'TS2339',
    'HTTP 503'), else None."""
    match = search(_CLASS, text)
    if match is None:
        return None
    name, ts_code, compiler_code, code, status = match.groups()
    if status is not None:
        return f"HTTP {status}"
    return name or ts_code or compiler_code or code


# _CLASS tells digits apart only in E2BIG-like errno names and in HTTP statuses ([45]\d\d after
# "HTTP", "status"...): texts without those words share the key of their shape whatever their
# digits (digit_fold.ShapeKey).
_CLASS_KEY = ShapeKey([_CLASS])


class ErrorClasses:
    """`error_class`, remembered per shape of text: texts of one shape match _CLASS with the
    same spans (see digit_fold), so the span is remembered and the name read from each text."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: Memo[bytes, tuple[int, int, bool] | None] = Memo()

    def __call__(self, text: str) -> str | None:
        if not _CLASS_KEY.readable:
            return error_class(text)
        seen = window(text)  # all that _CLASS reads of it, and all the key needs
        span = self._memo.get(_CLASS_KEY.key(seen), lambda: _class_span(text))
        if span is None:
            return None
        start, end, status = span
        name = seen[start:end]
        return f"HTTP {name}" if status else name


def _class_span(text: str) -> tuple[int, int, bool] | None:
    """Where `error_class` finds its answer in window(text), and whether it is a status."""
    match = search(_CLASS, text)
    if match is None:
        return None
    if match.group(5) is not None:
        return (*match.span(5), True)
    for group in (1, 2, 3, 4):
        if match.group(group):
            return (*match.span(group), False)
    return None
