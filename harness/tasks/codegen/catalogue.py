"""The codegen family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else. The toy's policies need torch (a core dependency); programs a model
writes run in :mod:`harness.sandbox`.
"""

_T = "codegen.execution_feedback"
_M = "harness.tasks.codegen.feedback"
_B = "baselines.execution_feedback"

CATALOGUE = {
    "tasks": {
        _T: {"target": f"{_M}:TASK",
             "about": "multi-turn program synthesis: replies run on public tests whose results are fed back, "
                      "graded on private tests; n@k solve rates from a pool of rollouts"},
    },
    "datasets": {
        "hidden-constants": {"task": _T, "target": f"{_M}:hidden_constants",
                             "about": "the toy: two hidden constants of (x +- c) mod 256 behind hints off by up to "
                                      "+-w, one public and eight private tests"},
        "python-problems": {"task": _T, "target": f"{_M}:python_problems",
                            "about": "12 bundled Python problems (2 public, 6-8 private tests each) for a served "
                                     "model; programs run confined"},
    },
    "methods": {
        "rlef": {"task": _T, "target": "implementations.rlef:RLEF",
                 "about": "PPO on multi-turn episodes with execution feedback (turn-level value, KL to the initial "
                          "policy), acting multi-turn"},
        "initial-independent": {"task": _T, "target": f"{_B}:InitialIndependent",
                                "about": "the initial policy, independent single-turn samples"},
        "initial-multi-turn": {"task": _T, "target": f"{_B}:InitialMultiTurn",
                               "about": "the initial policy, multi-turn with feedback it was never trained on"},
        "shuffled-feedback-rl": {"task": _T, "target": f"{_B}:ShuffledFeedbackRL",
                                 "about": "RLEF trained and evaluated with another failed episode's feedback"},
        "single-turn-ppo": {"task": _T, "target": f"{_B}:SingleTurnPPO",
                            "about": "PPO on one-reply episodes, independent single-turn samples"},
        "rlef-single-turn": {"task": _T, "target": f"{_B}:RLEFSingleTurn",
                             "about": "RLEF's trained policy sampled single-turn"},
        "reference-solutions": {"task": _T, "target": f"{_B}:ReferenceSolutions",
                                "about": "the bundled problems' reference programs (the scorer's check)"},
        "served-model": {"task": _T, "target": f"{_B}:ServedModel",
                         "about": "a model at an OpenAI-compatible endpoint the user runs (HARNESS_MODEL_URL, "
                                  "HARNESS_MODEL), multi-turn or independent samples; skipped without one"},
        "trivial-answer": {"task": _T, "target": f"{_B}:TrivialAnswer", "trivial": True,
                           "about": "the hints as the constants (toy), an empty program (Python): one reply"},
    },
    "metrics": {
        "solve_1at1": {"goal": "max", "unit": "", "about": "1@1: the share of problems solved by the first reply of one rollout"},
        "solve_1at3": {"goal": "max", "unit": "", "about": "1@3: one submission from 3 replies (one rollout of up to 3 turns, or 3 single-turn samples)"},
        "solve_1at10": {"goal": "max", "unit": "", "about": "1@10: one submission from 10 replies, public-test passers first"},
        "solve_10at100": {"goal": "max", "unit": "", "about": "10@100: 10 submissions from 100 replies, public-test passers first"},
        "replies_per_rollout": {"goal": "min", "unit": "replies", "about": "the replies a rollout of the pool used (it stops when the public tests pass)"},
        "training_episodes": {"goal": "min", "unit": "episodes", "about": "training episodes the method ran (0: not trained)"},
        "training_replies": {"goal": "min", "unit": "replies", "about": "replies sampled in training"},
        "train_return": {"goal": "max", "unit": "", "role": "training-objective", "tolerance": 0.05,
                         "about": "the mean terminal reward (+1 solved, -1 not) of a training batch"},
        "initial_log_likelihood": {"goal": "max", "unit": "nats", "role": "training-objective", "tolerance": 0.01,
                                   "about": "the seed's initial policy's mean log-likelihood per token of held-out feedback-free answers, at the end of its supervised fit (every toy arm starts from it)"},
        "seconds": {"goal": "min", "unit": "s", "about": "seconds the cell took: training, the pool of rollouts and the estimates"},
    },
}
