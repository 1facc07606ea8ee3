"""The Python API's parameters, each checked or defaulted as the command line's options are, and
made into the compiler's records. Imports nothing heavy: each function imports what it needs when
it is called (see api.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Union

from tilescope.compiler.errors import TilescopeError

if TYPE_CHECKING:
    from tilescope.compiler.pipeline.op_override import OpOverride
    from tilescope.compiler.pipeline.options import CompileOptions

    Overrides = Union[str, OpOverride, Sequence[Union[str, OpOverride]]]


def items(overrides: Overrides) -> tuple[OpOverride, ...]:
    """Override records, each with the text it is stored as, one per op part."""
    from tilescope.compiler.pipeline.op_override import OpOverride
    from tilescope.overrides import format_item, parse_item
    from tilescope.overrides.formats import OverrideSet

    given = [overrides] if isinstance(overrides, (str, OpOverride)) else list(overrides)
    items = []
    for item in given:
        if isinstance(item, str):
            items.append(parse_item(item))
        elif isinstance(item, OpOverride):  # `spec` is how a store knows it (see _compiled_with)
            items.append(item if item.spec else replace(item, spec=format_item(item)))
        else:
            raise TilescopeError(f"{item!r} is not an override: give OP=PARAMS text or an OpOverride")
    OverrideSet(items)  # one override per op part
    return tuple(items)


def target_ref(target: str | None) -> str:
    from tilescope.app.workbench.defaults import DEFAULT_TARGET

    return DEFAULT_TARGET if target is None else target


def options(
    overrides: Overrides,
    policy: str | None,
    l1_usage_cap: float | None,
    dispatch: str | None = None,
    data_tiling: bool = False,
) -> CompileOptions:
    """The compiler's options record of the API's parameters, each checked or defaulted."""
    from tilescope.compiler.pipeline.options import CompileOptions

    if not isinstance(data_tiling, bool):
        raise TilescopeError(f"data_tiling must be True or False, got {data_tiling!r}")
    return CompileOptions(items(overrides), _policy(policy), _cap(l1_usage_cap), dispatch_mode(dispatch), data_tiling)


def _policy(policy: str | None) -> str:
    from tilescope.compiler.pipeline.options import DEFAULT_POLICY

    return DEFAULT_POLICY if policy is None else policy


def _cap(l1_usage_cap: float | None) -> float:
    from tilescope.compiler.pipeline.options import DEFAULT_L1_USAGE_CAP

    if l1_usage_cap is None:
        return DEFAULT_L1_USAGE_CAP
    if not 0 < l1_usage_cap <= 1:
        raise TilescopeError(f"l1_usage_cap must be in (0, 1], got {l1_usage_cap:g}")
    return l1_usage_cap


def dispatch_mode(dispatch: str | None) -> str:
    from tilescope.compiler.targets.chip import DEFAULT_DISPATCH, DISPATCH_MODES

    if dispatch is None:
        return DEFAULT_DISPATCH
    if dispatch not in DISPATCH_MODES:
        raise TilescopeError(f"unknown dispatch {dispatch!r}; known: {', '.join(DISPATCH_MODES)}")
    return dispatch
