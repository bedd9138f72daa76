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
# erfc(x) = exp(-x^2) * P(x) / Q(x)           for 1 < x < 8
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
# erfc(x) = exp(-x^2) * R(x) / S(x)           for x >= 8
_R = [
    5.64189583547755073984e-1,
    1.27536670759978104416e0,
    5.01905042251180477414e0,
    6.16021097993053585195e0,
    7.40974269950448939160e0,
    2.97886665372100240670e0,
]
_S = [
    1.0,
    2.26052863220117276590e0,
    9.39603524938001434673e0,
    1.20489539808096656605e1,
    1.70814450747565897222e1,
    9.60896809063285878198e0,
    3.36907645100081516050e0,
]


def erf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.float64
    z = x.astype(np.float64)
    a = np.minimum(np.abs(z), 30.0)  # erfc(30) underflows to 0: beyond, erf is exactly +-1 (inf included)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        small = z * np.polyval(_T, z * z) / np.polyval(_U, z * z)
        tail = np.where(a < 8.0, np.polyval(_P, a) / np.polyval(_Q, a), np.polyval(_R, a) / np.polyval(_S, a))
        erfc = np.exp(-a * a) * tail
        large = np.sign(z) * (1.0 - erfc)
    return np.where(a <= 1.0, small, large).astype(dtype, copy=False)
