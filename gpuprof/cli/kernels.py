"""`gpuprof list` and `gpuprof build`: the catalogue and the compiler's resource report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, fail
from gpuprof.cli._options import AddOptions, Arch, Defines, Variants, parse_defines
from gpuprof.commands.build import build_family, build_file
from gpuprof.errors import UsageError
from gpuprof.render.console import make_console
from gpuprof.variants import catalog
from gpuprof.variants.user import add_to_family

console = make_console()

FamilyArg = Annotated[Optional[str], typer.Argument(help="A kernel family (see `gpuprof list`); default: all.")]


@app.command("list")
def list_command(family: FamilyArg = None,
                 as_json: Annotated[bool, typer.Option("--json", help="Print the catalogue as JSON.")] = False) -> None:
    """Kernel families, their variants with a one-line technique each, and default sizes.

    Example: gpuprof list matmul
    """
    with exit_on_error():
        families = [catalog.load_family(family)] if family else catalog.load_all()
    if as_json:
        print(json.dumps([_family_json(f) for f in families], indent=1))
        return
    for fam in families:
        table = Table(title=f"{fam.name}: {fam.summary}  (default size {_size(fam.default_size)})",
                      title_justify="left")
        table.add_column("variant", no_wrap=True)
        table.add_column("technique")
        table.add_column("launch", no_wrap=True)
        for v in fam.variants:
            marks = " (vendor)" if v.vendor else ""
            marks += " (baseline)" if v.name == fam.baseline else ""
            launch = _launch_text(v)
            if v.max_size:
                launch += f", size cap {_size(v.max_size)}"
            table.add_row(v.name + marks, v.technique, launch)
        console.print(table)


def _launch_text(v: catalog.Variant) -> str:
    if v.vendor:
        return "library"
    if v.is_triton:
        return f"Triton JIT ({v.file.name if v.file else '?'})"
    return f"block {'x'.join(map(str, v.block_dims()[:len(v.block)]))}"


def _size(size: dict[str, int]) -> str:
    return "x".join(str(v) for v in size.values())


def _family_json(fam: catalog.Family) -> dict:
    return {
        "family": fam.name, "summary": fam.summary, "baseline": fam.baseline,
        "vendor_reference": fam.vendor_reference, "dims": list(fam.dims), "default_size": fam.default_size,
        "variants": [{"name": v.name, "technique": v.technique, "vendor": v.vendor,
                      "language": None if v.vendor else v.language, "kernel": v.kernel,
                      "file": v.file.name if v.file else None, "defines": v.defines, "max_size": v.max_size}
                     for v in fam.variants],
    }


@app.command()
def build(family: FamilyArg = None, variants: Variants = None, arch: Arch = "sm_90", define: Defines = None,
          as_json: Annotated[bool, typer.Option("--json", help="Print the resource report as JSON.")] = False,
          add: Annotated[Optional[str], typer.Option(
              "--add", help="Your own .cu file (FILE[:function]): with a FAMILY its signature is checked too; "
                            "alone, every extern \"C\" kernel in it is reported.")] = None,
          kernels_dir: AddOptions.KernelsDir = None) -> None:
    """Compile kernels with nvcc and print ptxas's resource report (registers, shared memory, stack, spills).

    Needs nvcc, not a GPU. Vendor variants have no source, and Triton variants are compiled by
    Triton at their first launch (`gpuprof run`), so both are left out, named under the table.
    With --add or --kernels-dir only your kernels are built (add --variants to put built-ins beside them).
    Examples: gpuprof build; gpuprof build matmul --arch sm_90 -D BM=64; gpuprof build --add mine.cu;
    gpuprof build matmul --add mine.cu --variants smem_tiled
    """
    with exit_on_error():
        overrides = parse_defines(define)
        spec = AddOptions.spec(add, None, None, None, kernels_dir)
        results = []
        triton = []
        if spec is not None and spec.path is not None and family is None:
            if kernels_dir is not None:
                raise UsageError("--add without a FAMILY builds one file; give a FAMILY to use --kernels-dir with it")
            results += build_file(spec.path, arch, overrides)
            families = []
        else:
            families = [catalog.load_family(family)] if family else catalog.load_all()
        for fam in families:
            fam, extra = add_to_family(fam, spec)
            if spec is None:
                chosen = fam.select(variants) if family else list(fam.variants)
            else:
                chosen = fam.select(variants) if variants else []
                chosen += [v for v in extra if v not in chosen]
            chosen = fam.apply_defines(chosen, overrides)
            triton += [f"{fam.name}/{v.name}" for v in chosen if v.is_triton]
            results += build_family(fam, chosen, arch)
        if spec is not None and not results:
            raise UsageError(f"--kernels-dir {kernels_dir} lists no variant for "
                             f"{family or 'any family'} (it needs DIR/<family>.toml)")
    if as_json:
        print(json.dumps([_build_json(r) for r in results], indent=1))
    else:
        console.print(_build_table(results, arch))
        if triton:
            console.print(f"not built here (Triton compiles them at their first launch): {', '.join(triton)}",
                          soft_wrap=True)
    failed = [r for r in results if r.error]
    if failed:
        raise fail(f"{len(failed)} kernel(s) did not compile: " + "; ".join(f"{r.family}/{r.variant}: {r.error}" for r in failed), 2)


def _build_json(r) -> dict:
    usage = r.usage.__dict__ if r.usage else None
    return {"family": r.family, "variant": r.variant, "defines": r.defines, "resources": usage, "error": r.error}


def _build_table(results, arch: str) -> Table:
    table = Table(title=f"nvcc -arch={arch} resource report (ptxas -v)", title_justify="left")
    for head in ("family", "variant", "registers", "smem (B)", "stack (B)", "spill st/ld (B)", "barriers", "defines"):
        table.add_column(head, justify="left" if head in ("family", "variant", "defines") else "right")
    for r in results:
        u = r.usage
        if u is None:
            table.add_row(r.family, r.variant, "[red]error[/]", "", "", "", "", r.error or "")
            continue
        spill = f"{u.spill_store_bytes}/{u.spill_load_bytes}"
        table.add_row(r.family, r.variant, str(u.registers), str(u.shared_bytes), str(u.stack_bytes),
                      f"[red]{spill}[/]" if u.spills else spill, str(u.barriers),
                      " ".join(f"{k}={v}" for k, v in r.defines.items()))
    return table


@app.command()
def new(
    family: Annotated[str, typer.Argument(help="The family your variant belongs to (see `gpuprof list`).")],
    name: Annotated[str, typer.Argument(help="Your variant's name, e.g. my_tiled (the file is NAME.cu).")],
    directory: Annotated[Path, typer.Option("--dir", help="Where to write NAME.cu.")] = Path("."),
) -> None:
    """Write a starter NAME.cu with the family's kernel signature and a header to fill in.

    Example: gpuprof new matmul my_tiled && gpuprof run matmul --variants smem_tiled,cublas --add my_tiled.cu
    """
    from gpuprof.commands.new import write_starter

    with exit_on_error():
        path = write_starter(catalog.load_family(family), name, directory)
    console.print(f"wrote {path}; fill in the kernel, then:\n"
                  f"  gpuprof run {family} --variants {catalog.load_family(family).baseline} --add {path}")
