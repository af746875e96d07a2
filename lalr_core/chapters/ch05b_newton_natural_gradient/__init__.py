"""Chapter 05b (Newton, Gauss-Newton, natural gradient, saddles and sharpness): settings,
experiments and quotes.

Source: *Advanced Topics in Deep Learning*, lecture notes (author and date not given; no public
link known), secs. 2.1-2.3 (proximal view of GD, natural gradient and damped Newton; the
Gauss-Newton matrix; output-space descent on Rosenbrock), 3.1, 3.2 and 3.5 (sharpness, saddle
points, batch size) and appendices A2-A4 (Newton's method, the Fisher, the Morse index); key
`[ATDL-notes]` in REFERENCES.md. The notes follow R. Grosse, *CSC2541: Neural Net Training
Dynamics*, University of Toronto, 2021, <https://www.cs.toronto.edu/~rgrosse/courses/csc2541_2021/>
(`[Grosse2021]`). E9-E12 and E15 are our labels for the experiments (the notes have none).

Two statements of the notes are wrong, and the chapter tests the corrected ones: the parameter
Hessian of a ReLU network is not the Gauss-Newton matrix where the residuals are nonzero (sec.
2.2 says it is, because ReLU's second derivative is zero; but the output is a product of the
layers' weights, so its second derivatives across layers are not zero), and Newton's step is
``-H^-1 g`` (app. A2 prints it without the minus sign).

The package: ``settings`` (`Settings`, ``PROFILES``), ``experiments`` (one function per toy and
one per check's numbers), ``claims`` (``CLAIMS``: each check as data, claim test or sanity
check), ``findings`` (one function per experiment, its numbers to `Finding` objects),
``quotes`` (the notes' sentences). No network is trained through the
shared loop, so ``CHAPTER`` has no sections.
"""

from lalr_core.chapters.ch05b_newton_natural_gradient.claims import CLAIMS
from lalr_core.chapters.ch05b_newton_natural_gradient.experiments import (
    E9_EXPECTED,
    E9_FACTOR,
    E9_TOL,
    E10_ACTIVATIONS,
    E11_GD_STEPS,
    E11_PROBIT_GD_STEPS,
    E11_SCALES,
    E11_TOL,
    E12_GRADIENT,
    E12_METHODS,
    E12_QUADRATICS,
    E15_ARMS,
    E15_BATCHES,
    E15_EPOCHS,
    E15_EXAMPLES,
    damping_limit_error,
    damping_path,
    e9_paths,
    e10_numbers,
    e10_runs,
    e11_numbers,
    e11_probit_numbers,
    e11_probit_runs,
    e11_runs,
    e12_numbers,
    e12_saddle_runs,
    e15_runs,
    e15_sharpness,
    ng_much_faster,
    rosenbrock_grid,
    rosenbrock_hessian_det,
    rosenbrock_hessian_eigenvalues,
    within_factor,
)
from lalr_core.chapters.ch05b_newton_natural_gradient.findings import (
    e9_findings,
    e10_findings,
    e11_findings,
    e12_findings,
    e15_findings,
    faster_by,
)
from lalr_core.chapters.ch05b_newton_natural_gradient.quotes import QUOTES
from lalr_core.chapters.ch05b_newton_natural_gradient.settings import PROFILES, Settings
from lalr_core.core.runs.chapter import Chapter

CHAPTER = Chapter(id="05b", title="Newton, Gauss-Newton, natural gradient, saddles and "
                  "sharpness on toys", profiles=PROFILES)

__all__ = [
    "CHAPTER",
    "CLAIMS",
    "E9_EXPECTED",
    "E9_FACTOR",
    "E9_TOL",
    "E10_ACTIVATIONS",
    "E11_GD_STEPS",
    "E11_PROBIT_GD_STEPS",
    "E11_SCALES",
    "E11_TOL",
    "E12_GRADIENT",
    "E12_METHODS",
    "E12_QUADRATICS",
    "E15_ARMS",
    "E15_BATCHES",
    "E15_EPOCHS",
    "E15_EXAMPLES",
    "PROFILES",
    "QUOTES",
    "Settings",
    "damping_limit_error",
    "damping_path",
    "e9_findings",
    "e9_paths",
    "e10_findings",
    "e10_numbers",
    "e10_runs",
    "e11_findings",
    "e11_numbers",
    "e11_probit_numbers",
    "e11_probit_runs",
    "e11_runs",
    "e12_findings",
    "e12_numbers",
    "e12_saddle_runs",
    "e15_findings",
    "e15_runs",
    "e15_sharpness",
    "faster_by",
    "ng_much_faster",
    "rosenbrock_grid",
    "rosenbrock_hessian_det",
    "rosenbrock_hessian_eigenvalues",
    "within_factor",
]
