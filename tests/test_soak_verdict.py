"""`scripts/soak`'s verdict: a least-squares slope of RSS over time after the warm-up, in
MiB/min, against the bound (the soak itself is not part of the suite)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "soak.py"
    spec = importlib.util.spec_from_file_location("clawlane_soak_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_steady_line_gives_its_slope_and_the_warmup_is_left_out(soak: ModuleType) -> None:
    # A steep warm-up (caches filling), then 0.5 MiB/min with a sawtooth on top.
    samples = [(float(t), (100 + 10 * t) * MIB) for t in range(30)]
    samples += [
        (float(t), int((400 + t / 120 + (5 if t % 10 < 5 else -5)) * MIB)) for t in range(30, 600)
    ]
    slope = soak.rss_slope(samples, after_s=soak.warmup_seconds(600))
    assert slope is not None and slope.mib_per_min == pytest.approx(0.5, abs=0.1)
    assert slope.samples == 450
    passed, line = soak.verdict(slope, 2.0)
    assert passed and "within the bound of 2 MiB/min" in line


def test_growth_over_the_bound_fails(soak: ModuleType) -> None:
    samples = [(float(t), int((200 + t * 0.1) * MIB)) for t in range(120)]  # 6 MiB/min
    slope = soak.rss_slope(samples, after_s=soak.warmup_seconds(120))
    assert slope is not None and slope.mib_per_min == pytest.approx(6.0)
    passed, line = soak.verdict(slope, 2.0)
    assert not passed and "OVER" in line


def test_too_few_samples_is_a_failure_not_a_pass(soak: ModuleType) -> None:
    assert soak.rss_slope([(0.0, MIB), (40.0, MIB)], after_s=30) is None
    assert soak.verdict(None, 2.0)[0] is False


def test_the_warmup_is_a_quarter_at_least_30_s_at_most_half(soak: ModuleType) -> None:
    assert soak.warmup_seconds(600) == 150
    assert soak.warmup_seconds(120) == 30
    assert soak.warmup_seconds(60) == 30


def test_bounded_buffers_filling_are_taken_out_and_a_leak_beside_them_is_not(
    soak: ModuleType,
) -> None:
    """RSS less what the bounded buffers held (read every 2 s): buffers growing 3 MiB/min
    toward their bound pass; the same RSS with buffers that stay flat (the growth is
    elsewhere) fails."""
    rss = [(float(t), int((150 + 3 * t / 60) * MIB)) for t in range(600)]
    filling = [(float(t), int((20 + 3 * t / 60) * MIB)) for t in range(0, 600, 2)]
    net = soak.rss_slope(soak.net_of(rss, filling), after_s=150)
    assert net is not None and net.mib_per_min == pytest.approx(0.0, abs=0.1)
    assert soak.verdict(net, 2.0, "RSS less the bounded buffers")[0]
    flat = [(float(t), 20 * MIB) for t in range(0, 600, 2)]
    leak = soak.rss_slope(soak.net_of(rss, flat), after_s=150)
    assert leak is not None and leak.mib_per_min == pytest.approx(3.0, abs=0.1)
    assert not soak.verdict(leak, 2.0)[0]
    assert soak.net_of(rss[:5], [(10.0, MIB)]) == []  # no reading yet: nothing to take out
