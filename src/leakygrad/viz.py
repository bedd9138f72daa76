"""Draw a computation graph, micrograd-style, for tensors: one box per tensor, one ellipse per op.

Each tensor shows its name (or the op that made it), its shape and, after backward, the norm of its
gradient. Boxes are shaded by that norm relative to the largest in the graph, on a log scale, so that a path
along which the gradient vanishes fades into red, and a gradient that is exactly zero is black.

    viz.retain_grads(loss)        # keep the gradients of intermediate tensors too
    loss.backward()
    viz.graph(loss).save("graph.svg")   # or .dot; in a notebook the drawing displays itself

`graph` returns Graphviz DOT text (always) and SVG (when Graphviz's `dot` program is installed).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

from leakygrad.engine import LeakygradError, Tensor

# Shading by log10(gradient norm / largest norm): 0 is healthy green, -8 and below is deep red.
VANISHED_DECADES = 8
_HEALTHY = (0xD9, 0xF0, 0xD3)
_VANISHED = (0xD7, 0x30, 0x27)


def retain_grads(root: Tensor) -> None:
    """Ask every intermediate tensor in `root`'s graph to keep its gradient after backward."""
    for tensor in _all_tensors(root):
        if tensor.op is not None and tensor.requires_grad:
            tensor.retain_grad()


class Drawing:
    """A graph drawing: `.dot` is the Graphviz source; `.svg()` renders it with the `dot` program."""

    def __init__(self, dot: str):
        self.dot = dot

    def __str__(self) -> str:
        return self.dot

    def svg(self) -> str:
        program = shutil.which("dot")
        if program is None:
            raise LeakygradError(
                "viz: rendering SVG needs Graphviz's `dot` program, which is not installed "
                "(Debian/Ubuntu: apt install graphviz; macOS: brew install graphviz). "
                "The DOT text is in drawing.dot, or save it with drawing.save('graph.dot')."
            )
        done = subprocess.run([program, "-Tsvg"], input=self.dot, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise LeakygradError(f"viz: dot failed: {done.stderr.strip()}")
        return done.stdout

    def save(self, path) -> Path:
        """Write `.dot` (the source) or `.svg` (rendered), chosen by the file's suffix."""
        path = Path(path)
        if path.suffix == ".svg":
            path.write_text(self.svg())
        elif path.suffix in (".dot", ".gv"):
            path.write_text(self.dot)
        else:
            raise LeakygradError(f"viz: save as .svg or .dot, not {path.suffix or 'a file without suffix'}")
        return path

    def _repr_svg_(self):
        return self.svg() if shutil.which("dot") else None


def graph(root: Tensor, rankdir: str = "LR") -> Drawing:
    """The computation graph that produced `root`, as a `Drawing`."""
    if not isinstance(root, Tensor):
        raise LeakygradError(f"viz.graph: expected a Tensor, got {type(root).__name__}")
    tensors = _all_tensors(root)
    norms = {id(t): _grad_norm(t) for t in tensors}
    largest = max((n for n in norms.values() if n is not None and np.isfinite(n)), default=0.0)

    lines = [
        "digraph leakygrad {",
        f"  rankdir={rankdir};",
        '  node [fontname="Helvetica", fontsize=10];',
    ]
    for t in tensors:
        fill, font = _shade(norms[id(t)], largest)
        lines.append(
            f'  t{id(t)} [shape=record, style=filled, fillcolor="{fill}", fontcolor="{font}", '
            f'label="{_tensor_label(t, norms[id(t)])}"];'
        )
        if t.op is not None:
            lines.append(f'  op{id(t)} [shape=ellipse, label="{_quoted(str(t.op.name))}"];')
            lines.append(f"  op{id(t)} -> t{id(t)};")
            for parent in t.op.inputs:
                lines.append(f"  t{id(parent)} -> op{id(t)};")
    lines.append("}")
    return Drawing("\n".join(lines))


def _all_tensors(root: Tensor) -> list[Tensor]:
    """Every tensor in the graph, inputs that require no grad included (constants, data)."""
    seen, order, stack = set(), [], [root]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        order.append(t)
        if t.op is not None:
            stack.extend(t.op.inputs)
    return order


def _grad_norm(t: Tensor) -> float | None:
    return None if t.grad is None else float(np.linalg.norm(t.grad.data.astype(np.float64).ravel()))


def _tensor_label(t: Tensor, norm: float | None) -> str:
    title = t.name or (t.op.name if t.op is not None else ("param" if t.requires_grad else "const"))
    shape = "x".join(str(n) for n in t.shape) or "scalar"
    parts = [_escape(str(title)), shape]
    if t.size == 1:
        parts.append(f"value {t.data.item():.4g}")
    if norm is not None:
        parts.append(_escape(f"|grad| {norm:.3g}"))  # escaped: | separates the fields of a record
    return " | ".join(parts)


def _shade(norm: float | None, largest: float) -> tuple[str, str]:
    """Fill and font colour: green for healthy gradients fading to red as they vanish; black for exactly 0."""
    if norm is None:
        return "#ffffff", "#000000"
    if not np.isfinite(norm):
        return "#7b3294", "#ffffff"  # purple: NaN or Inf
    if norm == 0.0 or largest == 0.0:
        return "#000000", "#ffffff"
    decades = min(VANISHED_DECADES, max(0.0, -np.log10(norm / largest)))
    k = decades / VANISHED_DECADES
    rgb = [round(h + (v - h) * k) for h, v in zip(_HEALTHY, _VANISHED)]
    return "#" + "".join(f"{c:02x}" for c in rgb), "#000000"


def _escape(text: str) -> str:
    """Text for a field of a record label: its structure characters, the quote and the backslash escaped."""
    return "".join("\\" + c if c in '{}|<>"\\' else c for c in text)


def _quoted(text: str) -> str:
    """Text for a plain (not record) label: only the quote and the backslash are special there."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
