"""A small PyTorch program to profile from outside: `gpuprof ncu -- python examples/torch_step.py`,
`gpuprof nsys -- python examples/torch_step.py`. One "layer" (matmul, bias, GELU, softmax) a few
times, inside NVTX ranges named step/0, step/1, ... so `--nvtx-include step/1/` picks one step."""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--size", type=int, default=2048)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this example needs a CUDA GPU")
    n = args.size
    x = torch.randn(n, n, device="cuda")
    w = torch.randn(n, n, device="cuda") / n**0.5
    b = torch.randn(n, device="cuda")
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step/{step}")
        y = torch.nn.functional.gelu(x @ w + b)
        x = torch.softmax(y, dim=-1)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"{args.steps} steps of {n}x{n}: checksum {x.sum().item():.4f}")


if __name__ == "__main__":
    main()
