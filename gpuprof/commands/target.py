"""What a profiling command (ncu, nsys, sanitize, profile) is pointed at, and the one check of it.

A Target is one of three forms: families (with --variants, --size and the variant options), a program
after `--`, or a saved report or log (`--import PATH`). Each command says which forms it takes and
words its errors in TargetRules; `validate` is the same for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import UsageError
from gpuprof.families import registry
from gpuprof.variants.selection import Selected, VariantOptions

FAMILY, COMMAND, IMPORT = "family", "command", "import"


@dataclass(frozen=True)
class Target:
    families: tuple[str, ...] = ()  # none, in the family form: every family (sanitize)
    variants: str | None = None  # --variants
    size: str | None = None  # --size
    options: VariantOptions = field(default_factory=VariantOptions)  # -D, --add, --kernels-dir, ...
    command: tuple[str, ...] = ()  # the program after `--`, verbatim
    import_path: Path | None = None  # --import
    unexpected: tuple[str, ...] = ()  # words on the command line that fit none of the forms

    @property
    def form(self) -> str:
        if self.import_path is not None:
            return IMPORT
        return COMMAND if self.command else FAMILY

    def select(self) -> list[Selected]:
        """Per family (every family when none was named): the family with the user's variants, the
        chosen variants with -D applied, and the user's variants (VariantOptions.select)."""
        names = self.families or tuple(registry.names())
        return self.options.select([registry.resolve(name) for name in names], self.variants)


@dataclass(frozen=True)
class TargetRules:
    """Which forms a command takes, and its words for each wrong combination."""

    command: str  # its name, for "a program goes after '--': gpuprof <command> -- ./app ..."
    forms: tuple[str, ...]
    unexpected: str  # "{words}" is replaced by the stray words
    import_and_other: str  # --import beside families or a command
    family_and_command: str
    nothing: str | None  # nothing named, or a form the command does not take; None: every family
    one_family: bool = True
    # Given without families; None where the command ignores them there.
    variants_without_family: str | None = None  # --variants, --size
    options_without_family: str | None = None  # -D, --add, --block/--tile/--grid, --kernels-dir


def validate(target: Target, rules: TargetRules) -> str:
    """The target's form, or the UsageError that names what is wrong with it."""
    if target.unexpected:
        raise UsageError(rules.unexpected.format(words=" ".join(target.unexpected)))
    for word in target.families:
        require_family(word, rules.command)
    if target.import_path is not None and (target.families or target.command):
        raise UsageError(rules.import_and_other)
    if target.families and target.command:
        raise UsageError(rules.family_and_command)
    form = target.form
    if form not in rules.forms or (form == FAMILY and not target.families and rules.nothing is not None):
        raise UsageError(rules.nothing or f"gpuprof {rules.command} takes no {form}")
    if rules.one_family and len(target.families) > 1:
        raise UsageError(f"give one family, not {len(target.families)}: {' '.join(target.families)}")
    if form != FAMILY:
        if (target.variants or target.size) and rules.variants_without_family:
            raise UsageError(rules.variants_without_family)
        if target.options.given and rules.options_without_family:
            raise UsageError(rules.options_without_family)
    return form


def require_family(word: str, command: str) -> None:
    """A family-like word that is no family is 'unknown family' (with a did-you-mean), a folder that
    is no family folder says so; anything else (./app, python x.py) is a program, which goes after '--'."""
    if word.isidentifier() or Path(word).expanduser().is_dir():
        registry.resolve(word)
    else:
        raise UsageError(f"'{word}' is no family; a program goes after '--': gpuprof {command} -- {word} ...")
