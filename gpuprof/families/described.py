"""A family as a results file describes it (results.FamilyInfo, the file's "families" block), and
back: the one builder every writer (run, suite, suite --gpus, merge) uses, and the stand-in Family
every reader (show, report, merge's speedups, the run tables) builds from a file's block, so a
file of a family this machine lacks renders with its own rate kind, formula, baseline and vendor.

Readers ask, in order: the file's block, then this machine's registry (files written before the
block), then a stand-in guessed from the rows (rows of no family gpuprof knows: pytest's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof import results
from gpuprof.errors import GpuprofError
from gpuprof.results import FamilyInfo, Row, VariantInfo
from gpuprof.variants.catalog import Family, Variant

if TYPE_CHECKING:
    from gpuprof.families.interface import FamilyHost

# The rate formula of rows whose family says none (foreign rows, or a block without a formula).
GENERIC_FORMULA = {"flop": "TFLOP/s = the family's FLOP count / median time",
                   "bytes": ("GB/s = bytes each element must move (inputs read once, outputs written once) "
                             "/ median time"),
                   "link": "GB/s = bytes moved across the host link / median time"}


def family_info(family: Family, host: FamilyHost) -> FamilyInfo:
    """What a results file keeps of `family` (its host gives RATE and FORMULA). Constraints are
    read with getattr: a Family or Variant without `require` has none."""
    return FamilyInfo(
        summary=family.summary,
        rate_kind=str(host.RATE),
        formula=str(host.FORMULA),
        dims=tuple(family.dims),
        baseline=family.baseline,
        vendor_reference=family.vendor_reference,
        source=family.locator,
        variants=tuple(VariantInfo(name=v.name, technique=v.technique, precision=v.precision, vendor=v.vendor,
                                   user=v.user, constraints=_constraints(v), call=v.call) for v in family.variants),
        constraints=_constraints(family),
        switches=tuple(getattr(family, "switches", ())),
    )


def _constraints(owner: Any) -> tuple[str, ...]:
    found = getattr(owner, "require", ()) or ()
    if isinstance(found, str):
        return (found,)
    if isinstance(found, Mapping):
        return tuple(f"{key} = {value}" for key, value in found.items())
    return tuple(str(item) for item in found)


def joined(into: dict[str, FamilyInfo], more: Mapping[str, FamilyInfo]) -> list[str]:
    """Add `more`'s families to `into` (in place). A family in both keeps `into`'s description;
    where the two agree on everything but the variants and `source` (two shards of one family, two
    machines' folder paths), the variants only one has are added. A real disagreement (another
    rate kind, formula, baseline, ... or one variant described two ways) keeps the first and
    returns a line saying so."""
    notes = []
    for name, info in more.items():
        mine = into.get(name)
        if mine is None:
            into[name] = info
            continue
        if mine == info:
            continue
        ours, theirs = _keyed(mine.variants), _keyed(info.variants)
        clash = [key for key, v in ours.items() if theirs.get(key, v) != v]
        same_family = _family_fields(mine) == _family_fields(info)
        if same_family and not clash:
            joined_variants = dict(ours)
            for key, v in theirs.items():
                joined_variants.setdefault(key, v)
            into[name] = replace(mine, variants=tuple(joined_variants.values()))
            continue
        what = ", ".join(k for k, v in _family_fields(mine).items() if _family_fields(info)[k] != v)
        if clash:
            what = (what + ", " if what else "") + f"variant {clash[0]}"
        notes.append(f"family {name} is described differently by two files ({what}); the first file's "
                     "description is kept")
    return notes


def _fields(info: FamilyInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in FamilyInfo.__dataclass_fields__}


def _keyed(variants: tuple[VariantInfo, ...]) -> dict[str, VariantInfo]:
    """Variants by their name, in order (joining two descriptions of one family's variants)."""
    return {v.name: v for v in variants}


def _family_fields(info: FamilyInfo) -> dict[str, Any]:
    return {k: v for k, v in _fields(info).items() if k not in ("variants", "source")}


def family_of(info: FamilyInfo, name: str) -> Family:
    """A stand-in Family from a file's block: the summary, dims, baseline, vendor reference and
    variants (technique, precision, vendor, user, call) the run had; nothing here can be launched."""
    variants = tuple(Variant(name=v.name, technique=v.technique, vendor=v.vendor, precision=v.precision,
                             user=v.user, call=v.call) for v in info.variants)
    return Family(name=name, summary=info.summary, signature="", baseline=info.baseline,
                  vendor_reference=info.vendor_reference, dims=tuple(info.dims), grid_dims=(),
                  default_size={}, check_sizes=(), variants=variants, directory=Path(info.source or "."))


class Described:
    """How a loaded file's rows name their families: the file's block first, then this machine's
    registry (files written before the block), then a stand-in guessed from the rows. Each family
    is looked up once per reader."""

    def __init__(self, infos: Mapping[str, FamilyInfo]) -> None:
        self.infos = infos
        self._found: dict[str, tuple[Family, str, str] | None] = {}

    def family(self, name: str, rows: list[Row]) -> tuple[Family, str, str]:
        """(the family, its rate kind, its rate formula) for a table of `rows`."""
        found = self._lookup(name)
        if found is not None:
            return found
        rate_kind = "flop" if rows and all(r.flop for r in rows) else "bytes"
        stand_in = Family(name=name, summary="rows of a family this gpuprof does not ship", signature="",
                          baseline="", vendor_reference=None, dims=tuple(rows[0].size) if rows else (),
                          grid_dims=(), default_size=dict(rows[0].size) if rows else {}, check_sizes=(),
                          variants=(), directory=Path("."))
        return stand_in, rate_kind, GENERIC_FORMULA[rate_kind]

    def precision(self, family: str, variant: str) -> str:
        """The precision of a row that does not say its own (an earlier gpuprof's file): the block's,
        else this machine's catalogue's; unknown (no ceiling) where neither knows the variant."""
        info = self.infos.get(family)
        if info is not None:
            described = info.variant(variant)
            return described.precision if described is not None else results.UNKNOWN_PRECISION
        found = self._lookup(family)
        if found is None:
            return results.UNKNOWN_PRECISION
        try:
            return found[0].variant(variant).precision
        except (GpuprofError, KeyError, AttributeError):
            return results.UNKNOWN_PRECISION

    def _lookup(self, name: str) -> tuple[Family, str, str] | None:
        if name not in self._found:
            self._found[name] = self._described(name)
        return self._found[name]

    def _described(self, name: str) -> tuple[Family, str, str] | None:
        info = self.infos.get(name)
        if info is not None:
            return family_of(info, name), info.rate_kind, info.formula or GENERIC_FORMULA[info.rate_kind]
        from gpuprof import families
        from gpuprof.families import registry

        try:
            family = registry.resolve(name)
            host = families.host(family)
            return family, str(host.RATE), str(host.FORMULA)
        except (GpuprofError, AttributeError):
            return None
