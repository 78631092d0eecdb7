"""Where gpuprof keeps files between runs (compile cache, measured ceilings)."""

from __future__ import annotations

import os
from pathlib import Path

# CuPy caches compiled modules on disk keyed by source, options, architecture and NVRTC version;
# gpuprof points that cache at its own folder so `gpuprof` runs share it.
CACHE_DIR = Path(os.environ.get("GPUPROF_CACHE_DIR", Path.home() / ".cache" / "gpuprof"))
