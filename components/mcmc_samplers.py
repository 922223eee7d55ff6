"""MCMC samplers written as blocks over m chains, shared by the FSM runtime (implementations/fsm_mcmc) and the
synchronised runtime (baselines/mcmc): symmetric delayed-rejection MH, elliptical slice, and the random-direction
stepping-out slice sampler.

A sampler is two functions on a dict of (m, …) tensors:

* ``begin(state, mask)``: start a new sample on the chains in ``mask`` (the INIT block) and put the position
  whose log-density it needs next in ``state["req"]``;
* ``advance(state, lp, mask)``: consume ``lp``, the log-density at ``state["req"]``, on the chains in ``mask``
  (one loop iteration), and return the chains whose sample is done (its draw is then ``state["x"]``).

Every block needs the log-density exactly once per iteration, so a runtime evaluates it once per step for the whole
batch, outside the blocks (the paper's amortisation). Randomness is counter-based: chain j's draws are a hash of
(its key, the number of iterations it has done, a slot), so they do not depend on how a runtime schedules the
chains, and the FSM and synchronised forms of one sampler give the same draws from the same keys and start.
``state["phase"]`` names the loop a chain is in; ``phases`` lists the loops in program order (the synchronised
form runs each as its own batched while-loop, as vmap does with sequential loops).
"""
from __future__ import annotations

import math

_M32 = 0xFFFFFFFF


def _mix(x):
    """A 32-bit integer hash (lowbias32) on int64 tensors; products wrap, and only their low 32 bits are kept."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def chain_keys(seed: int, m: int):
    """One 32-bit key per chain, from the cell's seed."""
    import torch

    return _mix(_mix(torch.full((m,), int(seed) & _M32, dtype=torch.int64)) + torch.arange(m, dtype=torch.int64))


def uniforms(keys, counter, offset: int, k: int):
    """(m, k) uniforms in (0, 1): slots offset … offset+k−1 of each chain's draw number ``counter``."""
    import torch

    base = _mix(keys ^ _mix(counter + 0x3C6EF372))
    slots = _mix(torch.arange(offset, offset + k, dtype=torch.int64) * 0x9E3779B9 + 0x632BE5AB)
    bits = _mix(base[:, None] ^ slots[None, :])
    return (bits.to(torch.float64) + 0.5) / 2.0**32


def normals(keys, counter, offset: int, k: int):
    """(m, k) standard normals by Box–Muller from slots offset … offset+2k−1."""
    import torch

    u = uniforms(keys, counter, offset, 2 * k)
    return torch.sqrt(-2.0 * torch.log(u[:, :k])) * torch.cos(2.0 * math.pi * u[:, k:])


def _put(state: dict, mask, **values) -> None:
    import torch

    for name, value in values.items():
        old = state[name]
        where = mask.view(-1, *([1] * (old.dim() - 1)))
        state[name] = torch.where(where, value, old)


class Sampler:
    """Blocks of one MCMC kernel over m chains; see the module docstring."""

    phases: tuple[int, ...] = (1,)

    def init_state(self, x0, lp0, keys) -> dict:
        """State at the start: the chains' positions ``x0`` (m, d), their log-densities ``lp0`` and keys."""
        import torch

        m = x0.shape[0]
        return {"x": x0.clone(), "lp": lp0.clone(), "req": x0.clone(), "keys": keys,
                "counter": torch.zeros(m, dtype=torch.int64), "phase": torch.ones(m, dtype=torch.int64)}

    def begin(self, state: dict, mask) -> None:
        raise NotImplementedError

    def advance(self, state: dict, lp, mask):
        raise NotImplementedError


