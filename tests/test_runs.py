"""Tests of `lalr_core.core.runs`: keys, cache entries, atomic writes, corruption and sweeps.

Oracles are explicit: hand-written canonical JSON for the key, marker files counting how many
times a unit really ran (they work across processes), and exact equality of read-back results.
"""

import collections
import hashlib
import json
import os
import pathlib
import pickle
import subprocess
import sys
import uuid
import warnings
from datetime import datetime

import numpy as np
import pandas as pd
import pytest
import torch

import lalr_core
from lalr_core.core import atomic_io, runs
from lalr_core.core.runs import RunCache, cached, code_hash, param_hash, sweep

# ---------------------------------------------------------------- module-level units
# Spawned worker processes import this module to unpickle these functions.


def _mark(params: dict) -> None:
    """Leave one marker file per real call: ``<marks>/<i>-<random>``."""
    marks = pathlib.Path(params["marks"])
    marks.mkdir(parents=True, exist_ok=True)
    (marks / f"{params['i']}-{uuid.uuid4().hex}").touch()


def calls(marks: pathlib.Path, i: int | None = None) -> int:
    """Number of real calls recorded (for unit `i`, or all)."""
    if not marks.is_dir():
        return 0
    return sum(i is None or p.name.split("-")[0] == str(i) for p in marks.iterdir())


def square_unit(params: dict) -> dict:
    """Trivial unit; raises on ``i == fail_at`` while the file ``armed`` exists."""
    _mark(params)
    armed = pathlib.Path(params["marks"]).parent / "armed"
    if params["i"] == params.get("fail_at") and armed.exists():
        raise RuntimeError(f"simulated crash on unit {params['i']}")
    torch_mod = sys.modules.get("torch")
    threads = torch_mod.get_num_threads() if torch_mod is not None else None
    return {"i": params["i"], "sq": params["i"] ** 2,
            "arr": np.arange(params["i"] + 1, dtype=np.int64), "threads": threads}


def numbers(result: dict) -> tuple:
    return result["i"], result["sq"], result["arr"].tolist()


@pytest.fixture
def cache(tmp_path):
    return RunCache(tmp_path / "runs", version="test-1")


# ---------------------------------------------------------------- param_hash


def test_hash_matches_hand_written_canonical_json():
    text = '{"params":{"a":0.1,"b":[1,2],"c":"x"},"version":"v9"}'
    expected = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert param_hash({"c": "x", "b": (1, 2), "a": 0.1}, version="v9") == expected


def test_hash_stable_and_sensitive():
    base = {"lr": 0.1, "betas": [0.9, 0.99], "model": {"width": 64, "depth": 2}}
    reordered = {"model": {"depth": 2, "width": 64}, "betas": (0.9, 0.99), "lr": 0.1}
    h = param_hash(base, version="a")
    assert len(h) == 16 and int(h, 16) >= 0
    assert param_hash(reordered, version="a") == h
    assert param_hash({**base, "lr": 0.1 + 1e-12}, version="a") != h
    assert param_hash({**base, "model": {"width": 64, "depth": 3}}, version="a") != h
    assert param_hash(base, version="b") != h
    assert param_hash(base) == param_hash(base, version=lalr_core.__version__)


def test_hash_numpy_paths_and_errors():
    plain = {"n": 3, "x": 0.5, "ok": True, "p": "data/x.csv", "v": [1, 2]}
    fancy = {"n": np.int64(3), "x": np.float64(0.5), "ok": np.bool_(True),
             "p": pathlib.Path("data/x.csv"), "v": np.array([1, 2])}
    assert param_hash(fancy, version="v") == param_hash(plain, version="v")
    assert param_hash({"d": torch.float64}, version="v") == \
        param_hash({"d": "torch.float64"}, version="v")
    with pytest.raises(ValueError, match=r"opt\.fn"):
        param_hash({"opt": {"fn": object()}})
    with pytest.raises(ValueError, match=r"layers\[1\]\.w"):
        param_hash({"layers": [1, {"w": 2j}]})
    with pytest.raises(ValueError, match="keys must be str"):
        param_hash({"lrs": {0: 0.1}})
    with pytest.raises(ValueError, match="Mapping"):
        param_hash([("a", 1)])


# ---------------------------------------------------------------- cache entries


