"""Starting from pretrained weights: the text and vision transfer settings, initial perturbations, LoRA, the proximal pull toward theta_0, and model transforms."""
