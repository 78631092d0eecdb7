"""`gpuprof list`, `gpuprof build`, `gpuprof new` and `gpuprof new-family`: the catalogue, the compiler's
resource report, a starter variant, a starter family folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, status
from gpuprof.cli._options import Arch, Force, JsonOut, Variants, json_target, with_variant_options
from gpuprof.cli._output import human_console, write_json
from gpuprof.errors import InputError, UsageError
from gpuprof.variants.selection import VariantOptions

if TYPE_CHECKING:
    from gpuprof.variants.catalog import Family

COMPILE_TIMEOUT_S = 300.0  # tools/nvcc.py's default, kept here so `gpuprof --help` imports no compiler code
CompileTimeout = Annotated[float, typer.Option(
    "--compile-timeout", metavar="S",
    help="Seconds one nvcc or NVRTC compile may take; past it the build stops with exit 2.")]
FamilyArg = Annotated[str | None, typer.Argument(help="A kernel family (see `gpuprof list`); default: all.")]


def _families(family: str | None) -> list[Family]:
    from gpuprof.families import registry

    return [registry.resolve(family)] if family else registry.all_families()


@app.command("list")
def list_command(family: FamilyArg = None, json_out: JsonOut = None, force: Force = False) -> None:
    """Kernel families, their variants with a one-line technique each, and default sizes.

    Examples: gpuprof list matmul; gpuprof list --json -
    """
    from gpuprof.files import check_outputs
    from gpuprof.render.fit import print_table
    from gpuprof.render.list_view import family_table

    with exit_on_error():
        target = json_target(json_out)
        check_outputs([], {"--json": target}, force)
        families = _families(family)
        write_json({"schema": "gpuprof.list", "families": [_family_json(f) for f in families]}, target)
    if str(target) == "-":
        return
    console = human_console(target)
    for fam in families:
        print_table(console, family_table(fam, console.width), wide=False)


def _family_json(fam: Family) -> dict:
    return {
        "family": fam.name, "summary": fam.summary, "baseline": fam.baseline,
        "vendor_reference": fam.vendor_reference, "dims": list(fam.dims), "default_size": fam.default_size,
        "variants": [{"name": v.name, "technique": v.technique, "vendor": v.vendor,
                      "language": None if v.vendor else v.language, "kernel": v.kernel,
                      "file": v.file.name if v.file else None, "defines": v.defines, "max_size": v.max_size}
                     for v in fam.variants],
    }


@app.command()
@with_variant_options
def build(family: FamilyArg = None, variants: Variants = None, arch: Arch = "sm_90", json_out: JsonOut = None,
          force: Force = False, compile_timeout: CompileTimeout = COMPILE_TIMEOUT_S, *,
          variant_options: VariantOptions) -> None:
    """Compile kernels with nvcc and print ptxas's resource report (registers, shared memory, stack, spills).

    Needs nvcc, not a GPU. Vendor variants have no source, and Triton and other Python variants
    (--add FILE.py) compile at their first launch (`gpuprof run`), so both are left out, named under the table.
    With --add or --kernels-dir only your kernels are built (add --variants to put built-ins beside them);
    --add without a FAMILY reports every extern "C" kernel in the file.
    Examples: gpuprof build; gpuprof build matmul --arch sm_90 -D BM=64; gpuprof build --add mine.cu;
    gpuprof build matmul --add mine.cu --variants smem_tiled; gpuprof build --json build.json
    """
    from gpuprof.commands.build import build_family, build_file, check_arch
    from gpuprof.files import check_outputs
    from gpuprof.render.build_view import build_json, build_table
    from gpuprof.render.fit import print_table
    from gpuprof.render.safe_text import visible

    with exit_on_error():
        target = json_target(json_out)
        check_outputs(variant_options.add or [], {"--json": target}, force)
        if variants is not None and family is None:
            raise UsageError("--variants needs a family: gpuprof build FAMILY -v NAMES")
        check_arch(arch)
        results, triton = [], []
        if variant_options.add and family is None:
            if variant_options.kernels_dir is not None:
                raise UsageError("--add without a FAMILY builds one file; give a FAMILY to use --kernels-dir with it")
            with status(f"nvcc -arch={arch}: {', '.join(variant_options.add)}"):
                for spec in variant_options.specs():
                    if spec.path is not None and spec.path.suffix == ".py":
                        triton.append(spec.path.name)  # a Python variant compiles at its first launch
                    elif spec.path is not None:  # always, with --add: only --kernels-dir alone names no file
                        results += build_file(spec.path, arch, variant_options.defines(), spec.function,
                                              compile_timeout)
            selection = []
        else:
            selection = variant_options.select(_families(family), variants)
        if variant_options.brings_variants and variants is None:
            # only the user's kernels, unless --variants puts built-ins beside them
            selection = [(fam, [v for v in chosen if v.name in {e.name for e in extra}], extra)
                         for fam, chosen, extra in selection]
        total = sum(sum(v.is_cuda for v in chosen) for _, chosen, _ in selection)
        with status(f"nvcc -arch={arch}: 0/{total} kernels") as spinner:
            def on_done(done: int) -> None:
                spinner.update(f"nvcc -arch={arch}: {len(results) + done}/{total} kernels")

            for fam, chosen, _ in selection:
                triton += [f"{fam.name}/{v.name}" for v in chosen if v.is_python]
                results += build_family(fam, chosen, arch, on_done=on_done, timeout_s=compile_timeout)
        write_json({"schema": "gpuprof.build", "arch": arch, "kernels": [build_json(r, arch) for r in results]},
                   target)
    console = human_console(target)
    if str(target) != "-":
        print_table(console, build_table(results, arch, console.width), wide=False)
        if triton:
            console.print(visible(f"not built here (Triton and other Python variants compile at their first launch): "
                                  f"{', '.join(triton)}"), markup=False, highlight=False)
    failed = [r for r in results if r.error]
    if failed:
        raise InputError(f"{len(failed)} kernel(s) did not compile: "
                         + "; ".join(f"{r.family}/{r.variant}: {r.error}" for r in failed))


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
    from gpuprof.families import registry

    with exit_on_error():
        fam = registry.resolve(family)
        path = write_starter(fam, name, directory)
    from gpuprof.render.safe_text import visible

    human_console(None).print(visible(f"wrote {path}; fill in the kernel, then:\n"
                                      f"  gpuprof run {family} --variants {fam.baseline} --add {path}"),
                              markup=False, highlight=False)


@app.command("new-family")
def new_family(
    name: Annotated[str, typer.Argument(help="The family's name, e.g. square_plus (the folder is NAME/).")],
    directory: Annotated[Path, typer.Option("--dir", help="Where to make the folder NAME/.")] = Path("."),
) -> None:
    """Write a starter family folder NAME/: an \\[op] manifest, its reference, a CUDA and a Triton variant.

    The op is y = x*x + x + 1 (change it); the folder's README says what each key means. Never overwrites.
    Examples: gpuprof new-family square_plus && gpuprof run ./square_plus; gpuprof new-family gelu --dir ~/ops
    """
    import os

    from gpuprof.commands.new_family import write_family

    with exit_on_error():
        folder = write_family(name, directory)
    shown = str(folder) if folder.is_absolute() else os.path.join(".", str(folder))
    from gpuprof.render.safe_text import visible

    human_console(None).print(visible(f"wrote {shown}/ (family.toml, family.py, {name}.cu, {name}_triton.py, "
                                      f"README.md); then:\n  gpuprof list {shown}\n  gpuprof run {shown}"),
                              soft_wrap=True, markup=False, highlight=False)
