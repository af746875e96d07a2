"""Signal propagation at initialisation: NNGP kernels, mean-field phases and depth scales, random deep nets, trainability, rank collapse of attention, Linformer."""
