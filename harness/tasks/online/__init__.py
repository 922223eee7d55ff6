"""Online algorithms with learned advice (``online.ski_rental``, ``online.scheduling``): the instances, what a
policy sees, and the costs against the offline optimum, with the paper's bounds beside the measurements.

Nothing heavy at import: scikit-learn and scipy are imported inside the loaders that use them.
"""
