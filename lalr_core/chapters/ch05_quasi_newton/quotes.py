"""The sentences of `[Tuddenham2026]` (M. Tuddenham, PhD thesis, University of Southampton, 2026;
see REFERENCES.md) behind chapter 05's checks, verbatim: from chapter 4's text, its figure
captions or table titles where the text makes no claim, and appendices E and H.
`FigureWriter.check(..., quote=QUOTES[key])` prints them in REPORT.md beside our verdict."""

QUOTES = {
    'fig4.6': (
        "the quasi-Newton's method is much more volatile, slower to improve in general,"
        ' and does end on average with lower accuracy'),
    'fig4.6 diverge': (
        'both methods diverge with $\\eta > 10^{-1}$'),
    'tableE.1': (
        'Table E.1: Accuracy (%)'),
    'tableE.2': (
        'Table E.2: Loss'),
    'fig4.7 small': (
        'We can see, figure 4.7, that this ratio is indeed very small, and remains '
        'small for the full duration of training.'),
    'fig4.7 start': (
        'Additionally, the initial logit curvature is higher which is to expected as '
        'the initialisation is random'),
    'fig4.8': (
        'Here we see, as in [121], the logit gradients are clustered per class, figure '
        '4.8; whilst the clustering relaxes during training, the similarity remains '
        'high.'),
    'fig4.9 overlap': (
        'Figure 4.9 shows that the class gradients are not orthogonal and that, due to '
        'the high-dimensionality, there are significant overlaps between the mean class'
        ' logit gradients for this model.'),
    'fig4.9 contrast': (
        'Additionally, this can be contrasted with the validation for the next '
        'assumption — looking at the similarity of the class gradients, equation '
        '(4.41), which are lower, figure 4.9, implying that the logit gradients are '
        'more correlated with other logit gradients for data in the same class than '
        'they are for logit gradients of different classes.'),
    'figE.1b': (
        'The cosine-maximised linear assignment for the top-C eigenvectors to the class'
        ' gradient directions is ≈ 0.36 , and most of the class gradients have a '
        'significant cosine similarity with a top eigenvector figure E.1b.'),
    'figE.1a': (
        'We see, from figure E.1a, that the rank quickly declines from $2C$, *i.e.* no '
        'intersection, to consistently being C .'),
    'fig4.10 early': (
        'SGD consistently outperforms the quasi-Newton’s method at all batch sizes, but'
        ' not in the early epochs.'),
    'fig4.10 crossover': (
        'From figure 4.10 we can see that, although our quasi-Newton’s method may start'
        ' learning faster than SGDM, there comes a crossover point where SGDM overtakes'
        ' and continues to have better performance regardless of the batch size'),
    'fig4.10 smaller': (
        'Smaller batches have their crossover point in the first epoch due to the '
        'increased number of steps and so are not shown in figure 4.10 to illustrate '
        'this effect.'),
    'fig4.11': (
        'most eigenvalues are clustered near zero, indicating flat directions in the '
        'loss landscape, while a small number of large eigenvalues dominate'),
    'fig4.12': (
        'Estimating the top eigenvalue and eigenvector of a known matrix using the '
        'power iteration method. $\\cos \\phi$ is the cosine between the true eigenvector'
        ' and the estimated one.'),
    'fig4.13': (
        'neither value is converging'),
    'fig4.17a': (
        'the top eigenvector is converging to the true value, and the estimated '
        'eigenvalue converges'),
    'fig4.17b': (
        'Figure 4.17b shows that the top eigenvector and eigenvalue are still '
        'converging to the true values, however, they are significantly more unstable.'),
    'fig4.18': (
        'if we use a larger sample size we can reduce the oscillations and get a more '
        'consistently accurate estimation'),
    'fig4.14 rastrigin': (
        'for the obstruction-dominated landscape the trajectory is generally straight '
        'and the Euclidian distance is consistently increasing until the solution'),
    'fig4.14 rosenbrock': (
        'for the hilly surface, the trajectory is substantially curved and the total '
        'Euclidian distance, equation (3.1), fluctuates'),
    'fig4.15 negative': (
        'Importantly, however, we see that, the gradient does, on average, point '
        'towards the solution; illustrated by the peak of the distribution being '
        'negative and not at zero.'),
    'fig4.15 threshold': (
        'Indeed, very few of the gradients pass our threshold for random vectors from '
        'appendix A.1.4.'),
    'fig4.15 increasing': (
        'figure 4.15 reveals that the total Euclidian distance travelled is '
        'continuously increasing reinforcing our previous result that the model is not '
        'oscillating around a minimum as this would require the Euclidian distance to '
        'oscillate.'),
    'fig4.15 early': (
        'That most of the Euclidian distance is travelled at the beginning of training '
        'implies that initially there are many directions with consistently large '
        'gradients'),
    'fig4.15 spread': (
        'One might assume, from the substantially increased variance of ϕ_t at the end '
        'of training, that the model is oscillating around a minimum, but this is an '
        'artefact of the fact that the absolute distances to the solution are smaller, '
        'so the cosine is more sensitive.'),
    'fig4.16': (
        'From figure 4.16 we can see that the larger the mini-batch size, the higher '
        'the average cohesion and the smaller the variance; indicating that our '
        'assumption, that larger mini-batches decrease the amount of noise, is correct.'),
    'fig4.16a': (
        'Moreover, we can see how errors dominate the gradient from figure 4.16a as '
        'there are gradients with $\\psi_i \\approx 1$ since their magnitude is much '
        "larger than the other samples'."),
    'fig4.16 degrades': (
        'This also reveals how the gradients become less cohesive over time; there '
        'seems to be a very obvious direction that is shared by all the examples; the '
        'cohesion degrades.'),
    'fig4.20 clip': (
        'Again, to avoid large step sizes we can clip the step size to be less than the'
        ' provided learning rate; pseudocode for both of these methods is shown in '
        'algorithm 5.'),
    'fig4.20 lower': (
        'However, when compared with a better learning rate for SGD, 0.1, we find that '
        'these eigen-estimation methods perform suboptimally, most notably, at the '
        'start of training when the model is most sensitive to moving in the wrong '
        'direction.'),
    'fig4.20 higher': (
        'To experiment we train a ResNet-20 on CIFAR-10 using a learning rate — or '
        'learning rate bound — of 1; both methods perform better than SGD, figure 4.20,'
        ' with this high step size, indicating that the methods are indeed limiting the'
        ' step size for when the loss landscape is highly curved, and that this is '
        'beneficial.'),
    'fig4.20 window': (
        'Initial random matrix for gradients'),
    'figH.1': (
        'This seems to be a good approximation for random matrices, as shown in figure '
        'H.1'),
    'figH.2': (
        'Histogram of the squared gradients of a generated Hessian'),
}
