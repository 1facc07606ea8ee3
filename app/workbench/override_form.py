"""The override form and the pending list: what the form offers on a target, what it shows for
an op, the override it describes, and the overrides waiting for a re-run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from compiler.errors import OverrideError, TilescopeError
from compiler.override import REJECTED, OpOverride, OverrideOutcome
from compiler.pipeline import Compilation
from compiler.sharding import Sharding
from compiler.target import Target, shown
from overrides import Problems, check_overrides, format_item, parse_item
from overrides.formats import MAX_FILE_BYTES, MAX_ITEMS, parse_text
from overrides.spec import parse_sharding
from overrides.validate import SHOWN_PROBLEMS, rejection

from .run_view import RunView
from .uploads import upload_name, uploaded_bytes

DEFAULT_FIDELITY_CHOICE = "default"
DEFAULT_CHOICE = "default"  # tile and double buffering as the compiler picks them
OUTPUT = "output"  # the override lays out the op's outputs (else "operand N": that input)
DOUBLE_BUFFER_CHOICES = {DEFAULT_CHOICE: None, "on": True, "off": False}
_BLOCK = re.compile(r"\s*(\d+)\s*x\s*(\d+)\s*x\s*(\d+)\s*")


@dataclass(frozen=True)
class FormValues:
    """The form's fields as the page holds them (None: not chosen)."""

    memory: str | None = None
    memory_layout: str | None = None
    rows: int | None = None
    cols: int | None = None
    layout: str | None = None
    dtype: str | None = None
    fidelity: str | None = None
    applies_to: str = OUTPUT
    tile: str = DEFAULT_CHOICE
    block: str = ""
    double_buffer: str = DEFAULT_CHOICE
    sharding: str = ""  # over the run's devices, as the token spells it: {},{model}

    @classmethod
    def sent(cls, fields: dict | None) -> FormValues:
        """The form as a page sent it: its known fields, any other key left out."""
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in (fields if isinstance(fields, dict) else {}).items() if k in known})


def form_override(op: str | None, form: FormValues) -> OpOverride:
    """The override the form describes; every layout field is set, so it states the layout in full;
    the math fidelity, tile, matmul blocking, double buffering and sharding only when chosen. It is
    checked as its tt-mlir spelling would be, so the form and a file reject the same things."""
    if not op:
        raise TilescopeError("select an op first, or add overrides to the pending list")
    f = form
    if None in (f.memory, f.memory_layout, f.rows, f.cols, f.layout, f.dtype):
        raise TilescopeError("fill in every field of the override form")
    blocking = None
    if f.block and str(f.block).strip():
        found = _BLOCK.fullmatch(str(f.block))
        if not found:
            raise TilescopeError(f"block {f.block!r}: expected M x N x K tiles per core, e.g. 4x4x2")
        blocking = tuple(int(v) for v in found.groups())
    applies_to = str(f.applies_to or OUTPUT)
    tile = None if f.tile in (None, DEFAULT_CHOICE) else _numbers("tile", f.tile, "x")
    ov = OpOverride(
        op,
        (_numbers("grid rows", f.rows)[0], _numbers("grid cols", f.cols)[0]),
        f.memory,
        f.memory_layout,
        f.layout,
        f.dtype,
        None if f.fidelity in (None, DEFAULT_FIDELITY_CHOICE) else f.fidelity,
        block=blocking,
        double_buffer=DOUBLE_BUFFER_CHOICES.get(f.double_buffer or DEFAULT_CHOICE),
        tile=tile,
        sharding=_sharding(f.sharding),
        operand=_numbers("applies to", applies_to.removeprefix("operand "))[0] if applies_to != OUTPUT else None,
    )
    return parse_item(format_item(ov))


def _sharding(text) -> Sharding | None:
    """The sharding field's value (empty: the compiler's); what is wrong with it in one line."""
    if text is None or not str(text).strip():
        return None
    try:
        return parse_sharding(str(text))
    except ValueError as err:
        raise TilescopeError(f"override form: sharding {shown(str(text))}: {err}") from None


def sharding_placeholder(compilation: Compilation) -> str | None:
    """What the sharding field suggests, in the run's mesh axes (`{},{model}`); None when the run
    is on one device, where the form has no sharding field."""
    mesh = compilation.levels["partition"].meta.get("mesh")
    if mesh is None or mesh.devices <= 1:
        return None
    return "{},{" + ",".join(name for name, size in mesh.axes if size > 1) + "}"


def _numbers(field: str, value, sep: str | None = None) -> tuple[int, ...]:
    """A field's whole numbers (a tile's "32x32" has two); anything else a page sends is one line."""
    try:
        return tuple(int(v) for v in (str(value).split(sep) if sep else [value]))
    except (TypeError, ValueError):
        raise TilescopeError(f"override form: {field} {value!r} is not a choice it offers") from None


def form_values(compilation: Compilation, op_name: str | None) -> FormValues:
    """What the form shows for an op: its current output layout at the `layout` level, and the
    compiler's own choices for the rest."""
    layout_graph = compilation.levels["layout"]
    if not op_name or not layout_graph.has_op(op_name) or not layout_graph.op(op_name).outputs:
        return FormValues()
    op = layout_graph.op(op_name)
    current = layout_graph.tensors[op.outputs[0]].layout
    rows, cols = op.attrs.get("grid", (1, 1))
    return FormValues(
        current.memory,
        current.memory_layout,
        rows,
        cols,
        current.layout,
        current.dtype,
        op.attrs.get("math_fidelity", DEFAULT_FIDELITY_CHOICE),
    )


