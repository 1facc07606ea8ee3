"""The MLIR panel: the selected level as coloured MLIR text, a window of it at a time, with the
selected op's lines marked, a search over the whole level, and a click on a line selecting its op.

The server reads the text (tokens, matches, the window, which op each line belongs to) and sends
the window as data; the browser draws it (assets/mlir.js), with the model's text as
text nodes, never markup. A BERT kernel page is ~3,000 coloured tokens: as Dash components they
took the browser ~700 ms to draw; as DOM nodes made in one pass, ~25 ms (~7 ms uncoloured)."""

from __future__ import annotations

from collections.abc import Sequence

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from tilescope.compiler.errors import TilescopeError

from tilescope.app.web import ids
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.workbench import mlir_page
from tilescope.app.workbench.graph_view import provenance
from tilescope.app.workbench.kept import Kept
from tilescope.app.workbench.measured_runs import no_model_lines
from tilescope.app.workbench.mlir_page import NO_MATCHES, Matches
from tilescope.app.workbench.mlir_tokens import KINDS, page_tokens

MLIR_PAGE = 500  # lines of MLIR sent to the page at once: a large model's kernel level is megabytes
# what is coloured of a page: tokens (~5,000 on a BERT page) and characters read (~120,000; 0.3 us
# each); past either the text is plain
MAX_TOKENS = 8_000
MAX_TOKEN_CHARS = 400_000
_KIND_INDEX = {kind: i for i, kind in enumerate(KINDS)}


def layout(_page: PageContext) -> html.Div:
    controls = html.Div(
        [
            dcc.Input(
                id=ids.MLIR_SEARCH,
                type="text",
                debounce=0.3,
                maxLength=mlir_page.MAX_QUERY,
                placeholder="Find in MLIR (Enter: next)",
                className="search",
            ),
            html.Button("\u2191", id=ids.MLIR_PREV, className="step", title="previous match"),
            html.Button("\u2193", id=ids.MLIR_NEXT, className="step", title="next match (Enter)"),
            html.Span(id=ids.MLIR_FOUND, className="mlir-found"),
            html.Span(id=ids.MLIR_NOTE, className="mlir-note"),
        ],
        className="mlir-controls",
    )
    return html.Div(
        [
            html.H3("MLIR"),
            controls,
            html.Div(id=ids.MLIR_VIEW, className="mlir"),
            dcc.Store(id=ids.MLIR_WINDOW),
            dcc.Store(id=ids.MLIR_STATE),
        ],
        className="panel",
    )


SHOWN = dict(
    window=Output(ids.MLIR_WINDOW, "data"),
    found=Output(ids.MLIR_FOUND, "children"),
    note=Output(ids.MLIR_NOTE, "children"),
    state=Output(ids.MLIR_STATE, "data"),
)


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=SHOWN,
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            level=Input(ids.LEVEL_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            query=Input(ids.MLIR_SEARCH, "value"),
            submits=Input(ids.MLIR_SEARCH, "n_submit"),
            nexts=Input(ids.MLIR_NEXT, "n_clicks"),
            prevs=Input(ids.MLIR_PREV, "n_clicks"),
        ),
        state=dict(state=State(ids.MLIR_STATE, "data")),
    )
    def show_mlir(run_id, level="graph", selected=None, query=None, submits=0, nexts=0, prevs=0, state=None):
        """The window of the level's MLIR around what was asked for last: the match a search
        steps to, else the selected op. What it showed is kept in MLIR_STATE, so Enter and the
        arrows step from the match shown, and a selection already in view keeps the window."""
        if run_id is None:
            return no_update
        run = explorer.view(run_id)
        ask = Asked(run_id, level, query, _count(submits) + _count(nexts), prevs, state)
        read = explorer.kept("mlir")  # a page's reading and a search's matches, by run and level
        if run.compilation is None:  # a measured run read from a report: the line saying so
            return mlir_view(
                "".join(f"// {line}\n" for line in no_model_lines(run.model_ref, run.kind)), {}, [], ask, read
            )
        text, spans = run.compilation.mlir_with_lines(level)
        return mlir_view(text, spans, provenance(run.compilation, level, selected), ask, read)

    return {"show_mlir": show_mlir}


def in_browser(app) -> None:
    # drawn in the browser (assets/mlir.js), which makes a click on a line the selection of its op
    app.clientside_callback(
        ClientsideFunction("mlir", "draw"),
        Output(ids.MLIR_VIEW, "title"),
        Input(ids.MLIR_WINDOW, "data"),
        State(ids.MLIR_VIEW, "id"),
        State(ids.SELECTED_OP, "id"),
    )


PANEL = Panel("main", "MLIR", "mlir", layout, register, in_browser)


