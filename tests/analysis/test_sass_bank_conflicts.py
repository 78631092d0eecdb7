"""benchmarks/sass_bank_conflicts.py on handmade SASS: the bank of a register is its index mod 2, a
conflict is three register-file reads in one bank, the reuse cache and duplicates take reads away,
and the main loop is the backward branch with the most FFMAs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sass_bank_conflicts.py"

# cuobjdump -sass layout: an address comment, the instruction, its encoding.
SNIPPET = """
        code for sm_90
                Function : tiny_loop
        .headerflags    @"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                 /* 0x00000a0000017a02 */
        /*0010*/                   FFMA R2, R4, R6, R8 ;                  /* 0x0000000604027223 */
        /*0020*/                   LDS.128 R4, [R3] ;                     /* 0x0000000003047984 */
        /*0030*/                   FFMA R10, R4, R6, R8 ;                 /* 0x0000000604087223 */
        /*0040*/                   FFMA R12, R4.reuse, R7, R12 ;          /* 0x0000000704087223 */
        /*0050*/                   FFMA R14, R4, R6, R14 ;                /* 0x0000000604087223 */
        /*0060*/                   FFMA R16, R5, R5, R17 ;                /* 0x0000000505107223 */
        /*0070*/                   FFMA R18, R4, R6.reuse, R19 ;          /* 0x0000000604127223 */
        /*0080*/                   FFMA R20, RZ, R6, R20 ;                /* 0x0000000604127223 */
        /*0090*/              @P0 BRA 0x30 ;                              /* 0xfffffffc00000947 */
        /*00a0*/                   FFMA R2, R4, R6, R8 ;                  /* 0x0000000604027223 */
        /*00b0*/                   EXIT ;                                 /* 0x000000000000794d */
"""


@pytest.fixture(scope="module")
def sass():
    spec = importlib.util.spec_from_file_location("sass_bank_conflicts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sass_bank_conflicts"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_parses_functions_predicates_and_reuse_flags(sass):
    (function,) = sass.parse_sass(SNIPPET)
    assert function.name == "tiny_loop" and len(function.instructions) == 12
    branch = function.instructions[9]
    assert branch.mnemonic == "BRA" and branch.predicate == "@P0" and branch.address == 0x90
    ffma = function.instructions[4]
    assert [(op.register, op.reuse) for op in ffma.operands] == [(12, False), (4, True), (7, False), (12, False)]
    assert function.instructions[8].operands[1].register == sass.RZ


def test_the_main_loop_is_the_backward_branch_body(sass):
    (function,) = sass.parse_sass(SNIPPET)
    assert sass.main_loops(function) == [(3, 9)]  # 0x30 .. 0x90: the FFMA before and after stay out


def test_counts_conflicts_reuse_and_pairs(sass):
    (function,) = sass.parse_sass(SNIPPET)
    counts = sass.count_loop(function, sass.main_loops(function)[0])
    # 0x30 R4 R6 R8: three even reads -> a conflict. 0x40 R4.reuse R7 R12: 2 even + 1 odd -> a pair.
    # 0x50 R4 (from the reuse cache) R6 R14: two even reads -> a pair, no conflict. 0x60 R5 R5 R17:
    # R5 read once, two odd reads -> a pair. 0x70 R4 R6.reuse R19: three reads, 2 even -> a pair.
    # 0x80 RZ R6 R20: RZ is not read and R6 comes from the cache 0x70 filled in slot 1 -> one read.
    assert counts.ffma == 6 and counts.instructions == 7
    assert counts.conflicts == 1
    assert counts.pairs == 5
    assert counts.reuse_flags == 2
    assert counts.ffma_with_reuse == 2  # 0x50 and 0x80; 0x60's duplicate R5 is one read, not the cache
    assert counts.register_reads == 3 + 3 + 2 + 2 + 3 + 1


def test_the_reuse_cache_serves_only_the_same_slot_of_the_next_instruction(sass):
    first = sass.parse_instruction(0, "FFMA R1, R2.reuse, R4, R1")
    same_slot = sass.parse_instruction(0x10, "FFMA R3, R2, R6, R3")
    other_slot = sass.parse_instruction(0x10, "FFMA R3, R6, R2, R3")
    assert sass.register_reads(same_slot, first) == [6, 3]
    assert sass.register_reads(other_slot, first) == [6, 2, 3]
    assert sass.register_reads(same_slot, None) == [2, 6, 3]


def test_a_function_without_a_loop_says_so(sass):
    (function,) = sass.parse_sass("/*0000*/ FFMA R1, R2, R4, R1 ;\n/*0010*/ EXIT ;\n")
    with pytest.raises(ValueError, match="no backward branch"):
        sass.main_loops(function)


def test_the_command_prints_a_row_per_main_loop(sass, tmp_path, capsys):
    path = tmp_path / "tiny.sass"
    path.write_text(SNIPPET)
    assert sass.main([str(path), "--json"]) == 0
    (row,) = __import__("json").loads(capsys.readouterr().out)
    assert row["function"] == "tiny_loop" and row["conflicts"] == 1 and row["loop_start"] == 0x30
