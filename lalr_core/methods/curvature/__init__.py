"""Curvature of the loss: matrix-free operators, top eigenpairs from gradients, algorithm 5's step, cumulants, and the toy landscapes."""
