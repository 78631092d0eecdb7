"""The catalogue: manifest <-> .cu and Triton .py files both ways, geometry, malformed manifests,
select."""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from pathlib import Path

import pytest

from gpuprof import families
from gpuprof.errors import InputError, UsageError
from gpuprof.variants import catalog, headers
from gpuprof.variants.expressions import evaluate
from gpuprof.variants.user import KernelDeclaration, kernel_declarations

# ---------------------------------------------------------------- helpers

FAMILIES = catalog.load_all()
# A variant may build another family's file with defines of its own (gemm_fp16's rungs are gemm_bf16's,
# with GEMM_ELEM_FP16): the file's conventions are checked where it lives, the borrowing below.
BORROWED = [(f, v) for f in FAMILIES for v in f.variants
            if v.is_cuda and v.file.resolve().parent != f.directory.resolve()]
COMPILED = [(f, v) for f in FAMILIES for v in f.variants if v.is_cuda and (f, v) not in BORROWED]
COMPILED_IDS = [f"{f.name}/{v.name}" for f, v in COMPILED]
TRITON = [(f, v) for f in FAMILIES for v in f.variants if v.is_triton]
TRITON_IDS = [f"{f.name}/{v.name}" for f, v in TRITON]

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)


def source(v: catalog.Variant) -> str:
    assert v.file is not None
    return v.file.read_text()


def compiled_text(v: catalog.Variant) -> str:
    """The variant's file with the text of the headers it #includes in front (its defines and their
    defaults may live in a shared header, e.g. conv2d/winograd_pipeline.cuh)."""
    assert v.file is not None
    text = source(v)
    included = [h for h in headers.kernel_headers(v.file) if f'{h.name}"' in text]
    return "".join(h.read_text() + "\n" for h in included) + text


def strip_comment(text: str) -> str:
    return text.split("//", 1)[0].strip()


def ifndef_defaults(text: str) -> dict[str, int]:
    """`#ifndef X / #define X 8 / #endif` blocks: the defaults a -D X=.. overrides."""
    found = re.findall(r"^\s*#ifndef\s+(\w+)\s*\n\s*#define\s+\1\b([^\n]*)\n\s*#endif", text, re.MULTILINE)
    return {name: int(strip_comment(value)) for name, value in found}


def macros(text: str, overrides: dict[str, int]) -> dict[str, int]:
    """Every object-like integer #define in the file, with overrides winning over #ifndef defaults."""
    values = dict(overrides)
    for name, body in re.findall(r"^\s*#define\s+(\w+)[ \t]+([^\n]+)$", text, re.MULTILINE):
        if name in values:
            continue
        try:
            values[name] = evaluate(strip_comment(body), values)
        except ValueError:
            pass  # a function-like or non-integer macro
    return values


def kernel_declaration(text: str, kernel: str) -> KernelDeclaration | None:
    """The product's own reading of a declaration (gpuprof.variants.user), so a regex bug there shows here."""
    return kernel_declarations(text).get(kernel)


def normalize(params: str) -> str:
    return " ".join(params.replace(",", " , ").split())


def default_typedefs(text: str) -> dict[str, str]:
    """`typedef T name;` aliases by name, the last one of each name winning: in a header that chooses
    the type with #if ... #else (gemm_bf16/elem.cuh), the default build's is the #else branch, last."""
    return {name: target for target, name in re.findall(r"^\s*typedef\s+(\w+)\s+(\w+)\s*;", text, re.MULTILINE)}


def with_typedefs_resolved(params: str, aliases: dict[str, str]) -> str:
    return re.sub(r"\w+", lambda word: aliases.get(word.group(0), word.group(0)), params)


