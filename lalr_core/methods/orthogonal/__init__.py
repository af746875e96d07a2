"""Gradient orthogonalisation: the polar factor (SVD, Newton-Schulz), the gradient transform any optimiser takes, and LARS."""
