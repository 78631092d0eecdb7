"""gelu: the Python of the family (the [op] table in family.toml names these functions).

gpuprof calls reference() with the inputs as float64 torch tensors on the GPU, in the order of the
[op] table's `inputs`, and compares every variant's FP32 output with what it returns. vendor_torch()
is the library row: it gets FP32 tensors and writes the output into `y`. torch is imported inside
the functions, so `gpuprof list` and `gpuprof build` of this folder work without it.
"""


def reference(x):
    """The correct answer, in float64: GELU's tanh form, as PyTorch defines it."""
    import torch

    return torch.nn.functional.gelu(x, approximate="tanh")


def vendor_torch(x, y):
    """PyTorch's own kernels, writing into y (no allocation in the timed launch)."""
    import torch  # already imported by then: a dictionary look-up, not an import, per launch

    torch.ops.aten.gelu.out(x, approximate="tanh", out=y)  # F.gelu's own kernel, into y
