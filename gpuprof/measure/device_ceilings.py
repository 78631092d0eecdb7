"""This device's ceilings: the datasheet's (analysis.ceilings, pure) with the ones
`gpuprof devicequery --measure` measured alongside, kept in a cache file per GPU (by UUID)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

from gpuprof.analysis.ceilings import Ceilings, Measured, theoretical
from gpuprof.files import atomic_write_text
from gpuprof.gpu import DeviceInfo
from gpuprof.paths import CACHE_DIR


def cache_path(info: DeviceInfo) -> Path:
    return CACHE_DIR / "ceilings" / f"{info.uuid}.json"


def load_measured(info: DeviceInfo) -> Measured | None:
    """The cached measurement; None when there is none or it cannot be read (measure again)."""
    try:
        return Measured(**json.loads(cache_path(info).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def load(info: DeviceInfo) -> Ceilings:
    """Datasheet ceilings for this device, with its measured ones (if cached) alongside."""
    return replace(theoretical(info), measured=load_measured(info))


def save(info: DeviceInfo, measured: Measured) -> Path:
    path = cache_path(info)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(asdict(measured), indent=1))
    return path
