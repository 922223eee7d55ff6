"""The spatiotemporal family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else. The family needs no library beyond the core (torch, numpy).
"""

_T = "spatiotemporal.crossdomain"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": "harness.tasks.spatiotemporal.crossdomain:TASK",
            "about": "train one small Graph WaveNet over several sample groups (source domains or periods of the day) "
                     "on a sensor graph within the same training steps for every arm, fine-tune it on a few days of "
                     "a held-out related domain (few-shot) or not at all (a held-out period, zero-shot), and score "
                     "its forecasts of the held-out group",
        },
    },
    "datasets": {
        "sensor-sources": {
            "task": _T, "target": "harness.tasks.spatiotemporal.crossdomain:sensor_sources",
            "about": "a simulated sensor graph: related domains read one latent graph-diffusion process with a daily "
                     "cycle (own gain, bias, scale, lag), unrelated ones an independent process on a permuted graph; "
                     "the last related domain held out and seen through its first days (few-shot)"},
        "sensor-periods": {
            "task": _T, "target": "harness.tasks.spatiotemporal.crossdomain:sensor_periods",
            "about": "the same simulated graph's first domain with the day cut into periods: train on the first "
                     "ones, forecast the last, never trained on (zero-shot)"},
        "city-arrays": {
            "task": _T, "target": "harness.tasks.spatiotemporal.crossdomain:city_arrays",
            "about": "real data from --data-dir: synevo/<city>/adj.npy and one (T, N) <domain>.npy per domain "
                     "(NYC, CHI, SIP, SD as the paper used them), few-shot or zero-shot"},
    },
    "methods": {
        "synevo": {"task": _T, "target": "implementations.synevo:SynEVO",
                   "about": "SynEVO (Liu et al., ICML 2025): groups ordered easy to hard by gradient distance, an "
                            "elastic common container (dropout and weight decay falling with the distance), a "
                            "contrastive linear personality extractor and a gate that keeps unrelated groups out"},
        "independent": {"task": _T, "target": "baselines.spatiotemporal:Independent",
                        "about": "a model of the target's own: trained on its few-shot windows only"},
        "joint": {"task": _T, "target": "baselines.spatiotemporal:Joint",
                  "about": "one model trained on every training group's windows pooled"},
        "sequential": {"task": _T, "target": "baselines.spatiotemporal:Sequential",
                       "about": "naive sequential fine-tuning: one model trained group after group in a random order "
                                "(the seed's), no regularisation, no gate"},
        "full-target": {"task": _T, "target": "baselines.spatiotemporal:FullTarget",
                        "about": "a model trained on every training-span window of the target (not only the few "
                                 "shots): the oracle sanity row"},
        "last-value": {"task": _T, "target": "baselines.spatiotemporal:LastValue", "trivial": True,
                       "about": "every sensor's last observed value repeated over the horizon: the trivial answer"},
    },
    "metrics": {
        "mae": {"goal": "min", "unit": "", "about": "mean absolute error of the held-out group's forecasts, in the data's units"},
        "rmse": {"goal": "min", "unit": "", "about": "root mean squared error of the held-out group's forecasts, in the data's units"},
        "mape": {"goal": "min", "unit": "%", "about": "mean absolute percentage error over the labels of at least mape_floor (lower labels left out)"},
        "validation_mae": {"goal": "min", "unit": "z", "role": "training-objective", "tolerance": 0.01,
                           "about": "the scaled MAE on the target's selection windows of the kept fine-tuning checkpoint (its curve over the fine-tuning is kept); zero-shot: on the training groups' last windows"},
        "train_loss": {"goal": "min", "unit": "z", "about": "the training's L1 loss (scaled units) over its last twentieth of steps; its curve is kept"},
        "train_steps": {"goal": "min", "unit": "steps", "role": "budget", "about": "training steps before the fine-tuning: the budget, equal for every arm that trains"},
        "finetune_steps": {"goal": "min", "unit": "steps", "about": "fine-tuning steps on the target's few shots (the same for every network arm)"},
        "probe_steps": {"goal": "min", "unit": "steps", "about": "steps of the per-group probes SynEVO's reordering reads (outside the budget, counted apart)"},
        "related_admitted": {"goal": "max", "unit": "", "about": "the share of the related training groups the method's gate let into the shared model (1 for a method with no gate)"},
        "unrelated_admitted": {"goal": "min", "unit": "", "about": "the share of the unrelated training groups the gate let into the shared model (1 for a method with no gate; 0 where there is none)"},
        "target_admitted": {"goal": "max", "unit": "", "about": "1 when the gate admitted the held-out domain into the shared model for its fine-tuning (1 for a method with no gate)"},
        "train_s": {"goal": "min", "unit": "s", "about": "seconds of training, probes and fine-tuning included"},
    },
}
