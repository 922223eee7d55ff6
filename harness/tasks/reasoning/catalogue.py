"""The reasoning family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else. The family needs no library beyond the core; generated programs run
in :mod:`harness.sandbox`.
"""

_T = "reasoning.esolang"
_M = "harness.tasks.reasoning.esolang"

CATALOGUE = {
    "tasks": {
        _T: {"target": f"{_M}:TASK",
             "about": "write a program for a small algorithmic task in Brainfuck or Befunge-93 and its Python twin; "
                      "both run confined (harness.sandbox) on held-out cases, scored by exact output"},
    },
    "datasets": {
        "bf-copy": {"task": _T, "target": f"{_M}:bf_copy", "about": "Brainfuck: echo the input (letters)"},
        "bf-print": {"task": _T, "target": f"{_M}:bf_print", "about": "Brainfuck: print a given two-letter string"},
        "bf-sort": {"task": _T, "target": f"{_M}:bf_sort", "about": "Brainfuck: print the input's bytes sorted"},
        "befunge-print": {"task": _T, "target": f"{_M}:befunge_print",
                          "about": "Befunge-93: print a given string of 2 to 8 letters"},
        "befunge-fibonacci": {"task": _T, "target": f"{_M}:befunge_fibonacci",
                              "about": "Befunge-93: print the first N Fibonacci numbers (N read from the input)"},
        "befunge-factorial": {"task": _T, "target": f"{_M}:befunge_factorial",
                              "about": "Befunge-93: print n! (n from 0 to 15 read from the input)"},
    },
    "methods": {
        "local-model": {"task": _T, "target": "implementations.esolang_model:LocalModel",
                        "about": "a language model served by an OpenAI-compatible endpoint the user runs "
                                 "(HARNESS_MODEL_URL, HARNESS_MODEL): one reply per prompt, esolang and Python twin; "
                                 "skipped without an endpoint"},
        "reference-programs": {"task": _T, "target": "baselines.esolang:ReferencePrograms",
                               "about": "hand-written programs for every task and twin (the scorer's check)"},
        "enumerative-search": {"task": _T, "target": "baselines.esolang:EnumerativeSearch",
                               "about": "programs in length order, checked on the worked examples, under a budget "
                                        "of candidates (blind search: the floor)"},
        "random-search": {"task": _T, "target": "baselines.esolang:RandomSearch",
                          "about": "random programs of up to 30 commands checked on the worked examples, under a "
                                   "budget (blind search: the floor)"},
        "empty-program": {"task": _T, "target": "baselines.esolang:EmptyProgram", "trivial": True,
                          "about": "the empty program in both languages: the trivial answer"},
    },
    "metrics": {
        "pass_rate": {"goal": "max", "unit": "", "about": "the share of held-out cases whose output the esolang answer got exactly right, over every problem"},
        "twin_pass_rate": {"goal": "max", "unit": "", "about": "the same for the Python twin's answers (0 for a solver that writes no Python)"},
        "twin_gap": {"goal": "max", "unit": "", "about": "twin_pass_rate - pass_rate: how much better the solver does the task in Python than in the esoteric language"},
        "solved": {"goal": "max", "unit": "", "about": "the share of problems whose every held-out case the esolang answer got right"},
        "programs_tried": {"goal": "min", "unit": "programs", "about": "candidate programs run on the worked examples (search) or asked of the model, over every problem"},
        "seconds": {"goal": "min", "unit": "s", "about": "seconds the solver took over every problem (its checks on the examples included)"},
    },
}
