"""The override form and the pending list: what the form offers on a target, what it shows for
an op, the override it describes, and the overrides waiting for a re-run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tilescope.compiler.ir.meta import MESH
from tilescope.compiler.errors import OverrideError, TilescopeError
from tilescope.compiler.ir.graph import Op
from tilescope.compiler.pipeline.op_override import REJECTED, OpOverride, OverrideOutcome
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.data_file import shown
from tilescope.overrides import Problems, check_overrides, format_item, parse_item
from tilescope.overrides.formats import MAX_FILE_BYTES, parse_text
from tilescope.overrides.override_set import MAX_ITEMS
from tilescope.overrides.spec import parse_sharding
from tilescope.overrides.validate import SHOWN_PROBLEMS, rejection

from tilescope.app.workbench.run_view import RunView
from tilescope.app.workbench.uploads import upload_name, uploaded_bytes

DEFAULT_FIDELITY_CHOICE = "default"
DEFAULT_CHOICE = "default"  # tile and double buffering as the compiler picks them
OUTPUT = "output"  # the override lays out the op's outputs (else "operand N": that input)
DOUBLE_BUFFER_CHOICES = {DEFAULT_CHOICE: None, "on": True, "off": False}
# whether the graph's fusions take the op (fuse#): as the compiler does, asked, or kept apart
FUSE_CHOICES = {DEFAULT_CHOICE: None, "fuse": True, "keep apart": False}
_BLOCK = re.compile(r"\d+(x\d+)+")  # tile counts, RxC or MxNxK


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
    subblock: str = ""
    inner_tiles: str = ""  # a data-tiled matmul's, as the token spells them: 16x16x1
    double_buffer: str = DEFAULT_CHOICE
    sharding: str = ""  # over the run's devices, as the token spells it: {},{model}
    fuse: str = DEFAULT_CHOICE

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
    operand, result = _part(f.applies_to)
    tile = None if f.tile in (None, DEFAULT_CHOICE) else _numbers("tile", f.tile, "x")
    ov = OpOverride(
        op,
        (_numbers("grid rows", f.rows)[0], _numbers("grid cols", f.cols)[0]),
        f.memory,
        f.memory_layout,
        f.layout,
        f.dtype,
        None if f.fidelity in (None, DEFAULT_FIDELITY_CHOICE) else f.fidelity,
        block=_blocking("block", f.block, 3, "M x N x K tiles per core, e.g. 4x4x2"),
        subblock=_blocking("subblock", f.subblock, 2, "H x W output tiles, e.g. 2x4"),
        inner_tiles=_blocking("inner tiles", f.inner_tiles, 3, "M0 x N0 x K0 elements, e.g. 16x16x1"),
        double_buffer=DOUBLE_BUFFER_CHOICES.get(f.double_buffer or DEFAULT_CHOICE),
        tile=tile,
        fuse=_fuse(f.fuse, operand, result),
        sharding=_sharding(f.sharding),
        operand=operand,
        result=result,
    )
    return parse_item(format_item(ov))


def _fuse(choice, operand: int | None, result: int | None) -> bool | None:
    """The Fusion field's choice; an op's fusions are the op's, not one operand's or result's."""
    if (choice or DEFAULT_CHOICE) not in FUSE_CHOICES:
        raise TilescopeError(f"override form: fusion {shown(str(choice))} is not a choice it offers")
    fuse = FUSE_CHOICES[choice or DEFAULT_CHOICE]
    if fuse is not None and (operand is not None or result is not None):
        raise TilescopeError("override form: Fusion applies to the op: choose Applies to: output")
    return fuse


def fusion_only(op: str | None, form: FormValues, shown: FormValues) -> OpOverride | None:
    """The form's override when only its Fusion field differs from what it `shown` for the op:
    the fusion alone, so the op's layout, which a fusion may give another shape, is left to the
    compiler; None otherwise."""
    if not op or form.fuse == shown.fuse or replace(form, fuse=shown.fuse) != shown:
        return None
    return parse_item(format_item(OpOverride(op, fuse=_fuse(form.fuse, None, None))))


def _blocking(field: str, text, count: int, expected: str) -> tuple[int, ...] | None:
    """A block or sub-block field's tile counts (empty: the compiler's)."""
    if text is None or not str(text).strip():
        return None
    packed = "".join(str(text).split())  # "4 x 4 x 2" reads as 4x4x2
    if not _BLOCK.fullmatch(packed) or packed.count("x") != count - 1:
        raise TilescopeError(f"{field} {shown(str(text))}: expected {expected}")
    return tuple(int(v) for v in packed.split("x"))


def _part(applies_to) -> tuple[int | None, int | None]:
    """(operand, result) of an "Applies to" choice: `output`, `operand N` or `result N`."""
    text = str(applies_to or OUTPUT)
    for prefix in ("operand ", "result "):
        if text.startswith(prefix):
            index = _numbers("applies to", text.removeprefix(prefix))[0]
            return (index, None) if prefix == "operand " else (None, index)
    if text != OUTPUT:
        raise TilescopeError(f"override form: applies to {shown(text)} is not a choice it offers")
    return None, None


def part_name(operand: int | None, result: int | None) -> str:
    """The "Applies to" choice of an op part."""
    if operand is not None:
        return f"operand {operand}"
    return OUTPUT if result is None else f"result {result}"


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
    mesh = compilation.levels["partition"].meta.get(MESH)
    if mesh is None or mesh.devices <= 1:
        return None
    return "{},{" + ",".join(name for name, size in mesh.axes if size > 1) + "}"


