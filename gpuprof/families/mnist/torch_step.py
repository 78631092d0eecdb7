"""The step in PyTorch: the network's loss, one step packed like the output, and the float64
reference the check compares against (the vendor variants run the same loss)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuprof.families import _torch
from gpuprof.families.mnist.layout import BN_EPS, LR, PARAMETERS, layout
from gpuprof.gpu import cupy


def torch_parameters(t: Any, flat: Any) -> list[Any]:
    """Leaf tensors that view the flat parameter buffer, one per parameter, requiring grad."""
    lay = layout()
    return [flat[lay.segment(i)].view(shape).detach().requires_grad_(True) for i, (_n, shape) in enumerate(PARAMETERS)]


def loss_fn(x: Any, labels: Any, *params: Any) -> Any:
    """The network's forward and loss, in PyTorch (the float64 reference and the vendor rows)."""
    import torch.nn.functional as F

    conv1, g1, b1, conv2, g2, b2, w1, c1, w2, c2 = params
    h = x
    for conv, gamma, beta in ((conv1, g1, b1), (conv2, g2, b2)):
        h = F.conv2d(h, conv, padding=1)
        h = F.batch_norm(h, None, None, gamma, beta, training=True, eps=BN_EPS)
        h = F.max_pool2d(F.relu(h), 2)
    h = F.linear(F.relu(F.linear(h.flatten(1), w1, c1)), w2, c2)
    return F.nll_loss(F.log_softmax(h, dim=1), labels)


def torch_step(t: Any, x: Any, labels: Any, flat_params: Any, dtype: Any) -> Any:
    """One step in `dtype` on the tensors' device: the packed [loss | grads | updated weights] vector."""
    lay = layout()
    flat = flat_params.to(dtype)
    params = torch_parameters(t, flat)
    loss = loss_fn(x.to(dtype), labels, *params)
    loss.backward()
    packed = t.zeros(lay.total, dtype=dtype, device=flat.device)
    packed[0] = loss.detach()
    for i, p in enumerate(params):
        seg = lay.segment(i)
        packed[lay.grads + seg.start:lay.grads + seg.stop] = p.grad.reshape(-1)
        packed[lay.weights + seg.start:lay.weights + seg.stop] = (p.detach() - LR * p.grad).reshape(-1)
    return packed


@dataclass
class ReferenceStep:
    """The float64 step (packed like the output) and the initial weights (for the update check)."""

    packed: Any
    params: Any


def reference(inputs: dict[str, Any], size: dict[str, int]) -> ReferenceStep:
    """PyTorch float64 on the GPU, from the pristine batch and weights."""
    cp = cupy()
    t = _torch.torch()
    x, labels, params = (t.from_dlpack(inputs[k]) for k in ("x", "labels", "params"))
    packed = torch_step(t, x, labels, params, t.float64)
    return ReferenceStep(cp.from_dlpack(packed.detach()), inputs["params"].astype(cp.float64))

