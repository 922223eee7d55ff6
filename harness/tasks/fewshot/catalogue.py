"""The few-shot family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

CATALOGUE = {
    "tasks": {
        "fewshot.cdfsl": {
            "target": "harness.tasks.fewshot.cdfsl:TASK",
            "about": "cross-domain few-shot classification: source pre-training, 5-way 1/5-shot ProtoNet episodes on a target",
        },
        "fewshot.cdfss": {
            "target": "harness.tasks.fewshot.cdfss:TASK",
            "about": "cross-domain few-shot segmentation: source training, 1/5-shot mask episodes on a target, class-wise mIoU",
        },
    },
    "datasets": {
        "cdfsl-digits": {
            "task": "fewshot.cdfsl",
            "target": "harness.tasks.fewshot.cdfsl:synthetic_digit_domains",
            "about": "source digits 0-4; target: novel digits near / inverted + noise / as gratings, or grating textures",
        },
        "cdfsl-imagefolder": {
            "task": "fewshot.cdfsl",
            "target": "harness.tasks.fewshot.cdfsl:cdfsl_imagefolder",
            "about": "BSCD-FSL from --data-dir: miniImageNet source; CropDisease, EuroSAT, ISIC, ChestX class folders",
        },
        "synthetic-shapes": {
            "task": "fewshot.cdfss",
            "target": "harness.tasks.fewshot.cdfss:synthetic_shapes",
            "about": "8 source shapes on gradients; novel shapes in a target style: fss, deepglobe, chestx or isic",
        },
        "cdfss-folder": {
            "task": "fewshot.cdfss",
            "target": "harness.tasks.fewshot.cdfss:cdfss_folder",
            "about": "CD-FSS from --data-dir: PASCAL source; Deepglobe, ISIC, Chest X-ray, FSS-1000 images with masks",
        },
    },
    "methods": {
        "vit-protonet": {
            "task": "fewshot.cdfsl",
            "target": "baselines.vit:ViTProtoNet",
            "about": "plain ViT, cross-entropy on the source, ProtoNet on frozen CLS features (test_shuffle: the patch-shuffle probe)",
        },
        "raw-pixel-protonet": {
            "task": "fewshot.cdfsl",
            "target": "baselines.raw_pixels:RawPixelProtoNet",
            "about": "reference row, no training: ProtoNet on the episode images' flattened raw pixels (scaled to [0, 1])",
        },
        "recit": {
            "task": "fewshot.cdfsl",
            "target": "implementations.recit:ReCIT",
            "about": "ViT with patch-shuffle warm-up and channel-FFT amplitude resampling over similar-patch groups (Yi et al., ICML 2025)",
        },
        "mask-prior": {
            "task": "fewshot.cdfss",
            "target": "baselines.mask_prior:MaskPrior",
            "trivial": True,
            "about": "the trivial answer: the support masks' majority vote (rule: support-mean) or every pixel foreground (rule: all); never looks at the query",
        },
        "dfn": {
            "task": "fewshot.cdfss",
            "target": "implementations.dfn:DomainFeatureNavigator",
            "about": "frozen CNN + zero-init residual 1×1 adapters (DFN), SAM-SVN in source training, adapter fine-tuning on the support (Tong et al., ICML 2025)",
        },
    },
    "metrics": {
        "accuracy_1shot": {"goal": "max", "unit": "%", "about": "5-way 1-shot accuracy on the target domain, mean over the episodes"},
        "accuracy_5shot": {"goal": "max", "unit": "%", "about": "5-way 5-shot accuracy on the target domain, mean over the episodes"},
        "accuracy_1shot_ci95": {"goal": "min", "unit": "%", "about": "half-width of the 95% interval of accuracy_1shot over episodes, 1.96·std/√E",
                                "spread_of": "accuracy_1shot"},
        "accuracy_5shot_ci95": {"goal": "min", "unit": "%", "about": "half-width of the 95% interval of accuracy_5shot over episodes, 1.96·std/√E",
                                "spread_of": "accuracy_5shot"},
        "source_accuracy": {"goal": "max", "unit": "%", "about": "5-way 5-shot accuracy on novel classes of the source domain (never trained on, like the target's)"},
        "source_seen_accuracy": {"goal": "max", "unit": "%", "about": "5-way 5-shot accuracy on held-out images of the trained source classes"},
        "source_target_gap": {"goal": "min", "unit": "%", "about": "source_accuracy − accuracy_5shot: how much worse the target fares than the source"},
        "covariance_alignment": {"goal": "max", "unit": "", "about": "⟨Σs, Σt⟩F / (‖Σs‖F ‖Σt‖F) of the source and target feature covariances (unpaired images: not the standard CKA of paired inputs; 1 = proportional)"},
        "train_s": {"goal": "min", "unit": "s", "about": "seconds of source-domain training (the original time when a cached model is reused)"},
        "runtime_s": {"goal": "min", "unit": "s", "about": "seconds the method itself took in the cell"},
        "miou_1shot": {"goal": "max", "unit": "%", "about": "1-shot foreground IoU on the target, intersections and unions summed per class, then averaged over classes"},
        "miou_5shot": {"goal": "max", "unit": "%", "about": "5-shot foreground IoU on the target, intersections and unions summed per class, then averaged over classes"},
        "miou": {"goal": "max", "unit": "%", "about": "mean of miou_1shot and miou_5shot"},
    },
}