def test_cached_calls_once_then_reuses(cache, tmp_path):
    params = {"i": 4, "marks": str(tmp_path / "marks")}
    first = cached(square_unit, params, name="sq", cache=cache)
    second = cached(square_unit, dict(reversed(params.items())), name="sq", cache=cache)
    third = cached(square_unit, params, name="sq", cache=RunCache(cache.root, version="test-1"))
    assert calls(tmp_path / "marks") == 1
    (meta,) = cache.entries("sq")
    assert meta["params"] == params and 0 <= meta["wall_time_s"] < 60
    assert numbers(first) == numbers(second) == numbers(third) == (4, 16, [0, 1, 2, 3, 4])
    cached(square_unit, params, name="sq", cache=RunCache(cache.root, version="test-2"))
    assert calls(tmp_path / "marks") == 2  # a new library version is a new key
    cached(square_unit, params, name="sq", cache=cache, force=True)
    assert calls(tmp_path / "marks") == 3


def test_meta_and_entries(cache, tmp_path):
    params = {"i": 1, "marks": str(tmp_path / "m"), "betas": (0.9, 0.99)}
    path = cache.put("sq", params, {"x": 1}, wall_time_s=2.5)
    assert path == cache.root / "sq" / param_hash(params, version="test-1")
    meta = json.loads((path / "meta.json").read_text())
    assert meta["params"]["betas"] == [0.9, 0.99] and meta["wall_time_s"] == 2.5
    assert meta["version"] == "test-1" and meta["name"] == "sq" and meta["hash"] == path.name
    assert meta["result_sha256"] == hashlib.sha256((path / "result.pkl").read_bytes()).hexdigest()
    cache.put("other", {"i": 2}, None)
    assert cache.lookup("other", {"i": 2}) == (True, None)  # a None result is a hit
    assert cache.lookup("other", {"i": 3}) == (False, None)
    assert [m["name"] for m in cache.entries()] == ["sq", "other"]
    assert [m["hash"] for m in cache.entries("sq")] == [path.name]
    foreign = cache.root / "not_a_cache"
    (foreign / "keep").mkdir(parents=True)
    cache.clear("sq")
    assert cache.entries("sq") == [] and len(cache.entries()) == 1
    cache.clear()
    assert cache.entries() == [] and (foreign / "keep").is_dir()


def test_round_trip_dataframe_array_tensor(cache):
    df = pd.DataFrame({"step": np.arange(4), "loss": [1.0, 0.5, np.nan, np.inf],
                       "opt": ["sgd", "lalr", "sgd", "muon"]})
    arr = np.linspace(0, 1, 7, dtype=np.float32).reshape(7, 1)
    w = torch.randn(3, 2, generator=torch.Generator().manual_seed(0), requires_grad=True)
    state = collections.OrderedDict(w=w)
    cache.put("rt", {"seed": 0}, {"history": df, "arr": arr, "w": w, "meta": {"ok": True},
                                  "state": state})
    back = RunCache(cache.root, version="test-1").get("rt", {"seed": 0})
    pd.testing.assert_frame_equal(back["history"], df, check_exact=True)
    assert back["arr"].dtype == np.float32 and np.array_equal(back["arr"], arr)
    assert not back["w"].requires_grad and torch.equal(back["w"], w.detach())
    assert back["meta"] == {"ok": True} and type(back["state"]) is collections.OrderedDict
    assert torch.equal(back["state"]["w"], w.detach()) and w.requires_grad  # input untouched


@pytest.mark.parametrize(
    "damage", ["truncate", "garbage", "bad_meta", "no_result", "bad_pickle", "swapped"])
def test_corrupt_entry_is_recomputed_and_repaired(cache, tmp_path, damage):
    params = {"i": 3, "marks": str(tmp_path / "marks")}
    path = cache.put("sq", params, square_unit(params))
    pkl, meta_file = path / "result.pkl", path / "meta.json"
    if damage == "truncate":
        pkl.write_bytes(pkl.read_bytes()[:-7])
    elif damage == "garbage":
        pkl.write_bytes(os.urandom(200))
    elif damage == "bad_meta":
        meta_file.write_text("{not json")
    elif damage == "no_result":
        pkl.unlink()
    elif damage == "swapped":  # a valid pickle, but not the one the checksum was taken of
        pkl.write_bytes(pickle.dumps({"i": 3, "sq": 10, "arr": np.arange(4)}))
    else:  # checksum matches, content is not a pickle
        meta = json.loads(meta_file.read_text())
        pkl.write_bytes(b"nonsense")
        meta["result_sha256"] = hashlib.sha256(b"nonsense").hexdigest()
        meta_file.write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match="corrupt cache entry"):
        assert cache.get("sq", params) is None
    result = cached(square_unit, params, name="sq", cache=cache)
    assert numbers(result) == (3, 9, [0, 1, 2, 3]) and calls(tmp_path / "marks") == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert numbers(cache.get("sq", params, fn=square_unit)) == (3, 9, [0, 1, 2, 3])


