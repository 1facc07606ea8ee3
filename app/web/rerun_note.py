"""The note under Apply after a re-run: what changed against the run it came from, at once (the
total and its device and host shares, and the ops that moved most, each with the model's error)."""

from __future__ import annotations

from dash import html

from tilescope.app.workbench.diff import WITHIN_ERROR, RerunDelta, time_split


def error_bands(records) -> dict[str, float]:
    """Each predicted op's error band (ns) of a run's op records: its kind's held-out error."""
    return {r.name: r.error_band * r.duration_ns for r in records if r.error_band is not None}


SHOWN_MOVES = 3  # ops listed under a re-run's delta; the Runs & diff tab has them all


def delta_note(found: RerunDelta) -> html.Div:
    """What a re-run changed against the run it came from, at once: the total and its device and
    host shares (why an op that got faster may not move the total), and the ops that moved most."""
    delta = found.total_delta_ns
    head = html.P(
        [
            html.B(f"vs #{found.a}: "),
            f"total {found.total_ns.a / 1e3:,.1f} -> {found.total_ns.b / 1e3:,.1f} us ",
            html.Span(f"({delta / 1e3:+,.1f} us)", className="slower" if delta > 0 else "faster" if delta else ""),
            html.Br(),
            html.Span(time_split(found), className="muted"),
        ]
    )
    moves = found.moves
    items = [html.Li(move_text(m)) for m in moves[:SHOWN_MOVES]]
    if len(moves) > SHOWN_MOVES:
        items.append(html.Li(f"... and {len(moves) - SHOWN_MOVES} more in Runs & diff", className="muted"))
    return html.Div([head, html.Ul(items)] if items else [head], className="rerun-delta")


def move_text(move) -> str:
    """`fc1 -12.00 us +- 2.10 us`, and whether the change is inside the model's error."""
    error = f" +- {move.error_ns / 1e3:,.2f} us" if move.error_ns is not None else ""
    notes = [move.how] if move.how else []
    if move.within_error:
        notes.append(WITHIN_ERROR)
    return f"{move.name} {move.delta_ns / 1e3:+,.2f} us{error}" + (f" ({'; '.join(notes)})" if notes else "")