def write_family(root: Path, name: str = "toy", manifest: str | None = None, files: tuple[str, ...] = ("a.cu",),
                 **replace: str) -> Path:
    """A small valid family under root/name; `replace` swaps whole manifest lines by key."""
    folder = root / name
    folder.mkdir(parents=True)
    for f in files:
        (folder / f).write_text(f'// {name} / {f[:-3]}\nextern "C" __global__ void {name}_{f[:-3]}(int n) {{}}\n')
    text = manifest if manifest is not None else textwrap.dedent(f"""\
        family = "{name}"
        summary = "a toy family"
        host = "gpuprof.families.vecadd"
        signature = "int n"
        baseline = "a"
        dims = ["n"]
        grid_dims = ["n"]
        default_size = {{ n = 1024 }}
        check_sizes = [{{ n = 1 }}, {{ n = 77 }}]

        [[variant]]
        name = "a"
        file = "a.cu"
        kernel = "{name}_a"
        technique = "one thread per element"
        block = [128]
        tile = [128]
        """)
    for key, line in replace.items():
        text, count = re.subn(rf"^{key} = .*$", line, text, count=1, flags=re.MULTILINE)
        assert count == 1, f"no line for {key}"
    path = folder / "family.toml"
    path.write_text(text)
    return path


def after_path(message: str, path: Path) -> str:
    """The message without the file name (tmp_path names contain test names, hence key words)."""
    assert str(path) in message
    return message.replace(str(path), "")


def variant_block(name: str, extra: str = "", file: str = "a.cu", kernel: str = "toy_a") -> str:
    return textwrap.dedent(f"""
        [[variant]]
        name = "{name}"
        file = "{file}"
        kernel = "{kernel}"
        technique = "t"
        block = [128]
        tile = [128]
        """) + extra


# ---------------------------------------------------------------- manifest <-> files


def test_families_are_found_and_have_host_modules():
    names = catalog.family_names()
    assert names == sorted(names)
    assert {"vecadd", "matmul"} <= set(names)
    for name in names:  # a family without a host module could be listed but never run
        assert families.host(catalog.load_family(name)).module.__name__ == f"gpuprof.families.{name}"
    for fam in FAMILIES:
        assert families.host(fam).RATE in ("flop", "bytes", "link")


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_every_cu_file_in_a_family_folder_is_a_variant(fam):
    on_disk = {p.resolve() for p in fam.directory.glob("*.cu")}
    in_manifest = {v.file.resolve() for v in fam.variants if v.is_cuda}
    here = fam.directory.resolve()
    assert on_disk == {f for f in in_manifest if f.parent == here}
    # A file of another folder (gemm_fp16 builds gemm_bf16's rungs) is a variant of that folder's family.
    for file in in_manifest - on_disk:
        owner = catalog.load_family(file.parent.name)
        assert file in {v.file.resolve() for v in owner.variants if v.is_cuda}, file


