"""A 10-layer, 2048-wide MLP forward pass in PyTorch: a program gpuprof did not write, for the
`gpuprof ncu -- / nsys -- / profile --` checks on a GPU (issue 14). Warm-up outside the NVTX range.

    python tests/programs/mlp10.py [--steps 5] [--batch 1024] [--width 2048] [--layers 10]
"""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda().eval()
    x = torch.randn(args.batch, args.width, device="cuda")
    with torch.no_grad():
        for _ in range(args.warmup):
            model(x)
        torch.cuda.synchronize()
        for _ in range(args.steps):
            torch.cuda.nvtx.range_push("mlp_forward")
            y = model(x)
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    print(f"output {tuple(y.shape)}, mean {y.float().mean().item():.4g}")


if __name__ == "__main__":
    main()
