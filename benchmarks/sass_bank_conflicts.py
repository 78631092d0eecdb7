"""Register-bank conflicts of the FFMAs in a kernel's main loop, read from SASS (no GPU needed).

  python benchmarks/sass_bank_conflicts.py kernels/matmul/warptile.cu            # nvcc -> cubin -> SASS
  python benchmarks/sass_bank_conflicts.py kernel.cubin --function cutlass_128x256 --json
  cuobjdump -sass kernel.cubin | python benchmarks/sass_bank_conflicts.py -

A `.cu` file of a family folder is compiled for sm_90 with its manifest's defines (`-D NAME=V`
overrides them); a `.cubin` is disassembled with cuobjdump (on PATH, or the `nvidia-cuda-cuobjdump`
wheel's); anything else is read as `cuobjdump -sass` text.

The model (public microbenchmarks; NVIDIA documents none of it):
- Jia, Maggioni, Staiger, Scarpazza, "Dissecting the NVIDIA Volta GPU Architecture via
  Microbenchmarking" (arXiv:1804.06826, 2018), section on register banks, and the same authors'
  Turing T4 paper (arXiv:1903.07486): from Volta on, the register file has two banks, each 64 bits
  wide; a register's bank is its index mod 2. A bank delivers 64 bits (two 32-bit operands) per
  cycle, so a three-source instruction such as FFMA conflicts only when all three of the registers
  it reads from the register file are in one bank (their example: FFMA R6, R97, R99, RX stalls for
  odd X). Hand-remapping the registers of an 8x8 outer-product SGEMM loop to avoid this was worth
  15 % on a V100. The turingas-based microbenchmark (github sjfeng1999/gpu-arch-microbenchmark)
  times FFMA with three even sources as the conflicting case and two even and one odd as the
  conflict-free one.
- Operand reuse cache (Scott Gray's maxas notes for Maxwell, still emitted by ptxas for sm_90):
  `.reuse` on source slot s of an instruction keeps that register in slot s's cache, and the next
  instruction reading the same register in slot s gets it from there, not from the register file.
  A register named in two slots of one instruction is read once.

So the count here: for each FFMA in the main loop, drop the sources served by the reuse cache, RZ
and non-registers, and duplicate registers; `conflicts` are FFMAs whose remaining reads (3) all fall
in one bank. `pairs` (the stricter reading: two or more remaining reads in one bank) is reported
too; Hopper is assumed to bank like Volta and Ampere (no published measurement says otherwise).
A main loop is a backward branch whose body holds the most FFMAs (each instantiated copy is one
row). Counts are static: every instruction of the loop body once, taken or not.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

RZ = 255
_LINE = re.compile(r"/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<body>[^;]*);")
_FUNCTION = re.compile(r"Function\s*:\s*(\S+)")
_REGISTER = re.compile(r"^-?\|?R(?P<index>\d+|Z)\|?(?P<reuse>\.reuse)?$")
_TARGET = re.compile(r"0x(?P<target>[0-9a-f]+)")


@dataclass(frozen=True)
class Operand:
    text: str
    register: int | None  # None: not a general register (immediate, constant bank, predicate)
    reuse: bool


@dataclass(frozen=True)
class Instruction:
    address: int
    opcode: str  # with its modifiers, e.g. "FFMA", "BAR.SYNC.DEFER_BLOCKING"
    predicate: str | None
    operands: tuple[Operand, ...]

    @property
    def mnemonic(self) -> str:
        return self.opcode.split(".")[0]


@dataclass(frozen=True)
class Function:
    name: str
    instructions: tuple[Instruction, ...]


@dataclass(frozen=True)
class LoopCounts:
    function: str
    loop_start: int
    loop_end: int
    instructions: int  # all instructions in the loop body
    ffma: int
    reuse_flags: int  # `.reuse` marks on FFMA source operands
    ffma_with_reuse: int  # FFMAs with at least one source served by the reuse cache
    register_reads: int  # FFMA source reads that go to the register file
    conflicts: int  # FFMAs with three register-file reads in one bank (Jia et al.'s conflict)
    pairs: int  # FFMAs with two or more register-file reads in one bank (stricter reading)


def _operand(text: str) -> Operand:
    text = text.strip()
    match = _REGISTER.match(text)
    if not match:
        return Operand(text, None, text.endswith(".reuse"))
    index = RZ if match.group("index") == "Z" else int(match.group("index"))
    return Operand(text, index, bool(match.group("reuse")))


def parse_instruction(address: int, body: str) -> Instruction:
    body = body.strip()
    predicate = None
    if body.startswith("@"):
        predicate, body = body.split(None, 1)
    opcode, _, rest = body.partition(" ")
    operands = tuple(_operand(t) for t in rest.split(",")) if rest.strip() else ()
    return Instruction(address, opcode, predicate, operands)


def parse_sass(text: str) -> list[Function]:
    """cuobjdump -sass / nvdisasm text -> its functions in order (one unnamed one if no header)."""
    functions: list[Function] = []
    name, body = "", []
    for line in text.splitlines():
        header = _FUNCTION.search(line)
        if header:
            if body:
                functions.append(Function(name, tuple(body)))
            name, body = header.group(1), []
            continue
        match = _LINE.search(line)
        if match:
            body.append(parse_instruction(int(match.group("addr"), 16), match.group("body")))
    if body:
        functions.append(Function(name, tuple(body)))
    return functions


def main_loops(function: Function) -> list[tuple[int, int]]:
    """(first, last) instruction indices of each loop (backward branch) holding the most FFMAs: one
    per copy of the main loop (a kernel with two instantiated bodies has two)."""
    instructions = function.instructions
    index_of = {ins.address: i for i, ins in enumerate(instructions)}
    loops: list[tuple[int, int, int]] = []  # (ffma count, first, last)
    for last, ins in enumerate(instructions):
        if ins.mnemonic != "BRA" or not ins.operands:
            continue
        target = _TARGET.search(ins.operands[-1].text)
        if not target or int(target.group("target"), 16) > ins.address:
            continue
        first = index_of.get(int(target.group("target"), 16))
        if first is None:
            continue
        loops.append((sum(1 for x in instructions[first:last + 1] if x.mnemonic == "FFMA"), first, last))
    if not loops:
        raise ValueError(f"{function.name or 'the SASS'}: no backward branch (no loop) found")
    most = max(count for count, _, _ in loops)
    return [(first, last) for count, first, last in loops if count == most]


def register_reads(ins: Instruction, previous: Instruction | None) -> list[int]:
    """Registers an FFMA reads from the register file: its sources less RZ, non-registers,
    duplicates and those the previous instruction left in the same slot's reuse cache."""
    cached = {}
    if previous is not None:
        cached = {slot: op.register for slot, op in enumerate(previous.operands[1:]) if op.reuse}
    reads: list[int] = []
    for slot, op in enumerate(ins.operands[1:]):  # operands[0] is the destination
        if op.register is None or op.register == RZ or cached.get(slot) == op.register:
            continue
        if op.register not in reads:
            reads.append(op.register)
    return reads


