"""Errors a user can cause and fix, and the IR verifier's: each renders as one line naming the cause."""


class TilescopeError(Exception):
    """Bad input (file, model, target, override, database). The CLI and UI print str(err) only."""


class ModelLoadError(TilescopeError):
    """A model reference that cannot be read or parsed."""


class TargetError(TilescopeError):
    """An unknown target name or a malformed target file."""


class OverrideError(TilescopeError):
    """An override that names an unknown op or cannot be applied."""


class VerifyError(TilescopeError):
    """IR a pass left breaking a rule of its level (compiler/ir/verifier.py): a compiler bug, not
    the user's, yet said in one line as bad input is, naming the op and the rule."""

    def __init__(self, message: str, rule: str, op: str | None) -> None:
        super().__init__(message)
        self.rule, self.op = rule, op  # the rule's name; the op breaking it (None: the graph)

    def __reduce__(self):  # whole across processes (a compile in a worker): args alone lack rule and op
        return type(self), (str(self), self.rule, self.op)


def clip(text: str, limit: int = 80) -> str:
    """`text` on one line (its runs of whitespace, line breaks among them, as one space), cut to
    `limit` characters, for a one-line message or warning."""
    text = " ".join(text.split()) if text.splitlines() != [text] else text
    return text if len(text) <= limit else text[: limit - 3] + "..."
