"""Cached runs and resumable sweeps.

A training run (or any expensive computation) is one cached unit ``fn(params)``. Its key is a
hash of the resolved parameters, the library version and the fingerprint of the code the unit
depends on (`lalr_core.core.runs.code_hash.code_fingerprint` of ``fn.__module__`` plus the modules
``fn.code_modules(params)`` names, closed over their imports; docstrings and comments do not
count). So a fix to the code a unit ran invalidates its entries, and nothing else's. The entry
is a directory ``<root>/<name>/<hash>/`` holding ``result.pkl`` and ``meta.json`` (which records
the parameters, the code fingerprint and its modules). Entries are written into a hidden
temporary directory and renamed into place, so a killed writer never leaves a half entry that
looks complete, and a corrupt entry is detected by its checksum and recomputed. Sweeps go
through one executor interface (sequential, local processes, or Ray) and share the cache, so a
killed sweep resumes and loses at most the units that were in flight.

Every method that computes a key (`RunCache.key`, ``path``, ``checkpoint_dir``, ``lookup``,
``get``, ``put``) takes the unit's ``fn``; without it, the ``fn`` of the run family ``name``
is used: the one declared with `register_unit` (``"train"`` is `lalr_core.core.runs.units.
train_unit`), else the one of the unit of that family running now in this process, else none
(the key is then the parameters and version only, as a plain ``put`` stores it).

Every unit computes at one fixed thread count (`lalr_core.core.runs.threads`), recorded in its
entry, so its numbers do not depend on what the cache held or how many workers a sweep had.
"""

from lalr_core.core.runs.cache import ACTIVE_CACHES, RunCache, active_cache, cached
from lalr_core.core.runs.executors import (
                                           EXECUTOR_ENV,
                                           EXECUTORS,
                                           LocalExecutor,
                                           RayExecutor,
                                           resolve_executor,
                                           sweep,
                                           task_resources,
)
from lalr_core.core.runs.threads import (
                                           RUN_THREADS_ENV,
                                           entry_matches,
                                           fixed_threads,
                                           run_threads,
)
from lalr_core.core.runs.keys import (
                                           FAMILIES,
                                           HASH_LEN,
                                           META_FILE,
                                           RESULT_FILE,
                                           ROOT_ENV,
                                           canonical_params,
                                           family_unit,
                                           param_hash,
                                           register_unit,
                                           unit_fingerprint,
                                           unit_modules,
)

__all__ = ["RUN_THREADS_ENV", "entry_matches", "fixed_threads", "run_threads", "ACTIVE_CACHES", "EXECUTORS", "EXECUTOR_ENV", "FAMILIES", "HASH_LEN", "META_FILE",
           "RESULT_FILE", "ROOT_ENV", "LocalExecutor", "RayExecutor", "RunCache",
           "active_cache", "cached", "canonical_params", "family_unit", "param_hash",
           "register_unit", "resolve_executor", "sweep", "task_resources", "unit_fingerprint",
           "unit_modules"]
