"""Replay a measured report through tilescope: each device op built as one op of tilescope's IR with
the shapes, dtypes, layouts, memory, shards, grid and fidelity the report recorded
(replay_build.py), compiled on the report's chip (or the target asked for) and simulated, giving
one OpTiming per built op named exactly as the measured run names it (naming.py), on its device,
with its program config, laid back to back on each device in the report's order.

Ops alike in everything the build reads (code, tensors, cores, fidelity, attributes) are compiled
once: a 1,872-op CLIP encoder is about twenty distinct ops. The one-op model skips the graph
passes that rewrite a model (no-op reshapes and casts dropped, fusions): the report's op is what
ran. An override the compiler refuses is said in a note and a weaker one tried (replay_layouts.py).
An op that cannot be built is listed with its reason in the Coverage, never guessed; so is every
op past MAX_BUILDS distinct ones, which bounds the work a hostile report can ask for.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.meta import OVERRIDES
from tilescope.compiler.ir.verifier import verification_requested, verify
from tilescope.compiler.passes.normalize import Normalize
from tilescope.compiler.pipeline.op_override import REJECTED, OpOverride
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import stages
from tilescope.compiler.profiles.coverage import Coverage, coverage_of
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.op_codes import kind_of
from tilescope.compiler.profiles.replay_build import build
from tilescope.compiler.profiles.replay_layouts import OP, weaker
from tilescope.compiler.profiles.replay_model import Built, NotBuilt
from tilescope.compiler.profiles.replay_target import replay_target
from tilescope.compiler.profiles.report import Report, ReportOp
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.chip import Target

MAX_BUILDS = 2_000  # distinct ops compiled per report (~3 ms each): past it, ops are listed unbuilt
TRIES = 4  # compiles of one op, each with the overrides refused before weakened
DISPATCH = "trace"  # a report's DEVICE KERNEL DURATION has no host dispatch in it


@dataclass(frozen=True)
class ReplayedOp:
    """One device op of the report: its name, its kind, and its predicted timing (None when it
    was not built, with why), with what the build could not say as the report did."""

    name: str
    op: ReportOp
    kind: str
    timing: OpTiming | None
    notes: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class Replay:
    """A report replayed on a target: every device op, aligned with `report.ops`."""

    report: Report
    target: Target
    ops: tuple[ReplayedOp, ...]
    coverage: Coverage
    warnings: tuple[str, ...] = ()

    @property
    def timings(self) -> tuple[OpTiming, ...]:
        """The built ops' timings, in the report's order."""
        return tuple(r.timing for r in self.ops if r.timing is not None)


def replay(report: Report, target: str | None = None) -> Replay:
    """`report` replayed on `target` (a name or file), or on the chip (or system) it was measured on."""
    chosen = replay_target(report, target)
    made: dict[tuple, tuple[OpTiming, tuple[str, ...]] | str] = {}
    clocks: dict[int, float] = {}
    replayed = []
    for op, name in zip(report.ops, op_names(report)):
        kind = kind_of(op.op_code, op.attributes)
        key = alike(op)
        if key not in made:
            made[key] = _predict(op, kind, chosen.target) if len(made) < MAX_BUILDS else _too_many()
        found = made[key]
        if isinstance(found, str):
            replayed.append(ReplayedOp(name, op, kind, None, reason=found))
            continue
        template, notes = found
        start = clocks.get(op.device, 0.0)
        timing = template.replace(
            name=name, start_ns=start, device=op.device, config=op.program_config[:2048], op_code=op.op_code
        )
        clocks[op.device] = timing.end_ns
        replayed.append(ReplayedOp(name, op, kind, timing, notes))
    unbuilt = ((r.op, r.reason) for r in replayed if r.timing is None)
    warnings = (chosen.warning,) if chosen.warning else ()
    return Replay(report, chosen.target, tuple(replayed), coverage_of(report, unbuilt), warnings)


def _too_many() -> str:
    return f"more than {MAX_BUILDS:,} distinct ops in the report; the rest are not built"


def alike(op: ReportOp) -> tuple:
    """Everything of `op` a build reads: ops with the same key give the same prediction."""
    return (
        op.op_code,
        op.inputs,
        op.outputs,
        op.fidelity,
        op.cores,
        op.output_shard,
        tuple(sorted(op.attributes.items())),
    )


def _predict(op: ReportOp, kind: str, target: Target) -> tuple[OpTiming, tuple[str, ...]] | str:
    """The op's timing (start 0) and notes, or why it was not built."""
    found = compiled_op(op, kind, target)
    if isinstance(found, str):
        return found
    kernel, notes = found
    try:
        timing, note = op_timing(kernel, target)
    except Exception as err:  # a kernel the simulator cannot time is listed, with what it said
        return f"the simulator could not time it: {type(err).__name__}: {' '.join(str(err).split())[:200]}"
    return timing, tuple(dict.fromkeys((*notes, note) if note else notes))


