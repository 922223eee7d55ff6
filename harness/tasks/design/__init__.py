"""Experimental design (``design.factorial``): choose the combinations of p treatments that n units receive, round
after round, and score the least-squares estimate of a bounded-order Boolean interaction model.

Nothing here imports more than numpy at module level (scipy inside functions).
"""
