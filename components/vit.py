"""The Vision Transformer shared by ReCIT and its baselines: the network, its weights, and the learner.

The network follows the DINO/timm layout and parameter names (``cls_token``, ``pos_embed``,
``patch_embed.proj``, ``blocks.i.norm1``, ``blocks.i.attn.qkv``, ``blocks.i.attn.proj``,
``blocks.i.norm2``, ``blocks.i.mlp.fc1``/``fc2``, ``norm``): pre-norm blocks, a CLS token,
a learned positional embedding interpolated bicubically for other grid sizes, and a final
LayerNorm whose CLS output is the feature. :func:`load_weights` loads a local DINO ViT-S/16
checkpoint into ``arch: vit-s16``; nothing is ever downloaded.

:class:`ViTLearner` is the ``fewshot.cdfsl`` learner both sides build on: cross-entropy
training on the source, frozen CLS features for ProtoNet, with one hook for the tokens of
a training batch (:meth:`ViTLearner._train_tokens`, where ReCIT perturbs them) and one for
the tokens at test time (:meth:`ViTLearner._embed_tokens`, where the baseline's probe
shuffles them).

The network is built from plain ``nn.Module`` containers and driven by the functions
below, so that this module imports no torch until a method runs (``harness validate``
imports the methods' modules to read parameter names).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

ARCHS: dict[str, dict[str, Any]] = {
    # CPU scale (the paper note's tiny ViT): 16 tokens of 8×8 px at 32 px, about 0.14 M parameters
    "tiny": {"img_size": 32, "patch_size": 8, "embed_dim": 64, "depth": 4, "num_heads": 4, "mlp_ratio": 2.0},
    # the tiny ViT on a finer grid: 64 tokens of 4×4 px at 32 px
    "tiny-p4": {"img_size": 32, "patch_size": 4, "embed_dim": 64, "depth": 4, "num_heads": 4, "mlp_ratio": 2.0},
    # the tiny ViT with a convolutional stem (Xiao et al., "Early convolutions help transformers see
    # better", 2021): three 3×3 stride-2 convs (16, 32, 64 channels, BatchNorm, ReLU), then a 1×1
    # projection, in place of the 8×8 patchify; still 16 tokens, each covering 8×8 px
    "tiny-conv": {"img_size": 32, "patch_size": 8, "embed_dim": 64, "depth": 4, "num_heads": 4, "mlp_ratio": 2.0,
                  "stem": (16, 32, 64)},
    # DINO ViT-S/16, the paper's backbone
    "vit-s16": {"img_size": 224, "patch_size": 16, "embed_dim": 384, "depth": 12, "num_heads": 6, "mlp_ratio": 4.0},
}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# --------------------------------------------------------------------------- the network


def build_vit(arch: str = "tiny"):
    """A ViT backbone (no classification head) with the DINO/timm parameter names."""
    import torch
    from torch import nn

    if arch not in ARCHS:
        raise ValueError(f"arch={arch!r} is unknown; expected one of {sorted(ARCHS)}")
    cfg = ARCHS[arch]
    dim, grid = cfg["embed_dim"], cfg["img_size"] // cfg["patch_size"]
    if dim % cfg["num_heads"]:
        raise ValueError(f"embed_dim {dim} is not divisible by num_heads {cfg['num_heads']}")
    model = nn.Module()
    model.patch_embed = nn.Module()
    stem = cfg.get("stem", ())
    if stem:
        if 2 ** len(stem) != cfg["patch_size"]:
            raise ValueError(f"arch={arch!r}: {len(stem)} stride-2 convs make {2 ** len(stem)} px tokens, "
                             f"not patch_size {cfg['patch_size']}")
        layers, channels = [], 3
        for width in stem:
            layers += [nn.Conv2d(channels, width, kernel_size=3, stride=2, padding=1, bias=False),
                       nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
            channels = width
        model.patch_embed.stem = nn.Sequential(*layers)
        model.patch_embed.proj = nn.Conv2d(channels, dim, kernel_size=1)
    else:
        model.patch_embed.proj = nn.Conv2d(3, dim, kernel_size=cfg["patch_size"], stride=cfg["patch_size"])
    model.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
    model.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, dim))
    model.blocks = nn.ModuleList()
    hidden = int(dim * cfg["mlp_ratio"])
    for _ in range(cfg["depth"]):
        block = nn.Module()
        block.norm1 = nn.LayerNorm(dim, eps=1e-6)
        block.attn = nn.Module()
        block.attn.qkv = nn.Linear(dim, 3 * dim, bias=True)
        block.attn.proj = nn.Linear(dim, dim)
        block.norm2 = nn.LayerNorm(dim, eps=1e-6)
        block.mlp = nn.Module()
        block.mlp.fc1 = nn.Linear(dim, hidden)
        block.mlp.fc2 = nn.Linear(hidden, dim)
        model.blocks.append(block)
    model.norm = nn.LayerNorm(dim, eps=1e-6)
    model.patch_size = cfg["patch_size"]
    model.num_heads = cfg["num_heads"]
    model.embed_dim = dim
    _init_weights(model)
    return model


def _init_weights(model) -> None:
    """DINO's initialisation: truncated normal (std 0.02) for tokens and linear layers."""
    from torch import nn

    nn.init.trunc_normal_(model.pos_embed, std=0.02)
    nn.init.trunc_normal_(model.cls_token, std=0.02)
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)


