"""The audit's rules, one group per module; each module lists its rules in ``RULES``
(:func:`harness.audit.base.rules` scans this package)."""
