"""NVML around every timing batch: the SM clock and whether power, heat or a hardware slowdown
capped it. A batch is throttled when any reading taken around it (before, while it runs, after)
has one of THROTTLING set; its samples are counted (and with --discard-throttled taken again)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# nvml.h nvmlClocksEventReason* bits that slow a kernel down. Left out on purpose: gpu_idle (set
# between batches), applications_clocks_setting and display_clock_setting (a configured clock,
# not a cap that comes and goes) and sync_boost.
THROTTLING = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}


def throttling_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLING.items() if mask & bit]


@dataclass(frozen=True)
class BatchReading:
    sm_clock_mhz: float | None  # the last NVML SM clock read around the batch
    reasons: tuple[str, ...]  # throttling reasons seen in any reading around it

    @property
    def throttled(self) -> bool:
        return bool(self.reasons)


class Monitor:
    """Reads NVML (or a stand-in with the same calls, for tests); does nothing where NVML is missing."""

    def __init__(self, nvml: Any = None, handle: Any = None) -> None:
        self._nvml, self._handle = nvml, handle
        self._clock: float | None = None
        self._reasons: set[str] = set()

    @classmethod
    def for_device(cls, uuid: str, index: int) -> Monitor:
        try:
            import pynvml

            pynvml.nvmlInit()
            try:  # by UUID, so CUDA_VISIBLE_DEVICES cannot make NVML read another GPU
                handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            except pynvml.NVMLError:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return cls(pynvml, handle)
        except Exception:  # noqa: BLE001 -- no NVML (library, driver or permission): timing goes on without it
            return cls()

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def read(self) -> None:
        """One reading, folded into the current batch's."""
        if self._nvml is None:
            return
        n = self._nvml
        try:
            get = (getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None)
                   or n.nvmlDeviceGetCurrentClocksThrottleReasons)
            self._reasons.update(throttling_names(int(get(self._handle))))
            self._clock = float(n.nvmlDeviceGetClockInfo(self._handle, n.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001 -- a query this GPU does not support: stop asking
            self._nvml = None

    def batch(self) -> BatchReading:
        """The readings since the last call, as one batch's; starts the next batch."""
        reading = BatchReading(self._clock, tuple(sorted(self._reasons)))
        self._reasons = set()
        return reading
