"""Why a search's candidates were illegal, grouped: the compiler's reason for each rejected trial,
with the figures and names that differ from op to op taken out, so that "L1 over-full on core 3,4
by 120 KB" and the same on another core by another amount count as one reason (what tt-mlir's
users ask its optimizer to say: tt-mlir issues 2714 and 2450)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tilescope.compiler.pipeline.op_override import REJECTED, OverrideOutcome

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\b\d+(\.\d+)?(x\d+(\.\d+)?)*\b")
# an op or tensor name: dotted (a model's), or a kind and its number (relu_0)
_NAMED = re.compile(r"\b[A-Za-z_][\w-]*(\.[\w-]+)+\b|\b[a-z]+_\d+\b")
_SUGGESTED = re.compile(r"; grids that would: .*$")  # how many grids would, by op: one reason
# the families the reasons fall in, by a word each reason of the family says
FAMILIES = (
    ("blocking does not fit the op", ("block ", "sub-block", "subblock", "destination", "circular buffers")),
    ("L1 overflow", ("l1", "fit", "full", "overflow")),
    ("shard does not divide", ("divide", "shard")),
    ("grid limits", ("grid", "cores")),
    ("fusion does not apply", ("fuse", "head")),
    ("inner tiles do not fit the registers", ("registers",)),
)


def reason_shape(reason: str) -> str:
    """`reason` with its figures and names replaced: the same shape for every op it is said of."""
    text = _SUGGESTED.sub("", _QUOTED.sub("'…'", reason))
    text = _NAMED.sub("OP", text)
    return _NUMBER.sub("N", text)


def family(reason: str) -> str:
    low = reason.lower()
    return next((name for name, words in FAMILIES if any(w in low for w in words)), "other")


@dataclass
class IllegalReason:
    """One shape of reason: how many trials it rejected, and the first said in full."""

    family: str
    shape: str
    count: int
    example: str


@dataclass
class Illegal:
    """The rejected trials of a search, by the shape of the first rejection of each."""

    by_shape: dict[str, IllegalReason] = field(default_factory=dict)

    def add(self, outcomes: list[OverrideOutcome]) -> None:
        first = next((o for o in outcomes if o.status == REJECTED), None)
        if first is not None:
            self.add_reason(first.spec, first.reason)

    def add_reason(self, spec: str, reason: str) -> None:
        """A candidate `spec` rejected for `reason` (by a trial, or by the check before one)."""
        shape = reason_shape(reason)
        if shape in self.by_shape:
            self.by_shape[shape].count += 1
        else:
            self.by_shape[shape] = IllegalReason(family(reason), shape, 1, f"{spec}: {reason}")

    @property
    def total(self) -> int:
        return sum(r.count for r in self.by_shape.values())

    def families(self) -> list[tuple[str, int, list[IllegalReason]]]:
        """Each family with its trials and its shapes, most trials first."""
        grouped: dict[str, list[IllegalReason]] = {}
        for reason in self.by_shape.values():
            grouped.setdefault(reason.family, []).append(reason)
        rows = [(name, sum(r.count for r in rs), sorted(rs, key=lambda r: -r.count)) for name, rs in grouped.items()]
        return sorted(rows, key=lambda row: (-row[1], row[0]))

    def as_dict(self) -> list[dict]:
        return [
            {
                "family": name,
                "trials": count,
                "reasons": [{"shape": r.shape, "trials": r.count, "example": r.example} for r in rs],
            }
            for name, count, rs in self.families()
        ]
