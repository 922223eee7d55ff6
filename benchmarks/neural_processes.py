"""Torch kernels of the gridded-tnp spec (one thread, float32, one task of 200 targets, batch 1, no gradients):
the gridded TNP's pseudo-token grid encoder and its Swin processor at two context sizes, and one whole inference
of the gridded TNP against the full-attention TNP. The encoder's cost grows with Nc (the fullest grid node's
padding), the processor's does not (a fixed 16 × 16 grid); the full TNP's self-attention grows like Nc².
torch is imported in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import TorchKernel, synchronize

SIZES = [1024, 8192]


def _task(n_context: int, device: str):
    import torch

    generator = torch.Generator().manual_seed(n_context)
    xc = (torch.rand(1, n_context, 2, generator=generator) - 0.5) * 4
    yc = torch.randn(1, n_context, 1, generator=generator)
    xt = (torch.rand(1, 200, 2, generator=generator) - 0.5) * 4
    return xc.to(device), yc.to(device), xt.to(device)


def _model(name: str, device: str):
    from types import SimpleNamespace

    from baselines.neural_processes import FullTNP
    from implementations.gridded_tnp import GriddedTNP

    method = {"gridded-tnp": GriddedTNP, "tnp": FullTNP}[name]()
    return method.build(SimpleNamespace(x_dim=2, domain_width=4.0, domain=(-2.0, 2.0))).to(device).eval()


def _gridded_inputs_of(module_of, n_context: int, device: str):
    """A gridded TNP and the arguments ``module_of(model)`` receives in one forward pass on a task of ``n_context``
    contexts: a kernel times a part on its real inputs without repeating the model's own preparation."""
    import torch

    model, captured = _model("gridded-tnp", device), {}
    hook = module_of(model).register_forward_pre_hook(lambda _, args: captured.setdefault("args", args))
    with torch.no_grad():
        model(*_task(n_context, device))
    hook.remove()
    return model, captured["args"]


class GridEncoder(TorchKernel):
    """The pseudo-token grid encoder (PT-GE) of the gridded TNP: every context point's token into its nearest node."""

    params = (SIZES,)
    param_names = ["n_context"]
    version = "1"

    def setup(self, n_context):
        self.device = self.prepare()
        model, self.args = _gridded_inputs_of(lambda m: m.encoder, n_context, self.device)
        self.encoder = model.encoder

    def time_encode(self, n_context):
        import torch

        with torch.no_grad():
            self.encoder(*self.args)
        synchronize(self.device)


class SwinProcessor(TorchKernel):
    """The three Swin layers of the gridded TNP on its 16 × 16 grid of encoded tokens (at two context sizes: the
    cost is the grid's, so the two should match)."""

    params = (SIZES,)
    param_names = ["n_context"]
    version = "1"

    def setup(self, n_context):
        self.device = self.prepare()
        model, (self.grid,) = _gridded_inputs_of(lambda m: m.processor[0], n_context, self.device)
        self.layers = model.processor

    def time_process(self, n_context):
        import torch

        with torch.no_grad():
            grid = self.grid
            for layer in self.layers:
                grid = layer(grid)
        synchronize(self.device)


class Inference(TorchKernel):
    """One forward pass of a whole model on one task: the gridded TNP against the full-attention TNP."""

    params = (["gridded-tnp", "tnp"], SIZES)
    param_names = ["model", "n_context"]
    version = "1"

    def setup(self, model, n_context):
        self.device = self.prepare()
        self.model = _model(model, self.device)
        self.task = _task(n_context, self.device)

    def time_forward(self, model, n_context):
        import torch

        with torch.no_grad():
            self.model(*self.task)
        synchronize(self.device)
