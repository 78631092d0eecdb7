"""The MLP of the profiling walkthrough: 10 linear layers 2048 wide (ReLU between), FP32, trained
with SGD on random data. Each step sits in NVTX ranges `mlp_forward`, `mlp_backward` and
`optimizer` (inside `step_N`), so a profiler can pick one phase:

  gpuprof nsys -- python examples/mlp.py
  gpuprof ncu --nvtx-include 'mlp_forward/' -- python examples/mlp.py --steps 2

The warm-up steps run outside every range (the first ones pay for cuBLAS heuristics and the
caching allocator), and the timed steps are measured with CUDA events.
"""

from __future__ import annotations

import argparse
import sys


def build(torch, layers: int, width: int):
    blocks = []
    for i in range(layers):
        blocks.append(torch.nn.Linear(width, width))
        if i < layers - 1:
            blocks.append(torch.nn.ReLU())
    return torch.nn.Sequential(*blocks).cuda()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--warmup", type=int, default=3, help="steps before timing, outside the NVTX ranges")
    parser.add_argument("--steps", type=int, default=5, help="timed steps, each inside NVTX ranges")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("examples/mlp.py needs PyTorch with CUDA (pip install torch)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("examples/mlp.py needs a CUDA GPU, and PyTorch cannot see one", file=sys.stderr)
        return 3
    for name, value in (("layers", args.layers), ("width", args.width), ("batch", args.batch), ("steps", args.steps)):
        if value < 1:
            print(f"--{name} must be at least 1", file=sys.stderr)
            return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # plain FP32, as the course compares it
    torch.manual_seed(0)
    model = build(torch, args.layers, args.width)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.width, device="cuda")
    target = torch.randn(args.batch, args.width, device="cuda")
    nvtx = torch.cuda.nvtx

    def step(ranged: bool) -> torch.Tensor:
        push = nvtx.range_push if ranged else (lambda name: None)
        pop = nvtx.range_pop if ranged else (lambda: None)
        push("mlp_forward")
        loss = torch.nn.functional.mse_loss(model(x), target)
        pop()
        push("mlp_backward")
        loss.backward()
        pop()
        push("optimizer")
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        pop()
        return loss

    for _ in range(args.warmup):
        step(ranged=False)
    torch.cuda.synchronize()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(args.steps):
        nvtx.range_push(f"step_{i}")
        loss = step(ranged=True)
        nvtx.range_pop()
    end.record()
    end.synchronize()
    per_step_ms = start.elapsed_time(end) / args.steps
    # Forward 2·B·W·W per layer, backward twice that (input and weight gradients): 6·B·W²·L per step.
    flop = 6.0 * args.batch * args.width * args.width * args.layers
    print(f"MLP {args.layers} x {args.width}, batch {args.batch}: {per_step_ms:.2f} ms per step "
          f"({flop / per_step_ms / 1e9:.1f} TFLOP/s FP32), loss {loss.item():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
