"""The PyTorch variants of the step: eager, torch.compile and a replayed CUDA graph, each writing
into the output as the hand step does."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from gpuprof.errors import EnvironmentProblem
from gpuprof.families import _torch
from gpuprof.families.mnist.layout import IMAGE, LR, batch_of, layout
from gpuprof.families.mnist.torch_step import loss_fn, torch_parameters


@dataclass
class _TorchStep:
    """The buffers of one PyTorch step, bound to one inputs/out pair."""

    body: Any  # body(): the step on torch's current stream


def _torch_step(inputs: dict[str, Any], out: Any, size: dict[str, int], fn: Any) -> _TorchStep:
    t = _torch.torch()
    lay = layout()
    n = batch_of(size)
    o = _torch.as_tensor(out)
    w0 = _torch.as_tensor(inputs["params"])
    params = torch_parameters(t, w0)
    grads, weights = o[lay.grads:lay.grads + lay.padded], o[lay.weights:lay.weights + lay.padded]
    for i, p in enumerate(params):  # autograd accumulates into views of the output (zero-grad first)
        seg = lay.segment(i)
        p.grad = grads[seg].view(p.shape)
    host_x = t.from_numpy(inputs["host"].images)
    host_y = t.from_numpy(inputs["host"].labels)
    x = t.empty((n, 1, IMAGE, IMAGE), dtype=t.float32, device=o.device)
    labels = t.empty((n,), dtype=t.int64, device=o.device)

    def body() -> None:
        grads.zero_()
        x.copy_(host_x, non_blocking=True)  # pinned: an async copy on the current stream
        labels.copy_(host_y, non_blocking=True)
        loss = fn(x, labels, *params)
        loss.backward()
        t.add(w0, grads, alpha=-LR, out=weights)
        o[0:1].copy_(loss.detach().reshape(1))

    return _TorchStep(body)


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "torch.eager":
        return _eager(inputs, out, size)
    if call == "torch.compile":
        return _compiled(inputs, out, size)
    if call == "torch.cuda_graph":
        return _graphed(inputs, out, size)
    raise KeyError(call)


def _eager(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    step = _torch_step(inputs, out, size, loss_fn)

    def launch(stream: Any) -> None:
        _torch.set_tf32(False)
        with _torch.on_stream(stream):
            step.body()

    return launch


@cache
def _compiled_loss() -> Any:
    return _torch.torch().compile(loss_fn, dynamic=False)


def _compiled(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """torch.compile of the forward + loss; compiled here by one step on a side stream, so a missing
    compiler (Triton, a C compiler) is this row's reason, not a failure of the check."""
    t = _torch.torch()
    step = _torch_step(inputs, out, size, _compiled_loss())
    _torch.set_tf32(False)
    try:
        side = t.cuda.Stream()
        with t.cuda.stream(side):
            step.body()
        side.synchronize()
    except Exception as exc:  # noqa: BLE001 - any compiler failure: this row cannot run here
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise EnvironmentProblem(f"torch.compile is unavailable here ({type(exc).__name__}: {first})") from None

    def launch(stream: Any) -> None:
        _torch.set_tf32(False)
        with _torch.on_stream(stream):
            step.body()

    return launch


def _graphed(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """The eager step captured once (after warm-up steps on a side stream, as torch's docs ask);
    each launch replays it. The host copy is a node of the graph (pinned memory, fixed address)."""
    t = _torch.torch()
    step = _torch_step(inputs, out, size, loss_fn)
    _torch.set_tf32(False)
    side = t.cuda.Stream()
    side.wait_stream(t.cuda.current_stream())
    with t.cuda.stream(side):
        for _ in range(3):
            step.body()
    t.cuda.current_stream().wait_stream(side)
    t.cuda.synchronize()
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        step.body()
    t.cuda.synchronize()

    def launch(stream: Any) -> None:
        # The graph replays into the step's own tensors (the device batch, the parameters), which
        # were allocated before capture, outside the graph's pool: the closure must keep them alive,
        # or once freed (and the caching allocator's memory released) a replay copies into memory
        # that is no longer there (cudaErrorInvalidValue, seen on the H100) or is someone else's.
        keep_alive = step
        with _torch.on_stream(stream):
            graph.replay()
        del keep_alive

    return launch

