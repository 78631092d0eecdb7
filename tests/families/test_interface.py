"""Every family module against the interface in gpuprof/families/interface.py, and FamilyHost's defaults.

mypy checks the hooks' types (the modules listed in gpuprof/families/__init__.py); it does not
compare parameter names, so this test does, from the Protocols' own signatures."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import FunctionType, SimpleNamespace

import pytest

from gpuprof import families
from gpuprof.errors import UsageError
from gpuprof.families.interface import FamilyHost, FamilyModule, Notes, Plan, ScaledError
from gpuprof.variants import catalog

NAMES = catalog.family_names()
REQUIRED_CONSTANTS = sorted(FamilyModule.__annotations__)
REQUIRED_HOOKS = sorted(name for name, value in vars(FamilyModule).items()
                        if isinstance(value, FunctionType) and not name.startswith("_"))
OPTIONAL_HOOKS = {"plan": Plan, "notes": Notes, "scaled_error": ScaledError}


def parameters(function) -> list[str]:
    """Parameter names, without the `self` of a Protocol's method."""
    names = list(inspect.signature(function).parameters)
    return names[1:] if names[:1] == ["self"] else names


def test_the_protocol_lists_the_required_hooks():
    assert REQUIRED_CONSTANTS == ["FORMULA", "RATE"]
    assert REQUIRED_HOOKS == ["bytes_moved", "flop", "kernel_args", "make_inputs", "make_output", "reference",
                              "tolerance", "vendor_launch"]


@pytest.mark.parametrize("name", NAMES)
def test_each_family_module_has_the_required_hooks(name):
    module = families.host(catalog.load_family(name)).module
    assert module.RATE in ("flop", "bytes", "link"), name
    assert isinstance(module.FORMULA, str) and module.FORMULA, name
    for hook in REQUIRED_HOOKS:
        function = getattr(module, hook, None)
        assert callable(function), f"gpuprof/families/{name}.py has no {hook}()"
        assert parameters(function) == parameters(getattr(FamilyModule, hook)), f"{name}.{hook}"


@pytest.mark.parametrize("name", NAMES)
def test_optional_hooks_a_family_has_match_their_protocols(name):
    module = families.host(catalog.load_family(name)).module
    for hook, protocol in OPTIONAL_HOOKS.items():
        if hasattr(module, hook):
            assert parameters(getattr(module, hook)) == parameters(protocol.__call__), f"{name}.{hook}"
    for choices in ("PLANS", "ERROR_MODELS"):
        value = getattr(module, choices, ())
        assert isinstance(value, tuple) and all(isinstance(c, str) for c in value), f"{name}.{choices}"
    assert getattr(module, "ERROR_SCALE", "rms") in ("rms", "element", "row"), name  # measure/check.py _scale


def test_the_adapter_mirrors_the_protocols_signatures():
    for hook in REQUIRED_HOOKS:
        assert parameters(getattr(FamilyHost, hook)) == parameters(getattr(FamilyModule, hook)), hook
    assert parameters(FamilyHost.notes) == parameters(Notes.__call__)


def test_the_adapter_supplies_the_documented_defaults():
    host = FamilyHost(SimpleNamespace(RATE="bytes", FORMULA="GB/s"))  # a module without optional hooks
    assert host.plan is None and host.scaled_error is None
    assert host.PLANS == () and host.ERROR_MODELS == ()
    assert host.ERROR_SCALE == "rms"
    assert host.notes([], None, None) == []
    assert (host.RATE, host.FORMULA) == ("bytes", "GB/s")


def test_the_adapter_passes_a_modules_own_hooks_through():
    from gpuprof.families import mnist, reduce, scan, transfers, vecadd

    assert _host("reduce").plan is reduce.plan and _host("vecadd").plan is None
    assert _host("reduce").PLANS == reduce.PLANS and _host("scan").ERROR_MODELS == scan.ERROR_MODELS
    assert _host("scan").ERROR_SCALE == "element" and _host("vecadd").ERROR_SCALE == "rms"
    assert _host("mnist").scaled_error is mnist.scaled_error and _host("vecadd").scaled_error is None
    assert _host("transfers").notes([], None, None) == transfers.notes([], None, None) == []
    assert _host("vecadd").flop({"n": 10}) == vecadd.flop({"n": 10})


def test_mypy_checks_every_family_module():
    """gpuprof/families/__init__.py assigns each family module to a FamilyModule for mypy; a new family joins it."""
    tree = ast.parse(Path(families.__file__).read_text(encoding="utf-8"))
    (checked,) = [node for node in ast.walk(tree) if isinstance(node, ast.AnnAssign)
                  and isinstance(node.target, ast.Name) and node.target.id == "_CONFORMING"]
    assert isinstance(checked.value, ast.Tuple)
    assert sorted(element.id for element in checked.value.elts if isinstance(element, ast.Name)) == NAMES


def _host(name: str):
    return families.host(catalog.load_family(name))


def test_an_unknown_or_invalid_family_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown family 'no_such_family'"):
        _host("no_such_family")
    with pytest.raises(UsageError, match="no such family folder"):
        families.host(catalog.load_family("../no_such_folder/vecadd"))
    with pytest.raises(UsageError, match="is no family name"):
        catalog.load_family("vec add")
