"""The kernel catalogue: finds kernels/*/family.toml, validates it, returns Family and Variant."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuprof.errors import InputError, UsageError
from gpuprof.files import read_toml
from gpuprof.variants.expressions import Expr, evaluate, size_symbols

_PACKAGED = Path(__file__).resolve().parents[1] / "_kernels"  # where a wheel puts kernels/ (pyproject force-include)
_SOURCE_TREE = Path(__file__).resolve().parents[2] / "kernels"  # a checkout or an editable install

LANGUAGES = ("cuda", "triton", "python")
PYTHON_LANGUAGES = ("triton", "python")  # a .py file with an entry point make_launch(inputs, out, size)
FLOP_COUNTS = ("executed", "nominal")  # nominal: the family's formula counts work this algorithm skips
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp64")  # the arithmetic a variant does; buffers stay the family's
# What a variant's author expects to hold it back, in words ncu can check (analysis.ladder, docs/ladder.md):
# a memory level's bandwidth, the compute pipe, or "latency" (far from every roof).
LIMITERS = ("dram", "l2", "l1", "compute", "latency")
_CUDA_ONLY_KEYS = ("kernel", "extra_kernels", "helpers", "block", "tile", "grid", "defines", "plan", "dynamic_smem",
                   "args", "reads_output", "arch")
# A variant's own compile target: sm_90a is Hopper with its architecture-specific instructions (wgmma,
# setmaxnreg), which a plain sm_90 build rejects; such a code runs on that one architecture only.
ARCH_PATTERN = re.compile(r"sm_\d{2,3}[af]?")
_VENDOR_KEYS = {"name", "technique", "vendor", "call", "precision", "error_model", "zero_output",
               "flop_count", "aliases", "options", "expected_efficiency", "expected_limiter",
               "launches_kernel", "require"}
VARIANT_KEYS = _VENDOR_KEYS | {"language", "file", "max_size", "entry", *_CUDA_ONLY_KEYS}


@dataclass(frozen=True)
class Variant:
    """One version of a family: a .cu file and its launch geometry, a Triton .py file (geometry in
    the file), or a vendor library call."""

    name: str
    technique: str
    vendor: bool = False
    # "cuda": file is a .cu run through NVRTC; "triton" or "python" (any framework): file is a .py whose
    # `entry` function, make_launch(inputs, out, size), returns launch(stream) (variants/python_variant.py)
    language: str = "cuda"
    entry: str = "make_launch"
    file: Path | None = None
    kernel: str | None = None
    extra_kernels: tuple[str, ...] = ()  # more entry points of the same file, for multi-kernel plans
    block: tuple[Expr, ...] = ()
    tile: tuple[Expr, ...] = ()
    # "tiles": ceil(extent / tile) per grid dim; "one": a single block; "per_sm:K" (K an integer or an
    # expression over the defines); "expressions"
    grid: str = "tiles"
    # grid = ["ceil(M/32)", "ceil(N/32)"]: one expression per grid axis (x first) over the defines and
    # the size symbols (M, N, K or m, n, k), for a kernel whose axes are not the family's grid_dims.
    grid_exprs: tuple[Expr, ...] = ()
    # args = ["M", "N", "K", 1.0, "A", "B", 0.0, "C"]: how the kernel's parameters map to the family's
    # buffers, sizes and scalars (variants/arguments.py); None: the family's own signature.
    args: tuple[str | int | float, ...] | None = None
    # The kernel reads its output (C = alpha*A*B + beta*C): it starts from known random values instead
    # of NaN, and the reference includes them.
    reads_output: bool = False
    defines: dict[str, int] = field(default_factory=dict)
    max_size: dict[str, int] | None = None  # a slow variant runs at min(size, max_size)
    # Bytes of dynamic shared memory per block (`extern __shared__`), an expression over the
    # defines like block and tile; the launch raises the kernel's limit when it is over 48 KB.
    dynamic_smem: Expr = 0
    user: bool = False  # added from the command line, not shipped
    # What differs per variant lives here, read from family.toml (never from the variant's name):
    precision: str = "fp32"  # its arithmetic (PRECISIONS): picks the tolerance and the ceiling
    error_model: str | None = None  # one of the family module's ERROR_MODELS; None: the family's first (safest)
    plan: str | None = None  # one of the family module's PLANS (how to launch it); None: the family's default
    expected_limiter: str | None = None  # one of LIMITERS, from the .cu header's prose; None: not stated
    helpers: dict[str, str] = field(default_factory=dict)  # role -> extern "C" helper kernel a plan launches
    zero_output: bool = False  # the output is zeroed (memset on the stream, timed) before each launch
    call: str | None = None  # vendor variants: which library call of the family module's vendor_launch
    # False: its work is no kernel at all (a cudaMemcpyAsync is a DMA copy), so ncu has nothing to profile.
    launches_kernel: bool = True
    # require = ["M % BM == 0", "K % 4 == 0"]: conditions on the sizes it runs at, over the size symbols
    # and its defines (variants/constraints.py): check sizes that break them are moved, a benchmark size
    # that breaks them is not run.
    require: tuple[str, ...] = ()
    # The target it must be compiled for (ARCH_PATTERN, e.g. "sm_90a"); None: the GPU's own (run) or --arch (build).
    arch: str | None = None

    def builds_for(self, arch: str) -> bool:
        """Whether the variant can be built for (and run on) `arch`: any, without its own target; else
        that architecture only (sm_90a is sm_90 with instructions other GPUs lack)."""
        return self.arch is None or self.arch.rstrip("af") == arch.rstrip("af")

    def helper(self, role: str) -> str:
        """The kernel name the manifest gives for a plan's helper role (KeyError names what is missing)."""
        if role not in self.helpers:
            raise KeyError(f"variant {self.name!r} declares no helper kernel for role {role!r} "
                           f"(helpers = {{ {role} = ... }})")
        return self.helpers[role]
    # Family-specific per-variant settings (`options = { ... }` in the manifest), read by the
    # family's host module: e.g. transfers' memory kind. Per-variant behaviour lives here, never
    # in a test of the variant's name.
    options: dict[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()  # other names the course uses for it, e.g. "tiled" for smem_tiled
    flop_count: str = "executed"  # "nominal": the family's FLOP formula is not what this algorithm does (FFT)
    # Roughly what fraction of its roofline (DRAM bandwidth or its precision's peak, whichever binds)
    # the variant reaches: only `suite --gpus` uses it, to guess run times and start the slow units
    # first when no earlier results file gives them. None: commands.suite_plan's default.
    expected_efficiency: float | None = None

    @property
    def is_cuda(self) -> bool:
        """A CUDA source gpuprof compiles itself (nvcc for `build`, NVRTC for `run`)."""
        return not self.vendor and self.language == "cuda"

    @property
    def is_triton(self) -> bool:
        return not self.vendor and self.language == "triton"

    @property
    def is_python(self) -> bool:
        """A .py file that launches its own kernels (Triton, CuPy, PyTorch extension, Numba, ...)."""
        return not self.vendor and self.language in PYTHON_LANGUAGES

    def block_dims(self) -> tuple[int, int, int]:
        dims = [evaluate(e, self.defines) for e in self.block] + [1, 1, 1]
        return dims[0], dims[1], dims[2]

    def tile_dims(self) -> tuple[int, ...]:
        return tuple(evaluate(e, self.defines) for e in self.tile)

    def grid_dims(self, dims: tuple[str, ...], size: dict[str, int]) -> tuple[int, ...]:
        """grid = [...] expressions at one size (the defines and the size symbols)."""
        symbols = {**self.defines, **size_symbols(dims, size)}
        return tuple(evaluate(e, symbols, "the defines and sizes") for e in self.grid_exprs)

    def dynamic_smem_bytes(self) -> int:
        return evaluate(self.dynamic_smem, self.defines)

    def blocks_per_sm(self) -> int:
        """K of grid = "per_sm:K": an integer, or an expression over the defines (per_sm:BLOCKS_PER_SM,
        so -D can sweep the grid size)."""
        return evaluate(self.grid.partition("per_sm:")[2], self.defines)

    def with_defines(self, overrides: dict[str, int]) -> Variant:
        return replace(self, defines={**self.defines, **overrides})


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    signature: str
    baseline: str
    vendor_reference: str | None
    dims: tuple[str, ...]
    grid_dims: tuple[str, ...]
    default_size: dict[str, int]
    check_sizes: tuple[dict[str, int], ...]
    variants: tuple[Variant, ...]
    directory: Path
    # `inplace = true` in family.toml: the kernels overwrite their inputs by design, so the check
    # does not hold a changed input against them (the reference still uses the untouched copy).
    inplace: bool = False
    # `check_launches = N` in family.toml: launches judged per check size, for a family whose launch
    # is too slow for the check's own number (None: measure.check.CHECK_LAUNCHES).
    check_launches: int | None = None
    # `switches = ["causal"]`: dims that turn a behaviour off (0) or on (1) rather than count elements;
    # every other dim is a positive extent.
    switches: tuple[str, ...] = ()
    # Where the family's Python is: `host = "gpuprof.families.vecadd"` (a module, as the built-in
    # families say) in the manifest; None: the folder's own family.py.
    host_module: str | None = None
    # The [op] table of a family folder that describes its op (inputs, output, reference, counts)
    # instead of writing every hook in Python (families/op_host.py reads it); None: family.py does.
    op: dict[str, Any] | None = None
    # require = ["cols <= 1024"]: conditions on the sizes every variant runs at (variants/constraints.py).
    require: tuple[str, ...] = ()

    def requires(self, variant: Variant) -> tuple[str, ...]:
        """The family's constraints and the variant's own, each once."""
        return tuple(dict.fromkeys((*self.require, *variant.require)))

    @property
    def locator(self) -> str:
        """What names this family to another process (a worker, ncu's or the sanitizer's child, a
        suite file): the bare name for a built-in folder, the folder's absolute path otherwise."""
        try:
            builtin = self.directory.resolve().parent == kernels_root().resolve()
        except InputError:
            builtin = False
        return self.name if builtin else str(self.directory.resolve())

    def variant(self, name: str) -> Variant:
        """By name, by alias, or by a prefix that picks out exactly one variant."""
        for v in self.variants:
            if v.name == name:
                return v
        for v in self.variants:
            if name in v.aliases:
                return v
        matches = [v for v in self.variants if any(n.startswith(name) for n in (v.name, *v.aliases))] if name else []
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UsageError(f"variant '{name}' of {self.name} is ambiguous: it could be "
                             f"{' or '.join(v.name for v in matches)}; type more of the name")
        aliases = [f"{a} = {v.name}" for v in self.variants for a in v.aliases]
        raise UsageError(f"unknown variant '{name}' of {self.name}; choose from: {', '.join(self.variant_names)}"
                         + (f" (aliases: {', '.join(aliases)})" if aliases else ""))

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    def select(self, names: str | list[str] | None) -> list[Variant]:
        """Variants named in a comma list (or 'all' / None for every one), in the given order."""
        if names is None or names == "all" or names == ["all"]:
            return list(self.variants)
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not names:
            raise UsageError(f"--variants is empty; choose from: {', '.join(self.variant_names)}")
        chosen: list[Variant] = []
        for v in map(self.variant, names):
            if v not in chosen:  # 'tiled,smem_tiled' names one variant twice
                chosen.append(v)
        return chosen

    def apply_defines(self, variants: list[Variant], overrides: dict[str, int]) -> list[Variant]:
        """The variants with -D overrides applied, each launch geometry checked again."""
        if not overrides:
            return variants
        out = []
        for v in variants:
            if v.is_cuda:  # -D reaches CUDA sources only; vendor calls and Triton files keep their own
                v = v.with_defines(overrides)
                try:
                    check_geometry("-D", self, v)
                except InputError as exc:
                    given = " ".join(f"-D {k}={x}" for k, x in overrides.items())
                    raise UsageError(f"{given} gives an invalid launch: {exc.message.removeprefix('-D: ')}") from None
            out.append(v)
        return out

    def with_variants(self, extra: list[Variant]) -> Family:
        taken = set(self.variant_names) | {a for v in self.variants for a in v.aliases}
        clash = taken & {v.name for v in extra}
        if clash:
            raise UsageError(f"variant name {min(clash)!r} already exists in {self.name}; rename yours")
        return replace(self, variants=self.variants + tuple(extra))


def kernels_root() -> Path:
    for root in (_PACKAGED, _SOURCE_TREE):
        if root.is_dir():
            return root
    raise InputError("gpuprof's kernels/ folder is missing from this installation; reinstall gpuprof")


def family_names(root: Path | None = None) -> list[str]:
    root = root or kernels_root()
    return sorted(p.parent.name for p in root.glob("*/family.toml"))


def load_family(word: str) -> Family:
    """For tests and scripts: the family a name or folder path names (families/registry.resolve,
    which the product's own code calls directly)."""
    from gpuprof.families import registry

    return registry.resolve(word)


def load_all() -> list[Family]:
    """For tests and scripts: every family found by name (families/registry.all_families)."""
    from gpuprof.families import registry

    return registry.all_families()


# The top-level keys of a family manifest (family.toml); [[variant]] tables have VARIANT_KEYS.
FAMILY_KEYS = ("family", "summary", "signature", "baseline", "vendor_reference", "dims", "grid_dims",
               "default_size", "check_sizes", "variant", "inplace", "check_launches", "host", "op",
               "require", "switches")


def parse_manifest(path: Path) -> Family:
    data = read_toml(path)
    m = _Manifest(path, data)
    unknown = sorted(set(data) - set(FAMILY_KEYS))
    if unknown:
        raise m.fail(unknown[0], f"is not a family key; known keys: {', '.join(FAMILY_KEYS)}")
    op = data.get("op")
    if op is not None and not isinstance(op, dict):
        raise m.fail("op", "must be a table ([op]) describing the op's inputs, output and reference")
    family = Family(
        name=m.text("family"),
        summary=m.text("summary"),
        signature=m.text("signature"),
        baseline=m.text("baseline"),
        vendor_reference=m.opt_str("vendor_reference"),
        dims=tuple(m.str_list("dims")),
        grid_dims=tuple(m.str_list("grid_dims")),
        default_size=m.size("default_size"),
        check_sizes=tuple(m.size_list("check_sizes")),
        variants=tuple(parse_variant(path, i, v) for i, v in enumerate(m.table_list("variant"), 1)),
        directory=path.parent,
        inplace=m.flag("inplace", default=False),
        check_launches=m.opt_count("check_launches"),
        switches=tuple(m.str_list("switches")) if "switches" in data else (),
        host_module=m.opt_str("host"),
        op=op,
        require=m.require(),
    )
    _validate(path, family)
    return family


def parse_variant(path: Path, index: int, data: dict[str, Any], *, user: bool = False) -> Variant:
    m = _Manifest(path, data, where=f"variant {index}")
    vendor = bool(data.get("vendor", False))
    name = m.text("name")
    unknown = sorted(set(data) - VARIANT_KEYS)
    if unknown:
        raise m.fail(unknown[0], f"is not a variant key; known keys: {', '.join(sorted(VARIANT_KEYS))}")
    common = _common_keys(m, data)
    if vendor:
        unused = sorted(set(data) - _VENDOR_KEYS)
        if unused:
            raise m.fail(unused[0],
                         "does not apply to a vendor variant (its launch is the family module's vendor_launch)")
        return Variant(name=name, technique=m.text("technique"), vendor=True,
                       call=m.text("call") if "call" in data else name, **common)
    if "call" in data:
        raise m.fail("call", "applies to vendor variants only (vendor = true)")
    language = data.get("language", "cuda")
    if language not in LANGUAGES:
        raise m.fail("language", f"is {language!r}; choose from: {', '.join(LANGUAGES)}")
    if language in PYTHON_LANGUAGES:
        unused = sorted(k for k in _CUDA_ONLY_KEYS if k in data)
        kind = "a Triton" if language == "triton" else "a Python"
        if unused:
            raise m.fail(unused[0], f"does not apply to {kind} variant (its launch geometry lives in the .py file)")
        file = m.text("file")
        if not file.endswith(".py"):
            raise m.fail("file", f"is {file!r}; {kind} variant is a .py file")
        entry = m.text("entry") if "entry" in data else "make_launch"
        if not entry.isidentifier():
            raise m.fail("entry", f"is {entry!r}; name the .py file's make_launch-like function")
        return Variant(name=name, technique=m.text("technique"), language=language, file=path.parent / file,
                       entry=entry, max_size=m.size("max_size") if "max_size" in data else None, user=user,
                       **common)
    if "entry" in data:
        raise m.fail("entry", 'applies to Python variants only (language = "python" or "triton")')
    defines = data.get("defines", {})
    if not isinstance(defines, dict) or not all(isinstance(v, int) for v in defines.values()):
        raise InputError(f"{path}: variant {index}: 'defines' must be a table of integers")
    helpers = m.str_table("helpers") if "helpers" in data else {}
    extra = tuple(m.str_list("extra_kernels")) if "extra_kernels" in data else ()
    kernel = m.text("kernel")
    grid, grid_exprs = _grid(m, data)
    return Variant(
        name=name,
        technique=m.text("technique"),
        file=path.parent / m.text("file"),
        kernel=kernel,
        # every entry point the plan may launch: the listed extras and the helpers, each once
        extra_kernels=tuple(dict.fromkeys(k for k in (*extra, *helpers.values()) if k != kernel)),
        helpers=helpers,
        plan=m.text("plan") if "plan" in data else None,
        block=tuple(m.expr_list("block")),
        tile=tuple(m.expr_list("tile")) if "tile" in data else (),
        grid=grid,
        grid_exprs=grid_exprs,
        args=_args(m, data),
        reads_output=m.flag("reads_output", default=False),
        defines=dict(defines),
        max_size=m.size("max_size") if "max_size" in data else None,
        dynamic_smem=m.expr("dynamic_smem") if "dynamic_smem" in data else 0,
        arch=_arch(m, data),
        user=user,
        **common,
    )


def _arch(m: _Manifest, data: dict[str, Any]) -> str | None:
    """`arch = "sm_90a"`: the target the kernel needs (wgmma, setmaxnreg, TMA multicast)."""
    if "arch" not in data:
        return None
    arch = m.text("arch")
    if not ARCH_PATTERN.fullmatch(arch):
        raise m.fail("arch", f"is {arch!r}; write a target like \"sm_90a\" (sm_ and the compute capability)")
    return arch


def _grid(m: _Manifest, data: dict[str, Any]) -> tuple[str, tuple[Expr, ...]]:
    """`grid = "tiles" | "one" | "per_sm:K"` (K an integer or an expression over the defines), or a
    list of expressions, one per grid axis."""
    value = data.get("grid", "tiles")
    if isinstance(value, list):
        return "expressions", tuple(m.expr_list("grid"))
    return str(value), ()


def _args(m: _Manifest, data: dict[str, Any]) -> tuple[str | int | float, ...] | None:
    """`args = ["M", "N", "K", 1.0, "A", "B", 0.0, "C"]`: names and numbers, checked against the
    kernel where its source is read (variants/user.py)."""
    if "args" not in data:
        return None
    value = data["args"]
    if not isinstance(value, list) or not value or not all(
            isinstance(x, (str, int, float)) and not isinstance(x, bool) and x != "" for x in value):
        raise m.fail("args", 'must be a list of names and numbers, e.g. ["M", "N", "K", 1.0, "A", "B", 0.0, "C"]')
    return tuple(value)


def _common_keys(m: _Manifest, data: dict[str, Any]) -> dict[str, Any]:
    """The keys every kind of variant (CUDA, Triton, vendor) may declare, checked; defaults otherwise."""
    precision = m.text("precision") if "precision" in data else "fp32"
    if precision not in PRECISIONS:
        raise m.fail("precision", f"is {precision!r}; choose from: {', '.join(PRECISIONS)}")
    zero_output = data.get("zero_output", False)
    if not isinstance(zero_output, bool):
        raise m.fail("zero_output", f"must be true or false, not {zero_output!r}")
    flop_count = m.text("flop_count") if "flop_count" in data else "executed"
    if flop_count not in FLOP_COUNTS:
        raise m.fail("flop_count", f"is {flop_count!r}; choose from: {', '.join(FLOP_COUNTS)}")
    aliases = tuple(m.str_list("aliases")) if "aliases" in data else ()
    limiter = m.text("expected_limiter") if "expected_limiter" in data else None
    if limiter is not None and limiter not in LIMITERS:
        raise m.fail("expected_limiter", f"is {limiter!r}; choose from: {', '.join(LIMITERS)}")
    launches_kernel = data.get("launches_kernel", True)
    if not isinstance(launches_kernel, bool):
        raise m.fail("launches_kernel", f"must be true or false, not {launches_kernel!r}")
    efficiency = data.get("expected_efficiency")
    if efficiency is not None and (isinstance(efficiency, bool) or not isinstance(efficiency, (int, float))
                                   or not 0 < efficiency <= 1):
        raise m.fail("expected_efficiency", f"must be a fraction in (0, 1], e.g. 0.01, not {efficiency!r}")
    return {"expected_efficiency": None if efficiency is None else float(efficiency), "precision": precision,
            "error_model": m.text("error_model") if "error_model" in data else None,
            "zero_output": zero_output, "flop_count": flop_count, "aliases": aliases, "options": m.options(),
            "expected_limiter": limiter, "launches_kernel": launches_kernel, "require": m.require()}


def _validate(path: Path, family: Family) -> None:
    names = family.variant_names
    validate_variants(path, family, family.variants)
    if path.parent.name != family.name:
        raise InputError(f"{path}: family = {family.name!r} but the folder is {path.parent.name!r}")
    for ref in (family.baseline, family.vendor_reference):
        if ref is not None and ref not in names:
            raise InputError(f"{path}: {ref!r} is named as baseline/vendor but is not a variant")
    for key, size in (("default_size", family.default_size), *(("check_sizes", s) for s in family.check_sizes)):
        if list(size) != list(family.dims):
            raise InputError(f"{path}: '{key}' {size} must give exactly {list(family.dims)} in that order")
        bad = size_problem(family, size)
        if bad:
            raise InputError(f"{path}: '{key}' {size}: {bad}")
    _check_require_names(path, "", family, family.require, {})


def _check_require_names(path: Path | str, where: str, family: Family, requires: tuple[str, ...],
                         defines: dict[str, int]) -> None:
    """`require` names only the size symbols (m or M) and, for a variant, its defines."""
    from gpuprof.variants.constraints import unknown_names

    known = [*family.dims, *(d.upper() for d in family.dims), *defines]
    unknown = unknown_names(requires, known)
    if unknown:
        have = "the sizes" + (" and its defines" if where else "")
        raise InputError(f"{path}: {where}'require' uses {unknown[0]}, which is none of {have}: {', '.join(known)}")


def validate_variants(path: Path, family: Family, variants: tuple[Variant, ...] | list[Variant]) -> None:
    """What a manifest's [[variant]] tables must satisfy: distinct names, files that exist, a
    launchable geometry for CUDA variants. For the built-in manifests and a user's --kernels-dir."""
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise InputError(f"{path}: duplicate variant names in {names}")
    aliases = [a for v in variants for a in v.aliases]
    clash = sorted({a for a in aliases if a in names or aliases.count(a) > 1})
    if clash:
        raise InputError(f"{path}: alias {clash[0]!r} is a variant name or another variant's alias")
    for v in variants:
        _check_require_names(path, f"variant {v.name!r}: ", family, v.require, v.defines)
        if v.vendor:
            continue
        if v.file is None or not v.file.is_file():
            raise InputError(f"{path}: variant {v.name!r}: file {v.file} does not exist")
        if v.is_cuda:
            check_geometry(path, family, v)


# Hopper's per-block opt-in limit for shared memory; the driver refuses a launch above it.
MAX_DYNAMIC_SMEM_BYTES = 227 * 1024


def check_geometry(path: Path | str, family: Family, v: Variant) -> None:
    for key, dims in (("block", v.block_dims), ("tile", v.tile_dims), ("dynamic_smem", v.dynamic_smem_bytes)):
        try:
            dims()
        except (ValueError, ZeroDivisionError) as exc:
            raise InputError(f"{path}: variant {v.name!r}: '{key}' {exc}") from None
    if not 0 <= v.dynamic_smem_bytes() <= MAX_DYNAMIC_SMEM_BYTES:
        raise InputError(
            f"{path}: variant {v.name!r}: dynamic_smem = {v.dynamic_smem_bytes()} bytes; "
            f"it must be 0..{MAX_DYNAMIC_SMEM_BYTES} (227 KB, the per-block limit)"
        )
    block, tile = v.block_dims(), v.tile_dims()
    if not 1 <= block[0] * block[1] * block[2] <= 1024 or min(block) < 1:
        raise InputError(f"{path}: variant {v.name!r}: block {block} must have 1..1024 threads")
    if v.grid == "expressions":
        _check_grid_expressions(path, family, v)
    if v.grid == "tiles" and (len(tile) != len(family.grid_dims) or min(tile, default=0) < 1):
        raise InputError(
            f"{path}: variant {v.name!r}: tile must give {len(family.grid_dims)} positive extents "
            f"(along {list(family.grid_dims)})"
        )
    if v.grid in ("tiles", "one", "expressions"):
        return
    try:
        per_sm = v.blocks_per_sm() if v.grid.startswith("per_sm:") else None
    except (ValueError, ZeroDivisionError):
        per_sm = None
    if per_sm is None or not 1 <= per_sm <= 1024:
        raise InputError(f"{path}: variant {v.name!r}: grid must be 'tiles', 'one', 'per_sm:K' (K from 1 to 1024 "
                         "blocks per SM, an integer or an expression over the defines such as per_sm:BLOCKS_PER_SM) "
                         "or a list of expressions such as [\"ceil(M/32)\", \"ceil(N/32)\"]")


def _check_grid_expressions(path: Path | str, family: Family, v: Variant) -> None:
    """Grid expressions evaluate, at every check size and the default one, to 1..3 positive extents."""
    if not 1 <= len(v.grid_exprs) <= 3:
        raise InputError(f"{path}: variant {v.name!r}: grid gives {len(v.grid_exprs)} axes; a grid has 1 to 3")
    for size in (*family.check_sizes, family.default_size):
        try:
            dims = v.grid_dims(family.dims, size)
        except (ValueError, ZeroDivisionError) as exc:
            raise InputError(f"{path}: variant {v.name!r}: 'grid' {exc}") from None
        if min(dims) < 1:
            raise InputError(f"{path}: variant {v.name!r}: grid {list(v.grid_exprs)} gives {dims} at size "
                             f"{size}; every axis needs at least one block")


class _Manifest:
    """Typed access to one TOML table with errors that name the file and the place."""

    def __init__(self, path: Path, data: dict[str, Any], where: str = "") -> None:
        self.path, self.data, self.where = path, data, where

    def fail(self, key: str, why: str) -> InputError:
        place = f"{self.where}: " if self.where else ""
        return InputError(f"{self.path}: {place}'{key}' {why}")

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise self.fail(key, "is missing")
        return self.data[key]

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(key, "must be a non-empty string")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def opt_count(self, key: str) -> int | None:
        """An optional whole number >= 1 (None when the key is absent)."""
        if key not in self.data:
            return None
        value = self.data[key]
        if not _is_count(value):
            raise self.fail(key, f"is {value!r}; it must be a whole number of at least 1")
        return value

    def opt_str(self, key: str) -> str | None:
        return self.text(key) if key in self.data else None

    def str_list(self, key: str) -> list[str]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(key, "must be a list of strings")
        return value

    def str_table(self, key: str) -> dict[str, str]:
        value = self._get(key)
        if not isinstance(value, dict) or not value or not all(isinstance(x, str) and x for x in value.values()):
            raise self.fail(key, "must be a table of role = \"kernel name\" strings")
        return dict(value)

    def expr_list(self, key: str) -> list[Expr]:
        value = self._get(key)
        if not isinstance(value, list) or not value or not all(isinstance(x, (int, str)) for x in value):
            raise self.fail(key, "must be a list of integers or arithmetic strings")
        return value

    def expr(self, key: str) -> Expr:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self.fail(key, "must be an integer or an arithmetic string over the defines, e.g. \"STAGES*BK*4\"")
        return value

    def size(self, key: str) -> dict[str, int]:
        return _size(self._get(key), lambda why: self.fail(key, why))

    def size_list(self, key: str) -> list[dict[str, int]]:
        value = self._get(key)
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a non-empty list of size tables")
        return [_size(v, lambda why: self.fail(key, why)) for v in value]

    def options(self) -> dict[str, Any]:
        """The optional `options` table: family-specific keys of a variant (strings, numbers, booleans)."""
        value = self.data.get("options", {})
        if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
            raise self.fail("options", "must be a table of strings, numbers or booleans, e.g. { memory = \"pinned\" }")
        # The one option the timer reads (measure/timing.py), so checked here for every family.
        if not isinstance(value.get("host_synchronous", False), bool):
            raise self.fail("options", "host_synchronous must be true or false")
        if not isinstance(value.get("captures_cuda_graph", False), bool):  # read by `gpuprof sanitize`
            raise self.fail("options", "captures_cuda_graph must be true or false")
        return dict(value)

    def require(self) -> tuple[str, ...]:
        """The optional `require` list: conditions such as "M % BM == 0" (variants/expressions.py)."""
        from gpuprof.variants.expressions import check_condition

        value = self.data.get("require", [])
        if not isinstance(value, list) or not all(isinstance(x, str) and x.strip() for x in value):
            raise self.fail("require", 'must be a list of conditions, e.g. ["M % 128 == 0", "cols <= 1024"]')
        for one in value:
            try:
                check_condition(one)
            except ValueError as exc:
                raise self.fail("require", str(exc)) from None
        return tuple(value)

    def table_list(self, key: str) -> list[dict[str, Any]]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
            raise self.fail(key, "must be an array of tables ([[variant]])")
        return value


def _is_count(value: Any) -> bool:
    """A whole number of at least 1 (TOML's true is no number)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _size(value: Any, fail: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise fail("must be a table like {n = 1024}")
    for k, v in value.items():
        if not (_is_count(v) or v == 0 and type(v) is int):  # 0 only for a switch: size_problem decides
            raise fail(f"has {k} = {v!r}; sizes are positive integers (a switch is 0 or 1)")
    return dict(value)


def size_problem(family: Family, size: dict[str, int]) -> str | None:
    """Why a size does not fit the family's dims (an extent below 1, a switch other than 0 or 1); None if it does."""
    for dim, value in size.items():
        if dim in family.switches:
            if value not in (0, 1):
                return f"{dim} is a switch, 0 or 1, not {value}"
        elif value < 1:
            return f"{dim} must be a positive integer, not {value}"
    return None
