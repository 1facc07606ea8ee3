"""The benchmark runs every step on a small model and reports it; it asserts no times."""

from __future__ import annotations

from tilescope.app.cli.bench import format_table, run_case
from tilescope.compiler.frontend import zoo


def test_a_case_runs_every_step_and_reports_sizes(tmp_path, capsys):
    case = run_case("tiny", "zoo:mlp?layers=1", lambda: zoo.generate("zoo:mlp?layers=1"), "wormhole_n150", tmp_path)
    assert [s.name for s in case.steps] == [
        "generate",
        "import",
        "graph",
        "partition",
        "layout",
        "kernel",
        "simulate",
        "store",
        "stats",
        "graph view",
        "full rerun",
        "incr rerun",
    ]
    assert case.ops == 5 and case.zones > 0
    assert case.override.endswith("=l1:interleaved") and case.override_status == "applied"
    assert case.total == sum(s.seconds for s in case.steps[:8])
    assert all(s.seconds >= 0 and s.peak_rss_mb > 0 for s in case.steps)
    assert (tmp_path / "tiny.db").exists()
    # each step says it is done on stderr as it ends, so a long bench is never silent
    progress = capsys.readouterr().err.splitlines()
    assert progress[0] == "tilescope bench: tiny: zoo:mlp?layers=1"
    assert [line.split(": ")[2].rsplit(" ", 2)[0] for line in progress[1:]] == [s.name for s in case.steps]


def test_compile_only_cases_stop_at_the_kernel_level_and_print_dashes(tmp_path):
    case = run_case("big", "zoo:mlp", lambda: zoo.generate("zoo:mlp"), "wormhole_n150", tmp_path, compile_only=True)
    assert [s.name for s in case.steps][-1] == "kernel" and case.zones == 0
    full = run_case("small", "zoo:mlp?layers=1", lambda: zoo.generate("zoo:mlp?layers=1"), "wormhole_n150", tmp_path)
    report = {
        "machine": {"cores": 2, "system": "test", "python": "3.11"},
        "cases": [
            {
                "name": c.name,
                "ops": c.ops,
                "zones": c.zones,
                "total_s": c.total,
                "compile_us_per_op": c.compile_seconds / c.ops * 1e6,
                "steps": {s.name: {"s": s.seconds, "peak_rss_mb": s.peak_rss_mb} for s in c.steps},
            }
            for c in (full, case)
        ],
    }
    table = format_table(report).splitlines()
    assert table[0].split()[:3] == ["case", "ops", "zones"] and "store" in table[0]
    assert table[2].startswith("big") and table[2].split().count("-") == 2
    after = table[table.index("after the run is stored:") + 1 :]
    assert after[0].split()[:3] == ["case", "stats", "graph"] and "incr rerun" in after[0]
    assert after[1].startswith("small") and after[2].startswith("big") and after[2].split().count("-") == 4
