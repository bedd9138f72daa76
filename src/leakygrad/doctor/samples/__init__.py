"""Small, ordinary PyTorch training scripts with a classic leak, for `leakygrad demo` and for trying the doctor:

leakygrad doctor "$(python -c 'import leakygrad.doctor.samples as s; print(s.path("deep_sigmoid"))')"
"""

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """The file of the sample script `name` (e.g. "deep_sigmoid")."""
    script = Path(str(resources.files(__name__).joinpath(f"{name}.py")))
    if not script.is_file():
        raise FileNotFoundError(f"no sample script named {name!r} in {script.parent}")
    return script
