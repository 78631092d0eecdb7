"""poly: the Python of the family (the [op] table in family.toml names these functions).

gpuprof calls reference() with the inputs as float64 torch tensors on the GPU, in the order of the
[op] table's `inputs`, and compares every variant's FP32 output with what it returns. vendor_torch()
is the library row: it gets FP32 tensors and writes the output into `y`. torch is imported inside
the functions, so `gpuprof list` and `gpuprof build` of this folder work without it.
"""


def reference(x):
    """The correct answer, in float64: what every variant must compute."""
    return x * x + x + 1


def vendor_torch(x, y):
    """PyTorch's own kernels, writing into y (no allocation in the timed launch)."""
    import torch  # already imported by then: a dictionary look-up, not an import, per launch

    torch.addcmul(x, x, x, out=y)  # y = x + x*x
    y.add_(1)


_compiled = None


def vendor_compiled(x, y):
    """torch.compile's fused kernel for the same expression, writing into y (compiled on first use)."""
    global _compiled
    if _compiled is None:
        import torch

        def poly_into(x, y):
            y.copy_(x * x + x + 1)

        _compiled = torch.compile(poly_into, fullgraph=True, dynamic=False)
    _compiled(x, y)
