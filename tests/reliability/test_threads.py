"""Issue 10, item 6: the thread count that produced a cache entry is recorded with it.

CPU results depend on torch's intra-op thread count (float sums in another order); the cache
key leaves it out by design, so each entry's provenance must say which count computed it.
"""

import torch

from lalr_core.core.runs import RunCache


def _unit(params):
    return params["x"] * 2


def test_entry_records_the_thread_count_that_computed_it(tmp_path):
    before = torch.get_num_threads()
    cache = RunCache(tmp_path)
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            params = {"x": threads}
            cache.put("t", params, _unit(params), fn=_unit)
            entry = cache.entries("t")
            meta = next(e for e in entry if e["params"] == {"x": threads})
            assert meta["provenance"]["torch_threads"] == threads
        # the key ignores the thread count: the same params at 1 or 2 threads share an entry
        torch.set_num_threads(1)
        k1 = cache.key({"x": 5}, fn=_unit)
        torch.set_num_threads(2)
        assert cache.key({"x": 5}, fn=_unit) == k1
    finally:
        torch.set_num_threads(before)
