"""Training throughput of our loop vs a plain DataLoader loop, as ratios measured in one run.

Both loops train the same model (CIFAR ResNet-20, float32) on the same in-memory data
(synthetic CIFAR-shaped tensors, so no dataset is needed) with the same augmentation (random
crop with 4-pixel padding + horizontal flip) and SGD with momentum:

- baseline: ``torch.utils.data.DataLoader`` over the uint8 images with per-sample torchvision
  transforms (the usual tutorial loop), NCHW memory format;
- ours: ``lalr_core.core.loop.train`` pieces: normalised device-resident tensors, batched on-device
  augmentation, channels_last.

The two are interleaved for ``--repeats`` rounds and the median images/s of each is reported
with their ratio, so the number holds on a noisy machine. Usage: ``make bench``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from _common import BenchRow, emit_rows  # benchmarks/ is on sys.path when a script runs
from torchvision.transforms import v2

from lalr_core.core.data.augmentation import augment
from lalr_core.core.data import iterate_batches
from lalr_core.core.models.networks import build_model


def _synthetic_uint8(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g),
            torch.randint(0, 10, (n,), generator=g))


def _step(model, opt, Xb, yb):
    loss = F.cross_entropy(model(Xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def time_baseline(model, opt, X8, y, batch_size, steps) -> float:
    """Images/s of a DataLoader loop with per-sample transforms."""
    tf = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.RandomCrop(32, padding=4),
                     v2.RandomHorizontalFlip(), v2.Normalize((0.49, 0.48, 0.45), (0.2, 0.2, 0.2))])

    class DS(torch.utils.data.Dataset):
        def __len__(self):
            return len(X8)

        def __getitem__(self, i):
            return tf(X8[i]), y[i]

    loader = torch.utils.data.DataLoader(DS(), batch_size=batch_size, shuffle=True, num_workers=0)
    it, t0 = iter(loader), time.perf_counter()
    for _ in range(steps):
        Xb, yb = next(it)
        _step(model, opt, Xb, yb)
    return steps * batch_size / (time.perf_counter() - t0)


def time_ours(model, opt, X, y, batch_size, steps, gen) -> float:
    """Images/s of our loop: device tensors, batched augmentation, channels_last."""
    t0, done = time.perf_counter(), 0
    for Xb, yb in iterate_batches(X, y, batch_size, shuffle=True, generator=gen):
        _step(model, opt, augment(Xb, generator=gen), yb)
        done += 1
        if done == steps:
            break
    return steps * batch_size / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    X8, y = _synthetic_uint8(args.batch_size * args.steps)
    X = ((X8.float() / 255) - 0.48) / 0.2
    plain = build_model("resnet20")
    ours = build_model("resnet20").to(memory_format=torch.channels_last)
    ours.load_state_dict(plain.state_dict())
    opt_p = torch.optim.SGD(plain.parameters(), lr=0.05, momentum=0.9)
    opt_o = torch.optim.SGD(ours.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(0)
    time_baseline(plain, opt_p, X8, y, args.batch_size, 2)  # warm-up
    time_ours(ours, opt_o, X, y, args.batch_size, 2, gen)
    base, mine = [], []
    for _ in range(args.repeats):
        base.append(time_baseline(plain, opt_p, X8, y, args.batch_size, args.steps))
        mine.append(time_ours(ours, opt_o, X, y, args.batch_size, args.steps, gen))
    b, m = statistics.median(base), statistics.median(mine)
    print(f"ResNet-20, batch {args.batch_size}, {args.steps} steps x {args.repeats} interleaved repeats, "
          f"{torch.get_num_threads()} threads")
    print(f"  DataLoader loop : {b:8.1f} img/s (median)")
    print(f"  lalr_core loop  : {m:8.1f} img/s (median)")
    print(f"  speed-up ratio  : {m / b:.2f}x")
    emit_rows([BenchRow(  # throughputs as costs: seconds per step of batch_size images
        "train", f"training step, ResNet-20, batch {args.batch_size}, "
        f"{torch.get_num_threads()} threads", "lalr_core loop", "DataLoader loop",
        args.batch_size / m, args.batch_size / b,
        note=f"{m:.0f} vs {b:.0f} img/s (medians of {args.repeats} interleaved repeats)")])


if __name__ == "__main__":
    main()