@pytest.mark.parametrize(("fam", "v"), BORROWED, ids=[f"{f.name}/{v.name}" for f, v in BORROWED])
def test_a_borrowed_file_is_its_owners_variant_with_more_defines(fam, v):
    """Same file, kernel and geometry as the owner's variant of that file; the defines the owner's plus
    switches of the borrower's own (which the file reads with #if, not #ifndef defaults)."""
    root = catalog.kernels_root().resolve()
    assert v.file.resolve().is_relative_to(root)  # installed with the package (kernels/ as a whole)
    owner = catalog.load_family(v.file.resolve().parent.name)
    mine = next(o for o in owner.variants if o.is_cuda and o.file.resolve() == v.file.resolve())
    assert (v.kernel, v.block, v.tile, v.dynamic_smem, v.arch, v.plan) == \
        (mine.kernel, mine.block, mine.tile, mine.dynamic_smem, mine.arch, mine.plan)
    extra = {k: value for k, value in v.defines.items() if k not in mine.defines}
    assert {k: value for k, value in v.defines.items() if k in mine.defines} == mine.defines and extra
    assert not set(extra) & set(ifndef_defaults(compiled_text(v)))


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_every_py_file_in_a_family_folder_is_a_triton_variant(fam):
    on_disk = {p.resolve() for p in fam.directory.glob("*.py")}
    in_manifest = {v.file.resolve() for v in fam.variants if v.is_triton}
    assert on_disk == in_manifest


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_family_references_and_sizes(fam):
    assert fam.directory.name == fam.name
    assert fam.baseline in fam.variant_names
    assert not fam.variant(fam.baseline).vendor
    if fam.vendor_reference is not None:
        assert fam.variant(fam.vendor_reference).vendor
    assert len(set(fam.variant_names)) == len(fam.variant_names)
    assert set(fam.grid_dims) <= set(fam.dims)
    for size in (fam.default_size, *fam.check_sizes):
        assert list(size) == list(fam.dims)
        assert catalog.size_problem(fam, size) is None  # extents >= 1, switches 0 or 1


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_every_variant_has_a_technique_and_a_short_word_name(fam):
    for v in fam.variants:
        assert v.technique.strip(), v.name
        assert re.fullmatch(r"[a-z][a-z0-9_]*", v.name), v.name


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_variant_file_exists_and_is_named_for_the_variant(fam, v):
    assert v.file.is_file()
    assert v.file.parent == fam.directory
    assert v.file.name == f"{v.name}.cu"


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_kernel_symbol_is_extern_c_global_with_the_family_signature(fam, v):
    assert v.kernel == f"{fam.name}_{v.name}"
    decl = kernel_declaration(source(v), v.kernel)
    assert decl is not None, f'{v.file.name}: no extern "C" __global__ void {v.kernel}(...)'
    decl = dataclasses.replace(decl, params=with_typedefs_resolved(decl.params, default_typedefs(compiled_text(v))))
    if v.kernel in v.helpers.values():  # a role of the variant's plan, launched with the plan's own arguments
        return
    maps = [key for key in v.options if key.startswith("tma_box_")]  # buffers passed as TMA tensor maps
    if maps:  # those leading parameters are __grid_constant__ tensor maps; the rest is the family's
        params, family_params = decl.params.split(","), fam.signature.split(",")
        assert all("__grid_constant__" in p for p in params[:len(maps)])
        assert normalize(",".join(params[len(maps):])) == normalize(",".join(family_params[len(maps):]))
        return
    assert normalize(decl.params) == normalize(fam.signature)


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_header_comment_names_family_and_variant(fam, v):
    lines = source(v).splitlines()
    assert lines[0].startswith(f"// {fam.name} / {v.name}")
    assert len(lines) > 1 and lines[1].startswith("//"), "the header says what changed and why"


HEADERS = sorted(p for f in FAMILIES for p in f.directory.glob("*.cuh"))


def test_scan_helpers_live_in_one_shared_header():
    """The scan-then-propagate helpers are plumbing: one copy, not one per variant (issue 11 item 5)."""
    assert catalog.load_family("scan").directory / "scan_propagate.cuh" in HEADERS
    for v in catalog.load_family("scan").variants:
        if v.plan == "propagate":
            text = source(v)
            assert '#include "scan_propagate.cuh"' in text
            assert "const float off = offsets[blockIdx.x];" not in text  # the add helper is not copied back in


