"""nsys: find it (PATH, --nsys, Nsight Systems installs, the copy bundled with Nsight Compute),
build `nsys profile` / `nsys stats` argv, run them with timeouts and keep the raw outputs."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.files import atomic_write_text
from gpuprof.tools import _proc

# The four summaries gpuprof shows, in the order `nsys stats` prints them.
REPORTS = ("cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_api_sum", "nvtx_sum")
TRACE = "cuda,nvtx"
LIBS_ENV = "GPUPROF_NSYS_LIBS"  # extra folders for nsys's importer (libdw.so.1, libelf.so.1)
BUNDLE = Path("host") / "target-linux-x64"  # where Nsight Compute keeps its copy of nsys
OPT_NVIDIA = Path("/opt/nvidia")
PROFILE_TIMEOUT_S = 600.0
STATS_TIMEOUT_S = 300.0


def find_nsys(explicit: str | Path | None = None) -> str:
    """nsys as users have it: --nsys PATH, PATH, $CUDA_HOME, Nsight Systems, the Nsight Compute bundle."""
    if explicit:
        try:
            return _proc.find_tool("nsys", explicit)
        except UsageError:  # a bad flag value: exit 2
            raise UsageError(
                f"--nsys {explicit} is not an executable file; give the path of the nsys program") from None
    try:
        return _proc.find_tool("nsys", extra_dirs=tuple(search_dirs()))
    except EnvironmentProblem:
        raise EnvironmentProblem(
            "nsys (Nsight Systems) was not found on PATH, in $CUDA_HOME or next to ncu "
            f"(<ncu dir>/{BUNDLE}/nsys); install Nsight Systems or pass --nsys PATH"
        ) from None


def search_dirs(cuda_home: str | None = None, opt: Path | None = None) -> list[Path]:
    """Folders that may hold nsys beyond PATH: standalone Nsight Systems first, then Nsight Compute's bundle."""
    home = Path(cuda_home) if cuda_home else _proc.cuda_home()
    opt = OPT_NVIDIA if opt is None else opt
    dirs = _newest_first(opt.glob("nsight-systems/*/bin")) + _newest_first(home.glob("nsight-systems*/bin"))
    ncu = shutil.which("ncu") or (str(home / "bin" / "ncu") if (home / "bin" / "ncu").is_file() else None)
    if ncu:  # /usr/local/cuda/bin/ncu is often a link to /opt/nvidia/nsight-compute/<version>/ncu
        dirs.append(Path(os.path.realpath(ncu)).parent / BUNDLE)
    dirs += _newest_first(opt.glob(f"nsight-compute/*/{BUNDLE}"))
    dirs += _newest_first(home.glob(f"nsight-compute*/{BUNDLE}"))
    return list(dict.fromkeys(dirs))


def _newest_first(paths) -> list[Path]:
    def version(p: Path) -> list[int]:
        return [int(x) for x in re.findall(r"\d+", str(p))]

    return sorted(paths, key=version, reverse=True)


def nsys_env(lib_path: str | Path | None = None) -> dict[str, str] | None:
    """The environment for nsys: LD_LIBRARY_PATH led by --lib-path and $GPUPROF_NSYS_LIBS (None: unchanged)."""
    extra = [str(lib_path)] if lib_path else []
    extra += [d for d in os.environ.get(LIBS_ENV, "").split(os.pathsep) if d]
    if not extra:
        return None
    current = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    return {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(dict.fromkeys(extra + current))}


def profile_argv(nsys: str, output_base: Path, target_argv: list[str], trace: str = TRACE) -> list[str]:
    # Long forms only: -f is --force-overwrite here but --format in `nsys stats`.
    # No CPU sampling or context switches: a kernel timeline needs neither, and both cost time.
    return [nsys, "profile", f"--trace={trace}", "--sample=none", "--cpuctxsw=none",
            f"--output={output_base}", "--force-overwrite=true", *target_argv]


def stats_argv(nsys: str, report_path: Path, reports: tuple[str, ...] = REPORTS,
               sqlite: Path | None = None) -> list[str]:
    # --force-export=true: without it a second stats run refuses the SQLite of the first (exit 1).
    # But not for a .sqlite input: nsys 2025.3.1 then stops with "ERROR: Cannot force export of
    # SQLite data from .sqlite input file." and its usage text (seen on the lent H100).
    # Not -q: the "Processing [...] with [<report>.py]" lines name each CSV block and each
    # "SKIPPED: ... does not contain ..." line; -q leaves bare CSV blocks to be told apart by header.
    export = [] if Path(report_path).suffix == ".sqlite" else ["--force-export=true"]
    argv = [nsys, "stats", *export, "--report", ",".join(reports), "--format", "csv", "--output", "-"]
    if sqlite is not None:  # where the export goes; by default nsys writes it next to the report
        argv += ["--sqlite", str(sqlite)]
    return argv + [str(report_path)]


