"""mnist: one SGD training step of the course's MNIST CNN (the final project), FP32.

Network: 2 x (conv 3x3 pad 1, no bias -> batchnorm2d in training mode, batch statistics, no running
statistics -> relu -> maxpool 2x2): 1 -> 32 channels at 28x28, 32 -> 64 at 14x14; flatten (64*7*7);
linear 3136 -> 128 -> relu -> linear 128 -> 10; log-softmax; cross-entropy (mean); plain SGD, lr 0.05.
The convs have no bias: the batchnorm after each removes it (its gradient is identically zero).

One timed unit, the same for every variant: zero-grad, the batch (images and labels) copied host ->
device from pinned memory, forward, backward, the SGD update, the loss stored. Zero-grad comes first
so the gradients are still readable after the step.

Buffers. inputs: "host" (the batch in pinned host memory, what the step loads), "x" and "labels"
(device copies of the same batch, for the reference and the integrity check) and "params" (the
initial weights, flat). None of them is modified: the update is written out of place into the output,
w' = w0 - lr * g, which moves the same bytes as an in-place update and keeps every timed step
identical (the family is not `inplace`, so the inputs-unchanged guard stays on). The output is one
flat FP32 buffer: [loss | gradients | updated weights], each parameter at a 128-byte aligned offset.

Data: a deterministic synthetic MNIST-shaped set (a fixed random template per class plus noise,
quantised to 8-bit pixels, normalised as the course does), unless GPUPROF_MNIST_DATA names a folder
with the standard IDX files train-images-idx3-ubyte and train-labels-idx1-ubyte. Nothing is downloaded.

Modules: layout (parameters, flat buffers, FLOP and byte counts), inputs (batch, initial weights,
buffers), torch_step (the PyTorch loss and the float64 reference), error_model (the check's bounds),
vendor (the PyTorch variants), hand_plan (the hand-written step). This package exposes only the
family hooks (gpuprof/families/__init__.py); tests reach the parts through their modules.
"""

from __future__ import annotations

from gpuprof.families.mnist.error_model import ERROR_MODELS, scaled_error, tolerance
from gpuprof.families.mnist.hand_plan import PLANS, plan
from gpuprof.families.mnist.inputs import DATA_ENV, data_folder, kernel_args, make_inputs, make_output
from gpuprof.families.mnist.layout import bytes_moved, flop
from gpuprof.families.mnist.torch_step import reference
from gpuprof.families.mnist.vendor import vendor_launch

RATE = "flop"
FORMULA = ("TFLOP/s = the step's GEMM-shaped FLOPs (conv and linear, forward + backward; conv1 has no "
           "input gradient) / median time; data: "
           + (f"MNIST IDX files from ${DATA_ENV}" if data_folder() else
              f"synthetic MNIST-shaped batch (set ${DATA_ENV} to a folder of IDX files for real MNIST)"))

__all__ = ["ERROR_MODELS", "FORMULA", "PLANS", "RATE", "bytes_moved", "flop", "kernel_args", "make_inputs",
           "make_output", "plan", "reference", "scaled_error", "tolerance", "vendor_launch"]
