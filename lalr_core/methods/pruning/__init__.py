"""Structured channel pruning guided by heavy-tailed self-regularisation: per-layer budgets, channel masks, and the prune-then-finetune start."""
