"""Layer-wise learning rates: LALR (weight metrics per layer), TempBalance (power-law alphas per layer) and the implicit lr decay of scale-invariant layers."""
