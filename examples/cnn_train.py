"""A small CNN trained the way a first PyTorch tutorial trains one: two conv-BN-ReLU-pool blocks and
a linear classifier on MNIST-shaped random data, cross-entropy, SGD with momentum, FP32. Each
step is in an NVTX range `train_step/N`, so a profiler can pick one:

  gpuprof ncu -- python examples/cnn_train.py
  gpuprof ncu --nvtx-include 'train_step/1/' -- python examples/cnn_train.py --steps 2
  gpuprof sanitize -- python examples/cnn_train.py --steps 1
"""

from __future__ import annotations

import argparse
import sys


def build(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    ).cuda()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1, help="training steps, each in an NVTX range")
    args = parser.parse_args()
    if args.batch < 1 or args.steps < 1:
        print("--batch and --steps must be at least 1", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("examples/cnn_train.py needs PyTorch with CUDA (pip install torch)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("examples/cnn_train.py needs a CUDA GPU, and PyTorch cannot see one", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    model = build(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch, 1, 28, 28, device="cuda")
    labels = torch.randint(0, 10, (args.batch,), device="cuda")
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"train_step/{step}")
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"{args.steps} step(s) of batch {args.batch}: loss {loss.item():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