@pytest.mark.parametrize("header", HEADERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_shared_header_is_included_by_a_variant_and_says_what_it_is(header):
    """A family folder may hold .cuh headers beside the variants (found by nvcc beside the file and
    by NVRTC through -I the folder): each one is used and starts like a variant's header comment."""
    fam = catalog.load_family(header.parent.name)
    lines = header.read_text().splitlines()
    assert lines[0].startswith(f"// {fam.name} / ") and lines[1].startswith("//")
    assert "#pragma once" in lines
    users = [v.name for v in fam.variants if v.is_cuda and f'#include "{header.name}"' in source(v)]
    assert users, f"{header.name} is included by no variant"


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_compilers_get_the_family_folder_on_the_include_path(fam, v):
    from gpuprof.tools import nvcc
    from gpuprof.variants import nvrtc

    assert f"-I{fam.directory.resolve()}" in nvrtc.nvrtc_options(v)
    assert f"-I{fam.directory.resolve()}" in nvcc.nvcc_argv("nvcc", v.file, "sm_90", v.defines, Path("o.cubin"))


def test_editing_a_shared_header_changes_what_nvrtc_caches(tmp_path):
    """CuPy keys its compile cache on the source text and options only: the header digest goes into
    the source, and it covers the headers beside the file and one it includes from another folder."""
    from gpuprof.variants import headers

    (tmp_path / "fam").mkdir()
    (tmp_path / "other").mkdir()
    kernel = tmp_path / "fam" / "k.cu"
    kernel.write_text('#include "../other/far.cuh"\n')
    (tmp_path / "fam" / "h.cuh").write_text("// a\n")
    (tmp_path / "other" / "far.cuh").write_text('#include "deeper.cuh"\n')
    (tmp_path / "other" / "deeper.cuh").write_text("// x\n")
    (tmp_path / "other" / "unused.cuh").write_text("// not included\n")
    assert [p.name for p in headers.kernel_headers(kernel)] == ["h.cuh", "deeper.cuh", "far.cuh"]
    digests = [headers.headers_digest(kernel)]
    for header, text in (("fam/h.cuh", "// b\n"), ("other/deeper.cuh", "// y\n")):
        (tmp_path / header).write_text(text)
        digests.append(headers.headers_digest(kernel))
    (tmp_path / "other" / "unused.cuh").write_text("// edited\n")
    digests.append(headers.headers_digest(kernel))
    assert len(set(digests[:3])) == 3 and digests[3] == digests[2]


def test_fused_winograd_shares_the_conv2d_pipeline_header():
    """fused/winograd and conv2d/winograd run one pipeline (a header in conv2d/), so a change to it
    reaches both builds' cache keys."""
    from gpuprof.variants import headers

    pipeline = catalog.load_family("conv2d").directory / "winograd_pipeline.cuh"
    for family in ("conv2d", "fused"):
        variant = catalog.load_family(family).variant("winograd")
        assert pipeline.resolve() in headers.kernel_headers(variant.file)


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_manifest_defines_equal_the_ifndef_defaults(fam, v):
    assert v.defines == ifndef_defaults(compiled_text(v))


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_block_and_tile_evaluate_to_a_launchable_geometry(fam, v):
    block = v.block_dims()
    threads = block[0] * block[1] * block[2]
    assert 1 <= threads <= MAX_THREADS_PER_BLOCK
    assert all(1 <= d <= limit for d, limit in zip(block, MAX_BLOCK_DIMS))
    if v.grid == "tiles":
        tile = v.tile_dims()
        assert len(tile) == len(fam.grid_dims)
        assert min(tile) >= 1
    elif v.grid == "expressions":  # one expression per grid axis, at the family's default size
        assert all(1 <= axis < 2**31 for axis in v.grid_dims(fam.dims, fam.default_size))
    else:
        assert v.grid == "one" or (v.grid.startswith("per_sm:") and 1 <= v.blocks_per_sm() <= 1024)


BOUNDED = [(f, v) for f, v in COMPILED if "__launch_bounds__" in source(v)]


@pytest.mark.parametrize(("fam", "v"), BOUNDED, ids=[f"{f.name}/{v.name}" for f, v in BOUNDED])
def test_block_threads_agree_with_launch_bounds(fam, v):
    """A launch with more threads than __launch_bounds__ fails at run time; catch it here."""
    text = compiled_text(v)
    decl = kernel_declaration(text, v.kernel)
    assert decl is not None and decl.bounds is not None
    max_threads_expr = decl.bounds.split(",")[0].strip()
    bound = evaluate(max_threads_expr, macros(text, v.defines))
    block = v.block_dims()
    assert block[0] * block[1] * block[2] == bound


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_max_size_caps_only_known_dimensions(fam, v):
    if v.max_size is None:
        return
    assert set(v.max_size) <= set(fam.dims)
    assert all(v.max_size[d] <= fam.default_size[d] for d in v.max_size)


# ---------------------------------------------------------------- Triton variants


def test_vecadd_and_softmax_ship_a_triton_variant():
    assert {(f.name, v.name) for f, v in TRITON} >= {("vecadd", "triton"), ("softmax", "triton")}
    for fam, v in TRITON:
        assert v.language == "triton" and not v.vendor and not v.is_cuda
        assert (v.kernel, v.block, v.tile, v.defines, v.extra_kernels) == (None, (), (), {}, ())
    assert all(v.language == "cuda" for f in FAMILIES for v in f.variants if not v.vendor and not v.is_triton)


@pytest.mark.parametrize(("fam", "v"), TRITON, ids=TRITON_IDS)
def test_triton_file_exists_and_cannot_shadow_the_triton_package(fam, v):
    assert v.file.is_file() and v.file.parent == fam.directory
    assert v.file.suffix == ".py" and v.name in v.file.stem
    assert v.file.stem != "triton"  # kernels/<family>/triton.py would be imported for `import triton`


@pytest.mark.parametrize(("fam", "v"), TRITON, ids=TRITON_IDS)
def test_triton_file_header_names_family_and_variant(fam, v):
    doc = ast.get_docstring(ast.parse(source(v)))
    assert doc is not None, f"{v.file.name}: no module docstring"
    lines = doc.splitlines()
    assert lines[0] == f"{fam.name} / {v.name}"
    assert len(lines) > 1 and lines[1].strip(), "the header says what the version does and why"


@pytest.mark.parametrize(("fam", "v"), TRITON, ids=TRITON_IDS)
def test_triton_file_defines_make_launch_and_jit_kernels(fam, v):
    """Read without importing (CI has no Triton): make_launch(inputs, out, size) and @triton.jit kernels."""
    tree = ast.parse(source(v))
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert "make_launch" in functions
    assert [a.arg for a in functions["make_launch"].args.args] == ["inputs", "out", "size"]
    jitted = [f for f in functions.values() if any(ast.unparse(d) == "triton.jit" for d in f.decorator_list)]
    assert jitted, f"{v.file.name}: no @triton.jit kernel"


@pytest.mark.parametrize(("fam", "v"), TRITON, ids=TRITON_IDS)
def test_triton_variants_ignore_define_overrides(fam, v):
    (same,) = fam.apply_defines([v], {"BLOCK": 64})
    assert same == v


def test_manifest_triton_variant_is_parsed(tmp_path):
    path = write_family(tmp_path)
    (path.parent / "triton_toy.py").write_text('"""toy / tri\nA toy."""\n')
    path.write_text(path.read_text() + textwrap.dedent("""
        [[variant]]
        name = "tri"
        language = "triton"
        file = "triton_toy.py"
        technique = "t"
        max_size = { n = 64 }
        """))
    fam = catalog.parse_manifest(path)
    v = fam.variant("tri")
    assert (v.language, v.vendor, v.is_triton, v.file, v.max_size) == (
        "triton", False, True, path.parent / "triton_toy.py", {"n": 64})
    assert fam.variant("a").language == "cuda" and fam.variant("a").is_cuda


TRITON_MALFORMED = {
    "unknown language": ('language = "opencl"\nfile = "triton_toy.py"', "language"),
    "not a .py file": ('language = "triton"\nfile = "a.cu"', "a.cu"),
    "missing file": ('language = "triton"\nfile = "nope.py"', "nope.py"),
    "no file key": ('language = "triton"', "'file' is missing"),
    "CUDA geometry": ('language = "triton"\nfile = "triton_toy.py"\nblock = [128]', "'block' does not apply"),
    "a kernel name": ('language = "triton"\nfile = "triton_toy.py"\nkernel = "k"', "'kernel' does not apply"),
}


@pytest.mark.parametrize(("lines", "key"), TRITON_MALFORMED.values(), ids=TRITON_MALFORMED.keys())
def test_malformed_triton_variant_names_the_file_and_the_key(tmp_path, lines, key):
    path = write_family(tmp_path)
    (path.parent / "triton_toy.py").write_text('"""toy / tri"""\n')
    path.write_text(path.read_text() + f'\n[[variant]]\nname = "tri"\ntechnique = "t"\n{lines}\n')
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert key in after_path(info.value.message, path)
    assert "\n" not in info.value.message


# ---------------------------------------------------------------- defines


def test_with_defines_overrides_geometry_and_keeps_the_original():
    v = catalog.load_family("matmul").variant("blocktile_2d")
    smaller = v.with_defines({"BM": v.defines["BM"] // 2})
    assert smaller.block_dims()[0] * 2 == v.block_dims()[0]
    assert smaller.defines["BN"] == v.defines["BN"]
    assert v.defines != smaller.defines  # the catalogue's variant is unchanged


# ---------------------------------------------------------------- malformed manifests


def test_the_toy_family_helper_is_valid(tmp_path):
    fam = catalog.parse_manifest(write_family(tmp_path))
    assert fam.variant_names == ["a"]
    assert fam.variant("a").block_dims() == (128, 1, 1)


MALFORMED = {
    "missing key": ({"summary": "# summary removed"}, "summary"),
    "wrong type: dims": ({"dims": 'dims = "n"'}, "dims"),
    "wrong type: summary": ({"summary": "summary = 3"}, "summary"),
    "bad size value": ({"default_size": "default_size = { n = 0 }"}, "default_size"),
    "size not a table": ({"default_size": "default_size = 1024"}, "default_size"),
    "empty check sizes": ({"check_sizes": "check_sizes = []"}, "check_sizes"),
    "baseline not a variant": ({"baseline": 'baseline = "zzz"'}, "baseline"),
    "family is not the folder": ({"family": 'family = "other"'}, "family"),
    "variant missing kernel": ({"kernel": "# kernel removed"}, "kernel"),
    "variant file missing": ({"file": 'file = "missing.cu"'}, "missing.cu"),
    "tile arity": ({"tile": "tile = [128, 128]"}, "tile"),
    "block too big": ({"block": "block = [2048]"}, "block"),
    "block not a list": ({"block": 'block = "128"'}, "block"),
    "block unknown define": ({"block": 'block = ["BX"]'}, "BX"),
    "block divides by zero": ({"block": 'block = ["128 / 0"]'}, "division"),
    "block not arithmetic": ({"block": 'block = ["__import__(\'os\')"]'}, "only + - * /"),
    "defines not integers": ({"technique": 'technique = "t"\ndefines = { BM = "64" }'}, "defines"),
    "bad grid kind": ({"technique": 'technique = "t"\ngrid = "twice"'}, "grid"),
}


@pytest.mark.parametrize(("replace", "key"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_manifest_names_the_file_and_the_key(tmp_path, replace, key):
    path = write_family(tmp_path, **replace)
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    message = info.value.message
    assert info.value.exit_code == 2
    assert message.startswith(f"{path}: ")
    assert key in after_path(message, path)
    assert "\n" not in message


def test_duplicate_variant_names_are_rejected(tmp_path):
    path = write_family(tmp_path)
    path.write_text(path.read_text() + variant_block("a"))
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    rest = after_path(info.value.message, path)
    assert "duplicate variant name" in rest and "'a'" in rest


def test_second_variant_errors_say_which_variant(tmp_path):
    path = write_family(tmp_path)
    path.write_text(path.read_text() + variant_block("b").replace('kernel = "toy_a"\n', ""))
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert "variant 2: 'kernel' is missing" in after_path(info.value.message, path)


def test_not_toml_is_an_input_error(tmp_path):
    path = write_family(tmp_path, manifest="family = [unclosed\n")
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert "not valid TOML" in after_path(info.value.message, path)


def test_variant_table_must_be_an_array_of_tables(tmp_path):
    path = write_family(tmp_path)
    text = path.read_text().split("[[variant]]")[0] + 'variant = "a"\n'
    path.write_text(text)
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert "'variant'" in after_path(info.value.message, path)


BAD_EXPRESSIONS = {
    "unknown define": 'block = ["BX"]',
    "division by zero": 'block = ["128 / 0"]',
    "not arithmetic": 'block = ["__import__(\'os\')"]',
}


@pytest.mark.parametrize("line", BAD_EXPRESSIONS.values(), ids=BAD_EXPRESSIONS.keys())
def test_bad_block_expression_names_the_key(tmp_path, line):
    path = write_family(tmp_path, block=line)
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert "block" in after_path(info.value.message, path)


def test_size_table_with_wrong_dimensions_names_the_key(tmp_path):
    path = write_family(tmp_path, default_size="default_size = { m = 1024 }")
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert "default_size" in after_path(info.value.message, path)


def test_load_family_from_a_families_dir_a_path_and_unknown_family(tmp_path, monkeypatch):
    write_family(tmp_path, name="toy")
    write_family(tmp_path, name="other")
    assert catalog.family_names(tmp_path) == ["other", "toy"]
    assert catalog.load_family(str(tmp_path / "toy")).name == "toy"  # a folder path
    monkeypatch.setenv("GPUPROF_FAMILIES_DIR", str(tmp_path))
    assert catalog.load_family("toy").directory == tmp_path / "toy"  # a name in a families dir
    with pytest.raises(UsageError) as info:
        catalog.load_family("nope")
    assert "unknown family 'nope'" in info.value.message
    assert "other" in info.value.message and "toy" in info.value.message and "vecadd" in info.value.message


# ---------------------------------------------------------------- select


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("names", [None, "all", ["all"]])
def test_select_all_and_none_give_every_variant_in_catalogue_order(fam, names):
    assert [v.name for v in fam.select(names)] == fam.variant_names


def test_select_keeps_the_given_order_and_ignores_blanks():
    fam = catalog.load_family("matmul")
    assert [v.name for v in fam.select("cublas, naive,,smem_tiled")] == ["cublas", "naive", "smem_tiled"]
    assert [v.name for v in fam.select(["smem_tiled", "naive"])] == ["smem_tiled", "naive"]


@pytest.mark.parametrize("names", ["naive,bogus", ["bogus"], "Naive"])
def test_select_unknown_name_lists_the_choices(names):
    fam = catalog.load_family("matmul")
    with pytest.raises(UsageError) as info:
        fam.select(names)
    message = info.value.message
    assert "unknown variant" in message
    assert ", ".join(fam.variant_names) in message
    assert "tiled = smem_tiled" in message  # aliases are listed after the names


def test_select_takes_the_design_cards_names_by_alias():
    fam = catalog.load_family("matmul")
    assert [v.name for v in fam.select("naive,tiled,cublas")] == ["naive", "smem_tiled", "cublas"]
    assert [v.name for v in fam.select("tiled,smem_tiled")] == ["smem_tiled"]  # one variant, once


@pytest.mark.parametrize(("typed", "name"), [("warp", "warptile"), ("blocktile_2", "blocktile_2d"),
                                             ("cublas", "cublas"), ("2d_block", "blocktile_2d")])
def test_select_takes_a_unique_prefix_of_a_name_or_alias(typed, name):
    assert catalog.load_family("matmul").variant(typed).name == name


@pytest.mark.parametrize(("typed", "candidates"), [("blocktile", ["blocktile_1d", "blocktile_2d"]),
                                                    ("cub", ["cublas", "cublas_tf32"])])
def test_select_ambiguous_prefix_names_every_candidate(typed, candidates):
    with pytest.raises(UsageError, match="ambiguous") as info:
        catalog.load_family("matmul").select(typed)
    assert all(c in info.value.message for c in candidates)


def test_every_shipped_alias_resolves_to_its_variant():
    for fam in FAMILIES:
        for v in fam.variants:
            for alias in v.aliases:
                assert fam.variant(alias) is v


def test_alias_that_is_another_variants_name_is_refused(tmp_path):
    path = write_family(tmp_path, files=("a.cu", "b.cu"), manifest=None)
    path.write_text(path.read_text() + variant_block("b", 'aliases = ["a"]\n', file="b.cu", kernel="toy_b"))
    with pytest.raises(InputError, match="alias 'a'"):
        catalog.parse_manifest(path)


def test_user_variant_may_not_take_a_shipped_alias():
    fam = catalog.load_family("matmul")
    from dataclasses import replace
    with pytest.raises(UsageError, match="'tiled' already exists"):
        fam.with_variants([replace(fam.variant("naive"), name="tiled", user=True)])


@pytest.mark.parametrize("names", ["", " , ", []])
def test_select_nothing_is_a_usage_error(names):
    fam = catalog.load_family("vecadd")
    with pytest.raises(UsageError, match="empty") as info:
        fam.select(names)
    assert ", ".join(fam.variant_names) in info.value.message


def test_with_variants_refuses_a_name_clash():
    fam = catalog.load_family("vecadd")
    with pytest.raises(UsageError, match="'grid' already exists"):
        fam.with_variants([fam.variant("grid")])
