"""MCMC samplers written as blocks over m chains, shared by the FSM runtime (implementations/fsm_mcmc) and the
synchronised runtime (baselines/mcmc): symmetric delayed-rejection MH, elliptical slice, and the random-direction
stepping-out slice sampler.

A sampler is two functions on a dict of (m, …) tensors:

* ``begin(state, mask)``: start a new sample on the chains in ``mask`` (the INIT block) and put the position
  whose log-density it needs next in ``state["req"]``;
* ``advance(state, lp, mask)``: consume ``lp``, the log-density at ``state["req"]``, on the chains in ``mask``
  (one loop iteration), and return the chains whose sample is done (its draw is then ``state["x"]``);

and the FSM's step, ``bundled_step(state, lp, everyone)``: ``advance`` on every chain, then ``begin`` on the done
ones, which a sampler may condense into one block computing the same values (DR-MH does, as the paper's one-state
DR FSM).

Every block needs the log-density exactly once per iteration, so a runtime evaluates it once per step for the whole
batch, outside the blocks (the paper's amortisation). Randomness is counter-based: chain j's draws are a hash of
(its key, the number of iterations it has done, a slot), so they do not depend on how a runtime schedules the
chains, and the FSM and synchronised forms of one sampler give the same draws from the same keys and start. The
state keeps the slot-free half of that hash for each chain's current count (``state["base"]``), and a block hashes
all the slots it needs in one pass: the per-op cost of a few hundred small torch calls, not arithmetic, is what a
step costs at these sizes.
``state["phase"]`` names the loop a chain is in; ``phases`` lists the loops in program order (the synchronised
form runs each as its own batched while-loop, as vmap does with sequential loops).
"""
from __future__ import annotations

import functools
import math

_M32 = 0xFFFFFFFF


def _mix(x, wide: bool = True):
    """A 32-bit integer hash (lowbias32) on int64 tensors; products wrap, and only their low 32 bits are kept.
    ``wide=False`` skips the first mask, for inputs already below 2**32 (the same value, one op fewer); the first
    op makes a new tensor and the rest work in place on it (the same values, fewer allocations)."""
    x = x & _M32 if wide else x
    x = x ^ (x >> 16)
    x.mul_(0x7FEB352D).bitwise_and_(_M32)
    x ^= x >> 15
    x.mul_(0x846CA68B).bitwise_and_(_M32)
    x ^= x >> 16
    return x


def chain_keys(seed: int, m: int):
    """One 32-bit key per chain, from the cell's seed."""
    import torch

    return _mix(_mix(torch.full((m,), int(seed) & _M32, dtype=torch.int64)) + torch.arange(m, dtype=torch.int64))


def stream_base(keys, counter):
    """Each chain's draw number ``counter`` hashed with its key (32-bit, from :func:`chain_keys`): the half of a
    draw's hash that does not depend on the slot. A sampler keeps it in ``state["base"]`` beside the counter, so
    every draw at one counter shares it."""
    return _mix(keys ^ _mix(counter + 0x3C6EF372), wide=False)


@functools.lru_cache(maxsize=64)
def _slot_hashes(slots: tuple[int, ...]):
    """The other half, a constant per slot: (k, 1) for the slots in order (never written to)."""
    import torch

    return _mix(torch.tensor(slots, dtype=torch.int64) * 0x9E3779B9 + 0x632BE5AB)[:, None]


def uniform_rows(base, slots: tuple[int, ...]):
    """(k, m) uniforms in (0, 1), one row per slot in ``slots``, of each chain's draw whose :func:`stream_base` is
    ``base``: (m,), or (k, m) for a base per row (draws at two draw numbers hashed in one pass). Rows, so that each
    slot's m uniforms are contiguous and an elementwise op on a few slots runs as one loop over memory."""
    import torch

    bits = _mix(base ^ _slot_hashes(slots), wide=False)
    return bits.to(torch.float64).mul_(2.0**-32).add_(2.0**-33)  # (bits + 0.5) / 2**32: every step exact


def normal_rows(u, k: int):
    """(k, m) standard normals by Box–Muller from the uniform rows u[:2k]: the first k give the radius, the next k
    the angle."""
    import torch

    return torch.sqrt(-2.0 * torch.log(u[:k])) * torch.cos(2.0 * math.pi * u[k:2 * k])


