"""Systems of several devices: their files, and the laws of the collective cost model."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tilescope.compiler.errors import TargetError
from tilescope.compiler.sharding.mesh import Mesh
from tilescope.compiler.targets.system import SINGLE_DEVICE, System
from tilescope.compiler.targets.catalog import SYSTEM_DIR, load_target, target_text

SHIPPED = {  # name: (device, mesh, fabric, links per neighbour)
    "wormhole_n300": ("wormhole_n150", (1, 2), "mesh", 1),
    "t3k": ("wormhole_n150", (2, 4), "mesh", 1),
    "galaxy": ("wormhole_n150", (4, 8), "mesh", 4),
    "blackhole_p300": ("blackhole_p150", (1, 2), "mesh", 2),
    "blackhole_8xp150": ("blackhole_p150", (2, 4), "mesh", 2),
    "mtia_v1_host": ("mtia_v1", (1, 8), "switch", 1),
    "corsair_card": ("corsair_chiplet", (2, 4), "switch", 1),
    "x86_avx512_2p": ("x86_avx512", (1, 2), "mesh", 4),
}
MIB = float(1 << 20)
T3K_TEXT = (SYSTEM_DIR / "t3k.toml").read_text()


def _ring(n: int, wrap: bool = True, latency_ns: float = 711.0) -> System:
    """A 1 x n system of links of 10 GB/s per direction."""
    return System("ring", mesh=(1, n), link_bytes_per_s=10e9, link_latency_ns=latency_ns, wraps=(False, wrap))


def _switch(n: int) -> System:
    return System("switch", mesh=(1, n), link_bytes_per_s=10e9, link_latency_ns=1000.0, fabric="switch")


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_shipped_system_loads_with_its_devices(name):
    device, mesh, fabric, links = SHIPPED[name]
    target = load_target(name)
    chip = load_target(device)
    assert target.name == name and target.system.device == device
    assert target.system.mesh == mesh and target.system.devices == mesh[0] * mesh[1]
    assert (target.system.fabric, target.system.links_per_neighbour) == (fabric, links)
    assert target.grid == chip.grid and target.peak_flops("bf16") == chip.peak_flops("bf16")
    assert target.system.link_bytes_per_s > 0 and target is load_target(name)


def test_a_single_chip_target_is_a_system_of_one(wormhole):
    assert wormhole.system is SINGLE_DEVICE and wormhole.system.devices == 1
    assert wormhole.system.collective("all_reduce", 1, MIB).seconds == 0


def test_wormhole_numbers_are_the_ethernet_reports():
    t3k, galaxy = load_target("t3k").system, load_target("galaxy").system
    assert (t3k.link_bytes_per_s, t3k.link_latency_ns) == (12.5e9, 711.0)
    assert galaxy.bytes_per_s == 4 * 12.5e9  # four links between neighbours
    assert "link.per_neighbour" in t3k.assumed and "device.toml" not in t3k.assumed


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_stored_system_text_rebuilds_it(name):
    text, _ = target_text(name)
    again = load_target(name, text)
    assert again is load_target(name, text) and again.system == load_target(name).system
    assert again.grid == load_target(name).grid


def test_a_stored_system_keeps_its_device_when_the_builtin_file_changes(tmp_path):
    text, _ = target_text("t3k")
    assert "[device]" in text and "wormhole_n150" in text
    device = re.search(r'^toml = (".*")$', text, re.M).group(1)
    edited = text.replace(device, device.replace("clock_hz = 1.0e9", "clock_hz = 2.0e9"))
    assert load_target("t3k", edited).clock_hz == 2e9 and load_target("t3k", text).clock_hz == 1e9


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_all_reduce_sends_two_n_minus_one_over_n_of_the_tensor(n):
    cost = _ring(n).collective("all_reduce", n, MIB)
    assert cost.bytes_per_device == pytest.approx(2 * (n - 1) / n * MIB)
    assert cost.steps == 2 * (n - 1)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter"])
def test_all_gather_and_reduce_scatter_send_n_minus_one_over_n(kind, n):
    cost = _ring(n).collective(kind, n, MIB)
    assert cost.bytes_per_device == pytest.approx((n - 1) / n * MIB) and cost.steps == n - 1


def test_ring_all_reduce_time_is_the_formula():
    n, size, bandwidth, latency = 8, 64 * MIB, 10e9, 711e-9
    cost = _ring(n).collective("all_reduce", n, size)
    assert cost.algorithm == "ring"
    assert cost.seconds == pytest.approx(2 * (n - 1) * (latency + size / (2 * n * bandwidth)))


def test_the_latency_term_grows_with_the_group():
    tiny = 16.0  # bytes: latency-bound
    times = [_ring(n).collective("all_reduce", n, tiny).seconds for n in (4, 8, 16)]
    assert times[0] < times[1] < times[2]
    assert times[2] == pytest.approx(2 * 15 * 711e-9, rel=1e-3)


def test_time_is_linear_in_the_bytes_without_latency():
    ring = _ring(8, latency_ns=0)
    one, three = (ring.collective("all_gather", 8, s).seconds for s in (MIB, 3 * MIB))
    assert three == pytest.approx(3 * one) and one > 0


def test_a_line_carries_twice_a_rings_bytes_per_link():
    ring, line = _ring(8).collective("all_gather", 8, MIB), _ring(8, wrap=False).collective("all_gather", 8, MIB)
    assert (ring.algorithm, line.algorithm) == ("ring", "line")
    assert line.link_bytes == pytest.approx(2 * ring.link_bytes) and line.seconds > ring.seconds
    assert line.bytes_per_device == ring.bytes_per_device


def test_all_to_all_on_a_line_loads_the_middle_link():
    line = _ring(4, wrap=False).collective("all_to_all", 4, MIB)
    ring = _ring(4).collective("all_to_all", 4, MIB)
    assert line.link_bytes == pytest.approx(4 * MIB / 4)  # 2 x 2 quarters cross the middle
    assert ring.link_bytes == pytest.approx(MIB * 4 / 8)  # sum of distances 4 over 8 directions


def test_a_switch_halves_and_doubles_in_log_steps():
    cost = _switch(8).collective("all_reduce", 8, MIB)
    assert (cost.algorithm, cost.steps) == ("halving_doubling", 6)
    assert cost.bytes_per_device == pytest.approx(2 * 7 / 8 * MIB) == cost.link_bytes
    odd = _switch(6).collective("all_gather", 6, MIB)
    assert (odd.algorithm, odd.steps) == ("ring", 5)


def test_a_mesh_axis_maps_onto_the_grid():
    t3k = load_target("t3k").system
    mesh = Mesh((("x", 2), ("y", 4)))
    assert t3k.route(mesh.size("y"), mesh.stride("y")).algorithm == "line"  # a row of 4, no wrap
    assert t3k.route(mesh.size("x"), mesh.stride("x")).algorithm == "line"  # a column of 2
    assert t3k.route(8, 1).algorithm == "ring"  # a snake closes through all eight
    torus = dataclasses.replace(t3k, wraps=(False, True))
    assert torus.route(4, 1).algorithm == "ring"


def test_strided_members_share_their_links():
    row = _ring(8, wrap=False)
    near, far = row.route(4, 1), row.route(4, 2)
    assert (near.hops, far.hops, far.shared_by) == (1, 2, 2)
    assert row.collective("all_gather", 4, MIB, stride=2).seconds > row.collective("all_gather", 4, MIB).seconds


def test_all_slice_costs_nothing_and_unknown_kinds_are_refused():
    assert _ring(4).collective("all_slice", 4, MIB).seconds == 0
    with pytest.raises(TargetError, match="unknown collective 'broadcast'"):
        _ring(4).collective("broadcast", 4, MIB)
    with pytest.raises(TargetError, match="a group of 8 devices 1 apart does not fit its 4 devices"):
        _ring(4).collective("all_reduce", 8, MIB)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('device = "wormhole_n150"', 'device = "wormhole_n999"', "key 'system.device' must be a built-in device"),
        ('device = "wormhole_n150"', 'device = "galaxy"', "key 'system.device' must be a built-in device"),
        ("rows = 2", "rows = 512", "system 512x4: at most 1024 devices"),
        ("rows = 2", "rows = 0", "key 'system.rows' must be positive"),
        ("cols = 4", 'cols = "4"', "key 'system.cols' must be int"),
        ('fabric = "mesh"', 'fabric = "bus"', "key 'system.fabric' must be one of mesh, switch"),
        ("bytes_per_s = 12.5e9", "bytes_per_s = nan", "key 'link.bytes_per_s' must be between"),
        ("latency_ns = 711", "latency_ns = 1e12", "key 'link.latency_ns' must be between 0 and 1e+09"),
        ("per_neighbour = 1", "per_neighbour = 100", "key 'link.per_neighbour' must be between 1 and 64"),
        ("wrap_rows = false", "wrap_rows = 1", "key 'system.wrap_rows' must be bool"),
        ("latency_ns = 711\n", "", "missing key 'link.latency_ns'"),
    ],
)
def test_a_bad_system_file_is_one_line_naming_the_key(tmp_path, old, new, message):
    assert old in T3K_TEXT, old
    path = tmp_path / "mine.toml"
    path.write_text(T3K_TEXT.replace(old, new, 1))
    with pytest.raises(TargetError) as err:
        load_target(str(path))
    assert str(path) in str(err.value) and message in str(err.value) and "\n" not in str(err.value)


def test_an_embedded_device_must_be_the_named_single_device(tmp_path):
    galaxy_text, _ = target_text("galaxy")
    with pytest.raises(TargetError, match=r"\[device\].*not valid TOML"):
        load_target("mine", T3K_TEXT + '\n[device]\ntoml = "grid = ["\n')
    with pytest.raises(TargetError, match="must be a single device, not the system 'galaxy'"):
        load_target("mine", T3K_TEXT + f"\n[device]\ntoml = {_quoted(galaxy_text)}\n")
    with pytest.raises(TargetError, match="key 'device.toml' describes 'mtia_v1', not 'wormhole_n150'"):
        load_target("mine", T3K_TEXT + f"\n[device]\ntoml = {_quoted(target_text('mtia_v1')[0])}\n")


def _quoted(text: str) -> str:
    from tilescope.compiler.targets.data_file import toml_string

    return toml_string(text)
