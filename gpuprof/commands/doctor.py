"""`gpuprof doctor`'s core: which tools and libraries this machine has, and what to do about each gap."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import EnvironmentProblem, GpuprofError
from gpuprof.tools import _proc

PROFILING_PARAMS = Path("/proc/driver/nvidia/params")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # version or path when ok, what to do when not
    needed_for: str
    required: bool = False  # run needs it; the others serve one command or option each


def _tool(name: str, version_argv: list[str], needed_for: str, finder=None) -> Check:
    try:
        path = finder() if finder else _proc.find_tool(name)
    except GpuprofError as exc:
        return Check(name, False, exc.message, needed_for)
    try:
        done = _proc.run([path, *version_argv], timeout_s=30)
        text = done.stdout + done.stderr
    except EnvironmentProblem as exc:
        return Check(name, False, f"{path} does not answer --version: {exc.message}", needed_for)
    version = re.findall(r"\d+\.\d+(?:\.\d+)*", text)
    return Check(name, True, f"{version[-1] if version else 'version unknown'} at {path}", needed_for)


def _module(name: str, needed_for: str, install: str, distribution: str | None = None) -> Check:
    """Found without importing it (torch alone takes seconds), with its installed version."""
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return Check(name, False, f"not installed: {install}", needed_for)
    return Check(name, True, _version_of(distribution or name), needed_for)


def _version_of(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        for dist in metadata.distributions():  # cupy-cuda13x, nvidia-ml-py: the import name differs
            name = (dist.metadata["Name"] or "").lower()
            if name.startswith(distribution.lower()):
                return f"{dist.version} ({dist.metadata['Name']})"
    return "installed (version unknown)"


def torch_check(gpu_found: bool) -> Check:
    """PyTorch, flagged when it is a CPU-only build on a machine with a GPU (its vendor variants fail)."""
    check = _module("torch", "vendor variants (cuBLAS, cuDNN, torch ops), --timing cupti", "pip install torch")
    if not check.ok or not gpu_found:
        return check
    try:
        import torch  # only here, on a GPU machine: the one way to know which build it is

        cpu_only = torch.version.cuda is None
    except Exception:  # noqa: BLE001 -- a broken torch install is reported as such, never a crash of doctor
        return Check("torch", False, f"{check.detail} is installed but does not import", check.needed_for)
    if cpu_only:
        return Check("torch", False, f"{check.detail} is a CPU-only build; install a CUDA build from "
                     "https://pytorch.org/get-started/locally/", check.needed_for)
    return check


def counters_permitted() -> Check:
    """RmProfilingAdminOnly: 1 means only root may read performance counters (ERR_NVGPUCTRPERM)."""
    try:
        text = PROFILING_PARAMS.read_text()
    except OSError:
        return Check("performance counters", False, f"cannot read {PROFILING_PARAMS} (no NVIDIA driver here?)",
                     "gpuprof ncu")
    m = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    if m is None or m.group(1) == "0":
        return Check("performance counters", True, "open to all users (RmProfilingAdminOnly: 0)", "gpuprof ncu")
    return Check("performance counters", False, "admin only: run as root or set the driver option "
                 "NVreg_RestrictProfilingToAdminUsers=0", "gpuprof ncu")


def gpu() -> Check:
    try:
        from gpuprof.gpu import device_info

        info = device_info()
    except GpuprofError as exc:
        return Check("CUDA GPU", False, exc.message, "run, ncu, nsys, sanitize")
    return Check("CUDA GPU", True, f"{info.name} (sm_{info.compute_capability.replace('.', '')}, "
                 f"{info.sm_count} SMs)", "run, ncu, nsys, sanitize")


def nsys_importer(nsys_check: Check) -> Check | None:
    """Whether the nsys found can turn a recording into a report: its importer's shared libraries
    (the Nsight Compute bundle's copy lacks libdw/libelf on stock images). None where no nsys was found."""
    from gpuprof.tools import nsys as nsys_tool

    needed_for = "gpuprof nsys, profile (without it they use CUPTI or the PyTorch profiler)"
    if not nsys_check.ok:
        return None
    try:
        path = nsys_tool.find_nsys()
    except GpuprofError:
        return None
    importer, missing = nsys_tool.missing_importer_libraries(path, nsys_tool.nsys_env())
    shown = str(importer) if importer else f"the importer of {path}"
    if not missing:
        found = "its libraries load" if importer else f"{' and '.join(nsys_tool.IMPORTER_LIBS)} found"
        return Check("nsys importer", True, f"{found} ({shown})", needed_for)
    return Check("nsys importer", False, (
        f"{shown} cannot load {', '.join(missing)}: nsys records but makes no report; install libdw1 and libelf1 "
        f"(apt-get install libdw1 libelf1) or put a folder holding them in ${nsys_tool.LIBS_ENV} or --lib-path DIR; "
        "until then gpuprof nsys and profile use CUPTI through gpuprof's injection library, or the PyTorch profiler"),
        needed_for)


TIMELINE_NEEDED_FOR = "gpuprof nsys, profile"


def cupti_injection() -> Check:
    """Whether gpuprof's CUPTI injection library can be had here: CUPTI found, and the library built
    (or already in the cache) for it."""
    from gpuprof.commands.nsys_cupti import prepare

    needed_for = "gpuprof nsys/profile -- COMMAND where nsys cannot make a report"
    try:
        install, library = prepare()
    except GpuprofError as exc:
        return Check("CUPTI injection", False, exc.message, needed_for)
    return Check("CUPTI injection", True, f"{library.name} (cached) built against {install.library}", needed_for)


def timeline_sources(nsys: Check, importer: Check | None, cupti: Check, torch: Check, gpu_found: bool) -> Check:
    """Which timeline sources `nsys` and `profile` can use here, in the order they are tried."""
    usable = []
    if nsys.ok and (importer is None or importer.ok):
        usable.append("nsys")
    if cupti.ok:
        usable.append("CUPTI injection (any program)")
    if torch.ok:
        usable.append("PyTorch profiler (Python programs, families)")
    if not usable:
        return Check("timeline sources", False, "none: install Nsight Systems, or the CUDA toolkit's CUPTI and g++, "
                     "or PyTorch", TIMELINE_NEEDED_FOR)
    where = "" if gpu_found else " (once a GPU is here)"
    return Check("timeline sources", True, ", then ".join(usable) + where, TIMELINE_NEEDED_FOR)


NVRTC_NEEDED_FOR = "run, build (CUDA variants are compiled by NVRTC through CuPy, as `run` compiles them)"


def nvrtc() -> Check:
    """NVRTC, the compiler `run` builds CUDA variants with and `build` checks them with: loaded through
    CuPy's binding as they load it, its version as the library reports it, and the file it came from."""
    from gpuprof.variants.nvrtc import nvrtc_library

    try:
        import cupy_backends  # noqa: F401  # without CuPy there is no binding to load it through
    except ImportError:
        return Check("NVRTC", False, "not checked: it is loaded through CuPy, which is not installed "
                     "(pip install 'gpuprof[cuda13]')", NVRTC_NEEDED_FOR)
    library = nvrtc_library()
    if library is None:
        return Check("NVRTC", False, "libnvrtc does not load: pip install nvidia-cuda-nvrtc (the wheel matching "
                     "CuPy's CUDA major version) or put the toolkit's lib64 on LD_LIBRARY_PATH", NVRTC_NEEDED_FOR)
    try:
        version = ".".join(str(part) for part in library.getVersion())
    except Exception:  # noqa: BLE001  # it loaded a moment ago; a version it cannot tell is not a failure
        version = "version unknown"
    where = _loaded_from("libnvrtc")
    return Check("NVRTC", True, version + (f" at {where}" if where else ""), NVRTC_NEEDED_FOR)


def _loaded_from(stem: str) -> str | None:
    """The file of a shared library this process has loaded (Linux /proc/self/maps), if any."""
    try:
        maps = Path("/proc/self/maps").read_text(errors="replace").splitlines()
    except OSError:
        return None
    paths = [line.split()[-1] for line in maps if f"/{stem}" in line and line.split()[-1].startswith("/")]
    return paths[0] if paths else None


def diagnose() -> list[Check]:
    """Every check; `required` ones (a GPU, CuPy, nvcc, NVRTC) decide doctor's exit code."""
    from dataclasses import replace

    from gpuprof.tools.ncu import find_ncu
    from gpuprof.tools.nsys import find_nsys
    from gpuprof.tools.sanitizer import find_sanitizer

    device = gpu()
    nsys = _tool("nsys", ["--version"], "gpuprof nsys", find_nsys)
    importer = nsys_importer(nsys)
    torch = torch_check(device.ok)
    cupti = cupti_injection()
    return [
        replace(device, required=True),
        replace(_module("cupy", "run, launch", "pip install 'gpuprof[cuda13]' (or 'gpuprof[cuda12]')", "cupy"),
                required=True),
        replace(_tool("nvcc", ["--version"], "run --add, build"), required=True),
        replace(nvrtc(), required=True),
        torch,
        _module("triton", "Triton variants (vecadd/triton, softmax/triton; with torch)", "pip install triton"),
        _tool("ncu", ["--version"], "gpuprof ncu", find_ncu),
        nsys,
        *([importer] if importer is not None else []),
        cupti,
        timeline_sources(nsys, importer, cupti, torch, device.ok),
        _tool("compute-sanitizer", ["--version"], "gpuprof sanitize", find_sanitizer),
        counters_permitted(),
        # A gpuprof dependency on x86-64 Linux only (pyproject's marker), so not required here.
        _module("ncu_report", "ncu --source; reading .ncu-rep without ncu",
                "pip install ncu-report (a gpuprof dependency on x86-64 Linux)", "ncu-report"),
        _module("pynvml", "live clocks and power in devicequery", "pip install nvidia-ml-py", "nvidia-ml-py"),
        _module("matplotlib", "--plot", "pip install 'gpuprof[plot]'"),
    ]