def compiled_op(op: ReportOp, kind: str, target: Target) -> tuple[Graph, tuple[str, ...]] | str:
    """The kernel level of `op`'s one-op model and the notes of its build, or why it was not built."""
    try:
        return _kernel(build(op, kind, target), target)
    except NotBuilt as err:
        return str(err)
    except Exception as err:  # a build the compiler cannot take is listed, with what it said
        said = " ".join(str(err).split())  # one line, whatever the error said
        return f"the compiler could not take it: {type(err).__name__}: {said[:200]}"


def _kernel(built: Built, target: Target) -> tuple[Graph, tuple[str, ...]]:
    """The built op compiled, overrides the compiler refuses weakened and tried again."""
    model = import_mlir(built.text, "replay")
    overrides = list(built.overrides)
    notes = list(built.notes)
    for _ in range(TRIES):
        kernel = _compiled(model.graph, target, CompileOptions(tuple(overrides), dispatch=DISPATCH))
        outcomes = kernel.meta[OVERRIDES]
        refused = [i for i, outcome in enumerate(outcomes) if outcome.status == REJECTED]
        if not refused:
            break
        for i in refused:
            notes.append(f"{_said(overrides[i])} not taken: {outcomes[i].reason}")
        overrides = [weaker(ov) if i in refused else ov for i, ov in enumerate(overrides)]
        overrides = [ov for ov in overrides if ov is not None]
    return kernel, tuple(notes)


def op_timing(kernel: Graph, target: Target) -> tuple[OpTiming, str]:
    """The measured op's timing in a compiled one-op model, simulated on `target` (which may differ
    from the target it was compiled for only in its costs), and a note when it runs no kernel."""
    timing = next((t for t in simulate(kernel, target, DISPATCH, timeline=False).ops if t.name == OP), None)
    if timing is None:  # a view (a reshape of the same bytes): no kernel runs
        return _no_kernel(kernel, target), "no kernel: tilescope runs it as a view of its operand"
    return timing, ""


def _said(override: OpOverride) -> str:
    """An override as a note names it: the part and what was asked of it."""
    asked = [override.memory, override.memory_layout, override.layout, override.dtype, override.fidelity]
    grid = f"{override.grid[0]}x{override.grid[1]}" if override.grid else None
    return f"{override.spec or 'result'} as {' '.join(str(a) for a in (grid, *asked) if a)}"


def _compiled(graph: Graph, target: Target, options: CompileOptions) -> Graph:
    """The kernel level of a one-op model: normalized into the vocabulary, then partitioned, laid
    out and split as any model is (compiler/pipeline/stages.py), without the graph passes that
    rewrite a model. The IR verifier checks each pass when asked (TILESCOPE_VERIFY), as in any compile."""
    verifying = verification_requested()
    graph = Normalize().run(graph.with_level("graph"))
    for level, passes in stages(target, options)[1:]:
        graph = graph.with_level(level)
        for compiler_pass in passes:
            graph = compiler_pass.run(graph)
            if verifying:
                verify(graph, after=compiler_pass.name)
    return graph


def _no_kernel(kernel: Graph, target: Target) -> OpTiming:
    op = kernel.op(OP)
    out = kernel.tensors[op.outputs[0]] if op.outputs else None
    grid = op.attrs.get("grid", (1, 1))
    return OpTiming(
        name=OP,
        kind=op.kind,
        start_ns=0.0,
        duration_ns=0.0,
        flops=0,
        bytes={},
        bound="none",
        why="a view of its operand: no kernel runs",
        memory=out.layout.memory if out is not None and out.layout else "",
        grid=f"{grid[0]}x{grid[1]}",
        cores=grid[0] * grid[1],
        roofline_ns=0.0,
    )
