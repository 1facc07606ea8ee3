"""The view in the address bar: the model, target, policy, level, run, selected op, diff pair,
dispatch and data-tiling, so a link reproduces what its sender saw."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from urllib.parse import parse_qs, urlencode

from tilescope.compiler.ir.graph import LEVELS
from tilescope.compiler.targets.chip import DISPATCH_MODES


@dataclass(frozen=True)
class ViewState:
    model: str | None = None
    target: str | None = None
    policy: str | None = None
    level: str | None = None
    run: int | None = None
    op: str | None = None
    diff: tuple[int, ...] = ()  # two run ids compared in Runs & diff
    dispatch: str | None = None
    data_tiling: bool | None = None  # True: compiled with data-tiling (`data_tiling=1`); else left out


MAX_ID = 2**63 - 1  # a database id; a longer number names nothing


def _int(value: str | None) -> int | None:
    """A run id, or None for anything else (ASCII digits only: int() reads other scripts' digits
    and refuses long numbers)."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > len(str(MAX_ID)):
        return None
    number = int(value)
    return number if 0 < number <= MAX_ID else None


def parse(search: str | None) -> ViewState:
    """The state a query string names; values that cannot be one (an unknown level, a run id that
    is not a number) are left out, so a mangled link still opens the page."""
    query = {k: v[0] for k, v in parse_qs((search or "").lstrip("?")).items() if v}
    diff = tuple(i for i in (_int(v) for v in query.get("diff", "").split(",")) if i is not None)
    level, dispatch = query.get("level"), query.get("dispatch")
    return ViewState(
        model=query.get("model"),
        target=query.get("target"),
        policy=query.get("policy"),
        level=level if level in LEVELS else None,
        run=_int(query.get("run")),
        op=query.get("op"),
        diff=diff if len(diff) == 2 else (),
        dispatch=dispatch if dispatch in DISPATCH_MODES else None,
        data_tiling=True if query.get("data_tiling") == "1" else None,
    )


def encode(state: ViewState) -> str:
    """The query string of a state (empty fields left out)."""
    fields = {k: v for k, v in asdict(state).items() if v not in (None, (), "", False)}
    if fields.get("data_tiling"):
        fields["data_tiling"] = 1
    if "diff" in fields:
        fields["diff"] = ",".join(map(str, fields["diff"]))
    return "?" + urlencode(fields) if fields else ""


# The address bar and the history: Back and Forward land on an address the page then shows. A
# change of view is a new history entry; filling in the address the page is opening (a link's
# view settled, or a new model's run found) replaces it, so Back never lands on a half-told view.


@dataclass(frozen=True)
class Shown:
    """The query string the address bar holds, as the page last read or wrote it; `opening`: the
    page is still settling on it (read from the bar, or written as another model was chosen)."""

    search: str
    opening: bool = False

    @classmethod
    def of(cls, data) -> Shown | None:
        """The store's value (None: the address has not been read yet)."""
        if not isinstance(data, dict) or not isinstance(data.get("search"), str):
            return None
        return cls(data["search"], bool(data.get("opening")))


@dataclass(frozen=True)
class Wanted:
    """An address for the browser to show: a new history entry, or in place of the current one."""

    search: str
    replace: bool = False


def written(view: ViewState, shown: Shown | None) -> tuple[Wanted | None, Shown | None]:
    """What the page writes when its view is `view`: the address (None: the bar says it already)
    and what the bar then holds (None: nothing to change; also before the bar has been read)."""
    if shown is None:
        return None, None
    search = encode(view)
    if search == shown.search:
        return None, Shown(search) if shown.opening else None
    return Wanted(search, replace=shown.opening), Shown(search)


def opening(chosen: ViewState, bar: ViewState) -> ViewState | None:
    """The address to show at once when another model, target, policy, dispatch or data-tiling is `chosen` and
    its run is still to be found (None: the bar names them already, as when a link is being
    opened): the bar's level, and its op but of another model; the run and the ticked pair go."""
    keys = ("model", "target", "policy", "dispatch", "data_tiling")
    if all(getattr(chosen, k) == getattr(bar, k) for k in keys):
        return None
    op = bar.op if chosen.model == bar.model else None
    return ViewState(
        chosen.model, chosen.target, chosen.policy, bar.level, None, op, (), chosen.dispatch, chosen.data_tiling
    )