def _by_chain(rows):
    """(k, m) rows as the (m, k) row-major tensor the state holds (no copy when k = 1)."""
    return rows.T.contiguous()


def uniforms(keys, counter, offset: int, k: int):
    """(m, k) uniforms in (0, 1): slots offset … offset+k−1 of each chain's draw number ``counter``."""
    return uniform_rows(stream_base(keys, counter), _slots(offset, k)).T


def normals(keys, counter, offset: int, k: int):
    """(m, k) standard normals by Box–Muller from slots offset … offset+2k−1."""
    return _by_chain(normal_rows(uniform_rows(stream_base(keys, counter), _slots(offset, 2 * k)), k))


def _slots(offset: int, k: int) -> tuple[int, ...]:
    return tuple(range(offset, offset + k))


def _put(state: dict, mask, **values) -> None:
    """``state[name] = value`` on the chains in ``mask``, the old value elsewhere; values may be Python scalars."""
    import torch

    column = None
    for name, value in values.items():
        old = state[name]
        if old.dim() == 1:
            state[name] = torch.where(mask, value, old)
        else:  # (m, d): the state's only other shape
            column = mask[:, None] if column is None else column
            state[name] = torch.where(column, value, old)


class Sampler:
    """Blocks of one MCMC kernel over m chains; see the module docstring."""

    phases: tuple[int, ...] = (1,)

    def init_state(self, x0, lp0, keys) -> dict:
        """State at the start: the chains' positions ``x0`` (m, d), their log-densities ``lp0`` and keys."""
        import torch

        m = x0.shape[0]
        counter = torch.zeros(m, dtype=torch.int64)
        return {"x": x0.clone(), "lp": lp0.clone(), "req": x0.clone(), "keys": keys, "counter": counter,
                "base": stream_base(keys, counter), "phase": torch.ones(m, dtype=torch.int64)}

    def begin(self, state: dict, mask) -> None:
        raise NotImplementedError

    def advance(self, state: dict, lp, mask):
        raise NotImplementedError

    def bundled_step(self, state: dict, lp, everyone):
        """One FSM step of every chain (``everyone``: all True): the loop iteration, then the next sample's INIT on
        the chains whose sample is done (bundled); returns those chains. A sampler may condense the two into one
        block that computes the same values (DR-MH does): a subclass that changes :meth:`advance` or :meth:`begin`
        then changes this too."""
        done = self.advance(state, lp, everyone)
        self.begin(state, done)
        return done

    @staticmethod
    def _count(state: dict, mask) -> None:
        """The chains in ``mask`` move on to their next draw number (their stream's base with it)."""
        import torch

        state["counter"] = state["counter"] + mask.to(torch.int64)
        state["base"] = stream_base(state["keys"], state["counter"])


