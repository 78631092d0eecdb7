"""Which variants a command runs: -D, --add (with --block/--tile/--grid/--args/--reads-output/--name/
--require), --kernels-dir and run's --check-size, as typed, and the one rule that turns them and
--variants into each family's chosen variants.

Light on purpose (the variant modules are imported where they are used): the CLI builds this object
while it parses its options, before `--help` or `list` would need anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.errors import UsageError

if TYPE_CHECKING:
    from gpuprof.variants.catalog import Family, Variant
    from gpuprof.variants.user import AddSpec

# (family with the user's variants, the chosen variants with -D applied, the user's variants)
Selected = tuple["Family", list["Variant"], list["Variant"]]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes the file system gave that are not UTF-8 (surrogate escapes)
        return False
    return True


def parse_defines(items: list[str] | None) -> dict[str, int]:
    """-D NAME=INTEGER values, in the order given."""
    out: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"bad --define '{item}': write NAME=INTEGER, e.g. -D BM=64")
        try:
            number = int(value, 0)
        except ValueError:
            raise UsageError(f"bad --define '{item}': {value[:40]!r} is not an integer") from None
        if name in out and out[name] != number:  # the first would be dropped without a word
            raise UsageError(f"-D {name} given twice ({name}={out[name]} and {name}={number}); give it once")
        out[name] = number
    return out


@dataclass(frozen=True)
class VariantOptions:
    """-D, --add (repeatable), --block/--tile/--grid and --kernels-dir, as typed."""

    define: list[str] | None = None
    add: list[str] | None = None
    block: str | None = None
    tile: str | None = None
    grid: str | None = None
    args: str | None = None
    reads_output: bool | None = None
    kernels_dir: Path | None = None
    name: str | None = None  # --name: the one --add's variant name
    require: str | None = None  # --require: constraints of the added variants ("M%128==0,K%16==0")
    check_size: list[str] | None = None  # run's --check-size (repeatable): more check sizes

    @property
    def given(self) -> bool:
        """Whether any of them was given."""
        return any(getattr(self, f.name) for f in fields(self))

    @property
    def brings_variants(self) -> bool:
        """--add or --kernels-dir: the user brings variants of their own."""
        return bool(self.add) or self.kernels_dir is not None

    def defines(self) -> dict[str, int]:
        return parse_defines(self.define)

    def specs(self) -> list[AddSpec]:
        from gpuprof.variants.user import AddSpec, parse_add

        for option, value in [*(("--add", a) for a in self.add or ()), ("--kernels-dir", self.kernels_dir)]:
            if value is not None and not _utf8(str(value)):  # the compilers take names as UTF-8
                raise UsageError(f"{option} {str(value)!a}: the name is not UTF-8 text; rename it")

        if not self.add:
            if self.block or self.tile or self.grid or self.args is not None or self.reads_output:
                raise UsageError("--block, --tile, --grid, --args and --reads-output go with --add FILE")
            if self.name is not None or self.require is not None:
                raise UsageError("--name and --require go with --add FILE")
            return [AddSpec(None, kernels_dir=self.kernels_dir)] if self.kernels_dir is not None else []
        if self.name is not None and len(self.add) > 1:
            raise UsageError(f"--name {self.name} names one variant but --add is given {len(self.add)} times; "
                             "name each with --add FILE:kernel=NAME")
        return [replace(parse_add(a, self.block, self.tile, self.grid, self.args, bool(self.reads_output),
                                  self.name, self.require), kernels_dir=self.kernels_dir) for a in self.add]

    def check_sizes(self, family: Family) -> list[dict[str, int]]:
        """--check-size values in the family's dims (parsed as --size is), in the order given."""
        from gpuprof.variants.sizes import parse_size

        out = []
        for text in self.check_size or []:
            try:
                out.append(parse_size(family, text))
            except UsageError as exc:
                raise UsageError(exc.message.replace("--size", "--check-size").replace("bad size", "bad --check-size")
                                 ) from None
        return out

    def cli_args(self) -> tuple[str, ...]:
        """The options a child process needs to load the user's variants again."""
        from gpuprof.variants.user import cli_args

        return tuple(cli_args(self.specs()))

    def select(self, families: list[Family], variants: str | None) -> list[Selected]:
        """(family with the user's variants, chosen variants with -D applied, the user's variants) per
        family. --add joins --variants; a -D name that no chosen variant has is an error; so is a
        --kernels-dir with a manifest for none of the families."""
        from gpuprof.variants.user import add_to_family

        specs = self.specs()
        defines = self.defines()
        out: list[Selected] = []
        for fam in families:
            fam, extra = add_to_family(fam, specs)
            chosen = fam.select(variants)
            chosen += [v for v in extra if v not in chosen]
            out.append((fam, chosen, extra))
        if self.kernels_dir is not None and not self.add and not any(extra for _, _, extra in out):
            wanted = ", ".join(f"{fam.name}.toml" for fam, _, _ in out)
            raise UsageError(f"--kernels-dir {self.kernels_dir} has no {wanted}; "
                             "it lists variants in DIR/<family>.toml")
        if defines:
            known = sorted({k for _, chosen, _ in out for v in chosen if v.is_cuda for k in v.defines})
            unknown = [k for k in defines if k not in known]
            if unknown:
                same_but_case = [k for k in known if k.lower() == unknown[0].lower()]
                hint = f"; did you mean {same_but_case[0]}? (-D names are case-sensitive)" if same_but_case else ""
                have = f"their parameters: {', '.join(known)}" if known else "they have no tile parameters"
                raise UsageError(f"-D {unknown[0]}: no selected variant defines it{hint}; {have}")
            out = [(fam, fam.apply_defines(chosen, defines), extra) for fam, chosen, extra in out]
        return out