def test_failing_fn_stores_nothing(cache):
    def boom(params):
        raise ZeroDivisionError("diverged badly")

    with pytest.raises(ZeroDivisionError):
        cached(boom, {"a": 1}, name="x", cache=cache)
    assert cache.lookup("x", {"a": 1}, fn=boom) == (False, None) and cache.entries() == []


def test_interrupted_write_leaves_no_entry(cache, tmp_path, monkeypatch):
    params = {"i": 2, "marks": str(tmp_path / "marks")}
    real = atomic_io.write_synced

    def half_then_die(path, data):
        real(path, data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic_io, "write_synced", half_then_die)
    with pytest.raises(KeyboardInterrupt):
        cached(square_unit, params, name="sq", cache=cache)
    monkeypatch.undo()
    assert cache.lookup("sq", params, fn=square_unit) == (False, None) and cache.entries() == []
    assert os.listdir(cache.root / "sq") == []  # the temporary directory was removed
    cached(square_unit, params, name="sq", cache=cache)
    assert calls(tmp_path / "marks") == 2
    assert cache.get("sq", params, fn=square_unit)["sq"] == 4


def test_killed_writer_process_leaves_no_visible_entry(cache, tmp_path):
    """A writer killed (os._exit, no cleanup) after half of result.pkl is on disk."""
    params = {"i": 5, "marks": str(tmp_path / "marks")}
    script = (
        "import os, sys; from lalr_core.core import atomic_io, runs\n"
        "def die(path, data):\n"
        "    open(path, 'wb').write(data[: len(data) // 2]); os._exit(9)\n"
        "atomic_io.write_synced = die\n"
        f"runs.RunCache({str(cache.root)!r}, version='test-1').put('sq', {params!r}, "
        "{'big': list(range(1000))})\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 9, proc.stderr.decode()
    leftovers = os.listdir(cache.root / "sq")
    assert len(leftovers) == 1 and leftovers[0].startswith(".tmp-")  # hidden half entry
    assert cache.lookup("sq", params) == (False, None) and cache.entries() == []
    assert cached(square_unit, params, name="sq", cache=cache)["sq"] == 25
    assert calls(tmp_path / "marks") == 1 and len(cache.entries("sq")) == 1


def test_checkpoint_dir_is_hidden_and_cleared_on_put(cache):
    ckpt = cache.checkpoint_dir("ck", {"seed": 1})
    (ckpt / "step100.pt").write_bytes(b"x")
    assert ckpt.parent == cache.root / "ck" and ckpt.name.startswith(".")
    assert cache.entries() == [] and cache.get("ck", {"seed": 1}) is None
    cache.put("ck", {"seed": 1}, {"done": True})
    assert not ckpt.exists() and cache.get("ck", {"seed": 1}) == {"done": True}


def test_default_root(monkeypatch, tmp_path):
    monkeypatch.delenv(runs.ROOT_ENV, raising=False)
    repo = pathlib.Path(lalr_core.__file__).resolve().parent.parent
    assert RunCache().root == repo / "data" / "runs"
    monkeypatch.setenv(runs.ROOT_ENV, str(tmp_path / "elsewhere"))
    assert RunCache().root == tmp_path / "elsewhere"
    with pytest.raises(ValueError, match="run name"):
        RunCache(tmp_path).path("../up", {})


# ---------------------------------------------------------------- sweeps


def _grid(tmp_path, n, **extra):
    return [{"i": i, "marks": str(tmp_path / "marks"), **extra} for i in range(n)]


def test_sweep_killed_part_way_resumes(cache, tmp_path):
    grid, k = _grid(tmp_path, 6, fail_at=3), 3
    (tmp_path / "armed").touch()
    with pytest.raises(RuntimeError, match="unit 3"):
        sweep(square_unit, grid, name="sw", cache=cache, progress=False)
    done = [cache.get("sw", p, fn=square_unit) is not None for p in grid]
    assert done == [True] * k + [False] * (6 - k)
    (tmp_path / "armed").unlink()
    out = sweep(square_unit, grid, name="sw", cache=cache, progress=False)
    assert [numbers(r)[:2] for r in out] == [(i, i * i) for i in range(6)]
    assert [calls(tmp_path / "marks", i) for i in range(6)] == [1, 1, 1, 2, 1, 1]
    sweep(square_unit, grid[::-1], name="sw", cache=cache, progress=True)
    assert calls(tmp_path / "marks") == 7  # everything reused


def test_sweep_duplicates_computed_once(cache, tmp_path):
    grid = _grid(tmp_path, 2)
    out = sweep(square_unit, [grid[1], grid[0], grid[1]], name="d", cache=cache, progress=False)
    assert [r["i"] for r in out] == [1, 0, 1] and calls(tmp_path / "marks") == 2


def test_sweep_processes_match_sequential(tmp_path):
    """The one process-pool test (spawned workers import torch: a few seconds)."""
    grid = _grid(tmp_path, 5)
    seq = sweep(square_unit, grid, name="p", cache=RunCache(tmp_path / "a", version="t"),
                progress=False)
    par = sweep(square_unit, grid, name="p", cache=RunCache(tmp_path / "b", version="t"),
                workers=2, threads=3, progress=False)
    assert [numbers(r) for r in par] == [numbers(r) for r in seq] == \
        [(i, i * i, list(range(i + 1))) for i in range(5)]
    assert {r["threads"] for r in par} == {runs.run_threads()}  # the unit's, not the pool's 3
    assert calls(tmp_path / "marks") == 10
    assert len(RunCache(tmp_path / "b", version="t").entries("p")) == 5


def sgd_unit(params: dict) -> dict:
    """A few SGD steps of a small MLP: float sums whose rounding follows the thread count."""
    torch.manual_seed(params["i"])
    net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.Tanh(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(512, 256), torch.randint(0, 10, (512,))
    for _ in range(20):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return {"w": torch.cat([q.detach().ravel() for q in net.parameters()]).numpy(),
            "threads": torch.get_num_threads()}


def test_a_partly_cached_sweep_gives_the_numbers_of_the_sweep_from_empty(tmp_path):
    """Units computed in-process (all cores, before the count was fixed), in a pool worker or
    as a sweep's last unit all compute at `run_threads`: the same bits whatever was cached."""
    grid = [{"i": i} for i in range(3)]
    empty = sweep(sgd_unit, grid, name="t", cache=RunCache(tmp_path / "a", version="t"),
                  workers=2, progress=False)
    part = RunCache(tmp_path / "b", version="t")
    with runs.fixed_threads(2):  # this process at 2 threads, as a kernel on 2 cores
        first = cached(sgd_unit, grid[0], name="t", cache=part)   # in-process
        rest = sweep(sgd_unit, grid, name="t", cache=part, workers=2, progress=False)
    assert first["threads"] == runs.run_threads()
    for a, b in zip(empty, rest, strict=True):
        assert a["threads"] == b["threads"] == runs.run_threads()
        np.testing.assert_array_equal(a["w"], b["w"])
    assert {e["run_threads"] for e in part.entries("t")} == {runs.run_threads()}


def test_an_entry_computed_at_another_thread_count_is_computed_again(cache, tmp_path):
    grid = _grid(tmp_path, 1)
    sweep(square_unit, grid, name="th", cache=cache, progress=False)
    meta_path = pathlib.Path(cache.entries("th")[0]["path"]) / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "run_threads": runs.run_threads() + 1}))
    assert cache.lookup("th", grid[0], fn=square_unit) == (False, None)
    sweep(square_unit, grid, name="th", cache=cache, progress=False)
    assert calls(tmp_path / "marks") == 2
    legacy = {k: v for k, v in meta.items() if k != "run_threads"}  # before the count was fixed
    assert runs.entry_matches({**legacy, "provenance": {"torch_threads": runs.run_threads()}})
    assert not runs.entry_matches({**legacy, "provenance": {"torch_threads": 7}}, 1)
    gpu = {"provenance": {"torch_threads": 7, "environment": {"device": "cpu; cuda 12: H200"}}}
    assert runs.entry_matches(gpu, 1)  # a GPU's sums do not follow the CPU threads