class DelayedRejectionMH(Sampler):
    """Symmetric delayed-rejection Metropolis–Hastings (Mira 2001), one state after condensing.

    Try k proposes y_k = y_{k−1} + step·ε (y_0 = x) and accepts with min(1, max(0, p(y_k) − p*)/(p(x) − p*)),
    p* the largest density rejected so far in this sample (try 1: min(1, p(y_1)/p(x))). After ``max_tries``
    rejections the chain stays at x. Unlike the repository's code, the proposal restarts from x at every new
    sample (its quirk of chaining on from the last rejected point makes the kernel depend on more than x).
    """

    def __init__(self, step: float = 0.1, max_tries: int = 100):
        self.step, self.max_tries = float(step), int(max_tries)

    def init_state(self, x0, lp0, keys) -> dict:
        import torch

        state = super().init_state(x0, lp0, keys)
        state["lp_max"] = torch.full_like(lp0, -math.inf)
        state["tries"] = torch.zeros_like(state["counter"])
        return state

    def begin(self, state, mask) -> None:
        import torch

        eps = normals(state["keys"], state["counter"], 100, state["x"].shape[1])
        _put(state, mask, req=state["x"] + self.step * eps, lp_max=torch.full_like(state["lp"], -math.inf),
             tries=torch.ones_like(state["tries"]))

    def advance(self, state, lp, mask):
        import torch

        lp = torch.nan_to_num(lp, nan=-math.inf)
        u = uniforms(state["keys"], state["counter"], 0, 1)[:, 0]
        floor = torch.exp(state["lp_max"] - state["lp"])
        accept = u * (1.0 - floor) < torch.exp(lp - state["lp"]) - floor
        done = mask & (accept | (state["tries"] >= self.max_tries))
        _put(state, mask & accept, x=state["req"], lp=lp)
        going = mask & ~done
        eps = normals(state["keys"], state["counter"], 200, state["x"].shape[1])
        _put(state, going, lp_max=torch.maximum(state["lp_max"], lp), tries=state["tries"] + 1,
             req=state["req"] + self.step * eps)
        state["counter"] = state["counter"] + mask.to(torch.int64)
        return done


class EllipticalSlice(Sampler):
    """Elliptical slice sampling (Murray, Adams & MacKay 2010) with the prior factor N(0, diag(scale²)).

    The target is p(x) = N(x; 0, diag(scale²))·L(x); INIT draws ν, the level log L(x) + log u and θ with the
    bracket [θ − 2π, θ]; SHRINK tests x cos θ + ν sin θ and shrinks the bracket towards 0 until the level is
    passed.
    """

    def __init__(self, prior_scale=1.0):
        self.prior_scale = prior_scale

    def _scale(self, x):
        import torch

        return torch.as_tensor(self.prior_scale, dtype=x.dtype).expand(x.shape[1])

    def _log_lik(self, x, lp):
        return lp + 0.5 * (x / self._scale(x)).square().sum(1)

    def init_state(self, x0, lp0, keys) -> dict:
        import torch

        state = super().init_state(x0, lp0, keys)
        zero = torch.zeros_like(lp0)
        state.update(nu=torch.zeros_like(x0), theta=zero, lo=zero, hi=zero, level=zero)
        return state

    def begin(self, state, mask) -> None:
        import torch

        x = state["x"]
        nu = self._scale(x) * normals(state["keys"], state["counter"], 100, x.shape[1])
        u = uniforms(state["keys"], state["counter"], 300, 2)
        theta = 2.0 * math.pi * u[:, 1]
        _put(state, mask, nu=nu, level=self._log_lik(x, state["lp"]) + torch.log(u[:, 0]), theta=theta,
             lo=theta - 2.0 * math.pi, hi=theta,
             req=x * torch.cos(theta)[:, None] + nu * torch.sin(theta)[:, None])

    def advance(self, state, lp, mask):
        import torch

        lp = torch.nan_to_num(lp, nan=-math.inf)
        accept = self._log_lik(state["req"], lp) > state["level"]
        done = mask & accept
        _put(state, done, x=state["req"], lp=lp)
        going = mask & ~accept
        theta = state["theta"]
        lo = torch.where(theta < 0, theta, state["lo"])
        hi = torch.where(theta < 0, state["hi"], theta)
        new = lo + (hi - lo) * uniforms(state["keys"], state["counter"], 0, 1)[:, 0]
        _put(state, going, lo=lo, hi=hi, theta=new,
             req=state["x"] * torch.cos(new)[:, None] + state["nu"] * torch.sin(new)[:, None])
        state["counter"] = state["counter"] + mask.to(torch.int64)
        return done


LOWER, UPPER, SHRINK = 1, 2, 3


