"""The class-gradient subspace: class gradients, the quasi-Newton step in their span, and the assumptions behind it measured along training."""
