"""The neural tangent kernel: empirical kernels and linearised models, kernel ridge and the bounds of the fine-tuning theory."""
