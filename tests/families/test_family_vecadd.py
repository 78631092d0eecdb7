"""vecadd's full_grid_float4 under its -D alternatives (cache hints, the unguarded in-flight path):
each compiles with nvcc for sm_90 without spills, and NVRTC takes it too. No GPU."""

from __future__ import annotations

import pytest

ALTERNATIVES = [
    *[{"LOAD_HINT": h} for h in (1, 2, 3)],
    *[{"STORE_HINT": h} for h in (1, 2)],
    {"IN_FLIGHT": 0},  # the checked path, one pair in flight
    {"IN_FLIGHT": 1},
    {"IN_FLIGHT": 1, "LOAD_HINT": 1, "STORE_HINT": 1},
    {"IN_FLIGHT": 1, "BLOCK": 128, "UNROLL": 2},
    {"IN_FLIGHT": 1, "BLOCK": 512, "UNROLL": 8, "LOAD_HINT": 3, "STORE_HINT": 2},
]


@pytest.mark.nvcc
@pytest.mark.parametrize("defines", ALTERNATIVES, ids=[str(d) for d in ALTERNATIVES])
def test_full_grid_float4_alternatives_compile_without_spills(build_clean, defines):
    build_clean("vecadd", "full_grid_float4", defines)
