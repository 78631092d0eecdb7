"""Short, unique kernel names for tables, by one rule (full names stay in JSON, CSV and --wide).

The rule, applied to every name of one table together:
1. the function's own name: no return type, namespace, template arguments or parameter list
   (`void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` -> `vectorized_elementwise_kernel`);
2. a name longer than MAX_STEM keeps its first `_`-tokens up to MAX_STEM characters; where
   another kernel of the table starts the same way, the later tokens in which they differ are
   added after a "…" (`sm80_xmma_gemm_f32f32_f32f32_f32…split`): a cell never ends in "…";
3. where two kernels of the table share that name, the template arguments that tell them apart
   are added back, left to right, each itself shortened by rules 1-2 (`Kernel2<cutlass_80_simt_sgemm_256x128>`),
   while the name stays within MAX_LABEL characters;
4. names still equal (same function and arguments, different parameter lists) get `#2`, `#3`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from gpuprof.parsers.ncu_metrics import kernel_base_name

MAX_STEM = 32
MAX_LABEL = 44  # template arguments are added back only up to here; `#2`, `#3` tell the rest apart


MAX_RIVALS = 256  # more names than this sharing a head or a function: no tokens or arguments added (rules 2-3)


def short_names(names: Sequence[str]) -> dict[str, str]:
    """Map each full (demangled) name to its table name; equal inputs map to one output. Each name
    is compared only with those sharing its head or its function, so 300,000 names take seconds."""
    unique = list(dict.fromkeys(names))
    base = {n: kernel_base_name(n) for n in unique}
    by_base: dict[str, list[str]] = {}
    for n in unique:
        by_base.setdefault(base[n], []).append(n)
    ordered = sorted(by_base)
    stems = {b: _stem(b, _starting_with(ordered, _head(b), b)) if len(b) > MAX_STEM else b for b in by_base}
    labels = {n: _with_distinguishing_arg(n, base[n], stems[base[n]], by_base[base[n]]) for n in unique}
    counts: dict[str, int] = {}
    out = {}
    for n in unique:
        counts[labels[n]] = counts.get(labels[n], 0) + 1
        out[n] = labels[n] if counts[labels[n]] == 1 else f"{labels[n]}#{counts[labels[n]]}"
    return out


def _starting_with(ordered: list[str], prefix: str, exclude: str) -> list[str]:
    """The names of the sorted list that start with prefix, less exclude; past MAX_RIVALS of them,
    every one (then _stem keeps the whole name: telling that many apart token by token costs n^2)."""
    low = bisect_left(ordered, prefix)
    high = bisect_left(ordered, prefix + chr(0x10FFFF), low)  # the names starting with prefix: one run
    if high - low > MAX_RIVALS + 1:
        return ordered
    return [o for o in ordered[low:high] if o != exclude]


def _with_distinguishing_arg(name: str, base: str, stem: str, namesakes: list[str]) -> str:
    """`stem<args>` with the template arguments, left to right, that tell this kernel from its namesakes."""
    if len(namesakes) < 2 or len(namesakes) > MAX_RIVALS:  # past it, `#2`, `#3` tell them apart
        return stem
    mine = [_arg_name(a) for a in _template_args(name, base)]
    remaining = [[_arg_name(a) for a in _template_args(m, base)] for m in namesakes if m != name]
    picked: list[str] = []
    for i, arg in enumerate(mine):
        rivals = [o[i] for o in remaining if i < len(o)]
        if any(r != arg for r in rivals) or len(rivals) < len(remaining):
            shown = _stem(arg, [r for r in rivals if r != arg])
            if len(stem) + 2 + len(", ".join([*picked, shown])) > MAX_LABEL:
                break
            picked.append(shown)
            remaining = [o for o in remaining if i < len(o) and o[i] == arg]
        if not remaining:
            break
    return f"{stem}<{', '.join(picked)}>" if picked else stem


def _arg_name(arg: str) -> str:
    """A template argument without namespaces, its own template arguments or a `(int)` cast."""
    text = arg.strip()
    if text.startswith(("[lambda", "{lambda", "__nv_dl_wrapper")):
        return "lambda"
    if text.startswith("(") and ")" in text:
        text = text[text.index(")") + 1:]
    return kernel_base_name(text) if text else arg.strip()


def _template_args(name: str, base: str) -> list[str]:
    """Top-level template arguments of the function `base` in a demangled name ([] if none)."""
    start = name.find(base + "<")
    if start < 0:
        return []
    i, depth = start + len(base), 0
    args: list[str] = []
    current: list[str] = []
    for c in name[i:]:
        if c in "<([":
            depth += 1
            if depth == 1:
                continue
        elif c in ">)]":
            depth -= 1
            if depth == 0:
                args.append("".join(current).strip())
                break
        elif c == "," and depth == 1:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(c)
    return args


def _head(label: str) -> str:
    """The label's first `_`-tokens, up to MAX_STEM characters (at least one token)."""
    tokens = label.split("_")
    prefixes = ["_".join(tokens[:n]) for n in range(1, len(tokens) + 1)]
    return ([p for p in prefixes if len(p) <= MAX_STEM] or prefixes[:1])[-1]


def _stem(label: str, others: list[str]) -> str:
    if len(label) <= MAX_STEM:
        return label
    tokens = label.split("_")
    if len(others) > MAX_RIVALS:  # only a crowd's whole list is this long (_starting_with)
        return label
    head = _head(label)
    if not any(o.startswith(head) for o in others):
        return head
    # Kernels that share a long head (cuBLAS/CUTLASS names) differ further on: keep the head and add,
    # after a "…" for the omitted tokens, the tokens (left to right) in which this name differs.
    skip = head.count("_") + 1
    mine = tokens[skip:]
    remaining = [o.split("_")[skip:] for o in others if o.startswith(head)]
    picked = []
    for i, token in enumerate(mine):
        if any(i >= len(o) or o[i] != token for o in remaining) and token:
            picked.append(token)
            remaining = [o for o in remaining if i < len(o) and o[i] == token]
        if not remaining:
            break
    candidate = f"{head}…{'_'.join(picked)}"
    return candidate if picked and not remaining and len(candidate) < len(label) else label