def patch_tokens(model, images: "torch.Tensor") -> tuple["torch.Tensor", tuple[int, int]]:
    """(B, L, D) patch embeddings in row-major grid order, and the grid (rows, cols).

    A convolutional stem (``arch: tiny-conv``) runs first; each token then covers
    ``model.patch_size`` px along a side, as a patch does.
    """
    stem = getattr(model.patch_embed, "stem", None)
    x = model.patch_embed.proj(images if stem is None else stem(images))
    grid = (x.shape[-2], x.shape[-1])
    return x.flatten(2).transpose(1, 2), grid


def position_embedding(model, grid: tuple[int, int]) -> "torch.Tensor":
    """(1, 1 + rows·cols, D): the CLS position and the patch positions, bicubically resized to ``grid``."""
    import torch
    import torch.nn.functional as F

    pos = model.pos_embed
    native = int(round((pos.shape[1] - 1) ** 0.5))
    if grid == (native, native):
        return pos
    patch = pos[:, 1:].reshape(1, native, native, -1).permute(0, 3, 1, 2)
    patch = F.interpolate(patch.float(), size=grid, mode="bicubic", align_corners=False).to(pos.dtype)
    return torch.cat([pos[:, :1], patch.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], -1)], dim=1)


def encode(model, tokens: "torch.Tensor", pos: "torch.Tensor") -> "torch.Tensor":
    """CLS feature after the final LayerNorm, for patch ``tokens`` (B, L, D) and positions ``pos``.

    ``pos[:, 1:]`` is added to the tokens in the order given: a method that permutes the
    tokens before calling this keeps the positions in the original order.
    """
    import torch
    import torch.nn.functional as F

    cls = (model.cls_token + pos[:, :1]).expand(tokens.shape[0], -1, -1)
    x = torch.cat([cls, tokens + pos[:, 1:]], dim=1)
    batch, length, dim = x.shape
    heads = model.num_heads
    for block in model.blocks:
        qkv = block.attn.qkv(block.norm1(x)).reshape(batch, length, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        x = x + block.attn.proj(attended.transpose(1, 2).reshape(batch, length, dim))
        x = x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.norm2(x))))
    return model.norm(x)[:, 0]