def _numbers(field: str, value, sep: str | None = None) -> tuple[int, ...]:
    """A field's whole numbers (a tile's "32x32" has two); anything else a page sends is one line."""
    try:
        return tuple(int(v) for v in (str(value).split(sep) if sep else [value]))
    except (TypeError, ValueError):
        raise TilescopeError(f"override form: {field} {value!r} is not a choice it offers") from None


def form_values(run: RunView, op_name: str | None, applies_to=None) -> FormValues:
    """What the form shows for a part of an op (its output, one result or one operand): the layout
    it has at the `layout` level, and every knob the run's override of that part holds, so the
    next Apply keeps what the user leaves alone. With no part named, the output, unless the run
    overrides only other parts of the op: then the first of those."""
    graph = run.compiled.levels["layout"]
    op = layout_op(run, op_name)
    if op is None or not op.outputs:
        return FormValues()
    items = {o.key[1:]: o for o in run.options.overrides if o.op == op_name}
    part = _shown_part(op, items, applies_to)
    operand, result = part
    tensor = graph.tensors[op.inputs[operand] if operand is not None else op.outputs[result or 0]]
    current, item = tensor.layout, items.get(part, OpOverride(op_name))
    rows, cols = current.grid if operand is not None else op.attrs.get("grid", (1, 1))
    fidelity = op.attrs.get("math_fidelity", DEFAULT_FIDELITY_CHOICE) if operand is None else DEFAULT_FIDELITY_CHOICE
    return FormValues(
        current.memory,
        current.memory_layout,
        rows,
        cols,
        current.layout,
        current.dtype,
        item.fidelity or fidelity,
        applies_to=part_name(operand, result),
        tile=_counts(item.tile) or DEFAULT_CHOICE,
        block=_counts(item.block),
        subblock=_counts(item.subblock),
        inner_tiles=_counts(item.inner_tiles),
        double_buffer=next(k for k, v in DOUBLE_BUFFER_CHOICES.items() if v is item.double_buffer),
        sharding=item.sharding.spec() if item.sharding is not None else "",
        fuse=next(k for k, v in FUSE_CHOICES.items() if v is item.fuse),
    )


def _shown_part(op, items: dict, applies_to) -> tuple[int | None, int | None]:
    """The op part the form shows: the one asked for, else the output, or the first part the run
    overrides when it does not override the output."""
    if applies_to is not None:
        return part_of(op, applies_to)
    return (None, None) if not items or (None, None) in items else next(iter(items))


def layout_op(run: RunView, op_name) -> Op | None:
    """The selected op at the `layout` level (None: no op, or one it lacks; a page may send any value)."""
    graph = run.compiled.levels["layout"]
    return graph.op(op_name) if isinstance(op_name, str) and graph.has_op(op_name) else None


def part_of(op, applies_to) -> tuple[int | None, int | None]:
    """(operand, result) of an "Applies to" choice, if the op has that part (a page may send
    anything); else its outputs (None, None)."""
    try:
        operand, result = _part(applies_to)
    except TilescopeError:
        return None, None
    index, count = (operand, len(op.inputs)) if operand is not None else (result or 0, len(op.outputs))
    within = 0 <= index < count
    return (operand, result) if within else (None, None)


def _counts(value: tuple[int, ...] | None) -> str:
    return "x".join(map(str, value)) if value else ""


@dataclass(frozen=True)
class AppliesTo:
    """A choice of "Applies to": an op part, and whether the run overrides it."""

    value: str
    overridden: bool = False


def applies_to_choices(run: RunView, op_name: str | None) -> list[AppliesTo]:
    """The op's outputs, each result when it has several (or the run overrides one), and each of
    its inputs (read through a to_layout in the layout asked for)."""
    op = layout_op(run, op_name)
    if op is None:
        return [AppliesTo(OUTPUT)]
    overridden = {part_name(o.operand, o.result) for o in run.options.overrides if o.op == op_name}
    results = [i for i in range(len(op.outputs)) if len(op.outputs) > 1 or f"result {i}" in overridden]
    parts = [OUTPUT, *(f"result {i}" for i in results), *(f"operand {i}" for i in range(len(op.inputs)))]
    return [AppliesTo(p, p in overridden) for p in parts]


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
    override = fusion_only(op, form, form_values(run, op, form.applies_to)) or form_override(op, form)
    problems = rerun_problems(run, [override])
    if problems:
        raise OverrideError(problems.lines[0])
    return override


def rerun_overrides(
    run: RunView,
    selected: str | None,
    pending: Sequence,
    form: FormValues,
    problems: Problems | None = None,
) -> list[OpOverride]:
    """What a re-run of `run` applies: the pending overrides and the form's override of the
    selected op (left out when there are pending ones and the form still shows the op part as it
    is). With `problems`, unreadable items and a form that describes no override are among them."""
    items = pending_overrides(pending, problems)
    if pending and (not selected or form == form_values(run, selected, form.applies_to)):
        return items  # the pending list alone
    try:
        override = fusion_only(selected, form, form_values(run, selected, form.applies_to))
        override = override or form_override(selected, form)
    except TilescopeError as err:
        if problems is None or not pending:
            raise
        problems.add(str(err))
        return items
    return [*(o for o in items if o.key != override.key), override]  # as with_pending orders them


def rerun_problems(run: RunView, overrides: Sequence[OpOverride], problems: Problems | None = None) -> Problems:
    """Why a re-run of `run` with `overrides` cannot go ahead: each of them, and each of the run's
    own they leave in place, checked against its compiled model without compiling again."""
    return check_overrides(run.rerun_with(overrides), run.compiled, problems)


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
