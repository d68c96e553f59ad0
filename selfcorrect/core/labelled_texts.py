"""How right the taxonomy is on real failure texts a careful person labelled (rules §6, §13).

Pure. A labelled text file (schema: schemas/failure_texts.schema.json) lists real failure texts,
each with the type a careful person gives it (`type`, plus `also`: other types they would
accept) and where it was found. Each text is typed as the failure hook types it, by the policy's
taxonomy on the text alone. The `typing` detector then counts:

- right: the taxonomy's type is `type` or one of `also`;
- untyped: the taxonomy says `unknown` and the label does not (a miss, never a harm);
- wrong: anything else, the failures that matter: the wrong recovery, budget or skip.

Precision is right / (right + wrong): 1.00 means no text got a wrong type. Recall is
right / all: the share typed as a person types them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct

from selfcorrect.core.model import Failure
from selfcorrect.core.scoring import Mismatch, Score
from selfcorrect.core.taxonomy import UNKNOWN, Taxonomy

DETECTOR = "typing"


class TextLabel(Struct, frozen=True):
    text: str
    type: str
    also: frozenset[str] = frozenset()
    tool: str = ""
    source: str = ""

    def accepts(self, decided: str) -> bool:
        return decided == self.type or decided in self.also


class TextsSeen(Struct, frozen=True):
    """One labelled file, typed: the counts and every text not typed right."""

    texts: int
    right: int
    untyped: int
    wrong: int
    misses: tuple[Mismatch, ...]

    @property
    def score(self) -> Score:
        # Every text not typed right is a false negative of its label; a wrong one is also a
        # false positive of the call.
        return Score(DETECTOR, self.right, self.wrong, self.untyped + self.wrong)


def text_labels(data: Mapping[str, Any]) -> tuple[TextLabel, ...]:
    """A schema-valid labelled text document → its labels, in file order."""
    return tuple(
        TextLabel(
            str(raw["text"]),
            str(raw["type"]),
            frozenset(str(t) for t in raw.get("also") or ()),
            str(raw.get("tool") or ""),
            str(raw.get("source") or ""),
        )
        for raw in data.get("texts") or ()
    )


def type_texts(labels: Sequence[TextLabel], taxonomy: Taxonomy) -> TextsSeen:
    """Type every labelled text as the failure hook would, and count right, untyped, wrong."""
    right = untyped = wrong = 0
    misses: list[Mismatch] = []
    for number, label in enumerate(labels, 1):
        decided = taxonomy.classify(_failure(label)).failure_type
        if label.accepts(decided):
            right += 1
            continue
        if decided == UNKNOWN:
            untyped += 1
        else:
            wrong += 1
        wanted = " or ".join([label.type, *sorted(label.also)])
        misses.append(Mismatch("text", f"#{number} ({label.source})", "typing", wanted, decided))
    return TextsSeen(len(labels), right, untyped, wrong, tuple(misses))


def _failure(label: TextLabel) -> Failure:
    return Failure(id="text", index=0, tool=label.tool, error=label.text, timestamp="")


__all__ = ["DETECTOR", "TextLabel", "TextsSeen", "text_labels", "type_texts"]