class Asked:
    """What the page asks of the view: the run and level, the search as typed, how often Enter
    or the arrows were pressed, and what the view showed last (MLIR_STATE). Values a page would
    not send (a hostile request's) read as a page that has shown nothing yet."""

    def __init__(self, run_id, level: str, query, forward=0, back=0, state=None) -> None:
        state = state if isinstance(state, dict) else {}
        self.run_id, self.level = run_id, level
        self.query = query if isinstance(query, str) else ""
        self.forward, self.back = _count(forward), _count(back)
        same_text = state.get("run") == run_id and state.get("level") == level
        self.new_query = self.query != state.get("query", "")
        self.step = (self.forward > _count(state.get("forward"))) - (self.back > _count(state.get("back")))
        prior, shown = state.get("match"), state.get("window")
        self.prior = _count(prior) if same_text and not self.new_query and prior is not None else None
        fits = isinstance(shown, list) and len(shown) == 2 and all(_count(n) == n for n in shown)
        self.shown = tuple(shown) if same_text and fits else None

    def current(self, matches: Matches) -> int | None:
        """The match to show: the first of a new search, the next or previous one a step asks for."""
        if not matches.at:
            return None
        if self.prior is None:
            return 0
        return (self.prior + self.step) % len(matches.at)

    def state(self, window: tuple[int, int], current: int | None) -> dict:
        return dict(
            run=self.run_id,
            level=self.level,
            query=self.query,
            match=current,
            forward=self.forward,
            back=self.back,
            window=list(window),
        )


def _count(value) -> int:
    """A count from the page (clicks, presses, a line): a whole number, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def window_tokens(lines: list[str]) -> list[list[int]]:
    """Each line's tokens as the browser takes them: start, end, kind (its index in KINDS), flat."""
    return [
        [n for start, end, kind in tokens for n in (start, end, _KIND_INDEX[kind])]
        for tokens in page_tokens(lines, MAX_TOKENS, MAX_TOKEN_CHARS)
    ]


def mlir_view(
    text: str, spans: dict[str, tuple[int, int]], selected: Sequence[str], ask: Asked, kept: Kept | None = None
) -> dict:
    """The panel's outputs (SHOWN) for a level's `text` with its ops' line `spans`: the window
    for the browser to draw, the search's count, which lines are shown, and the state to keep.
    `kept`: where the window's tokens and ops, and the search's matches, are kept for the next
    request of the same run and level (a selection or a step redraws the same window)."""
    kept = kept if kept is not None else Kept(0)
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the newline that ends the text starts no line
    found: list = []
    try:
        query = mlir_page.checked_query(ask.query)
        matches = kept.of(("find", ask.run_id, ask.level, query), lambda: mlir_page.find_matches(text, query))
    except TilescopeError as err:
        query, matches = "", NO_MATCHES
        found.append(html.Span(str(err), className="error"))
    current = ask.current(matches)
    match_line = matches.at[current][0] if current is not None else None
    marked = sorted(spans[name] for name in selected if name in spans)
    op_line = marked[0][0] - 1 if marked else None
    # the page shows what was asked for last: a search's match, else the selection
    on_match = match_line is not None and (ask.step != 0 or ask.new_query or op_line is None)
    lo, hi = mlir_page.window(len(lines), match_line if on_match else op_line, ask.shown, MLIR_PAGE)
    if query:
        found.append(html.Span(matches.count_text(current), className="matches"))
    tokens, ops = kept.of(
        ("window", ask.run_id, ask.level, lo, hi),
        lambda: (window_tokens(lines[lo:hi]), mlir_page.line_ops(spans, lo, hi)),
    )
    window = dict(
        first=lo + 1,
        lines=lines[lo:hi],
        kinds=KINDS,
        tokens=tokens,
        matches=_window_matches(lines[lo:hi], query),
        current=[match_line - lo, matches.at[current][1]] if current is not None and lo <= match_line < hi else None,
        marks=_marks(marked, lo, hi),
        focus="match" if on_match else "op" if marked else None,
        ops=ops,
    )
    shown = f"lines {lo + 1:,}-{hi:,} of {len(lines):,} \u00b7 " if (lo, hi) != (0, len(lines)) else ""
    note = shown + "click an op's line to select it"
    return dict(window=window, found=found, note=note, state=ask.state((lo, hi), current))


def _window_matches(lines: list[str], query: str) -> list[list[int]]:
    """Each line's matches (start, end: flat), the first MAX_MATCHES of the window's."""
    found, left = [], mlir_page.MAX_MATCHES
    for line in lines:
        spans = mlir_page.line_matches(line, query, left)
        left -= len(spans)
        found.append([n for span in spans for n in span])
    return found


def _marks(marked: list[tuple[int, int]], lo: int, hi: int) -> list[list[int]]:
    """The selected ops' lines to mark, as [start, end) in the window: those whose first line is
    in it, cut at its end; a span inside one already marked is marked with it."""
    marks: list[list[int]] = []
    for first, last in marked:
        if first - 1 < lo or first - 1 >= hi or (marks and first - 1 < marks[-1][1] + lo):
            continue
        marks.append([first - 1 - lo, min(last, hi) - lo])
    return marks