@dataclass(frozen=True)
class Choices:
    """What the override form offers on a target, in the target's own terms."""

    memories: list[str]  # by the target's names (l1, lls, dram, ...)
    rows: list[int]  # grid sizes up to its grid
    cols: list[int]
    dtypes: list[str]  # what its matrix engine computes, and the float formats it converts
    tiles: list[str]  # DEFAULT_CHOICE, then the shapes its tensors may be stored in
    fidelities: list[str]  # DEFAULT_FIDELITY_CHOICE, then those that change its engine's work


def override_choices(target: Target) -> Choices:
    """What the override form offers on `target`."""
    return Choices(
        memories=list(target.memories),
        rows=list(range(1, target.grid[0] + 1)),
        cols=list(range(1, target.grid[1] + 1)),
        dtypes=sorted(set(target.matrix.flops_per_cycle) | {"f32", "bf16", "f16"}),
        tiles=[DEFAULT_CHOICE, *(f"{r}x{c}" for r, c in target.tile_shapes)],
        fidelities=[DEFAULT_FIDELITY_CHOICE, *target.fidelities],
    )


def applies_to_choices(compilation: Compilation, op_name: str | None) -> list[str]:
    """The op's outputs, or one of its inputs (read through a to_layout in that layout)."""
    layout_graph = compilation.levels["layout"]
    if not op_name or not layout_graph.has_op(op_name):
        return [OUTPUT]
    return [OUTPUT, *(f"operand {i}" for i in range(len(layout_graph.op(op_name).inputs)))]


def pending_overrides(pending: Sequence, problems: Problems | None = None) -> list[OpOverride]:
    """The page's pending list, read: at most MAX_ITEMS (a file's limit), counted before any is
    parsed, since the list comes from the page and may be anything. An item that cannot be read
    stops the reading, or with `problems` is one of them and left out."""
    if len(pending) > MAX_ITEMS:
        raise TilescopeError(f"{len(pending):,} pending overrides: at most {MAX_ITEMS:,}")
    read = []
    for i, item in enumerate(pending):
        try:
            if not isinstance(item, str):
                raise OverrideError(f"pending item {i + 1}: {shown(item)} is not an override")
            read.append(parse_item(item))
        except OverrideError as err:
            if problems is None:
                raise
            problems.add(str(err))
    return read


def with_pending(pending: Sequence[str], *overrides: OpOverride) -> list[str]:
    """The pending list with `overrides` added in order, each in place of any earlier pending
    override of the same op part. One pass: an imported file may hold 100,000 items."""
    if len(pending) + len(overrides) > MAX_ITEMS:
        raise TilescopeError(f"{len(pending) + len(overrides):,} pending overrides: at most {MAX_ITEMS:,}")
    kept = {o.key: s for o, s in zip(pending_overrides(pending), pending)}
    for override in overrides:
        kept.pop(override.key, None)  # re-inserted last, as if removed and added
        kept[override.key] = format_item(override)
    return list(kept.values())


def staged_override(run: RunView, op: str | None, form: FormValues) -> OpOverride:
    """The form's override of `op`, for the pending list: refused with one line when it cannot
    apply to `run` (with the run's own overrides) by itself, so the list holds no dead item."""
    override = form_override(op, form)
    problems = rerun_problems(run, [override])
    if problems:
        raise OverrideError(problems.lines[0])
    return override


def rerun_overrides(
    compilation: Compilation,
    selected: str | None,
    pending: Sequence,
    form: FormValues,
    problems: Problems | None = None,
) -> list[OpOverride]:
    """What a re-run applies: the pending overrides and the form's override of the selected op
    (left out when there are pending ones and the form still shows the op as it is). With
    `problems`, unreadable items and a form that describes no override are among them."""
    items = pending_overrides(pending, problems)
    if pending and (not selected or form == form_values(compilation, selected)):
        return items  # the pending list alone
    try:
        override = form_override(selected, form)
    except TilescopeError as err:
        if problems is None or not pending:
            raise
        problems.add(str(err))
        return items
    return [*(o for o in items if o.key != override.key), override]  # as with_pending orders them


def rerun_problems(run: RunView, overrides: Sequence[OpOverride], problems: Problems | None = None) -> Problems:
    """Why a re-run of `run` with `overrides` cannot go ahead: each of them, and each of the run's
    own they leave in place, checked against its compiled model without compiling again."""
    return check_overrides(run.rerun_with(overrides), run.compilation, run.l1_usage_cap, problems)


def rejections(outcomes: Sequence[dict]) -> Problems:
    """The overrides a compile rejected (outcomes as a run stores them), a line each."""
    problems = Problems()
    for outcome in outcomes:
        if outcome["status"] == REJECTED:
            problems.add(rejection(OverrideOutcome(**outcome)))
    return problems


def imported_overrides(filename: str, contents: str) -> tuple[list[OpOverride], list[str]]:
    """The overrides in an uploaded file of any format users exchange (tilescope JSON, TT-Explorer
    JSON, tt-mlir options), and a line per item that could not be read (the first SHOWN_PROBLEMS)."""
    filename = upload_name(filename)
    data = uploaded_bytes(filename, contents, MAX_FILE_BYTES, "overrides file")
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise TilescopeError(f"{filename}: not a text file of overrides") from None
    problems: list[str] = []
    found = parse_text(text, filename, problems)
    if len(problems) > SHOWN_PROBLEMS:
        problems[SHOWN_PROBLEMS:] = [f"... and {len(problems) - SHOWN_PROBLEMS:,} more problems"]
    return found.items, problems
