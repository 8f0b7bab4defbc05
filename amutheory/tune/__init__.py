"""Learning-rate search: a guided search that uses the depth rules, and the searches practitioners run.

* :mod:`~amutheory.tune.cost`: what a search is charged (cells, steps, forward passes, core-seconds);
* :mod:`~amutheory.tune.runner`: the cells a search asks for, run through the sweep's store and engines.
"""
