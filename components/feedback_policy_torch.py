"""The torch side of the toy policy of ``codegen.execution_feedback``'s hidden-constants environment: the network,
its initial ("instruct") policy and the PPO that RLEF and its RL ablations train it with (the arms themselves are
:class:`components.feedback_policy.PolicyArm`).

The policy reads the observation as 20 numbers (:func:`features`): the hint's half-width, the turn, and per field its
operation, the previous reply's distance from the hint and, after a failed reply, the error at the public input
(expected - produced, centred on 0, also split by operation) and whether that field was right. It answers one token
per field out of 129, an edit of -64..64: at the first turn from the hint, later from the previous reply (a reply
near the last one is as easy to write as a repeated one: the paper's base models mostly repeat or edit a little).

The initial policy is fitted by supervised learning to what a model that ignores feedback does best: at the first
turn the offset of the true constant from the hint (uniform over -w..w, which it learns), at later turns a fresh
guess from the same window written as an edit of the previous reply. Every arm of a seed starts from it.

PPO (:func:`train_ppo`) follows the paper's design as the note reads it: the reward is +1 or -1 at the episode's
end (the private tests) minus beta times each reply's log-ratio to the initial policy, averaged over its tokens (the
geometric mean of token probabilities); gamma = 1; a turn-level value (one per reply, read from the observation
before it) gives one advantage to every token of a reply; the clipped surrogate (epsilon 0.2) and a clipped value
loss; several epochs over each batch of episodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from harness.tasks.base import WorkerCache

EDITS = 64
TOKENS = 2 * EDITS + 1
FEATURES = 20
HIDDEN = 128


def centred(difference):
    """A difference modulo 256 as -128..127."""
    return (np.asarray(difference) + 128) % 256 - 128


def features(observation, shuffle_rng=None) -> torch.Tensor:
    """The observation's 20 numbers per rollout (see the module). With ``shuffle_rng``, each failed rollout's
    feedback (its error and per-field right/wrong) is that of another failed rollout of the batch, drawn at random
    (never its own, where two or more failed): the policy still sees its own statement and previous reply."""
    o = observation
    n = len(o.width)
    turn = np.zeros((n, 3))
    turn[:, min(o.turn, 2)] = 1.0
    width = np.asarray(o.width, dtype=np.float64)
    has_previous = o.turn > 0
    if has_previous:
        error = centred(o.public_expected - o.previous_output).astype(np.float64)
        right = (o.previous_output == o.public_expected).astype(np.float64)
        offset = np.clip(o.previous - o.hints, -EDITS, EDITS).astype(np.float64)
        if shuffle_rng is not None:
            # a random derangement of the failed rollouts: each reads the feedback of the next in a random order,
            # never its own
            failed = np.flatnonzero(right.min(axis=1) < 1)
            order = failed[shuffle_rng.permutation(len(failed))]
            source = np.roll(order, -1)
            error[order], right[order] = error[source], right[source]
    else:
        error, right, offset = np.zeros((n, 2)), np.zeros((n, 2)), np.zeros((n, 2))
    add = (np.asarray(o.operations) == 0).astype(np.float64)
    error = np.clip(error, -EDITS, EDITS) / EDITS
    columns = [width / 32, np.log2(width + 1) / 6, turn, np.full((n, 1), float(has_previous))]
    for f in range(2):
        columns += [add[:, f], 1 - add[:, f], offset[:, f] / EDITS, error[:, f], error[:, f] * add[:, f],
                    error[:, f] * (1 - add[:, f]), right[:, f]]
    x = np.column_stack([np.reshape(c, (n, -1)) for c in columns])
    return torch.as_tensor(x, dtype=torch.float32)


def decode(observation, tokens) -> np.ndarray:
    """Tokens (B, 2) as the reply's constants: the edit from the hint at the first turn, from the previous reply
    after, kept within 64 of the hint."""
    edits = np.asarray(tokens) - EDITS
    start = observation.hints if observation.turn == 0 else observation.previous
    return np.clip(start + edits, observation.hints - EDITS, observation.hints + EDITS)


def encode(observation, constants) -> np.ndarray:
    """The tokens that :func:`decode` maps to ``constants`` (clipped to the 129 edits)."""
    start = observation.hints if observation.turn == 0 else observation.previous
    return np.clip(np.asarray(constants) - start, -EDITS, EDITS) + EDITS


class PolicyNetwork(nn.Module):
    """Two tanh layers, two heads of 129 logits (one per field)."""

    def __init__(self, hidden: int = HIDDEN):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                  nn.Linear(hidden, 2 * TOKENS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).view(-1, 2, TOKENS)


def value_network(hidden: int = 64) -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, 1))


def _supervised_batch(environment, rng, size: int):
    """Observations of every turn (one third each) with the tokens a feedback-free model should answer."""
    from harness.tasks.codegen.feedback import Observation, outputs

    problems = environment.draw_training(size, rng)
    first = environment.first(problems)
    xs, ys = [], []
    for turn in range(3):
        if turn == 0:
            observation = first
        else:
            guess = problems.hints + np.floor(rng.random((size, 2)) * (2 * problems.width[:, None] + 1)).astype(
                np.int64) - problems.width[:, None]
            expected = outputs(problems, problems.constants, problems.public_x)
            observation = Observation(first.width, first.hints, first.operations, first.public_x, expected, turn,
                                      guess, outputs(problems, guess, problems.public_x))
        target = problems.hints + np.floor(rng.random((size, 2)) * (2 * problems.width[:, None] + 1)).astype(
            np.int64) - problems.width[:, None]
        if turn == 0:
            target = problems.constants  # the true offset: the window is what the data teach
        xs.append(features(observation))
        ys.append(torch.as_tensor(encode(observation, target)))
    return torch.cat(xs), torch.cat(ys)


INITIAL_TOLERANCE = 0.01  # nats per token: the initial fit's plateau, over the last fifth of its steps


def initial_policy(environment, rng, max_steps: int = 4000, batch: int = 1024):
    """The seed's initial policy: :class:`PolicyNetwork` fitted by cross-entropy to feedback-free answers (see the
    module), each Adam step on ``batch`` fresh training problems (at 3e-3 for 500 steps, then 1e-3), until the
    mean log-likelihood of a fixed held-out batch stops improving (by :data:`INITIAL_TOLERANCE` over the last fifth
    of the steps; at least 1,000, at most ``max_steps``). Returns the policy and the fit's TrainingLog."""
    from harness.tasks.training import train_to_plateau

    torch.manual_seed(int(rng.integers(2**31)))
    policy = PolicyNetwork()
    optimiser = torch.optim.Adam(policy.parameters(), lr=3e-3)
    held_x, held_y = _supervised_batch(environment, rng, 4096)
    steps = [0]

    def step() -> None:
        x, y = _supervised_batch(environment, rng, batch)
        loss = nn.functional.cross_entropy(policy(x).reshape(-1, TOKENS), y.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        steps[0] += 1
        if steps[0] == 500:
            for group in optimiser.param_groups:
                group["lr"] = 1e-3

    def log_likelihood() -> float:
        with torch.no_grad():
            return -float(nn.functional.cross_entropy(policy(held_x).reshape(-1, TOKENS), held_y.reshape(-1)))

    every = max(1, min(50, max_steps // 10))
    log = train_to_plateau(step, log_likelihood, every=every, min_steps=min(1000, max_steps), max_steps=max_steps,
                           tolerance=INITIAL_TOLERANCE, name="initial_log_likelihood")
    policy.eval()
    return policy, log


def sample(policy: PolicyNetwork, x: torch.Tensor, generator: torch.Generator, temperature: float = 1.0):
    """Tokens (B, 2) drawn at ``temperature``, and their log-probabilities summed over the two fields."""
    with torch.no_grad():
        logp_all = torch.log_softmax(policy(x) / temperature, dim=2)
        # the Gumbel-max trick: the argmax of log-probabilities plus Gumbel noise is a draw from the softmax
        uniform = torch.rand(logp_all.shape, generator=generator).clamp_(min=1e-12)
        tokens = (logp_all - torch.log(-torch.log(uniform))).argmax(dim=2)
        logp = logp_all.gather(2, tokens[:, :, None]).squeeze(2).sum(1)
    return tokens, logp


@dataclass
class PPOSettings:
    episodes: int = 204_800
    batch: int = 1024
    minibatch: int = 1024
    epochs: int = 4
    lr: float = 3e-3
    clip: float = 0.2
    value_clip: float = 0.2
    beta: float = 0.05
    temperature: float = 1.0


def reply_returns(terminal: torch.Tensor, replies: list, beta: float) -> list[torch.Tensor]:
    """Each turn's returns (gamma = 1): the episode's terminal reward (``terminal``, one per episode) minus beta
    times the per-token log-ratio to the initial policy of every reply from this one on. ``replies`` holds per turn
    the rows (episodes) that replied and their log-probabilities under the policy and the reference, summed over
    the reply's two tokens (halved here: the mean over tokens, the geometric mean of their probabilities)."""
    penalty_after = torch.zeros(len(terminal))
    returns = [None] * len(replies)
    for t in reversed(range(len(replies))):
        rows, logp, logp_reference = replies[t]
        index = torch.as_tensor(rows)
        penalty_after[index] += beta * (logp - logp_reference) / 2
        returns[t] = terminal[index] - penalty_after[index]
    return returns


def train_ppo(policy: PolicyNetwork, environment, turns: int, rng, settings: PPOSettings,
              shuffle_feedback: bool = False):
    """PPO from ``policy`` (trained in place; the KL term's reference is a frozen copy of it) on episodes of up to
    ``turns`` replies; returns (episodes, replies, TrainingLog of the mean terminal reward per batch)."""
    import copy

    from harness.tasks.training import TrainingLog

    reference = copy.deepcopy(policy).eval()
    torch.manual_seed(int(rng.integers(2**31)))  # before the value network's initial weights: they are the seed's
    values = value_network()
    generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
    optimiser = torch.optim.Adam(list(policy.parameters()) + list(values.parameters()), lr=settings.lr)
    iterations = max(1, settings.episodes // settings.batch)
    log = TrainingLog("train_return", budget=iterations)
    replies_total = 0
    for iteration in range(iterations):
        problems = environment.draw_training(settings.batch, rng)
        observation = environment.first(problems)
        active = np.ones(settings.batch, dtype=bool)
        steps = []  # per turn: (rows, x, tokens, logp, logp_reference, value)
        solved = np.zeros(settings.batch, dtype=bool)
        for t in range(turns):
            rows = np.flatnonzero(active)
            x = features(observation, shuffle_rng=rng if shuffle_feedback else None)
            tokens, logp = sample(policy, x, generator, settings.temperature)
            with torch.no_grad():
                logp_reference = torch.log_softmax(reference(x) / settings.temperature, dim=2).gather(
                    2, tokens[:, :, None]).squeeze(2).sum(1)
                value = values(x).squeeze(1)
            observation, passed, private = environment.step(problems, observation, decode(observation, tokens.numpy()))
            steps.append((rows, x[rows], tokens[rows], logp[rows], logp_reference[rows], value[rows]))
            solved[rows] = private[rows]
            replies_total += len(rows)
            active &= ~passed
            if not active.any():
                break
        terminal = torch.as_tensor(np.where(solved, 1.0, -1.0), dtype=torch.float32)
        returns = reply_returns(terminal, [(s[0], s[3], s[4]) for s in steps], settings.beta)
        x = torch.cat([s[1] for s in steps])
        tokens = torch.cat([s[2] for s in steps])
        old_logp = torch.cat([s[3] for s in steps])
        old_value = torch.cat([s[5] for s in steps])
        target = torch.cat(returns)
        advantage = target - old_value
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        for _ in range(settings.epochs):
            for chunk in torch.randperm(len(x)).split(settings.minibatch):
                logits = policy(x[chunk]) / settings.temperature
                logp = torch.log_softmax(logits, dim=2).gather(2, tokens[chunk][:, :, None]).squeeze(2).sum(1)
                ratio = torch.exp(logp - old_logp[chunk])
                surrogate = torch.min(ratio * advantage[chunk],
                                      ratio.clamp(1 - settings.clip, 1 + settings.clip) * advantage[chunk])
                value = values(x[chunk]).squeeze(1)
                clipped = old_value[chunk] + (value - old_value[chunk]).clamp(-settings.value_clip,
                                                                              settings.value_clip)
                value_loss = torch.max((value - target[chunk]) ** 2, (clipped - target[chunk]) ** 2).mean()
                loss = -surrogate.mean() + 0.5 * value_loss
                optimiser.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(list(policy.parameters()) + list(values.parameters()), 1.0)
                optimiser.step()
        log.record(iteration, float(terminal.mean()))
    policy.eval()
    return iterations * settings.batch, replies_total, log


_INITIAL = WorkerCache(4)


def seed_initial_policy(environment, context):
    """The seed's initial policy (a copy) and its fit's TrainingLog, fitted once per worker: every arm of a seed starts from the same one,
    drawn from the seed's own stream whichever cell asks first."""
    import copy

    key = (context.seed, context.split, context.dataset, environment.widths, environment.initial_max_steps)
    policy, log = _INITIAL.get_or_build(key, lambda: initial_policy(environment, context.rng("initial policy"),
                                                                     max_steps=environment.initial_max_steps))
    return copy.deepcopy(policy), log


class ToyPolicy:
    """A :class:`PolicyNetwork` acting on the hidden-constants environment (sampling at ``temperature``; with
    ``shuffle_feedback`` it reads another failed rollout's feedback)."""

    def __init__(self, policy: PolicyNetwork, rng, temperature: float = 1.0, shuffle_feedback: bool = False):
        self.policy, self.rng, self.temperature, self.shuffle = policy, rng, temperature, shuffle_feedback
        self.generator = torch.Generator().manual_seed(int(rng.integers(2**31)))

    def act(self, observation) -> np.ndarray:
        x = features(observation, shuffle_rng=self.rng if self.shuffle else None)
        tokens, _ = sample(self.policy, x, self.generator, self.temperature)
        return decode(observation, tokens.numpy())
