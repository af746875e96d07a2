"""The sentences of `[ATDL-notes]` (the lecture notes *Advanced Topics in Deep Learning*; see
REFERENCES.md) behind chapter 05b's checks, verbatim, with the notes' section.
`FigureWriter.check(..., quote=QUOTES[key])` prints them in REPORT.md beside our verdict."""

QUOTES = {
    # sec. 2.3, output-space gradient descent
    "E9": "GD in the parameter space is shown to have difficulty in finding the global minimum "
          "whereas GD in the output space finds the global minimum easily.",
    # sec. 2.2, the Gauss-Newton matrix
    "E10 residuals": "The justification of the Gauss-Newton approximation is the assumption that "
                     "the second term is negligible, which will be the case if all training "
                     "samples fit the model perfectly.",
    # sec. 2.2, "Benefit of using Gauss-Newton matrix" (the statement E10's second check corrects)
    "E10 relu": "This is not the case when computing $H_\\theta$ since it will involves "
                "second-order derivative of the activation function, which in the case of ReLU, "
                "will give zero.",
    # app. A3, natural gradient with the Fisher information matrix
    "E11 speed": "Therefore, for a parameter with a strong effect on the outcome probability of "
                 "the model, the natural gradient will penalize movement in that direction due "
                 "to the inverse of the metric.",
    # app. A3, opening paragraph
    "E11 invariance": "Natural gradient generalizes this by allowing considering any distance "
                      "defined by a given metric $g(\\theta)$.",
    # sec. 3.2, "Newton method"
    "E12": "gradient ascent when curvature is negative, therefore will move towards saddle "
           "points",
    # sec. 3.5, batch size (after Keskar et al. 2017)
    "E15": "It is shown in [ref](https://arxiv.org/pdf/1609.04836.pdf) that using a larger batch "
           "with a SGD type optimizer leads to the convergence of sharper minima, which has poor "
           "generalization.",
}
