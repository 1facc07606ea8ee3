"""Hierarchical grouping of a graph's ops by name scope, as Model Explorer folds layers.

An op named `encoder.layer.3.attention.self.query.matmul` sits in the scopes `encoder`,
`encoder.layer`, `encoder.layer.3`, ... Each scope is a group that is either collapsed (one node
standing for all its ops) or expanded (its children shown). Scopes that add nothing are skipped: one
holding a single op, or one whose ops are exactly those of a sub-scope. A graph without scopes (ops
named `matmul_0`, `add_1`, ...) that is too large to show at once is folded into runs of consecutive
ops instead. A group of more than CHUNK children (1,040 layers, or a thousand runs) gets chunks of
consecutive children between it and them, `layer[0-99]`, ...: a view never needs more nodes than
it may draw to open any op.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.opset import ATTENTION, CONV, MATMUL, POOL, REDUCE, kind_of, op_class

from tilescope.app.workbench.parameter_scopes import parameter_scopes

GROUP = "group:"  # prefix of a group's node id; an op's node id is its name
DEFAULT_BUDGET = 60  # nodes the default view opens up to: few enough to label
MAX_NODES = 400  # nodes a view may show (Model Explorer stays responsive to a few hundred)
RUN_LENGTH = 100  # ops per folded run in a graph without scopes
CHUNK = 100  # children a group shows directly; more are chunked
ANCHOR_CLASSES = (MATMUL, CONV, ATTENTION, REDUCE, POOL)  # the ops that close a dataflow block
# XLA's HLO opcodes: `reshape.78` names an instruction of that kind, where `features.0` (a torch
# nn.Sequential's first module) is a scope
_HLO_OPCODES = (
    "abs add and atan2 batch-norm-inference bitcast bitcast-convert broadcast call cbrt ceil clamp "
    "collective-permute compare complex concatenate conditional constant convert convolution copy cosine "
    "custom-call divide dot dynamic-slice dynamic-update-slice erf exponential exponential-minus-one fft "
    "floor fusion gather get-tuple-element iota is-finite log log-plus-one logistic map maximum minimum "
    "multiply negate not or pad parameter power real reduce reduce-precision reduce-window remainder "
    "reshape reverse rng round-nearest-afz round-nearest-even rsqrt scatter select select-and-scatter "
    "shift-left shift-right-arithmetic shift-right-logical sign sine slice sort sqrt subtract tan tanh "
    "transpose tuple while xor all-gather all-reduce all-to-all reduce-scatter"
).split()
# an instruction name: opcode.number, and what a rewrite made of it (`gather.82_permuteInput`)
_INSTRUCTION = re.compile(rf"(?:{'|'.join(map(re.escape, sorted(_HLO_OPCODES, key=len, reverse=True)))})\.\d+[^.]*")


@dataclass(frozen=True)
class Node:
    id: str  # the op's name, or GROUP + scope
    label: str
    ops: tuple[str, ...]  # the ops it stands for, in graph order

    @property
    def is_group(self) -> bool:
        return self.id.startswith(GROUP)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    tensors: tuple[str, ...]


@dataclass(frozen=True)
class GroupedView:
    nodes: list[Node]
    edges: list[Edge]
    node_of: dict[str, str]  # each op -> the id of the node it is drawn in
    # each node and each open group -> the open group drawn around it (None: none)
    parent: dict[str, str | None] = field(default_factory=dict)
    open_labels: dict[str, str] = field(default_factory=dict)  # each open group holding a node -> its label


class ScopeTree:
    """The groups of one graph: each op's chain of groups, outermost first."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.order = [op.name for op in graph.ops]
        self.ancestors: dict[str, tuple[str, ...]] = _scope_chains(self.order)
        if not any(self.ancestors.values()):
            scopes = parameter_scopes(graph)  # names of kinds, but parameters named by their modules
            if scopes:
                self.order = _sources_by_readers(graph)
                self.ancestors = _scope_chains(self.order, scopes)
        blocks = None
        if not any(self.ancestors.values()) and len(self.order) > DEFAULT_BUDGET:
            blocks = _dataflow_blocks(graph)
        if blocks:
            self.order = _sources_by_readers(graph)
            self.ancestors = blocks
        elif not any(self.ancestors.values()) and len(self.order) > RUN_LENGTH:
            self.ancestors = _runs_of(self.order)
        self.ancestors = _chunked(self.order, self.ancestors)
        self.members: dict[str, list[str]] = {}
        for name in self.order:
            for group in self.ancestors[name]:
                self.members.setdefault(group, []).append(name)
        self.parent: dict[str, str | None] = {}
        for chain in self.ancestors.values():
            for outer, inner in zip((None, *chain), chain):
                self.parent[inner] = outer

    @property
    def groups(self) -> list[str]:
        return list(self.members)

    def children(self, group: str | None) -> list[str]:
        """Node ids directly under `group` (None: the top), in graph order."""
        seen: dict[str, None] = {}
        depth = 0 if group is None else self.ancestors[self.members[group][0]].index(group) + 1
        for name in self.order if group is None else self.members[group]:
            chain = self.ancestors[name]
            seen[chain[depth] if len(chain) > depth else name] = None
        return list(seen)

    def label(self, group: str) -> str:
        """A group's scope relative to its enclosing group; a bare index keeps its parent's word
        (`layer.3`, not `3`)."""
        scope = group.removeprefix(GROUP)
        parent = self.parent.get(group)
        if _is_chunk(group):  # `layer[0-99]`: the enclosing group's last word, and the children it holds
            words = (parent or GROUP).removeprefix(GROUP).split(".")
            return ".".join(words[-1:]) + scope[scope.rindex("[") :]
        if parent and _is_chunk(parent):
            parent = self.parent.get(parent)  # relative to the group the chunk divides
        outer = parent.removeprefix(GROUP) if parent else ""
        rel = scope[len(outer) + 1 :] if outer and scope.startswith(outer + ".") else scope
        if rel.split(".")[0].isdigit():  # `stages.3.layers`, not `3.layers`
            rel = ".".join(scope.split(".")[-rel.count(".") - 2 :])
        return rel

    def op_label(self, name: str) -> str:
        """An op's name relative to its innermost group, which the open group around it shows
        (`typecast` inside `attention_mask`); a bare index keeps its parent's word."""
        chain = self.ancestors.get(name, ())
        scope = chain[-1].removeprefix(GROUP) if chain else ""
        if not scope or not name.startswith(scope + "."):
            return name
        rel = name[len(scope) + 1 :]
        return ".".join(name.split(".")[-2:]) if rel.isdigit() else rel

    def ancestors_of(self, name: str) -> tuple[str, ...]:
        return self.ancestors.get(name, ())

    def default_expansion(self, budget: int = DEFAULT_BUDGET) -> set[str]:
        """Open the groups one depth at a time, every group of a depth or none, while the view
        stays within `budget` nodes: all twelve layers of a model look alike."""
        expanded: set[str] = set()
        visible = len(self.children(None))
        frontier = [c for c in self.children(None) if c in self.members]
        while frontier:
            inner = {g: self.children(g) for g in frontier}
            grown = visible + sum(len(c) - 1 for c in inner.values())
            if grown > budget:
                break
            expanded.update(frontier)
            visible = grown
            frontier = [c for g in frontier for c in inner[g] if c in self.members]
        return expanded

    def fitting(self, opened: Sequence[str], limit: int = MAX_NODES) -> list[str]:
        """The longest start of `opened` (groups in the order they were opened) whose view has at
        most `limit` nodes. Opening a group never lowers the count, so a binary search finds it in
        log2(len(opened)) counts, each linear in the ops: a page may send every group of a model."""
        low, high = 0, len(opened)  # the first `low` fit; more than `high` do not
        while low < high:
            middle = (low + high + 1) // 2
            if self.node_count(opened[:middle]) <= limit:
                low = middle
            else:
                high = middle - 1
        return list(opened[:low])

    def node_count(self, expanded: Iterable[str]) -> int:
        """How many nodes `view(expanded)` has, without building it."""
        expanded = set(expanded)
        return len({next((g for g in self.ancestors[name] if g not in expanded), name) for name in self.order})

    def view(self, expanded: Iterable[str]) -> GroupedView:
        """The nodes shown with `expanded` groups open, and the tensors between them."""
        expanded = set(expanded)
        node_of: dict[str, str] = {}
        for name in self.order:
            node_of[name] = next((g for g in self.ancestors[name] if g not in expanded), name)
        nodes: dict[str, list[str]] = {}
        for name in self.order:
            nodes.setdefault(node_of[name], []).append(name)
        edges: dict[tuple[str, str], list[str]] = {}
        producer = {t: op.name for op in self.graph.ops for t in op.outputs}
        for op in self.graph.ops:
            for t in op.inputs:
                if t in producer:
                    src, dst = node_of[producer[t]], node_of[op.name]
                    if src != dst and t not in edges.setdefault((src, dst), []):
                        edges[(src, dst)].append(t)
        parent: dict[str, str | None] = {}
        for node, ops in nodes.items():
            chain = self.ancestors[ops[0]]
            opened = chain[: chain.index(node)] if node in self.members else chain
            parent[node] = opened[-1] if opened else None
            for outer, inner in zip((None, *opened), opened):
                parent.setdefault(inner, outer)
        return GroupedView(
            [Node(i, self.label(i) if i in self.members else self.op_label(i), tuple(ops)) for i, ops in nodes.items()],
            [Edge(s, d, tuple(ts)) for (s, d), ts in edges.items()],
            node_of,
            parent,
            {g: self.label(g) for g in parent if g not in nodes},
        )


