"""The manifest's per-variant choices (error_model, plan, helpers) checked against what a family
module offers; errors name the manifest and the key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuprof.errors import InputError
from gpuprof.families.interface import FamilyHost


def _where(variant: Any) -> str:
    return f"{variant.file.parent / 'family.toml'}: " if getattr(variant, "file", None) and not variant.user else ""


def error_model(variant: Any, models: Sequence[str]) -> str:
    """The variant's `error_model` from the manifest, or the family's first (the safest) when absent."""
    if not models:
        raise InputError(f"{_where(variant)}variant {variant.name!r}: this family has one error model; "
                         "remove 'error_model'")
    chosen = variant.error_model or models[0]
    if chosen not in models:
        raise InputError(f"{_where(variant)}variant {variant.name!r}: 'error_model' is {chosen!r}; "
                         f"choose from: {', '.join(models)}")
    return chosen


def plan(variant: Any, plans: Sequence[str]) -> str:
    """The variant's `plan` from the manifest, or the family's first (its default launch) when absent."""
    if not plans:
        raise InputError(f"{_where(variant)}variant {variant.name!r}: this family launches every variant one way; "
                         "remove 'plan'")
    chosen = variant.plan or plans[0]
    if chosen not in plans:
        raise InputError(f"{_where(variant)}variant {variant.name!r}: 'plan' is {chosen!r}; "
                         f"choose from: {', '.join(plans)}")
    return chosen


def check_declared(variant: Any, host: FamilyHost) -> None:
    """A manifest's plan and error_model, checked against the family module before any launch."""
    if variant.plan is not None:
        plan(variant, host.PLANS)
    if variant.error_model is not None:
        error_model(variant, host.ERROR_MODELS)


def helper(variant: Any, functions: dict[str, Any], role: str) -> Any:
    """The compiled helper kernel the manifest names for `role` (helpers = { role = "name" })."""
    try:
        return functions[variant.helper(role)]
    except KeyError as exc:
        raise InputError(f"{_where(variant)}{exc.args[0]}") from None
