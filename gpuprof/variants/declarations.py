"""The __global__ kernels a CUDA source declares, as gpuprof reads them without a compiler:
extern "C" entry points, C++ kernels (found by their C++ name) and templates (instantiated by a
name expression such as `sgemmWarptiling<128,128,16,64,64,4,8,4,128>`), with their parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuprof.variants.expressions import split_top_level

# `[template <...>] [extern "C"] [static|inline] __global__ [__launch_bounds__(...)] void [__launch_bounds__(...)]
# name(params)`; __launch_bounds__'s arguments may hold one level of parentheses.
_BOUNDS = r'__launch_bounds__\s*\((?P<{}>(?:[^()]|\([^()]*\))*)\)\s*'
KERNEL_DECLARATION = re.compile(
    r'(?:template\s*<(?P<tparams>[^{};]*?)>\s*)?(?P<extern>extern\s+"C"\s+)?(?:(?:static|inline)\s+)*'
    r'__global__\s+' + "(?:" + _BOUNDS.format("bounds_before") + ")?"
    + r"void\s+" + "(?:" + _BOUNDS.format("bounds") + ")?"
    + r"(?!__launch_bounds__\b)(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)",
    re.DOTALL,
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_INTEGER_ARGUMENT = re.compile(r"^\s*(-?\d+)[uUlL]*\s*$")


@dataclass(frozen=True)
class KernelDeclaration:
    """One __global__ kernel found in a source file."""

    name: str
    params: str
    bounds: str | None  # the __launch_bounds__ arguments, as written
    line: int
    extern_c: bool = True  # False: a C++ kernel, reached by its C++ name (NVRTC name expression, mangled in a cubin)
    template_params: str | None = None  # `typename T, int BM` of a template kernel, as written


def kernel_declarations(source: str, *, extern_c_only: bool = False) -> dict[str, KernelDeclaration]:
    """Every __global__ kernel in a CUDA source, by name (comments ignored; lines kept). CR and CRLF
    line ends count as line ends, as compilers read them (a `//` comment ends at a lone CR)."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    code = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    found = {}
    for m in KERNEL_DECLARATION.finditer(code):
        if extern_c_only and not m.group("extern"):
            continue
        bounds = m.group("bounds") if m.group("bounds") is not None else m.group("bounds_before")
        found[m.group("name")] = KernelDeclaration(
            m.group("name"), m.group("params"), bounds, code.count("\n", 0, m.start("name")) + 1,
            extern_c=bool(m.group("extern")), template_params=m.group("tparams"))
    return found


def base_name(kernel: str) -> str:
    """'sgemmWarptiling<128, 64>' -> 'sgemmWarptiling'; a plain name stays as it is."""
    return kernel.split("<", 1)[0].strip()


def template_arguments(kernel: str) -> list[str]:
    """'k<128, float>' -> ['128', 'float']; [] for a plain name."""
    if "<" not in kernel:
        return []
    inside = kernel.split("<", 1)[1].rsplit(">", 1)[0]
    return [a for a in split_top_level(inside) if a]


def is_cpp_entry(declaration: KernelDeclaration, kernel: str) -> bool:
    """Whether the kernel is reached through its C++ name rather than an extern "C" symbol."""
    return not declaration.extern_c or "<" in kernel


def instance_name(kernel: str, defines: dict[str, int]) -> str:
    """The name expression with each define named in its template arguments replaced by its value:
    `k<BM, BN>` with BM=64, BN=32 -> `k<64, 32>` (those defines are the template's arguments)."""
    if "<" not in kernel:
        return kernel
    head, rest = kernel.split("<", 1)
    return head + "<" + re.sub(r"\b[A-Za-z_]\w*\b", lambda m: str(defines.get(m.group(0), m.group(0))), rest)


def template_defines(kernel: str, defines: dict[str, int]) -> set[str]:
    """The defines a name expression uses as template arguments (not passed to the compiler as -D:
    they would rewrite the template's own parameter names, often the same words)."""
    if "<" not in kernel:
        return set()
    return {d for d in defines if re.search(rf"\b{re.escape(d)}\b", kernel.split("<", 1)[1])}


def parameters(params: str) -> list[tuple[str, str]]:
    """'const float* __restrict__ A, int n' -> [('const float*', 'A'), ('int', 'n')]: (type, name)."""
    out = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        words = param.replace("*", " * ").replace("&", " & ").replace("__restrict__", " ").split()
        name = words.pop() if len(words) > 1 and words[-1] not in ("*", "&") else ""
        out.append((" ".join(words).replace(" *", "*").replace(" &", "&"), name))
    return out


def parameter_types(params: str) -> list[str]:
    """'const float* __restrict__ A, int n' -> ['const float*', 'int']: the types, names dropped."""
    return [kind for kind, _ in parameters(params)]


def instantiated_parameters(declaration: KernelDeclaration, kernel: str) -> list[tuple[str, str]]:
    """The kernel's (type, name) parameters, a template's type parameters replaced by the name
    expression's arguments (`typename T` with `k<float>`: T* becomes float*)."""
    params = parameters(declaration.params)
    if not declaration.template_params:
        return params
    names = [p.split("=")[0].split()[-1] if p.split("=")[0].split() else "" for p in
             split_top_level(declaration.template_params)]
    kinds = [p.split()[0] if p.split() else "" for p in split_top_level(declaration.template_params)]
    replace = {n: a for n, k, a in zip(names, kinds, template_arguments(kernel)) if k in ("typename", "class")}
    if not replace:
        return params
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, replace)) + r")\b")
    return [(pattern.sub(lambda m: replace[m.group(0)], kind), name) for kind, name in params]


def same_instance(demangled: str, kernel: str) -> bool:
    """Whether a demangled symbol ('void k<128, 64>(int, float*)') is the name expression's
    instance ('k<128,64>'): its name and template arguments, spaces and integer suffixes aside."""
    head = demangled.removeprefix("void ").strip()
    depth = 0
    for i, ch in enumerate(head):  # the name ends at the first '(' outside template brackets
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            head = head[:i]
            break
    if base_name(head) != base_name(kernel):
        return False
    ours, theirs = template_arguments(kernel), template_arguments(head)
    return len(ours) == len(theirs) and all(_same_argument(a, b) for a, b in zip(ours, theirs))


def _same_argument(ours: str, theirs: str) -> bool:
    a, b = _INTEGER_ARGUMENT.match(ours), _INTEGER_ARGUMENT.match(theirs)
    if a and b:
        return int(a.group(1)) == int(b.group(1))
    return ours.replace(" ", "") == theirs.replace(" ", "")
