"""The one check of what ncu, nsys, sanitize and profile are pointed at (commands/target.py): each
command's wrong combinations of FAMILY, `-- COMMAND` and `--import`, in that command's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.commands import ncu, nsys, profile, sanitize
from gpuprof.commands.target import COMMAND, FAMILY, IMPORT, Target, TargetRules, require_family, validate
from gpuprof.errors import UsageError
from gpuprof.tools import _proc
from gpuprof.variants.selection import VariantOptions

REPORT = Path("r.ncu-rep")
PROGRAM = ("python", "x.py")
ONE_OF = "give one of FAMILY, -- COMMAND or --import REPORT, e.g. gpuprof nsys matmul"
NSYS_VARIANTS = "--variants and --size go with a FAMILY, not with -- COMMAND or --import"
NSYS_OPTIONS = "-D, --add, --block/--tile/--grid and --kernels-dir go with a FAMILY, not with -- COMMAND or --import"


def refused(rules: TargetRules, target: Target) -> str:
    with pytest.raises(UsageError) as err:
        validate(target, rules)
    assert err.value.exit_code == 2
    return err.value.message


@pytest.mark.parametrize(("target", "message"), [
    (Target(unexpected=("extra", "words")),
     "unexpected 'extra words'; give one family, or '--' before a command to profile"),
    (Target(families=("vecadd",), import_path=REPORT),
     "--import shows a saved report; leave out the family and the command"),
    (Target(command=PROGRAM, import_path=REPORT),
     "--import shows a saved report; leave out the family and the command"),
    (Target(families=("vecadd",), command=PROGRAM), "give a family or '-- COMMAND', not both"),
    (Target(), "name a family (gpuprof ncu matmul), a command (gpuprof ncu -- python x.py) or --import REPORT"),
    (Target(families=("./app",)), "'./app' is no family; a program goes after '--': gpuprof ncu -- ./app ..."),
])
def test_ncu(target, message):
    assert refused(ncu.RULES, target) == message


@pytest.mark.parametrize(("target", "message"), [
    (Target(families=("vecadd",), unexpected=("--flag",)),
     "unexpected argument(s) --flag; to profile a program put it after --, e.g. gpuprof nsys -- python app.py"),
    (Target(), ONE_OF),
    (Target(families=("vecadd",), command=PROGRAM), ONE_OF),
    (Target(families=("vecadd",), import_path=REPORT), ONE_OF),
    (Target(command=PROGRAM, import_path=REPORT), ONE_OF),
    (Target(command=PROGRAM, variants="grid"), NSYS_VARIANTS),
    (Target(import_path=REPORT, size="4096"), NSYS_VARIANTS),
    (Target(command=PROGRAM, options=VariantOptions(define=["BM=64"])), NSYS_OPTIONS),
    (Target(import_path=REPORT, options=VariantOptions(add=["k.cu"])), NSYS_OPTIONS),
])
def test_nsys(target, message):
    assert refused(nsys.RULES, target) == message


@pytest.mark.parametrize(("target", "message"), [
    (Target(families=("vecadd",), import_path=REPORT),
     "--import reads a saved log; leave out the families and the command"),
    (Target(command=PROGRAM, import_path=REPORT), "--import reads a saved log; leave out the families and the command"),
    (Target(families=("vecadd", "matmul"), command=PROGRAM), "give families or '-- COMMAND', not both"),
    (Target(families=("matmol",)), "unknown family 'matmol'"),
])
def test_sanitize(target, message):
    assert refused(sanitize.RULES, target).startswith(message)


def test_sanitize_takes_several_families_or_none_for_every_one():
    assert validate(Target(families=("vecadd", "matmul")), sanitize.RULES) == FAMILY
    assert validate(Target(), sanitize.RULES) == FAMILY
    assert len(Target().select()) > 1


@pytest.mark.parametrize(("target", "message"), [
    (Target(command=PROGRAM, unexpected=("app.py",)),
     "unexpected argument(s) app.py; put the program after --, e.g. gpuprof profile -- python app.py"),
    (Target(), "give the program to profile after --, e.g. gpuprof profile -- python train.py"),
    (Target(families=("vecadd",)), "give the program to profile after --, e.g. gpuprof profile -- python train.py"),
    (Target(import_path=REPORT), "give the program to profile after --, e.g. gpuprof profile -- python train.py"),
])
def test_profile(target, message):
    assert refused(profile.RULES, target) == message


@pytest.mark.parametrize("rules", [ncu.RULES, nsys.RULES, sanitize.RULES, profile.RULES], ids=lambda r: r.command)
def test_a_program_alone_is_the_command_form_for_every_command(rules):
    assert validate(Target(command=PROGRAM), rules) == COMMAND


@pytest.mark.parametrize("rules", [ncu.RULES, nsys.RULES, sanitize.RULES], ids=lambda r: r.command)
def test_a_report_alone_is_the_import_form(rules):
    assert validate(Target(import_path=REPORT), rules) == IMPORT


def test_ncu_and_sanitize_ignore_family_options_beside_a_program_as_before():
    target = Target(command=PROGRAM, variants="grid", options=VariantOptions(define=["BM=64"]))
    assert validate(target, ncu.RULES) == validate(target, sanitize.RULES) == COMMAND


def test_one_family_commands_refuse_several():
    assert refused(ncu.RULES, Target(families=("vecadd", "matmul"))) == "give one family, not 2: vecadd matmul"


def test_require_family_tells_a_typo_from_a_program():
    require_family("vecadd", "ncu")
    with pytest.raises(UsageError, match="unknown family 'vecad'.*vecadd"):
        require_family("vecad", "ncu")
    with pytest.raises(UsageError, match=r"a program goes after '--': gpuprof sanitize -- python3\.11 \.\.\."):
        require_family("python3.11", "sanitize")


@pytest.mark.parametrize("execute", [
    lambda t: ncu.execute(ncu.NcuRequest(t)),
    lambda t: nsys.execute(nsys.NsysRequest(t)),
    lambda t: sanitize.execute(sanitize.SanitizeRequest(t)),
    lambda t: profile.execute(profile.ProfileRequest(t)),
], ids=["ncu", "nsys", "sanitize", "profile"])
def test_every_core_checks_its_target_before_any_tool_runs(monkeypatch, execute):
    monkeypatch.setattr(_proc, "run", lambda *a, **k: pytest.fail("no tool may run"))
    monkeypatch.setattr(_proc, "find_tool", lambda *a, **k: pytest.fail("no tool may be looked for"))
    with pytest.raises(UsageError):
        execute(Target(families=("vecadd",), command=PROGRAM, import_path=REPORT))
