"""The families' input generator (gpuprof/families/_random.py)."""

from __future__ import annotations


def test_host_generator_draws_like_the_families_ask_and_is_reproducible():
    """Under a sanitizer (launch --plain-alloc) inputs come from numpy: same seed, same arrays; the
    dtypes and ranges the families request."""
    import numpy as np

    from gpuprof.families._random import HostGenerator

    class FakeCupy:
        @staticmethod
        def asarray(a):
            return a

    import gpuprof.families._random as random_module

    original = random_module.cupy
    random_module.cupy = lambda: FakeCupy
    try:
        a, b = HostGenerator(7), HostGenerator(7)
        u = a.uniform(-1.0, 1.0, (3, 4), dtype=np.float32)
        assert u.dtype == np.float32 and u.shape == (3, 4) and (u >= -1).all() and (u < 1).all()
        assert np.array_equal(u, b.uniform(-1.0, 1.0, (3, 4), dtype=np.float32))
        assert a.random(5, dtype=np.float32).dtype == np.float32
        ints = a.integers(0, 7, 1000, dtype=np.int32)
        assert ints.dtype == np.int32 and ints.min() >= 0 and ints.max() < 7
        assert a.standard_normal(4, dtype=np.float32).dtype == np.float32
    finally:
        random_module.cupy = original


def test_starting_values_are_drawn_on_the_host_in_a_sanitized_child(monkeypatch):
    """An output the kernel reads gets its starting values where the inputs come from: under a
    sanitizer (draw_on_host) numpy, so no cuRAND set-up kernel runs for the sanitizer to check."""
    import numpy as np

    import gpuprof.families._random as random_module
    from gpuprof.measure.check import starting_values

    class FakeCupy:
        @staticmethod
        def asarray(a):
            return a

    monkeypatch.setattr(random_module, "cupy", lambda: FakeCupy)
    monkeypatch.setattr(random_module, "_on_host", True)
    out = np.zeros((4, 5), dtype=np.float32)
    start = starting_values(out, 11)
    assert start.dtype == np.float32 and start.shape == (4, 5) and (abs(start) <= 1).all()
    assert np.array_equal(start, starting_values(out, 11))  # numpy's generator: reproducible by seed
    complex_start = starting_values(np.zeros(3, dtype=np.complex64), 11)
    assert complex_start.dtype == np.complex64 and (complex_start.imag != 0).all()
