"""The source's sentences behind chapter 02b's checks, verbatim (seed 001, ch. 3; figure
captions where the text makes no claim). `FigureWriter.check(..., quote=QUOTES[key])` prints
them in REPORT.md beside our verdict; tests/test_ch02b_verdicts.py checks each one against the
source text."""

SOURCE_FILE = "001_bb912a33d016025f.txt"  # under the shared seeds folder

QUOTES = {
    "table3.1": "Settings 1 and 3 prune more for layers with larger HT-SR metrics. Settings 2 "
                "and 4 prune more for layers with smaller HT-SR metrics.",
    "fig3.1": "Comparing layerwise pruning ratios achieved on WideResNet28 (blue) and "
              "DenseNet40 (orange) using Erdos-Renyi Kernel layerwise [18], Layer-adaptive "
              "Sparsity for the Magnitude-based Pruning (LAMP) [51], and uniform (baseline) "
              "schemes.",
    "fig3.2 entropy": "Using AugMix results in higher matrix entropy uniformly through time, but "
                      "mitigates the observed *entropy rebound* phenomenon on DenseNet40, "
                      "compared to traditional augmentation.",
    "fig3.2 alpha": "Using AugMix also levels the rebound of α on DenseNet40 during training.",
    "uniform row": "Uniform pruning would show a straight line across the graph.",
    "under-prune": "In this approach, we would rather under-prune than over-prune.",
    "transition": "We zoom in on entropy (namely, matrix entropy), which yields lower pruning "
                  "ratios in Settings 1 and 3 and higher pruning ratios in Settings 2 and 4; and "
                  "norm and spectral norm, for which the inverse is true. These two layers "
                  "correspond to the two *Transition Layers* on DenseNet40 between the dense "
                  "blocks.",
    "no differentiation": "This type of implicit layer differentiation is not observed on "
                          "WideResNet28 and MobileNetV2, which correlate with smaller "
                          "performance gains from the baseline uniform pruning in various "
                          "settings.",
    "fig3.3": "On DenseNet40 with AugMix data augmentation, post-pruning clean accuracy "
              "outperforms the baseline especially in sparse settings when setting larger "
              "pruning fraction k_i for layers with larger shape metrics and smaller pruning "
              "fraction k_i for layers with smaller scale metrics",
    "fig3.3 traditional": "Similar trends arise when using traditional augmentation, but the "
                          "improvement from baseline is less significant.",
    "mobilenet": "On MobileNetV2, most metric-based pruning does not achieve gains similar to "
                 "those on DenseNet40.",
    "wrn": "On WRN28, uniform pruning is the most optimal option, suggesting the power "
           "architecture of the residual blocks with increased depth and width.",
    "fig3.22 mean": "Lower overall average α values across all layers are recorded through the "
                    "finetuning epochs compared to baseline, indicating overall better training "
                    "completeness.",
    "fig3.22 layers": "The top four figures show that layers assigned learning rates with the "
                      "largest difference from the baseline also have smaller α values through "
                      "finetuning, showing better model convergence.",
    "fig3.23": "VGG19 at 11 Sizes: Change of α through finetuning for 3 layers with the largest "
               "increase and 3 layers with largest decrease from initial baseline learning "
               "rates",
    "fig3.25 middle": "For models with 10 to 80 percent of parameters remaining, the layerwise "
                      "learning rate method consistently outperforms the baseline.",
    "fig3.25 ends": "On the VGG19 architecture, layerwise learning rate allocation reaches "
                    "baseline performance in the sparsest and densest settings without "
                    "underperforming the baseline training accuracy.",
    "fig3.26": "On DenseNet40, the observable optimal range of fraction of remaining parameters "
               "is between 55 to 65 percent",
}
