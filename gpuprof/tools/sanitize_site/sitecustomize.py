"""Put first on PYTHONPATH by `gpuprof sanitize -- COMMAND` for the program it sanitizes.

CuPy's memory pools hand out slices of large allocations, so an out-of-bounds access lands in
pooled memory and compute-sanitizer's memcheck sees nothing. No environment variable turns the
pools off; this hook does, the moment the program imports cupy. PyTorch's caching allocator is
turned off by PYTORCH_NO_CUDA_MEMORY_CACHING=1 in the same environment.

It then runs the sitecustomize that would have run without it (a virtualenv's or a distro's).
Standard library only: it runs inside the user's interpreter before anything else.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _pools_off(cupy) -> None:
    cupy.cuda.set_allocator(None)
    cupy.cuda.set_pinned_memory_allocator(None)


class _CupyPoolsOff(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of `cupy` so the pools go off once it is loaded."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "cupy":
            return None
        sys.meta_path.remove(self)  # one shot; the real finders locate cupy
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _pools_off(module)

        spec.loader.exec_module = exec_module
        return spec


def _install() -> None:
    if "cupy" in sys.modules:
        _pools_off(sys.modules["cupy"])
    else:
        sys.meta_path.insert(0, _CupyPoolsOff())


def _chain() -> None:
    """Run the next sitecustomize on sys.path, as Python would have without this one."""
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_install()
_chain()
