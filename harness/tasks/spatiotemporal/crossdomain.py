"""Task ``spatiotemporal.crossdomain``: train one spatiotemporal forecaster over several related sample groups
(source domains, or periods of the day) and forecast a held-out group: a related source seen only through a few
days of its data (few-shot), or a period of the day never trained on (zero-shot).

The **task** builds the groups (each a domain's series on the sensor graph, z-scored by the group's own training
statistics, cut into windows of ``inputs`` steps and the next ``horizon``), and hands each method a
:class:`CrossDomainSession`: the training groups (their windows and their day-aligned daily segments; which of them
is related to the target is the task's secret), the target's few-shot windows, the task's one training step
(:meth:`CrossDomainSession.train`: Adam at the plan's learning rate on the L1 loss, with a dropout and a weight
decay the method may set) and the backbone every arm trains (:class:`~harness.tasks.spatiotemporal.network.GraphWaveNet`
at the seed's initial weights). A method spends at most ``plan.steps`` training steps (``train_steps``, the budget,
equal for every arm that trains) and returns a :class:`Forecaster`; the task then fine-tunes a network forecaster
on the target's few-shot windows for ``plan.finetune_steps`` (the same for every arm, the checkpoint with the best
MAE on the target's selection windows kept, its curve the row's ``validation_mae``) and scores it on the held-out
windows in the data's own units: ``mae`` (primary), ``rmse`` and ``mape`` (masked: labels below ``mape_floor``
left out).

Data: :func:`sensor_sources` and :func:`sensor_periods` simulate a sensor graph whose domains read one latent
graph-diffusion process with a daily cycle (different read-outs, scales and lags) plus unrelated domains (an
independent process on a permuted graph, the same marginal statistics); :func:`city_arrays` reads real data
(one ``.npy`` array per domain and the adjacency) from ``--data-dir``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable, Task, WorkerCache
from harness.tasks.evaluation import Curve, Evaluation
from harness.tasks.parameters import count, non_negative, positive
from harness.tasks.training import TrainingLog

_GRADIENTS = WorkerCache(8)
PROTOCOLS = ("few-shot", "zero-shot")


# --------------------------------------------------------------------------- what a method sees


@dataclass(frozen=True)
class Windows:
    """Forecasting windows of one group: ``x`` (n, inputs, N, 3) the scaled values and the time of day (sine,
    cosine), ``y`` (n, horizon, N) the next scaled values; ``start`` each window's first input step."""

    x: np.ndarray
    y: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        return len(self.x)


@dataclass(frozen=True)
class Group:
    """A sample group: ``name``, its training windows, and its training span's daily ``segments`` (days, N, L), the
    scaled series of each day in ``days`` (the same day numbers across groups: day-aligned, for a comparison of two
    groups on the same days)."""

    name: str
    train: Windows
    segments: np.ndarray
    days: np.ndarray


@dataclass(frozen=True)
class TrainPlan:
    """The training every arm gets: at most ``steps`` Adam steps at ``lr`` on batches of ``batch_size`` windows,
    then ``finetune_steps`` on the target's few-shot windows (the selection MAE read every ``every`` steps); the
    backbone's ``hidden`` channels and ``blocks``."""

    steps: int
    finetune_steps: int
    batch_size: int
    lr: float
    every: int
    hidden: int
    blocks: int


@dataclass(frozen=True)
class CrossDomainData:
    """A dataset. ``groups`` are the training groups (in the data's listing order), ``related`` whether each reads
    the target's latent process (the task's secret), ``target`` the held-out group (its few-shot windows: none in
    the zero-shot protocol), ``selection`` the target's checkpoint-selection windows (few-shot only),
    ``target_full`` every training-span window of the target (read only by the oracle row), ``scoring`` the split's
    held-out windows with their raw labels ``scoring_raw`` and the target's scaler (``target_mean``, ``target_std``)."""

    instance: str
    protocol: str
    groups: tuple[Group, ...]
    related: tuple[bool, ...]
    target: Group
    selection: Windows | None
    target_full: Windows
    scoring: Windows
    scoring_raw: np.ndarray
    target_mean: float
    target_std: float
    diffusion: np.ndarray
    inputs: int
    horizon: int
    mape_floor: float
    plan: TrainPlan


class Forecaster(Protocol):
    def predict(self, x) -> Any:
        """(B, horizon, N) scaled forecasts of (B, inputs, N, 3) float32 windows (torch tensors)."""
        ...


@dataclass
class Container:
    """A trained network handed back to the task, with the dropout and weight decay its fine-tuning on the target
    uses (SynEVO sets them from the target's gradient distance; 0 for the other arms)."""

    network: Any
    dropout: float = 0.0
    weight_decay: float = 0.0

    def predict(self, x):
        return self.network(x)


class CrossDomainMethod(Protocol):
    """What a method of this task implements."""

    def fit(self, session: "CrossDomainSession") -> Forecaster:
        """Train through ``session.train`` (at most ``session.plan.steps`` steps) and return the forecaster; a
        :class:`Container` is fine-tuned on the target's few-shot windows by the task."""
        ...


# --------------------------------------------------------------------------- building groups from series


