"""The training loop: one loop for every task, with its config, plug-in registry, tasks, optimisers, per-layer lr interface and callbacks."""
