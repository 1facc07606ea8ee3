"""Errors a user can cause and fix: each renders as one line naming the cause."""


class TilescopeError(Exception):
    """Bad input (file, model, target, override, database). The CLI and UI print str(err) only."""


class ModelLoadError(TilescopeError):
    """A model reference that cannot be read or parsed."""


class TargetError(TilescopeError):
    """An unknown target name or a malformed target file."""


class OverrideError(TilescopeError):
    """An override that names an unknown op or cannot be applied."""


def clip(text: str, limit: int = 80) -> str:
    """`text` cut to `limit` characters for a one-line message or warning."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