class SteppingOutSlice(Sampler):
    """Slice sampling along a random direction (Neal 2003, stepping out, then shrinkage): two sequential loops
    (step out downwards, then upwards) and the shrink loop, phases LOWER, UPPER, SHRINK."""

    phases = (LOWER, UPPER, SHRINK)

    def __init__(self, width: float = 1.0):
        self.width = float(width)

    def init_state(self, x0, lp0, keys) -> dict:
        import torch

        state = super().init_state(x0, lp0, keys)
        zero = torch.zeros_like(lp0)
        state.update(direction=torch.zeros_like(x0), level=zero, left=zero, right=zero, t=zero)
        return state

    def begin(self, state, mask) -> None:
        import torch

        x = state["x"]
        d = normals(state["keys"], state["counter"], 100, x.shape[1])
        d = d / d.norm(dim=1, keepdim=True)
        u = uniforms(state["keys"], state["counter"], 300, 2)
        left = -self.width * u[:, 1]
        _put(state, mask, direction=d, level=state["lp"] + torch.log(u[:, 0]), left=left, right=left + self.width,
             t=left, phase=torch.full_like(state["phase"], LOWER), req=x + left[:, None] * d)

    def advance(self, state, lp, mask):
        import torch

        lp = torch.nan_to_num(lp, nan=-math.inf)
        inside = lp > state["level"]
        phase = state["phase"]
        lower, upper, shrink = (mask & (phase == p) for p in (LOWER, UPPER, SHRINK))
        done = shrink & inside
        _put(state, done, x=state["req"], lp=lp)
        left = torch.where(lower & inside, state["left"] - self.width, state["left"])
        right = torch.where(upper & inside, state["right"] + self.width, state["right"])
        shrinking = shrink & ~inside
        left = torch.where(shrinking & (state["t"] < 0), state["t"], left)
        right = torch.where(shrinking & (state["t"] >= 0), state["t"], right)
        fresh = left + (right - left) * uniforms(state["keys"], state["counter"], 0, 1)[:, 0]
        to_shrink = (upper & ~inside) | shrinking
        t = torch.where(lower & inside, left, state["t"])
        t = torch.where((lower & ~inside) | (upper & inside), right, t)
        t = torch.where(to_shrink, fresh, t)
        phase = torch.where(lower & ~inside, UPPER, phase)
        phase = torch.where(upper & ~inside, SHRINK, phase)
        going = mask & ~done
        _put(state, going, left=left, right=right, t=t, phase=phase, req=state["x"] + t[:, None] * state["direction"])
        state["counter"] = state["counter"] + mask.to(torch.int64)
        return done


def make_sampler(kind: str, **params) -> Sampler:
    """``drmh``, ``ess`` or ``slice`` with its parameters."""
    kinds = {"drmh": DelayedRejectionMH, "ess": EllipticalSlice, "slice": SteppingOutSlice}
    if kind not in kinds:
        raise ValueError(f"sampler {kind!r}: expected one of {', '.join(kinds)}")
    return kinds[kind](**params)


class SampleRun:
    """What a runtime returns: ``draws`` (m, n, d), ``iterations`` (m, n): the loop iterations (log-density
    evaluations) chain j used for its sample i, ``density_calls``: the batched log-density calls made, and
    ``loop_iterations`` (m, n, L): the same iterations split by the sampler's L loops in program order (they sum
    to ``iterations``), from which the task computes the bound of a form that synchronises each loop in turn."""

    def __init__(self, draws, iterations, density_calls: int, loop_iterations=None):
        self.draws, self.iterations, self.density_calls = draws, iterations, int(density_calls)
        self.loop_iterations = loop_iterations


def build_sampler(kind: str, problem, params: dict) -> Sampler:
    """The sampler of ``kind`` for ``problem``; elliptical slice takes its prior factor from the problem."""
    if kind == "ess":
        return EllipticalSlice(prior_scale=problem.prior_scale)
    return make_sampler(kind, **params)


def start(sampler: Sampler, problem):
    """The chains' state at ``problem.x0`` with their keys, and the first sample begun on every chain."""
    import torch

    x0 = torch.as_tensor(problem.x0, dtype=torch.float64)
    state = sampler.init_state(x0, problem.log_density(x0), chain_keys(problem.seed, x0.shape[0]))
    sampler.begin(state, torch.ones(x0.shape[0], dtype=torch.bool))
    return state
