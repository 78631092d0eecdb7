"""`gpuprof sanitize`'s core: every variant under each compute-sanitizer tool, findings parsed."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import GpuprofError, ParseError
from gpuprof.parsers.sanitizer_log import SanitizerFinding, SanitizerToolError, parse_log
from gpuprof.tools import sanitizer as tool
from gpuprof.tools.target import LaunchTarget


@dataclass
class SanitizeResult:
    """One (variant, tool) run: findings, or why it could not be judged."""

    label: str
    tool: str
    findings: list[SanitizerFinding] = field(default_factory=list)
    error_count: int | None = None
    exit_code: int | None = None
    error: str | None = None
    log: Path | None = None

    @property
    def clean(self) -> bool:
        return self.error is None and not self.findings and not self.error_count


def sanitize_size(sizes: list[dict[str, int]]) -> dict[str, int]:
    """The middle check size by element count: awkward, but small enough for racecheck and
    initcheck, which slow a kernel down a hundredfold or more."""
    def elements(size: dict[str, int]) -> int:
        total = 1
        for value in size.values():
            total *= value
        return total

    ordered = sorted(sizes, key=elements)
    return ordered[(len(ordered) - 1) // 2] if len(ordered) > 2 else ordered[-1]


def sanitize_targets(targets: list[LaunchTarget], tools: list[str], out_dir: Path, sanitizer: str | None = None,
                     progress: Callable[[str], None] | None = None, leak_check: bool = False,
                     jobs: int = 1) -> list[SanitizeResult]:
    """Every target under every tool, `jobs` sanitizer processes at a time (they share the GPU;
    each is slow on the host side). Results come back in target, tool order."""
    exe = tool.find_sanitizer(sanitizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = [(target, name) for target in targets for name in tools]

    def one(run: tuple[LaunchTarget, str]) -> SanitizeResult:
        target, name = run
        label = f"{target.family}/{target.variant}"
        if progress:
            progress(f"{label} {name}")
        log = out_dir / f"{target.family}_{target.variant}_{name}.log"
        return run_one(exe, name, target.argv(), label, log, leak_check)

    if jobs <= 1:
        return [one(run) for run in runs]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        try:
            return list(pool.map(one, runs))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: start nothing more
            raise


def sanitize_command(command: list[str], tools: list[str], out_dir: Path, sanitizer: str | None = None,
                     leak_check: bool = False) -> list[SanitizeResult]:
    exe = tool.find_sanitizer(sanitizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [run_one(exe, name, command, " ".join(command)[:50], out_dir / f"command_{name}.log", leak_check)
            for name in tools]


def import_log(path: Path, tool_name: str | None = None) -> SanitizeResult:
    from gpuprof.files import read_text
    from gpuprof.parsers.sanitizer_log import load_xml

    text = read_text(path, "sanitizer log")
    summary = load_xml(path, tool_name) if text.lstrip().startswith("<?xml") else parse_log(text, path, tool_name)
    return SanitizeResult(path.name, summary.tool, list(summary.findings), summary.error_count, log=path)


def run_one(exe: str, name: str, target: list[str], label: str, log: Path, leak_check: bool = False) -> SanitizeResult:
    try:
        code, text = tool.run_tool(tool.sanitizer_argv(exe, name, target, leak_check), log)
    except GpuprofError as exc:  # a timeout: this variant hangs under the tool
        return SanitizeResult(label, name, error=exc.message, log=log)
    try:
        summary = parse_log(text, log, name)
    except (ParseError, SanitizerToolError) as exc:
        return SanitizeResult(label, name, exit_code=code, error=f"unreadable sanitizer output: {exc}", log=log)
    result = SanitizeResult(label, name, list(summary.findings), summary.error_count, code, log=log)
    if code not in (0, tool.FINDINGS_EXIT_CODE) and not result.findings:
        tail = " ".join(text.strip().splitlines()[-2:])[-200:]
        result.error = f"the program failed under {name} (exit {code}): {tail}"
    return result