def count_loop(function: Function, span: tuple[int, int]) -> LoopCounts:
    first, last = span
    body = function.instructions[first:last + 1]
    ffma = reuse_flags = with_reuse = reads_total = conflicts = pairs = 0
    for i, ins in enumerate(body):
        if ins.mnemonic != "FFMA":
            continue
        ffma += 1
        reuse_flags += sum(op.reuse for op in ins.operands[1:])
        previous = body[i - 1] if i > 0 else None
        reads = register_reads(ins, previous)
        sources = [op for op in ins.operands[1:] if op.register is not None and op.register != RZ]
        with_reuse += len(reads) < len({op.register for op in sources})
        reads_total += len(reads)
        per_bank = [sum(1 for r in reads if r % 2 == bank) for bank in (0, 1)]
        conflicts += max(per_bank) >= 3
        pairs += max(per_bank) >= 2
    return LoopCounts(function.name, body[0].address, body[-1].address, len(body), ffma, reuse_flags,
                      with_reuse, reads_total, conflicts, pairs)


# ---------------------------------------------------------------- getting SASS


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    try:  # the nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels
        import nvidia

        for root in nvidia.__path__:
            for candidate in Path(root).glob(f"cu*/bin/{name}"):
                return str(candidate)
    except ImportError:
        pass
    sys.exit(f"error: {name} not found: install the CUDA toolkit or `pip install nvidia-cuda-{name}`")