def load_weights(model, path: str | Path) -> None:
    """Load a local checkpoint (DINO, timm or this module's layout) into the backbone.

    Unwraps ``teacher``/``model``/``state_dict``/``state`` dicts, strips ``module.``,
    ``backbone.`` and ``feature.`` prefixes, ignores heads, and resizes ``pos_embed``
    when the checkpoint's grid differs. Every backbone parameter must be present.
    """
    import torch

    state = torch.load(Path(path), map_location="cpu", weights_only=True)
    for wrapper in ("teacher", "model", "state_dict", "state"):
        if isinstance(state, dict) and wrapper in state and isinstance(state[wrapper], dict):
            state = state[wrapper]
            break
    own = model.state_dict()
    cleaned = {}
    for key, value in state.items():
        for prefix in ("module.", "backbone.", "feature."):
            if key.startswith(prefix):
                key = key[len(prefix):]
        if key in own:
            cleaned[key] = value
    missing = sorted(set(own) - set(cleaned))
    if missing:
        raise ValueError(f"{path}: the checkpoint lacks {len(missing)} backbone parameter(s), e.g. {missing[:3]}")
    if cleaned["pos_embed"].shape != own["pos_embed"].shape:
        grid = int(round((own["pos_embed"].shape[1] - 1) ** 0.5))
        checkpoint = SimpleNamespace(pos_embed=cleaned["pos_embed"])
        cleaned["pos_embed"] = position_embedding(checkpoint, (grid, grid)).detach()
    model.load_state_dict(cleaned)


# --------------------------------------------------------------------------- tensors