def test_kernel_analysis_pinned_to_the_run_threads_restores_the_kernels_count(monkeypatch):
    from lalr_core.core.runs.threads import at_run_threads

    monkeypatch.setenv(runs.RUN_THREADS_ENV, "1")
    seen = at_run_threads(lambda: torch.get_num_threads())
    with runs.fixed_threads(2):  # a kernel on 2 cores
        assert seen() == 1
        assert torch.get_num_threads() == 2


def test_run_threads_refuses_a_bad_value(monkeypatch):
    monkeypatch.setenv(runs.RUN_THREADS_ENV, "two")
    with pytest.raises(ValueError, match="LALR_RUN_THREADS"):
        runs.run_threads()
    monkeypatch.setenv(runs.RUN_THREADS_ENV, "3")
    assert runs.run_threads() == 3


def test_sweep_rejects_bad_configuration_before_compute(cache, tmp_path):
    grid = _grid(tmp_path, 2)
    bad = [{"executor": "dask"}, {"workers": 0}, {"workers": 1.5}, {"threads": 0},
           {"executor": "ray", "gpus_per_task": -1}]
    for kwargs in bad:
        with pytest.raises(ValueError):
            sweep(square_unit, grid, name="b", cache=cache, progress=False, **kwargs)
    with pytest.raises(ValueError, match="pickled"):
        sweep(lambda p: p, grid, name="b", cache=cache, workers=2, progress=False)
    with pytest.raises(ValueError, match=r"\[2\]|obj"):
        sweep(square_unit, [*grid, {"i": 9, "obj": object()}], name="b", cache=cache,
              progress=False)
    assert calls(tmp_path / "marks") == 0 and cache.entries() == []


