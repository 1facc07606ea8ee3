"""What several commands take: the model, target, overrides and database options, `--json`,
the page's limits, and run references (an id, `last` or `last~N`)."""

from __future__ import annotations

import argparse

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.options import DEFAULT_L1_USAGE_CAP, DEFAULT_POLICY, POLICIES
from tilescope.compiler.targets.catalog import builtin_names
from tilescope.perfdb.location import ENV_VAR as DB_ENV
from tilescope.perfdb.location import embedded_url

from tilescope.app.workbench.defaults import DEFAULT_MAX_OPS, DEFAULT_TARGET

EXAMPLE_MODEL = "zoo:mlp"
MODEL_HELP = (
    "an .mlir file (file.mlir#func picks a function), a shipped example (classifier.mlir) or a zoo model: "
    "zoo:mlp, zoo:bert-{base,large}, zoo:llama-{3.2-1b,3.2-3b,3.1-8b}[?mode=decode], zoo:resnet50, zoo:matmul:MxKxN "
    "(parameters by query string, e.g. zoo:bert-base?layers=2&seq=128)"
)


TARGET_HELP = f"built-in target ({', '.join(builtin_names())}) or a target .toml file (default {DEFAULT_TARGET})"
DB_HELP = f"SQLAlchemy URL of the perf database (default: ${DB_ENV}, else {embedded_url()})"
RUN_HELP = "run id (see tilescope runs), or last, or last~N for the run N before the newest"


def run_ref(text: str) -> int | str:
    """A run as typed: its id, or `last`/`last~N` counted back from the newest run (resolved by `resolve_run`)."""
    if digits(text):
        return int(text)
    back = text.removeprefix("last")
    if text.startswith("last") and (back == "" or (back.startswith("~") and digits(back[1:]))):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a run: give a run id, last, or last~N")


def digits(text: str) -> bool:
    """A number that can name a run: ASCII digits, no longer than a 64-bit id."""
    return text.isascii() and text.isdigit() and len(text) <= 19


def resolve_run(session, ref: int | str) -> int:
    from tilescope.perfdb.runs import run_id_back

    if isinstance(ref, int):
        return ref
    try:
        return run_id_back(session, int(ref.partition("~")[2] or 0))
    except LookupError as err:
        raise TilescopeError(f"{ref}: {err}") from None


def run_ids(db: str | None, *refs: int | str) -> list[int]:
    from tilescope.perfdb.engine import open_db, session_factory

    with session_factory(open_db(db))() as session:
        return [resolve_run(session, ref) for ref in refs]


def add_common(p: argparse.ArgumentParser, db: bool = True, target: bool = True) -> None:
    if target:
        p.add_argument("--target", default=DEFAULT_TARGET, help=TARGET_HELP)
        p.add_argument(
            "--override",
            action="append",
            default=[],
            metavar="SPEC",
            help="op output layout, tt-mlir syntax: "
            "OP=RxC:l1|dram:interleaved|block_sharded|...:tile|row_major:DTYPE"
            " (repeatable)",
        )
        p.add_argument(
            "--overrides",
            metavar="FILE",
            help="overrides file: tilescope JSON, TT-Explorer JSON, or tt-mlir options (override-output-layout=...)",
        )
        p.add_argument(
            "--policy",
            choices=POLICIES,
            default=None,
            help=f"layout policy before overrides (default {DEFAULT_POLICY})",
        )
        p.add_argument(
            "--l1-usage-cap",
            type=float,
            default=None,
            metavar="SHARE",
            help=f"share of L1 that tensors may use (default {DEFAULT_L1_USAGE_CAP})",
        )
        p.add_argument(
            "--data-tiling",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="as IREE's flag: matmul operands packed into the target's inner tiles (pack -> mmt4d -> unpack), "
            "weights packed at load time (default: an overrides file's setting, else off)",
        )
    if db:
        p.add_argument("--db", default=None, metavar="URL", help=DB_HELP)


def add_web_limits(p: argparse.ArgumentParser, same: str = "") -> None:
    """What the page may name and compile; the command line itself has no such limits."""
    p.add_argument(
        "--models-dir",
        action="append",
        default=[],
        metavar="DIR",
        help=f"a directory whose .mlir files the page may open, besides zoo models, examples, uploads and stored "
        f"models (repeatable) {same}".strip(),
    )
    p.add_argument(
        "--max-ops",
        type=int,
        default=DEFAULT_MAX_OPS,
        metavar="N",
        help=f"the most ops a model the page compiles may have (default {DEFAULT_MAX_OPS:,}) {same}".strip(),
    )


def add_json(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON")