class DelayedRejectionMH(Sampler):
    """Symmetric delayed-rejection Metropolis–Hastings (Mira 2001), one state after condensing.

    Try k proposes y_k = y_{k−1} + step·ε (y_0 = x) and accepts with min(1, max(0, p(y_k) − p*)/(p(x) − p*)),
    p* the largest density rejected so far in this sample (try 1: min(1, p(y_1)/p(x))). After ``max_tries``
    rejections the chain stays at x. Unlike the repository's code, the proposal restarts from x at every new
    sample (its quirk of chaining on from the last rejected point makes the kernel depend on more than x).

    Draws: INIT's ε from slots 100 … 100+2d−1 of the chain's draw number, a try's acceptance uniform from slot 0
    and its next ε from slots 200 … 200+2d−1.
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
        d = state["x"].shape[1]
        eps = _by_chain(normal_rows(uniform_rows(state["base"], _slots(100, 2 * d)), d))
        _put(state, mask, req=state["x"] + self.step * eps, lp_max=-math.inf, tries=1)

    def advance(self, state, lp, mask):
        import torch

        d = state["x"].shape[1]
        u = uniform_rows(state["base"], (0,) + _slots(200, 2 * d))  # the acceptance test's, then the next try's
        lp = torch.nan_to_num(lp, nan=-math.inf)
        accept = self._accepts(state, lp, u[0])
        done = mask & (accept | (state["tries"] >= self.max_tries))
        _put(state, mask & accept, x=state["req"], lp=lp)
        going = mask & ~done
        eps = _by_chain(normal_rows(u[1:], d))
        _put(state, going, lp_max=torch.maximum(state["lp_max"], lp), tries=state["tries"] + 1,
             req=state["req"] + self.step * eps)
        self._count(state, mask)
        return done

    def bundled_step(self, state, lp, everyone):
        """:meth:`advance` on every chain and :meth:`begin` on the done ones, condensed (the paper's one-state DR
        FSM): one hash pass gives the try's uniform and ε (at the chain's draw number) and INIT's ε (at the next),
        one Box–Muller both ε, and each chain keeps the one its branch uses; the same values as the two blocks."""
        import torch

        d = state["x"].shape[1]
        later = stream_base(state["keys"], state["counter"] + 1)
        u = uniform_rows(torch.where(_later_rows(d), later, state["base"]), _step_slots(d))
        lp = torch.nan_to_num(lp, nan=-math.inf)
        accept = self._accepts(state, lp, u[0])
        done = accept | (state["tries"] >= self.max_tries)
        x = torch.where(accept[:, None], state["req"], state["x"])
        state["x"], state["lp"] = x, torch.where(accept, lp, state["lp"])
        z = normal_rows(u[1:], 2 * d)  # (2d, m): the next try's ε, then INIT's
        eps = _by_chain(torch.where(done, z[d:], z[:d]))
        state["req"] = torch.where(done[:, None], x, state["req"]) + self.step * eps
        state["lp_max"] = torch.where(done, -math.inf, torch.maximum(state["lp_max"], lp))
        state["tries"] = torch.where(done, 1, state["tries"] + 1)
        state["counter"], state["base"] = state["counter"] + 1, later
        return done

    @staticmethod
    def _accepts(state, lp, u):
        import torch

        floor = torch.exp(state["lp_max"] - state["lp"])
        return u * (1.0 - floor) < torch.exp(lp - state["lp"]) - floor


@functools.lru_cache(maxsize=16)
def _step_slots(d: int) -> tuple[int, ...]:
    """The condensed DR step's slots: the uniform, then the radius halves of both ε, then their angle halves."""
    return (0,) + _slots(200, d) + _slots(100, d) + _slots(200 + d, d) + _slots(100 + d, d)


@functools.lru_cache(maxsize=16)
def _later_rows(d: int):
    """(1 + 4d, 1): the slots of :func:`_step_slots` drawn at the next draw number (INIT's)."""
    import torch

    later = torch.zeros(1 + 4 * d, 1, dtype=torch.bool)
    later[1 + d:1 + 2 * d] = True
    later[1 + 3 * d:] = True
    return later


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
        d = x.shape[1]
        u = uniform_rows(state["base"], _slots(100, 2 * d) + (300, 301))  # ν's, then the level's and θ's
        nu = self._scale(x) * _by_chain(normal_rows(u, d))
        theta = 2.0 * math.pi * u[2 * d + 1]
        _put(state, mask, nu=nu, level=self._log_lik(x, state["lp"]) + torch.log(u[2 * d]), theta=theta,
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
        new = lo + (hi - lo) * uniform_rows(state["base"], (0,))[0]
        _put(state, going, lo=lo, hi=hi, theta=new,
             req=state["x"] * torch.cos(new)[:, None] + state["nu"] * torch.sin(new)[:, None])
        self._count(state, mask)
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
        k = x.shape[1]
        u = uniform_rows(state["base"], _slots(100, 2 * k) + (300, 301))  # the direction's, the level's, the bracket's
        d = _by_chain(normal_rows(u, k))
        d = d / d.norm(dim=1, keepdim=True)
        left = -self.width * u[2 * k + 1]
        _put(state, mask, direction=d, level=state["lp"] + torch.log(u[2 * k]), left=left,
             right=left + self.width, t=left, phase=LOWER, req=x + left[:, None] * d)

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
        fresh = left + (right - left) * uniform_rows(state["base"], (0,))[0]
        to_shrink = (upper & ~inside) | shrinking
        t = torch.where(lower & inside, left, state["t"])
        t = torch.where((lower & ~inside) | (upper & inside), right, t)
        t = torch.where(to_shrink, fresh, t)
        phase = torch.where(lower & ~inside, UPPER, phase)
        phase = torch.where(upper & ~inside, SHRINK, phase)
        going = mask & ~done
        _put(state, going, left=left, right=right, t=t, phase=phase, req=state["x"] + t[:, None] * state["direction"])
        self._count(state, mask)
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
