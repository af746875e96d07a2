"""The GPU-path options of the training loop leave the float32 CPU path as it was.

bf16 autocast applies on CUDA only, channels_last is a memory layout, and compiling is opt-in
on CPU: a CPU run with bf16 asked for, or with ``$LALR_COMPILE=1``, is bit-identical to the
plain float32 run; channels_last and a compiled model agree with it to float rounding.
Oracle: the plain float32 eager run, with contiguous weights where the layout is tested.
"""

import pytest
import torch

from lalr_core.core.loop import train as train_mod
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.tasks import ImageClassification
from lalr_core.core.loop.train import COMPILE_ENV, compile_wanted, train

CFG = RunConfig(dataset="fashion_mnist", synthetic=True, n_train=192, n_val=64, n_test=64,
                model="basic_cnn", batch_size=64, epochs=2, device="cpu", eval_batch_size=128,
                deterministic=True)
METRICS = ["train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc"]


def metrics(result) -> torch.Tensor:
    return torch.tensor(result["history"][METRICS].to_numpy())


@pytest.fixture(scope="module")
def plain():
    return train(CFG, progress=False)


def test_bf16_and_compile_from_the_environment_leave_a_cpu_run_bit_identical(plain,
                                                                              monkeypatch):
    monkeypatch.setenv(COMPILE_ENV, "1")  # CUDA runs only: a CPU run stays eager
    assert not compile_wanted(None, torch.device("cpu"))
    assert compile_wanted(None, torch.device("cuda"))
    assert compile_wanted(True, torch.device("cpu")) and not compile_wanted(False,
                                                                            torch.device("cuda"))
    bf16 = train(CFG.replace(bf16=True), progress=False)
    assert torch.equal(metrics(bf16), metrics(plain))


def test_channels_last_matches_contiguous_weights(plain, monkeypatch):
    assert ImageClassification().channels_last(CFG)  # the conv model runs channels_last
    monkeypatch.setattr(ImageClassification, "channels_last", lambda self, cfg: False)
    contiguous = train(CFG, progress=False)
    torch.testing.assert_close(metrics(contiguous), metrics(plain), rtol=1e-5, atol=1e-6)


def test_a_compiled_model_trains_to_the_same_numbers(plain, monkeypatch):
    compiled_modules = []
    real = torch.nn.Module.compile

    def spy(self, *args, **kwargs):
        compiled_modules.append(type(self).__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "compile", spy)
    compiled = train(CFG, progress=False, compile_model=True)
    assert compiled_modules  # the model was compiled in place
    assert list(compiled["history"].columns) == list(plain["history"].columns)
    torch.testing.assert_close(metrics(compiled), metrics(plain), rtol=1e-5, atol=1e-6)


def test_compile_is_not_part_of_the_cache_key():
    assert "compile_model" not in CFG.key() and train_mod.COMPILE_ENV == "LALR_COMPILE"