def test_ray_missing_gives_install_hint(cache, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(ImportError, match=r"pip install -e \.\[distributed\]"):
        sweep(square_unit, _grid(tmp_path, 1), name="r", executor="ray", cache=cache)
    assert calls(tmp_path / "marks") == 0


def gpu_unit(params: dict) -> dict:
    """The GPU list this worker sees, and the worker."""
    import time

    time.sleep(0.3)  # long enough that both workers take units
    return {"gpus": os.environ.get("CUDA_VISIBLE_DEVICES"), "pid": os.getpid()}


def test_local_executor_runs_one_process_per_gpu(tmp_path):
    """With two GPUs (ids given, as `visible_gpus` would find them) and ``workers=1``: two
    processes, each seeing only its own GPU."""
    runner = runs.LocalExecutor(workers=1, gpu_ids=["3", "5"])
    assert runner.workers == 2 and runner.gpu_ids == ["3", "5"]
    args = [(gpu_unit, {"i": i}) for i in range(6)]
    out = [r for _, r in runner.map(lambda f, p: f(p), [])]  # nothing to run: nothing started
    assert out == []
    results = dict(runner.map(_call, args))
    by_pid: dict[int, set] = collections.defaultdict(set)
    for r in results.values():
        by_pid[r["pid"]].add(r["gpus"])
    assert sorted(g for gpus in by_pid.values() for g in gpus) == ["3", "5"]
    assert all(len(gpus) == 1 for gpus in by_pid.values())  # a worker keeps its one GPU
    assert runs.LocalExecutor(workers=1, gpu_ids=["0"]).workers == 1  # one GPU: no pool
    assert runs.LocalExecutor(workers=3, gpu_ids=["0", "1"]).workers == 3  # round-robin


def _call(fn, params):
    return fn(params)


def test_executor_comes_from_the_environment(cache, tmp_path, monkeypatch):
    monkeypatch.setenv(runs.EXECUTOR_ENV, "ray")
    assert runs.resolve_executor(None) == "ray" and runs.resolve_executor("local") == "local"
    monkeypatch.setenv(runs.EXECUTOR_ENV, "dask")
    with pytest.raises(ValueError, match="LALR_EXECUTOR"):
        sweep(square_unit, _grid(tmp_path, 1), name="e", cache=cache, progress=False)
    monkeypatch.delenv(runs.EXECUTOR_ENV)
    assert runs.resolve_executor(None) == "local"
    assert calls(tmp_path / "marks") == 0


# ---------------------------------------------------------------- code fingerprints in the key

UNIT_SOURCE = '''
"""A unit in its own module, so the test can edit the code it was computed by."""


def unit(params):
    """Docstring."""
    marks = __import__("pathlib").Path(params["marks"])
    marks.mkdir(parents=True, exist_ok=True)
    (marks / f"{params['i']}-{__import__('uuid').uuid4().hex}").touch()
    return params["i"] * 10  # the result
'''


@pytest.fixture
def unit_module(tmp_path, monkeypatch):
    """A fresh importable module ``<name>`` holding ``unit``; returns (module, its file)."""
    name = f"unit_{uuid.uuid4().hex[:8]}"
    path = tmp_path / "mods" / f"{name}.py"
    path.parent.mkdir()
    path.write_text(UNIT_SOURCE)
    monkeypatch.syspath_prepend(str(path.parent))
    module = __import__(name)
    code_hash.clear_cache()
    yield module, path
    code_hash.clear_cache()
    sys.modules.pop(name, None)


def test_key_includes_the_units_code(cache, tmp_path):
    params = {"i": 2, "marks": str(tmp_path / "marks")}
    path = cache.put("sq", params, {"x": 1}, fn=square_unit)
    fingerprint = code_hash.code_fingerprint([__name__])
    assert path.name == param_hash(params, version="test-1", code=fingerprint)
    assert path.name != param_hash(params, version="test-1")  # the plain (code-less) key
    assert path.name == cache.key(params, fn=square_unit) == cache.key(params, name="sq",
                                                                       fn=square_unit)
    meta = json.loads((path / "meta.json").read_text())
    assert meta["code_fingerprint"] == fingerprint and meta["code_modules"] == [__name__]
    assert meta["param_hash"] == param_hash(params, version="test-1")  # = a figure sidecar's
    assert meta["code_closure"] == code_hash.module_closure([__name__])
    assert {"lalr_core.core.runs", "lalr_core.core.runs.code_hash"} <= set(meta["code_closure"])
    payload = {"code": fingerprint, "params": {"i": 2, "marks": params["marks"]},
               "version": "test-1"}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    assert path.name == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert cache.lookup("sq", params) == (False, None)  # without fn: the code-less key
    assert cache.lookup("sq", params, fn=square_unit) == (True, {"x": 1})


def test_cached_recomputes_after_a_code_edit_not_a_comment_edit(cache, tmp_path, unit_module):
    module, source = unit_module
    params = {"i": 3, "marks": str(tmp_path / "marks")}
    assert cached(module.unit, params, name="u", cache=cache) == 30
    source.write_text(source.read_text().replace("Docstring.", "A new docstring.")
                      .replace("# the result", "# the result, times ten"))
    code_hash.clear_cache()  # a new process would read the file afresh
    assert cached(module.unit, params, name="u", cache=cache) == 30
    assert calls(tmp_path / "marks") == 1
    source.write_text(source.read_text().replace('params["i"] * 10', 'params["i"] * 100'))
    code_hash.clear_cache()
    cached(module.unit, params, name="u", cache=cache)
    assert calls(tmp_path / "marks") == 2  # computed again (by the code imported: 30)
    metas = cache.entries("u")
    assert len(metas) == 2 and metas[0]["code_fingerprint"] != metas[1]["code_fingerprint"]
    assert {m["param_hash"] for m in metas} == {param_hash(params, version="test-1")}


def test_sweep_keys_by_code_and_code_modules(cache, tmp_path, unit_module):
    module, _ = unit_module
    module.unit.code_modules = lambda p: ["lalr_core.core.models.layers"] if p["i"] else []
    grid = _grid(tmp_path, 2)
    assert sweep(module.unit, grid, name="u", cache=cache, progress=False) == [0, 10]
    by_i = {m["params"]["i"]: m for m in cache.entries("u")}
    assert by_i[0]["code_modules"] == [module.__name__]
    assert by_i[1]["code_modules"] == sorted([module.__name__, "lalr_core.core.models.layers"])
    assert "lalr_core.core.models.layers" in by_i[1]["code_closure"]
    assert "lalr_core.core.models.layers" not in by_i[0]["code_closure"]
    assert sweep(module.unit, grid, name="u", cache=cache, progress=False) == [0, 10]
    assert calls(tmp_path / "marks") == 2  # all reused
    module.unit.code_modules = lambda p: ["lalr_core.core.loop.registry"] if p["i"] else []
    sweep(module.unit, grid, name="u", cache=cache, progress=False)
    assert [calls(tmp_path / "marks", i) for i in (0, 1)] == [1, 2]  # only unit 1 changed
    module.unit.code_modules = lambda p: p["missing"]
    with pytest.raises(ValueError, match="code_modules"):
        sweep(module.unit, grid, name="u", cache=cache, progress=False)
    module.unit.code_modules = lambda p: "lalr_core.core.models.layers"
    with pytest.raises(ValueError, match="module names"):
        sweep(module.unit, grid, name="u", cache=cache, progress=False)


def test_checkpoint_dir_inside_a_unit_shares_its_key(cache):
    seen = {}

    def unit(params):  # like a notebook's unit asking for its checkpoint dir by name only
        seen["ckpt"] = cache.checkpoint_dir("ck", params)
        return "done"

    assert cached(unit, {"a": 1}, name="ck", cache=cache) == "done"
    assert seen["ckpt"].name == f".ckpt-{cache.key({'a': 1}, fn=unit)}"
    assert not seen["ckpt"].exists()  # removed when the result was put
    assert cache.checkpoint_dir("ck", {"a": 1}).name == f".ckpt-{cache.key({'a': 1})}"


def test_registered_family_keys_without_fn(cache, tmp_path):
    def unit(params):
        return params["a"]

    runs.register_unit("fam_test")(unit)
    try:
        with pytest.raises(ValueError, match="already"):
            runs.register_unit("fam_test")(square_unit)
        assert cached(unit, {"a": 5}, name="fam_test", cache=cache) == 5
        assert cache.lookup("fam_test", {"a": 5}) == (True, 5)  # no fn: the family's
        assert cache.path("fam_test", {"a": 5}) == cache.path("fam_test", {"a": 5}, fn=unit)
        put = cache.put("fam_test", {"a": 6}, 6)
        assert put.name == cache.key({"a": 6}, fn=unit)
    finally:
        runs.FAMILIES.pop("fam_test")


def test_pretrained_weights_reads_what_the_training_unit_stored(tmp_path, monkeypatch):
    from lalr_core.core.loop.config import RunConfig
    from lalr_core.core.runs.units import pretrained_weights, train_unit

    monkeypatch.setenv(runs.ROOT_ENV, str(tmp_path / "runs"))
    spec = {"run": RunConfig(seed=7).key(), "callbacks": {"weights": {}}}
    weights = {"w": torch.arange(3.0)}
    stored = RunCache().put("train", spec, {"callbacks": {"weights": weights}}, fn=train_unit)
    assert stored == RunCache().path("train", spec)  # "train" is train_unit's family
    assert stored.name != param_hash(spec)  # the key has a code part
    assert torch.equal(pretrained_weights(spec)["w"], weights["w"])
    other = {"run": RunConfig(seed=8).key(), "callbacks": {"weights": {}}}
    RunCache().put("train", other, {"callbacks": {"weights": weights}}, fn=square_unit)
    with pytest.raises(LookupError, match="not in the cache"):  # stored by other code
        pretrained_weights(other)


def test_a_kernel_that_ran_a_pool_exits_promptly(tmp_path):
    """A notebook kernel that ran a process pool exits as soon as its last cell is done.

    The pool's resource tracker ignores SIGTERM, and ipykernel signals its children at
    shutdown until they go: before `LocalExecutor` stopped the tracker, papermill (with the
    driver's kernel manager) waited 30 s after the last cell of every such notebook."""
    import nbformat
    import papermill as pm

    from lalr_core.driver import _kernel_manager_class
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from lalr_core.core.runs import LocalExecutor\n"
        "assert sorted(r for _, r in LocalExecutor(2, 1).map(abs, [(1,), (-2,)])) == [1, 2]")]
    nbformat.write(nb, tmp_path / "pool.ipynb")
    pm.execute_notebook(str(tmp_path / "pool.ipynb"), str(tmp_path / "out.ipynb"),
                        progress_bar=False, kernel_name="python3", cwd=str(pathlib.Path(lalr_core.__file__).parents[1]),
                        kernel_manager_class=_kernel_manager_class())
    meta = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    end = datetime.fromisoformat(meta.metadata.papermill.end_time)
    last = datetime.fromisoformat(meta.cells[-1].metadata.papermill.end_time)
    assert (end - last).total_seconds() < 10.0  # 30 s with the tracker left running