def from_numpy(array: np.ndarray) -> "torch.Tensor":
    """A tensor sharing ``array``'s memory; the task hands read-only arrays, which are only ever read here."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(np.ascontiguousarray(array))


def to_tensor(images: np.ndarray, device: str) -> "torch.Tensor":
    """uint8 (N, 3, H, W) → float in [0, 1] on ``device``."""
    return from_numpy(images).to(device).float().div_(255.0)


def normalise(x: "torch.Tensor") -> "torch.Tensor":
    """ImageNet normalisation, what DINO weights expect (used at every scale, for one code path)."""
    import torch

    mean = torch.tensor(IMAGENET_MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, device=x.device).view(1, 3, 1, 1)
    return (x - mean) / std


def random_translate(x: "torch.Tensor", max_shift: int, generator: "torch.Generator") -> "torch.Tensor":
    """Shift each image by its own whole-pixel (dy, dx) in [-max_shift, max_shift], filling with 0."""
    import torch
    import torch.nn.functional as F

    if max_shift <= 0:
        return x
    batch, channels, height, width = x.shape
    shifts = torch.randint(-max_shift, max_shift + 1, (2, batch), generator=generator).to(x.device)
    padded = F.pad(x, (max_shift, max_shift, max_shift, max_shift))
    rows = max_shift - shifts[0][:, None] + torch.arange(height, device=x.device)[None, :]
    cols = max_shift - shifts[1][:, None] + torch.arange(width, device=x.device)[None, :]
    b = torch.arange(batch, device=x.device)[:, None, None, None]
    c = torch.arange(channels, device=x.device)[None, :, None, None]
    return padded[b, c, rows[:, None, :, None], cols[:, None, None, :]]


def random_scale(x: "torch.Tensor", scale: float, generator: "torch.Generator") -> "torch.Tensor":
    """Zoom each image about its centre by its own factor, uniform in [1 − scale, 1 + scale], filling with 0."""
    import torch
    import torch.nn.functional as F

    if scale <= 0:
        return x
    batch = x.shape[0]
    factor = 1.0 + scale * (2.0 * torch.rand(batch, generator=generator) - 1.0)
    theta = torch.zeros(batch, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = 1.0 / factor  # output pixel p reads input p / factor
    grid = F.affine_grid(theta.to(x.device, x.dtype), list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def autocast(device: str, precision: str):
    """bf16/fp16 autocast on CUDA; fp32 everywhere else (CPU half precision is slow and inexact)."""
    import torch

    if device == "cuda" and precision in ("bf16", "fp16"):
        return torch.autocast("cuda", dtype=torch.bfloat16 if precision == "bf16" else torch.float16)
    return contextlib.nullcontext()


# --------------------------------------------------------------------------- the learner


class ViTLearner:
    """A ViT trained with cross-entropy on the source classes; frozen CLS features for ProtoNet.

    A ``fewshot.cdfsl`` learner (:class:`harness.tasks.fewshot.cdfsl.FewShotLearner`). What a
    subclass changes goes through two hooks: :meth:`_train_tokens` (the tokens and positions
    of a training batch) and :meth:`_embed_tokens` (the tokens at test time). What it learns
    is kept in public attributes ending in ``_``, which the task's source-training cache
    copies to later instances; nothing writes to them after :meth:`fit_source`.

    Parameters
    ----------
    arch : {"tiny", "tiny-p4", "tiny-conv", "vit-s16"}
        Network size and token embedding (see :data:`ARCHS`).
    lr, weight_decay : float
        AdamW on the backbone and a linear head over the source classes (the paper: 1e-3, 0.01).
    backbone_lr_scale : float
        The backbone's learning rate is ``lr · backbone_lr_scale``: 1 from scratch; the paper
        uses 1e-4 on DINO weights, which leaves the backbone nearly frozen.
    translate : float
        Training augmentation: random whole-pixel shifts of up to this fraction of the image side.
    scale : float
        Training augmentation: a random zoom about the centre by a factor in [1 − scale, 1 + scale]
        (0, the default, none), applied before the shift.
    lr_schedule : {"constant", "cosine"}
        The learning rates over training: constant (the default), or a cosine decay from their
        initial values to 0 at the last step.
    flip : bool
        Training augmentation: random horizontal flips (off for digits, whose mirror images
        are other shapes).
    weights : str or None
        A local checkpoint to start from (relative paths are under ``--data-dir``).
    embed_batch : int
        Images per forward pass in :meth:`embed`.
    """

    # Parameters that change only :meth:`embed`: the task's cache of source-trained models ignores them.
    after_source_params: tuple[str, ...] = ("embed_batch",)

    def __init__(self, *, arch: str = "tiny", lr: float = 1e-3, weight_decay: float = 0.01,
                 backbone_lr_scale: float = 1.0, translate: float = 0.1, flip: bool = False,
                 weights: str | None = None, embed_batch: int = 256, scale: float = 0.0,
                 lr_schedule: str = "constant"):
        self.arch = arch
        self.lr = lr
        self.weight_decay = weight_decay
        self.backbone_lr_scale = backbone_lr_scale
        self.translate = translate
        self.scale = scale
        self.lr_schedule = lr_schedule
        self.flip = flip
        self.weights = weights
        self.embed_batch = embed_batch

    # ---- training

    def fit_source(self, source, context) -> None:
        """Train backbone + linear head with cross-entropy on the source images (uint8, N × 3 × H × W).

        ``source`` holds ``images``, ``labels`` and the task's budget, ``epochs`` and
        ``batch_size`` (:class:`harness.tasks.fewshot.cdfsl.SourceSet`).
        """
        import torch
        import torch.nn.functional as F

        images, labels, epochs, batch_size = source.images, source.labels, source.epochs, source.batch_size
        rng = context.rng("method")
        device, precision = context.device, context.precision
        classes, targets = np.unique(np.asarray(labels), return_inverse=True)
        with torch.random.fork_rng(devices=[]):  # the initialisation depends on this method's seed alone
            torch.manual_seed(int(rng.integers(2**62)))
            model = build_vit(self.arch)
            head = torch.nn.Linear(model.embed_dim, classes.size)
            torch.nn.init.trunc_normal_(head.weight, std=0.02)
            torch.nn.init.zeros_(head.bias)
        if self.weights:
            path = Path(self.weights)
            if not path.is_absolute() and context.data_dir is not None:
                path = Path(context.data_dir) / path
            if not path.is_file():
                from harness.tasks.base import DataUnavailable

                raise DataUnavailable(f"{type(self).__name__}: no weights file {path} (relative paths are under --data-dir)")
            load_weights(model, path)
        model.to(device)
        head.to(device)
        optimiser = torch.optim.AdamW(
            [{"params": model.parameters(), "lr": self.lr * self.backbone_lr_scale},
             {"params": head.parameters(), "lr": self.lr}],
            weight_decay=self.weight_decay,
        )
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule={self.lr_schedule!r} is unknown; expected 'constant' or 'cosine'")
        steps = max(1, int(epochs) * -(-len(images) // batch_size))
        cosine = (lambda step: 0.5 * (1.0 + np.cos(np.pi * min(step, steps) / steps))) if self.lr_schedule == "cosine" \
            else (lambda step: 1.0)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, cosine)
        scaler = torch.amp.GradScaler("cuda", enabled=device == "cuda" and precision == "fp16")
        generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
        images_t = from_numpy(images)
        targets_t = torch.from_numpy(targets.astype(np.int64))
        max_shift = int(round(self.translate * images.shape[-1]))
        self.epochs_ = int(epochs)
        history = []
        model.train()
        for epoch in range(epochs):
            order = torch.randperm(len(images_t), generator=generator)
            total, seen = 0.0, 0
            for start in range(0, len(order), batch_size):
                index = order[start:start + batch_size]
                x = images_t[index].to(device).float().div_(255.0)
                x = random_scale(x, self.scale, generator)
                x = random_translate(x, max_shift, generator)
                if self.flip:
                    flip = (torch.rand(len(index), generator=generator) < 0.5).to(device)
                    x = torch.where(flip[:, None, None, None], x.flip(-1), x)
                x = normalise(x)
                y = targets_t[index].to(device)
                with autocast(device, precision):
                    tokens, pos = self._train_tokens(model, x, epoch, generator)
                    loss = F.cross_entropy(head(encode(model, tokens, pos)).float(), y)
                optimiser.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimiser)
                scaler.update()
                schedule.step()
                total += float(loss.detach()) * len(index)
                seen += len(index)
            history.append(total / seen)
        if history and not np.isfinite(history[-1]):
            raise FloatingPointError(f"{type(self).__name__}: the training loss is {history[-1]} after {epochs} epochs")
        model.eval()
        self.history_ = tuple(history)
        self.model_ = model
        self.head_ = head
        self.classes_ = classes
        self.device_ = device
        self.precision_ = precision
        self.embed_seed_ = int(rng.integers(2**62))

    def _train_tokens(self, model, x: "torch.Tensor", epoch: int, generator: "torch.Generator"):
        """Patch tokens and positions for one training batch; the plain ViT perturbs nothing."""
        tokens, grid = patch_tokens(model, x)
        return tokens, position_embedding(model, grid)

    # ---- features

    def _embed_tokens(self, tokens: "torch.Tensor", generator: "torch.Generator") -> "torch.Tensor":
        """Patch tokens of a batch at test time, before the positions are added; the plain ViT keeps them."""
        return tokens

    def embed(self, images: np.ndarray) -> np.ndarray:
        """(N, D) float32 CLS features after the final norm, of uint8 images (N, 3, H, W)."""
        import torch

        model, device = self.model_, self.device_
        generator = torch.Generator().manual_seed(self.embed_seed_)  # the same draws on every call
        features = []
        with torch.no_grad(), autocast(device, self.precision_):
            for start in range(0, len(images), self.embed_batch):
                x = normalise(to_tensor(images[start:start + self.embed_batch], device))
                tokens, grid = patch_tokens(model, x)
                tokens = self._embed_tokens(tokens, generator)
                features.append(encode(model, tokens, position_embedding(model, grid)).float().cpu())
        return torch.cat(features).numpy()