def run_profile(nsys: str, output_base: Path, target_argv: list[str], *, env: dict[str, str] | None = None,
                timeout_s: float = PROFILE_TIMEOUT_S) -> tuple[_proc.Completed, Path]:
    """`nsys profile` the target; its console output is kept as <base>.profile.log."""
    done = _proc.run(profile_argv(nsys, output_base, target_argv), timeout_s=timeout_s, env=env)
    log = _keep(output_base.parent / f"{output_base.name}.profile.log", done)
    return done, log


def run_stats(nsys: str, report_path: Path, out_dir: Path, *, env: dict[str, str] | None = None,
              reports: tuple[str, ...] = REPORTS, timeout_s: float = STATS_TIMEOUT_S) -> tuple[_proc.Completed, Path]:
    """`nsys stats` of a report; the export lands in out_dir, the CSV text in <stem>.stats.csv.txt."""
    stem = report_path.name.removesuffix(".nsys-rep").removesuffix(".sqlite")
    argv = stats_argv(nsys, report_path, reports, export_path(report_path, out_dir))
    done = _proc.run(argv, timeout_s=timeout_s, env=env)
    text = _keep(out_dir / f"{stem}.stats.txt", done)
    return done, text


def export_path(report_path: Path, out_dir: Path) -> Path | None:
    """Where `nsys stats` puts the SQLite export of a .nsys-rep: in out_dir, never beside a user's report."""
    if report_path.suffix == ".sqlite":
        return None
    return out_dir / (report_path.name.removesuffix(".nsys-rep") + ".sqlite")


def _keep(path: Path, done: _proc.Completed) -> Path:
    text = done.stdout + (f"\n--- stderr ---\n{done.stderr}" if done.stderr.strip() else "")
    atomic_write_text(path, text)  # never through a link left in the folder
    return path


IMPORTER = "QdstrmImporter"  # turns nsys's raw .qdstrm recording into the .nsys-rep report
IMPORTER_LIBS = ("libdw.so.1", "libelf.so.1")  # what the Nsight Compute bundle's importer lacks on stock images
_SYSTEM_LIB_DIRS = (Path("/lib/x86_64-linux-gnu"), Path("/usr/lib/x86_64-linux-gnu"), Path("/lib64"),
                    Path("/usr/lib64"), Path("/lib"), Path("/usr/lib"), Path("/lib/aarch64-linux-gnu"),
                    Path("/usr/lib/aarch64-linux-gnu"))


def importer_path(nsys: str | Path) -> Path | None:
    """nsys's importer: beside nsys, or in a sibling folder of its install (host-linux-x64/)."""
    here = Path(os.path.realpath(nsys)).parent
    for candidate in (here / IMPORTER, *sorted(here.parent.glob(f"*/{IMPORTER}"))):
        if candidate.is_file():
            return candidate
    return None


def missing_importer_libraries(nsys: str | Path, env: dict[str, str] | None = None) -> tuple[Path | None, list[str]]:
    """(the importer, the shared libraries it cannot load) with nsys's environment (--lib-path,
    $GPUPROF_NSYS_LIBS). With the importer and ldd: what ldd says is 'not found'. Otherwise, which of
    IMPORTER_LIBS is on none of LD_LIBRARY_PATH, the loader's cache and the system folders."""
    importer = importer_path(nsys)
    ldd = shutil.which("ldd")
    if importer is not None and ldd is not None:
        try:
            done = _proc.run([ldd, str(importer)], timeout_s=30, env=env)
        except EnvironmentProblem:
            done = None
        if done is not None and done.returncode == 0:
            return importer, [line.split("=>")[0].strip() for line in done.stdout.splitlines()
                              if "not found" in line and "=>" in line]
    return importer, [lib for lib in IMPORTER_LIBS if not _library_found(lib, env)]


def _library_found(name: str, env: dict[str, str] | None) -> bool:
    paths = (env or os.environ).get("LD_LIBRARY_PATH", "")
    dirs = [Path(d) for d in paths.split(os.pathsep) if d] + list(_SYSTEM_LIB_DIRS)
    if any((d / name).exists() for d in dirs):
        return True
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").is_file() else None)
    if ldconfig is None:
        return False
    try:
        done = _proc.run([ldconfig, "-p"], timeout_s=30)
    except EnvironmentProblem:
        return False
    return any(line.strip().startswith(name + " ") for line in done.stdout.splitlines())
