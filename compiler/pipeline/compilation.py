"""A model compiled for a target: every level the stages made, and each level's MLIR text,
printed once when first asked for."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilescope.compiler.ir.meta import LINES, OVERRIDES
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.printer import print_graph
from tilescope.compiler.pipeline.op_override import OverrideOutcome
from tilescope.compiler.pipeline.options import DEFAULT_OPTIONS, CompileOptions
from tilescope.compiler.targets.chip import Target


@dataclass
class Compilation:
    model: ImportedModel
    target: Target
    levels: dict[str, Graph]  # graph, partition, layout, kernel; `input` is the imported module
    # what it was compiled with; the dispatch is the simulator's, so it is the default here (one
    # compilation serves both dispatches)
    options: CompileOptions = DEFAULT_OPTIONS
    _printed: dict[str, tuple[str, dict[str, tuple[int, int]]]] = field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict:
        # the printed text is a cache, filled by whoever reads it (threads, as a copy is pickled)
        return {**self.__dict__, "_printed": {}}

    @property
    def kernel(self) -> Graph:
        return self.levels["kernel"]

    @property
    def policy(self) -> str:
        return self.options.policy

    @property
    def override_outcomes(self) -> list[OverrideOutcome]:
        return self.levels["layout"].meta.get(OVERRIDES, [])

    @property
    def warnings(self) -> list[str]:
        return self.levels["kernel"].warnings

    def graph_at(self, level: str) -> Graph:
        return self.model.graph if level == "input" else self.levels[level]

    def mlir(self, level: str) -> str:
        return self.mlir_with_lines(level)[0]

    def mlir_with_lines(self, level: str) -> tuple[str, dict[str, tuple[int, int]]]:
        """MLIR text of a level and, per op name, its first and last line (1-based)."""
        if level not in self._printed:
            if level == "input":
                lines = {op.name: op.meta[LINES] for op in self.model.graph.ops if LINES in op.meta}
                self._printed[level] = (self.model.text, lines)
            else:
                self._printed[level] = print_graph(self.levels[level])
        return self._printed[level]