def _scope_chains(order: list[str], scopes: dict[str, str] | None = None) -> dict[str, tuple[str, ...]]:
    """Each op's enclosing scopes (dotted name prefixes) that add something to the view: those
    holding two ops or more, and not holding the same ops as one of their sub-scopes (which names
    them better). Worked out once per scope, not per op: a 100k-op model has a few thousand. An
    XLA instruction name (`reshape.78`) names the op's kind, not a scope: grouping by it would
    fold every reshape of the model into one node. `scopes` gives each op's scope instead of its name."""
    scope_of = scopes or {name: "" if _INSTRUCTION.fullmatch(name) else name.rpartition(".")[0] for name in order}
    size: dict[str, int] = {"": 0}  # ops inside each scope, at any depth
    for scope in scope_of.values():
        size[scope] = size.get(scope, 0) + 1
    parent: dict[str, str] = {}
    for scope in list(size):
        while scope and scope not in parent:
            outer = scope.rpartition(".")[0]
            parent[scope] = outer
            scope = outer
    for scope in sorted(parent, key=lambda s: s.count("."), reverse=True):  # a scope's size before its parent's
        size[parent[scope]] = size.get(parent[scope], 0) + size.get(scope, 0)
    same_as_child = {parent[s] for s in parent if parent[s] and size[s] == size[parent[s]]}
    chains: dict[str, tuple[str, ...]] = {"": ()}

    def chain(scope: str) -> tuple[str, ...]:
        """Outward to the nearest scope already worked out, then back in (a loop, not recursion:
        a name may have hundreds of dots)."""
        unknown = []
        while scope not in chains:
            unknown.append(scope)
            scope = parent[scope]
        for inner in reversed(unknown):
            shown = size[inner] >= 2 and inner not in same_as_child
            chains[inner] = chains[parent[inner]] + ((GROUP + inner,) if shown else ())
        return chains[unknown[0] if unknown else scope]

    return {name: chain(scope) for name, scope in scope_of.items()}


