"""The error function erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt, vectorised in NumPy.

NumPy has no erf, and the engine depends on NumPy alone, so here it is: the rational approximations of the
Cephes library (S. Moshier; W. J. Cody's forms), accurate to about 1e-16 relative in float64. GELU needs it.
"""

import numpy as np

# erf(x) = x * T(x^2) / U(x^2)                for |x| <= 1
_T = [
    9.60497373987051638749e0,
    9.00260197203842689217e1,
    2.23200534594684319226e3,
    7.00332514112805075473e3,
    5.55923013010394962768e4,
]
_U = [
    1.0,
    3.35617141647503099647e1,
    5.21357949780152679795e2,
    4.59432382970980127987e3,
    2.26290000613890934246e4,
    4.92673942608635921086e4,
]
# erf(x) = 1 - exp(-x^2) * P(x) / Q(x)       for 1 < x (Cephes uses it up to 8; erf is 1 beyond 6)
_P = [
    2.46196981473530512524e-10,
    5.64189564831068821977e-1,
    7.46321056442269912687e0,
    4.86371970985681366614e1,
    1.96520832956077098242e2,
    5.26445194995477358631e2,
    9.34528527171957607540e2,
    1.02755188689515710272e3,
    5.57535335369399327526e2,
]
_Q = [
    1.0,
    1.32281951154744992508e1,
    8.67072140885989742329e1,
    3.54937778887819891062e2,
    9.75708501743205489753e2,
    1.82390916687909736289e3,
    2.24633760818710981792e3,
    1.65666309194161350182e3,
    5.57535340817727675546e2,
]


def erf(x: np.ndarray) -> np.ndarray:
    """erf, elementwise, in the precision of `x` (floating input keeps its precision; integers are computed in
    float64).

    Both approximations are evaluated everywhere and the right one is picked per element: on whole arrays that
    is about twice as fast as gathering each range's elements first.
    """
    x = np.asarray(x)
    z = x if x.dtype.kind == "f" else x.astype(np.float64)
    a = np.abs(z)
    with np.errstate(invalid="ignore", over="ignore"):  # inf / inf where |x| is huge: that branch is not used
        near = z * _horner(_T, z * z) / _horner(_U, z * z)
    # Beyond 6, erfc(x) < 2.2e-17 and erf(x) rounds to +-1 even in float64 (inf included; nan stays nan).
    b = np.clip(a, 1.0, 6.0)
    far = np.copysign(1.0 - np.exp(-b * b) * _horner(_P, b) / _horner(_Q, b), z)
    return np.where(a <= 1.0, near, far)


def _horner(coefficients, x: np.ndarray) -> np.ndarray:
    """The polynomial with these coefficients (highest power first) at x, in x's precision."""
    result = np.full(np.shape(x), coefficients[0], dtype=np.result_type(x))
    for c in coefficients[1:]:
        result *= x
        result += c
    return result