def _windows(scaled: np.ndarray, starts: np.ndarray, inputs: int, horizon: int, slots: int) -> Windows:
    starts = np.asarray(starts, dtype=np.int64)
    steps = starts[:, None] + np.arange(inputs)[None, :]
    phase = 2 * np.pi * (steps % slots) / slots
    n_nodes = scaled.shape[1]
    values = scaled[steps]  # (n, inputs, N)
    x = np.stack([values, np.repeat(np.sin(phase)[:, :, None], n_nodes, 2),
                  np.repeat(np.cos(phase)[:, :, None], n_nodes, 2)], axis=-1)
    y = scaled[starts[:, None] + inputs + np.arange(horizon)[None, :]]
    return Windows(x.astype(np.float32), y.astype(np.float32), starts)


def _segments(scaled: np.ndarray, days: np.ndarray, slots: int, period: tuple[int, int]) -> np.ndarray:
    """(days, N, L): each day's slots ``period`` (first, end) of the scaled series."""
    first, end = period
    return np.stack([scaled[d * slots + first: d * slots + end].T for d in days]).astype(np.float32)


def build(series: dict[str, np.ndarray], diffusion: np.ndarray, *, protocol: str, target: str,
          unrelated: Sequence[str], slots: int, periods: int, inputs: int, horizon: int, shots: float,
          spans: tuple[float, float, float], mape_floor: float, plan: TrainPlan, split: str,
          instance: str) -> CrossDomainData:
    """The groups of a dataset from each domain's raw (T, N) series (T a whole number of days of ``slots``).

    few-shot: every domain but ``target`` is a training group; the target's few-shot windows are those whose
    forecast ends within the first ``shots`` of the training span. zero-shot: the groups are the first
    ``periods`` − 1 periods of the day of domain ``target`` (a window belongs to the period of its first forecast
    step), the target is the last period. The time axis splits into a training, a selection and a tuning span
    (``spans``, shares of the days) and the test span (the rest); the scoring windows are the target's in the
    tuning span (split "val") or the test span."""
    if protocol not in PROTOCOLS:
        raise DataError(f"protocol = {protocol!r}: expected one of {PROTOCOLS}")
    if target not in series:
        raise DataError(f"target = {target!r} is not a domain of the data; expected one of {sorted(series)}")
    for name in unrelated:
        if name not in series:
            raise DataError(f"unrelated names {name!r}, not a domain of the data; expected one of {sorted(series)}")
    if protocol == "zero-shot" and unrelated:
        raise DataError("unrelated domains are a few-shot (cross-source) setting: the zero-shot groups are the "
                        "periods of one domain")
    total = next(iter(series.values())).shape[0]
    n_days = total // slots
    if n_days * slots != total:
        raise DataError(f"the series hold {total} steps, not a whole number of days of {slots} slots")
    train_share, selection_share, tuning_share = spans
    if min(spans) <= 0 or sum(spans) >= 1:
        raise DataError(f"spans = {list(spans)}: expected three positive shares (training, selection, tuning) "
                        "summing to less than 1 (the rest is the test span)")
    bounds = np.round(np.cumsum([0, train_share, selection_share, tuning_share, 1 - sum(spans)]) * n_days)
    bounds = (bounds.astype(int) * slots).tolist()  # step bounds of the spans
    if min(np.diff(bounds)) < inputs + horizon:
        raise DataError(f"{n_days} days split by spans = {list(spans)} leaves a span shorter than a window "
                        f"({inputs} + {horizon} steps); use more days")
    train_days = np.arange(bounds[1] // slots)
    if protocol == "zero-shot" and not (2 <= periods <= slots and slots % periods == 0):
        raise DataError(f"periods = {periods}: expected at least 2, dividing the {slots} slots of a day")
    period_len = slots // periods

    def starts_in(low: int, high: int, period: int | None = None) -> np.ndarray:
        starts = np.arange(low, high - inputs - horizon + 1)
        if period is not None:
            starts = starts[((starts + inputs) % slots) // period_len == period]
        return starts

    def scaler(raw: np.ndarray) -> tuple[float, float]:
        std = float(raw.std())
        if not np.isfinite(raw).all() or not std > 0:
            raise DataError("a domain's training values are constant or not finite: no z-score")
        return float(raw.mean()), std

    groups: list[Group] = []
    related: list[bool] = []
    if protocol == "few-shot":
        for name, raw in series.items():
            if name == target:
                continue
            mean, std = scaler(raw[:bounds[1]])
            scaled = (raw - mean) / std
            groups.append(Group(name, _windows(scaled, starts_in(0, bounds[1]), inputs, horizon, slots),
                                _segments(scaled, train_days, slots, (0, slots)), train_days))
            related.append(name not in unrelated)
        raw = series[target]
        shot_end = max(int(round(shots * bounds[1] / slots)), 1) * slots  # whole days
        mean, std = scaler(raw[:shot_end])
        scaled = (raw - mean) / std
        shot_days = np.arange(shot_end // slots)
        if len(starts_in(0, shot_end)) < 2:
            raise DataError(f"shots = {shots} leaves fewer than 2 few-shot windows")
        target_group = Group(target, _windows(scaled, starts_in(0, shot_end), inputs, horizon, slots),
                             _segments(scaled, shot_days, slots, (0, slots)), shot_days)
        selection = _windows(scaled, starts_in(bounds[1], bounds[2]), inputs, horizon, slots)
        full = _windows(scaled, starts_in(0, bounds[1]), inputs, horizon, slots)
        low, high = (bounds[2], bounds[3]) if split == "val" else (bounds[3], bounds[4])
        scoring = _windows(scaled, starts_in(low, high), inputs, horizon, slots)
    else:
        raw = series[target]
        periods_train = np.concatenate([raw[d * slots + p * period_len: d * slots + (p + 1) * period_len]
                                        for d in train_days for p in range(periods - 1)])
        mean, std = scaler(periods_train)  # fit on the training periods only: the held-out period never leaks
        scaled = (raw - mean) / std
        for p in range(periods - 1):
            groups.append(Group(f"{target}:period-{p + 1}", _windows(scaled, starts_in(0, bounds[1], p), inputs,
                                                                      horizon, slots),
                                _segments(scaled, train_days, slots, (p * period_len, (p + 1) * period_len)),
                                train_days))
            related.append(True)
        empty = _windows(scaled, np.zeros(0, dtype=np.int64), inputs, horizon, slots)
        target_group = Group(f"{target}:period-{periods}", empty, np.zeros((0, raw.shape[1], period_len),
                                                                           np.float32), np.zeros(0, np.int64))
        selection = None
        full = _windows(scaled, starts_in(0, bounds[1], periods - 1), inputs, horizon, slots)
        low, high = (bounds[2], bounds[3]) if split == "val" else (bounds[3], bounds[4])
        scoring = _windows(scaled, starts_in(low, high, periods - 1), inputs, horizon, slots)
    scoring_raw = series[target][scoring.start[:, None] + inputs + np.arange(horizon)[None, :]]
    if len(scoring) == 0:
        raise DataError("no scoring window in the held-out span; use more days")
    return CrossDomainData(instance, protocol, tuple(groups), tuple(related), target_group, selection, full, scoring,
                           scoring_raw.astype(np.float64), mean, std, diffusion.astype(np.float32), inputs, horizon,
                           mape_floor, plan)


def _plan(steps, finetune_steps, batch_size, lr, every, hidden, blocks) -> TrainPlan:
    plan = TrainPlan(count("steps", steps), count("finetune_steps", finetune_steps, 0),
                     count("batch_size", batch_size, 2), positive("lr", lr), count("every", every),
                     count("hidden", hidden), count("blocks", blocks))
    if plan.finetune_steps and plan.every > plan.finetune_steps:
        raise DataError(f"every = {every} is above finetune_steps = {finetune_steps}: no checkpoint would be read")
    return plan


def _window_sizes(inputs, horizon, blocks) -> tuple[int, int]:
    inputs_, horizon_ = count("inputs", inputs), count("horizon", horizon)
    if inputs_ < 2 ** blocks:
        raise DataError(f"inputs = {inputs} is fewer than the {2 ** blocks} steps that blocks = {blocks} read")
    return inputs_, horizon_


# --------------------------------------------------------------------------- the simulated sensor graph


def diffusion_matrix(positions: np.ndarray, radius: float) -> np.ndarray:
    """The row-normalised Gaussian kernel exp(−(d/radius)²) between sensors within 2 · radius (self-loops included):
    Graph WaveNet's forward diffusion matrix D⁻¹W."""
    distance = np.linalg.norm(positions[:, None] - positions[None], axis=-1)
    weights = np.exp(-(distance / radius) ** 2) * (distance <= 2 * radius)
    return weights / weights.sum(1, keepdims=True)


def latent_process(rng: np.random.Generator, diffusion: np.ndarray, phases: np.ndarray, steps: int, slots: int,
                   persistence: float, noise: float) -> np.ndarray:
    """h_t = φ P h_{t−1} + (1 − φ) c_t + σ ε_t on the graph (P the diffusion matrix, φ ``persistence``), c_t,n the
    daily cycle sin(2π t / slots + phase_n) + ½ sin(4π t / slots + 2 phase_n); the first two days are burn-in."""
    burn = 2 * slots
    t = np.arange(steps + burn)[:, None]
    cycle = np.sin(2 * np.pi * t / slots + phases) + 0.5 * np.sin(4 * np.pi * t / slots + 2 * phases)
    h = np.zeros(len(phases))
    out = np.empty((steps + burn, len(phases)))
    shocks = rng.standard_normal((steps + burn, len(phases)))
    for k in range(steps + burn):
        h = persistence * diffusion @ h + (1 - persistence) * cycle[k] * 3.0 + noise * shocks[k]
        out[k] = h
    return out[burn:]


def _read_out(rng: np.random.Generator, latent: np.ndarray, lag: int, observation: float) -> np.ndarray:
    """A domain's read-out of a latent: scale · softplus(gain · h_{t−lag} + bias) + noise, at least 0 (counts)."""
    gain, bias = rng.uniform(0.6, 1.4), rng.uniform(-0.5, 0.5)
    scale = float(np.exp(rng.uniform(np.log(5.0), np.log(50.0))))
    node = np.exp(rng.normal(0.0, 0.3, latent.shape[1]))
    lagged = np.roll(latent, lag, axis=0)
    lagged[:lag] = latent[:lag]
    value = scale * node * np.logaddexp(0.0, gain * lagged + bias)
    value = value + observation * scale * rng.standard_normal(value.shape)
    return np.maximum(value, 0.0)


def simulate(context: Context, instance: str, *, nodes: int, days: int, slots: int, related: int, unrelated: int,
             radius: float, persistence: float, noise: float, observation: float, max_lag: int):
    """The seed's sensor graph and domain series: ``related`` read-outs ("related-1", ...) of one latent process
    (each its own gain, bias, scale from 5 to 50, per-sensor factor and lag up to ``max_lag`` steps) and
    ``unrelated`` read-outs ("unrelated-1", ...), each of its own latent process on the graph with its sensors
    permuted (the same law, so the same marginal statistics, but no co-movement with the others)."""
    shared = Context(seed=context.seed, split="train", dataset=instance)
    graph = shared.rng("graph")
    positions = graph.uniform(0.0, 1.0, (nodes, 2))
    diffusion = diffusion_matrix(positions, radius)
    direction = graph.normal(size=2)
    phases = 2 * np.pi * positions @ (direction / np.linalg.norm(direction)) * 0.5  # smooth over space
    steps = days * slots
    latent = latent_process(shared.rng("latent"), diffusion, phases, steps, slots, persistence, noise)
    series: dict[str, np.ndarray] = {}
    for i in range(related):
        rng = shared.rng("related", str(i))
        series[f"related-{i + 1}"] = _read_out(rng, latent, int(rng.integers(0, max_lag + 1)), observation)
    for i in range(unrelated):
        rng = shared.rng("unrelated", str(i))
        order = rng.permutation(nodes)
        own = latent_process(rng, diffusion[np.ix_(order, order)], phases[order], steps, slots, persistence, noise)
        series[f"unrelated-{i + 1}"] = _read_out(rng, own, int(rng.integers(0, max_lag + 1)), observation)
    return series, diffusion


def _simulated(context: Context, protocol: str, target: str | None, *, nodes, days, slots, related, unrelated,
               radius, persistence, noise, observation, max_lag, periods, inputs, horizon, shots, spans, mape_floor,
               steps, finetune_steps, batch_size, lr, every, hidden, blocks) -> CrossDomainData:
    plan = _plan(steps, finetune_steps, batch_size, lr, every, hidden, blocks)
    inputs_, horizon_ = _window_sizes(inputs, horizon, plan.blocks)
    sizes = {"nodes": count("nodes", nodes, 2), "days": count("days", days, 5), "slots": count("slots", slots, 2),
             "related": count("related", related, 2 if protocol == "few-shot" else 1),
             "unrelated": count("unrelated", unrelated, 0), "max_lag": count("max_lag", max_lag, 0)}
    radius_, noise_, observation_ = positive("radius", radius), non_negative("noise", noise), \
        non_negative("observation", observation)
    if not 0 <= persistence < 1:
        raise DataError(f"persistence = {persistence!r}: expected a number in [0, 1)")
    if not 0 < shots <= 1:
        raise DataError(f"shots = {shots!r}: expected a share of the training span in (0, 1]")
    instance = (f"sensor-graph:n{sizes['nodes']}:d{sizes['days']}:s{sizes['slots']}:r{sizes['related']}:"
                f"u{sizes['unrelated']}:rad{radius_}:p{persistence}:e{noise_}:o{observation_}:l{sizes['max_lag']}")
    series, diffusion = simulate(context, instance, nodes=sizes["nodes"], days=sizes["days"], slots=sizes["slots"],
                                 related=sizes["related"], unrelated=sizes["unrelated"], radius=radius_,
                                 persistence=persistence, noise=noise_, observation=observation_,
                                 max_lag=sizes["max_lag"])
    target_name = target or (f"related-{sizes['related']}" if protocol == "few-shot" else "related-1")
    return build(series, diffusion, protocol=protocol, target=target_name,
                 unrelated=[n for n in series if n.startswith("unrelated-")], slots=sizes["slots"],
                 periods=count("periods", periods, 2), inputs=inputs_, horizon=horizon_, shots=float(shots),
                 spans=tuple(spans), mape_floor=non_negative("mape_floor", mape_floor), plan=plan,
                 split=context.split, instance=f"{instance}:{protocol}:{target_name}:sh{shots}:pe{periods}")


def sensor_sources(context: Context, *, nodes: int = 20, days: int = 40, slots: int = 48, related: int = 4,
                   unrelated: int = 1, target: str | None = None, radius: float = 0.25, persistence: float = 0.8,
                   noise: float = 0.3, observation: float = 0.1, max_lag: int = 2, inputs: int = 12,
                   horizon: int = 3, shots: float = 0.1, spans: Sequence[float] = (0.6, 0.1, 0.1),
                   mape_floor: float = 1.0, steps: int = 600, finetune_steps: int = 150, batch_size: int = 32,
                   lr: float = 0.005, every: int = 15, hidden: int = 16, blocks: int = 3) -> CrossDomainData:
    """Cross-source, few-shot: a simulated sensor graph (:func:`simulate`: ``nodes`` sensors on the unit square,
    the Gaussian kernel within 2 · ``radius``, ``days`` days of ``slots`` slots, ``related`` read-outs of one latent
    process and ``unrelated`` independent ones); the target (by default the last related domain) is held out, seen
    through the first ``shots`` of the training span; every other domain is a training group. Windows of ``inputs``
    steps forecast ``horizon`` steps. The plan's parameters: :class:`TrainPlan`."""
    return _simulated(context, "few-shot", target, nodes=nodes, days=days, slots=slots, related=related,
                      unrelated=unrelated, radius=radius, persistence=persistence, noise=noise,
                      observation=observation, max_lag=max_lag, periods=4, inputs=inputs, horizon=horizon,
                      shots=shots, spans=spans, mape_floor=mape_floor, steps=steps, finetune_steps=finetune_steps,
                      batch_size=batch_size, lr=lr, every=every, hidden=hidden, blocks=blocks)


def sensor_periods(context: Context, *, nodes: int = 20, days: int = 40, slots: int = 48, periods: int = 4,
                   target: str | None = None, radius: float = 0.25, persistence: float = 0.8, noise: float = 0.3,
                   observation: float = 0.1, max_lag: int = 2, inputs: int = 12, horizon: int = 3,
                   spans: Sequence[float] = (0.6, 0.1, 0.1), mape_floor: float = 1.0, steps: int = 600,
                   batch_size: int = 32, lr: float = 0.005, every: int = 15, hidden: int = 16,
                   blocks: int = 3) -> CrossDomainData:
    """Cross-temporal, zero-shot: the same simulated graph's domain ``target`` (by default "related-1") with the day
    cut into ``periods`` periods; the first ``periods`` − 1 are the training groups, the last is held out and
    never trained on (its scaler is the training periods'). No fine-tuning."""
    return _simulated(context, "zero-shot", target, nodes=nodes, days=days, slots=slots, related=1, unrelated=0,
                      radius=radius, persistence=persistence, noise=noise, observation=observation, max_lag=max_lag,
                      periods=periods, inputs=inputs, horizon=horizon, shots=1.0, spans=spans,
                      mape_floor=mape_floor, steps=steps, finetune_steps=0, batch_size=batch_size, lr=lr,
                      every=every, hidden=hidden, blocks=blocks)


def city_arrays(context: Context, *, city: str = "NYC", target: str = "TaxiDrop", protocol: str = "few-shot",
                unrelated: Sequence[str] = (), domains: Sequence[str] | None = None, slots: int = 48,
                periods: int = 4, inputs: int = 12, horizon: int = 12, shots: float = 0.1,
                spans: Sequence[float] = (0.6, 0.1, 0.1), mape_floor: float = 1.0, steps: int = 3000,
                finetune_steps: int = 500, batch_size: int = 64, lr: float = 0.005, every: int = 50,
                hidden: int = 32, blocks: int = 3, root: str | None = None) -> CrossDomainData:
    """Real data from ``--data-dir`` (or ``root``): the folder ``<dir>/synevo/<city>`` (or ``<dir>/<city>``) holds
    ``adj.npy`` (N × N non-negative weights, row-normalised here into the diffusion matrix) and one ``<domain>.npy``
    of shape (T, N) per domain (NYC: CrowdIn, CrowdOut, TaxiPick, TaxiDrop; CHI: Risk, TaxiPick, TaxiDrop; SD:
    Flow), T a whole number of days of ``slots`` (48 for the 30-minute NYC and CHI data). ``domains`` (default:
    every ``.npy`` but ``adj``) are the groups; ``target`` the held-out one (or, zero-shot, the domain whose last
    period is held out); ``unrelated`` names domains known to be unrelated (for the gate's admission counts)."""
    if not isinstance(city, str) or not city or "/" in city:
        raise DataError(f"city = {city!r}: expected a folder name such as 'NYC'")
    if root:
        folder = Path(root) / city
    elif context.data_dir:
        base = Path(context.data_dir)
        folder = base / "synevo" / city if (base / "synevo" / city).is_dir() else base / city
    else:
        raise DataUnavailable(f"city-arrays needs real data: pass --data-dir DIR (or set HARNESS_DATA_DIR) holding "
                              f"synevo/{city}/adj.npy and one <domain>.npy per domain")
    if not (folder / "adj.npy").is_file():
        raise DataUnavailable(f"city-arrays: no file {folder / 'adj.npy'} (the sensors' adjacency)")
    plan = _plan(steps, finetune_steps if protocol == "few-shot" else 0, batch_size, lr, every, hidden, blocks)
    inputs_, horizon_ = _window_sizes(inputs, horizon, plan.blocks)
    adjacency = _read_array(folder / "adj.npy", 2)
    if adjacency.shape[0] != adjacency.shape[1] or (adjacency < 0).any():
        raise DataError(f"city-arrays: {folder / 'adj.npy'} has shape {adjacency.shape}; expected a square matrix "
                        "of non-negative weights")
    names = list(domains) if domains is not None else sorted(p.stem for p in folder.glob("*.npy") if p.stem != "adj")
    series = {}
    for name in names:
        path = folder / f"{name}.npy"
        if not path.is_file():
            raise DataError(f"city-arrays: no file {path}; every domain named needs <domain>.npy")
        array = _read_array(path, 2)
        if array.shape[1] != adjacency.shape[0]:
            raise DataError(f"city-arrays: {path} has shape {array.shape}; expected (T, {adjacency.shape[0]}) to match "
                            f"adj.npy")
        series[name] = array
    lengths = {a.shape[0] for a in series.values()}
    if len(lengths) != 1:
        raise DataError(f"city-arrays: the domains of {folder} have different lengths {sorted(lengths)}; expected "
                        "time-aligned series")
    weights = adjacency + np.eye(len(adjacency))
    diffusion = weights / weights.sum(1, keepdims=True)
    digest = json.dumps([city, names, protocol, target, shots, periods, slots])
    return build(series, diffusion, protocol=protocol, target=target, unrelated=list(unrelated),
                 slots=count("slots", slots, 2), periods=count("periods", periods, 2), inputs=inputs_,
                 horizon=horizon_, shots=float(shots), spans=tuple(spans),
                 mape_floor=non_negative("mape_floor", mape_floor), plan=plan, split=context.split,
                 instance=f"city-arrays:{digest}")


def _read_array(path: Path, ndim: int) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise DataError(f"city-arrays: {path} is not a readable .npy array ({error})") from None
    if array.ndim != ndim or not np.issubdtype(array.dtype, np.number) or not np.isfinite(array).all():
        raise DataError(f"city-arrays: {path} holds a {array.ndim}-d {array.dtype} array; expected a finite "
                        f"{ndim}-d numeric array")
    return array.astype(np.float64)


# --------------------------------------------------------------------------- the session


@dataclass
class GateReport:
    """What a method's gate decided for one group: its distance to the nearest admitted group (in units of the
    gate's threshold κ) and whether it was admitted into the shared model."""

    distance: float
    admitted: bool


def _torch_seed(context: Context, instance: str, *purpose: str) -> int:
    return int(Context(seed=context.seed, split="train", dataset=instance).rng(*purpose).integers(2**62))


def new_network(data: CrossDomainData, context: Context, purpose: str = "init"):
    """A :class:`GraphWaveNet` of the plan whose initial weights depend on the seed, the instance and ``purpose``."""
    import torch

    from harness.tasks.spatiotemporal.network import GraphWaveNet

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_torch_seed(context, data.instance, purpose))
        network = GraphWaveNet(data.diffusion.shape[0], torch.as_tensor(data.diffusion), data.inputs, data.horizon,
                               data.plan.hidden, data.plan.blocks)
    return network.to(context.device)


class CrossDomainSession:
    """What a method works with: ``groups`` (the training groups), ``target`` (the held-out group: its few-shot
    windows and their days), ``plan``, the backbone, the one training step and the gradients of a probe trained on
    each group. It counts what the method spends and what its gate reported."""

    def __init__(self, data: CrossDomainData, context: Context):
        self.data, self.context, self.plan = data, context, data.plan
        self.groups, self.target = data.groups, data.target
        self.train_steps = 0
        self.probe_steps = 0
        self.gate: dict[str, GateReport] = {}
        self.losses: list[float] = []

    def new_network(self, purpose: str = "init"):
        """The backbone at the seed's initial weights (the same for every method; another ``purpose``, another
        draw)."""
        return new_network(self.data, self.context, purpose)

    def rng(self, purpose: str) -> np.random.Generator:
        return self.context.rng(purpose)

    def train(self, network, windows: Windows | Sequence[Windows], steps: int, *, dropout: float = 0.0,
              weight_decay: float = 0.0, stream: str = "main"):
        """``steps`` Adam steps at ``plan.lr`` (a fresh optimiser) on the L1 loss of batches of ``plan.batch_size``
        windows drawn uniformly from ``windows`` (one group's, or several pooled), with every dropout of the network
        at ``dropout`` and Adam's coupled ``weight_decay`` (the gradient of λ/2 · ‖θ‖² added); the batches follow
        the seed's stream ``stream``. Counted in ``train_steps``, which may not pass ``plan.steps``. Returns the
        network."""
        from harness.tasks.spatiotemporal.network import set_dropout

        if self.train_steps + steps > self.plan.steps:
            raise ValueError(f"{steps} more training steps would pass the budget of {self.plan.steps} "
                             f"({self.train_steps} spent)")
        self._fit(network, windows, steps, dropout, weight_decay, stream)
        self.train_steps += steps
        set_dropout(network, 0.0)
        return network

    def _fit(self, network, windows, steps, dropout, weight_decay, stream, record=True):
        import torch

        from harness.tasks.spatiotemporal.network import set_dropout

        pooled = [windows] if isinstance(windows, Windows) else list(windows)
        x = torch.as_tensor(np.concatenate([w.x for w in pooled])).to(self.context.device)
        y = torch.as_tensor(np.concatenate([w.y for w in pooled])).to(self.context.device)
        if len(x) == 0:
            raise ValueError("no windows to train on")
        if steps <= 0:
            return network
        generator = torch.Generator().manual_seed(_torch_seed(self.context, self.data.instance, "batches", stream))
        optimizer = torch.optim.Adam(network.parameters(), lr=self.plan.lr, weight_decay=weight_decay)
        set_dropout(network, dropout)
        network.train()
        for step in range(steps):
            rows = torch.randint(len(x), (self.plan.batch_size,), generator=generator).to(self.context.device)
            loss = (network(x[rows]) - y[rows]).abs().mean()
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training diverged at step {step + 1}: the loss is {loss.item()}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if record:
                self.losses.append(float(loss.detach()))
        network.eval()
        return network

    def group_gradients(self, steps: int, batch: int = 256) -> dict[str, list[np.ndarray]]:
        """For every training group (and the target when it has few-shot windows): a probe backbone from the
        same initial weights trained ``steps`` steps on that group alone, and the gradient of its L1 loss on the
        group's first ``batch`` windows, per parameter tensor (SynEVO's reordering reads them). The same for every
        method of a seed (kept per worker); counted in ``probe_steps``."""
        groups = [*self.groups, *([self.target] if len(self.target.train) else [])]
        key = (self.data.instance, self.context.seed, self.context.device, steps, batch)
        self.probe_steps += steps * len(groups)
        return _GRADIENTS.get_or_build(key, lambda: {g.name: self._probe(g, steps, batch) for g in groups})

    def _probe(self, group: Group, steps: int, batch: int) -> list[np.ndarray]:
        import torch

        network = self.new_network("probe")
        self._fit(network, group.train, steps, 0.0, 0.0, f"probe:{group.name}", record=False)
        x = torch.as_tensor(group.train.x[:batch]).to(self.context.device)
        y = torch.as_tensor(group.train.y[:batch]).to(self.context.device)
        network.zero_grad(set_to_none=True)
        (network(x) - y).abs().mean().backward()
        return [p.grad.detach().cpu().numpy().copy() for p in network.parameters()]

    def report_gate(self, name: str, distance: float, admitted: bool) -> None:
        """Record the gate's decision for group ``name`` (a training group or the target)."""
        if not np.isfinite(distance):
            raise ValueError(f"gate distance of {name!r} is {distance}; expected a finite number")
        self.gate[name] = GateReport(float(distance), bool(admitted))


# --------------------------------------------------------------------------- scoring


def forecast(forecaster: Forecaster, windows: Windows, device: str = "cpu", chunk: int = 512) -> np.ndarray:
    """The scaled forecasts (n, horizon, N) of ``windows``."""
    import torch

    out = []
    with torch.no_grad():
        for first in range(0, len(windows), chunk):
            x = torch.as_tensor(windows.x[first:first + chunk]).to(device)
            out.append(forecaster.predict(x).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, *windows.y.shape[1:]), np.float32)


def errors(predicted: np.ndarray, truth: np.ndarray, mape_floor: float) -> dict[str, float]:
    """MAE, RMSE and MAPE (over the labels of at least ``mape_floor``, in %) of raw-unit forecasts."""
    difference = predicted - truth
    kept = truth >= mape_floor
    mape = float(np.mean(np.abs(difference[kept]) / truth[kept]) * 100) if kept.any() else 0.0
    return {"mae": float(np.abs(difference).mean()), "rmse": float(np.sqrt((difference ** 2).mean())), "mape": mape}


def finetune(forecaster: Container, data: CrossDomainData, session: CrossDomainSession):
    """The task's fine-tuning of a network forecaster on the target's few-shot windows: ``plan.finetune_steps`` Adam
    steps (the container's dropout and weight decay), the scaled MAE on the selection windows read before the first
    step and every ``plan.every`` steps, the best checkpoint kept. Returns the network and the selection log."""
    import copy

    import torch

    from harness.tasks.spatiotemporal.network import set_dropout

    plan, network = data.plan, forecaster.network
    log = TrainingLog("validation_mae", budget=plan.finetune_steps)

    def reading() -> float:
        return float(np.abs(forecast(forecaster, data.selection, session.context.device) - data.selection.y).mean())

    best, best_state = reading(), copy.deepcopy(network.state_dict())
    x = torch.as_tensor(data.target.train.x).to(session.context.device)
    y = torch.as_tensor(data.target.train.y).to(session.context.device)
    generator = torch.Generator().manual_seed(_torch_seed(session.context, data.instance, "finetune"))
    optimizer = torch.optim.Adam(network.parameters(), lr=plan.lr, weight_decay=forecaster.weight_decay)
    for step in range(plan.finetune_steps):
        set_dropout(network, forecaster.dropout)
        network.train()
        rows = torch.randint(len(x), (plan.batch_size,), generator=generator).to(session.context.device)
        loss = (network(x[rows]) - y[rows]).abs().mean()
        if not torch.isfinite(loss):
            raise FloatingPointError(f"fine-tuning diverged at step {step + 1}: the loss is {loss.item()}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % plan.every == 0 or log.due(step):
            set_dropout(network, 0.0)
            network.eval()
            value = reading()
            log.record(step, value)
            if value < best:
                best, best_state = value, copy.deepcopy(network.state_dict())
    network.load_state_dict(best_state)
    set_dropout(network, 0.0)
    network.eval()
    return best, log


class CrossDomainTask(Task):
    """Let the method train over the groups, fine-tune its network on the target's few shots, score the target."""

    name = "spatiotemporal.crossdomain"
    version = "1"
    metrics = ("mae", "rmse", "mape", "validation_mae", "train_loss", "train_steps", "finetune_steps", "probe_steps",
               "related_admitted", "unrelated_admitted", "target_admitted", "train_s")
    protocol = CrossDomainMethod
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """A few steps on a small graph (the conformance test)."""
        small = {"nodes": 5, "days": 10, "slots": 12, "inputs": 8, "horizon": 2, "steps": 16, "batch_size": 8,
                 "every": 2, "hidden": 4}
        folder = Path(workdir) / "TINY"  # three time-aligned domains on 4 sensors, in city-arrays' layout
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        np.save(folder / "adj.npy", np.ones((4, 4)))
        cycle = 5 + np.sin(np.arange(10 * 12) * 2 * np.pi / 12)[:, None] + rng.normal(0, 0.1, (120, 4))
        for i, name in enumerate(("CrowdIn", "TaxiPick", "TaxiDrop")):
            np.save(folder / f"{name}.npy", (i + 1) * cycle)
        window = {key: small[key] for key in ("slots", "inputs", "horizon", "steps", "batch_size", "every", "hidden")}
        return {"sensor-sources": {**small, "related": 3, "unrelated": 1, "shots": 0.3, "finetune_steps": 4},
                "sensor-periods": {**small, "periods": 3},
                "city-arrays": {**window, "city": "TINY", "target": "TaxiDrop", "root": str(workdir), "shots": 0.3,
                                "finetune_steps": 4}}

    def evaluate(self, method: CrossDomainMethod, data: CrossDomainData, context: Context) -> Evaluation:
        session = CrossDomainSession(data, context)
        started = time.perf_counter()
        forecaster = method.fit(session)
        if not callable(getattr(forecaster, "predict", None)):
            raise TypeError(f"{type(method).__name__}.fit returned {type(forecaster).__name__}, which has no "
                            "predict(); expected a forecaster (e.g. a Container)")
        curves: dict[str, Curve] = {}
        finetuned = 0
        if isinstance(forecaster, Container) and data.protocol == "few-shot" and data.plan.finetune_steps:
            validation, log = finetune(forecaster, data, session)
            finetuned = data.plan.finetune_steps
            curves.update(log.curves())
        elif data.selection is not None:
            validation = float(np.abs(forecast(forecaster, data.selection, context.device) - data.selection.y).mean())
        else:  # zero-shot: the training groups' own last windows stand in (the held-out period is never read)
            validation = float(np.mean([np.abs(forecast(forecaster, Windows(g.train.x[-256:], g.train.y[-256:],
                                                                              g.train.start[-256:]),
                                                        context.device) - g.train.y[-256:]).mean()
                                        for g in data.groups]))
        train_s = time.perf_counter() - started
        predicted = forecast(forecaster, data.scoring, context.device) * data.target_std + data.target_mean
        if not np.isfinite(predicted).all():
            raise FloatingPointError("the forecasts are not finite")
        if session.losses:
            loss_log = TrainingLog("train_loss", budget=len(session.losses))
            window = max(1, len(session.losses) // 20)
            for step in range(len(session.losses)):
                if loss_log.due(step):
                    loss_log.record(step, float(np.mean(session.losses[max(0, step + 1 - window): step + 1])))
            curves.update(loss_log.curves())
            train_loss = loss_log.final
        else:
            train_loss = float(np.abs(data.scoring.y).mean())  # no training: the forecast-free loss of predicting 0
        reports = [session.gate.get(g.name) for g in data.groups]
        related = [r is None or r.admitted for r, rel in zip(reports, data.related) if rel]
        unrelated = [r is None or r.admitted for r, rel in zip(reports, data.related) if not rel]
        target_report = session.gate.get(data.target.name)
        if session.gate:
            order = [g.name for g in data.groups if g.name in session.gate]
            curves["gate_distance"] = Curve(list(range(1, len(order) + 1)),
                                            [session.gate[n].distance for n in order],
                                            x_label="group (the data's listing order)",
                                            y_label="distance to the nearest admitted group / kappa")
        metrics = {
            **errors(predicted, data.scoring_raw, data.mape_floor),
            "validation_mae": validation,
            "train_loss": train_loss,
            "train_steps": float(session.train_steps),
            "finetune_steps": float(finetuned),
            "probe_steps": float(session.probe_steps),
            "related_admitted": float(np.mean(related)) if related else 1.0,
            "unrelated_admitted": float(np.mean(unrelated)) if unrelated else 0.0,
            "target_admitted": float(target_report is None or target_report.admitted),
            "train_s": train_s,
        }
        return Evaluation(metrics, curves)


TASK = CrossDomainTask()