def _is_chunk(group: str) -> bool:
    return group.endswith("]") and "[" in group


def _chunked(order: list[str], chains: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """`chains` with a chunk group between each group of more than CHUNK children (or the top) and
    its children: at most CHUNK chunks of consecutive children, so each holds max(CHUNK, n / CHUNK)."""
    children: dict[str | None, dict[str, None]] = {}
    for name in order:
        chain = chains[name]
        for depth, parent in enumerate((None, *chain)):
            children.setdefault(parent, {})[chain[depth] if depth < len(chain) else name] = None
    chunk_of: dict[tuple[str | None, str], str] = {}
    for parent, kids in children.items():
        if len(kids) <= CHUNK:
            continue
        size = max(CHUNK, -(-len(kids) // CHUNK))
        scope = parent.removeprefix(GROUP) if parent else ""
        for i, kid in enumerate(kids):
            first = i - i % size
            last = min(first + size, len(kids)) - 1
            chunk_of[(parent, kid)] = f"{GROUP}{scope}[{first}-{last}]"
    if not chunk_of:
        return chains
    out = {}
    for name in order:
        chain, shown = chains[name], []
        for depth, parent in enumerate((None, *chain)):
            kid = chain[depth] if depth < len(chain) else name
            if (parent, kid) in chunk_of:
                shown.append(chunk_of[(parent, kid)])
            if depth < len(chain):
                shown.append(kid)
        out[name] = tuple(shown)
    return out


def _dataflow_blocks(graph: Graph) -> dict[str, tuple[str, ...]] | None:
    """Ops grouped by the dataflow of a graph whose names carry no scopes: each anchor (a matmul,
    convolution, attention, reduction or pooling: an op that does a layer's heavy work) closes a
    block holding the ops that lead into it, each op joining the block of its first reader (so a
    weight's reshapes sit with the matmul that reads them, and a constant with its first user).
    Ops after the last anchor join their producer's block; a block of one op is the op alone.
    None when there are fewer than two anchors: blocks would not divide the graph."""
    readers: dict[str, list[str]] = {}  # in graph order
    index = {op.name: i for i, op in enumerate(graph.ops)}
    for op in graph.ops:
        for t in op.inputs:
            readers.setdefault(t, []).append(op.name)
    anchors = [op.name for op in graph.ops if op_class(kind_of(op.kind) or op.kind).kind_class in ANCHOR_CLASSES]
    if len(anchors) < 2:
        return None
    block = {name: f"{GROUP}{name} block" for name in anchors}
    producer = {t: op.name for op in graph.ops for t in op.outputs}
    for op in reversed(graph.ops):  # readers come after their producers: each reader's block is known
        if op.name in block:
            continue
        first = min((readers[t][0] for t in op.outputs if t in readers), key=index.__getitem__, default=None)
        if first in block:  # else nothing it leads into closes a block: the tail, after the last anchor
            block[op.name] = block[first]
    for op in graph.ops:  # the tail: its producer's block, else the last one
        if op.name not in block:
            made = [block[producer[t]] for t in op.inputs if t in producer and producer[t] in block]
            block[op.name] = made[-1] if made else block[anchors[-1]]
    size = Counter(block.values())
    return {op.name: (block[op.name],) if size[block[op.name]] > 1 else () for op in graph.ops}


def _sources_by_readers(graph: Graph) -> list[str]:
    """The ops in graph order but for those reading nothing (constants, weights), each moved to
    just before its first reader: an exporter puts them all first, and the first block would seem
    to start the graph. Still an order in which every op comes after its producers."""
    readers: dict[str, int] = {}
    for i, op in enumerate(graph.ops):
        for t in op.inputs:
            readers.setdefault(t, i)
    at = {}
    for i, op in enumerate(graph.ops):
        first = min((readers[t] for t in op.outputs if t in readers), default=i)
        at[op.name] = first - 0.5 if not op.inputs and first > i else i
    return sorted(at, key=at.__getitem__)


def _runs_of(order: list[str]) -> dict[str, tuple[str, ...]]:
    """Consecutive ops folded into runs of RUN_LENGTH, for a graph whose names carry no scopes."""
    chains = {}
    for i, name in enumerate(order):
        first = i - i % RUN_LENGTH
        last = min(first + RUN_LENGTH, len(order))
        chains[name] = (f"{GROUP}ops {first + 1}-{last}",)
    return chains