def _manifest_defines(source: Path) -> dict[str, object]:
    """The defines of the manifest variant whose file is `source` (none outside a family folder)."""
    import tomllib

    manifest = source.parent / "family.toml"
    if not manifest.is_file():
        return {}
    for variant in tomllib.loads(manifest.read_text()).get("variant", []):
        if variant.get("file") == source.name:
            return dict(variant.get("defines", {}))
    return {}


def sass_of(path: Path, defines: dict[str, str], arch: str) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    if path.suffix == ".cu":
        merged = {k: str(v) for k, v in _manifest_defines(path).items()} | defines
        includes = []
        if "cutlass" in path.read_text(errors="replace")[:4000]:
            from gpuprof.tools.cutlass_headers import cutlass_include

            includes = ["-I", str(cutlass_include())]
        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "k.cubin"
            command = [_tool("nvcc"), f"-arch={arch}", "-cubin", "-O3", "-std=c++17", *includes,
                       *(f"-D{k}={v}" for k, v in merged.items()), "-o", str(cubin), str(path)]
            subprocess.run(command, check=True, timeout=600, capture_output=True)
            return _disassemble(cubin)
    if path.suffix == ".cubin":
        return _disassemble(path)
    return path.read_text()


def _disassemble(cubin: Path) -> str:
    done = subprocess.run([_tool("cuobjdump"), "-sass", str(cubin)], check=True, timeout=300,
                          capture_output=True, text=True)
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", type=Path, help=".cu, .cubin, SASS text, or - for SASS on stdin")
    parser.add_argument("--function", default="", help="only functions whose mangled name contains this")
    parser.add_argument("-D", dest="defines", action="append", default=[], help="NAME=VALUE for a .cu")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    defines = dict(d.split("=", 1) for d in args.defines)
    try:
        text = sass_of(args.input, defines, args.arch)
    except subprocess.CalledProcessError as exc:
        sys.exit(f"error: {exc.cmd[0]} failed: {(exc.stderr or '').strip().splitlines()[-1:]}")
    functions = [f for f in parse_sass(text) if args.function in f.name]
    if not functions:
        sys.exit(f"error: no function matching {args.function!r} in {args.input}")
    rows = []
    for function in functions:
        try:
            rows.extend(count_loop(function, span) for span in main_loops(function))
        except ValueError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    print(f"{'function':32s} {'loop at':>8s} {'instr':>6s} {'FFMA':>5s} {'reuse':>6s} {'w/reuse':>8s} "
          f"{'RF reads':>9s} {'3-way':>6s} {'2+':>5s}")
    for r in rows:
        name = r.function if len(r.function) <= 32 else r.function[:14] + "…" + r.function[-17:]
        print(f"{name:32s} {r.loop_start:#8x} {r.instructions:6d} {r.ffma:5d} {r.reuse_flags:6d} "
              f"{r.ffma_with_reuse:8d} {r.register_reads:9d} {r.conflicts:6d} {r.pairs:5d}")
    print("3-way: FFMAs whose three register-file reads share a bank (Jia et al.'s conflict); 2+: two or "
          "more in one bank. reuse: .reuse marks on FFMA sources; w/reuse: FFMAs with a source from the "
          "reuse cache; RF reads: FFMA sources read from the register file.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
