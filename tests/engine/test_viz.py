"""`leakygrad.viz.graph`: the computation graph as Graphviz DOT (and SVG through the `dot` program), each
tensor with its op, shape and gradient norm, shaded so that a vanishing path stands out."""

from __future__ import annotations

import html
import re
import shutil

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import viz

HEALTHY, VANISHED, ZERO, NOT_FINITE, NO_GRAD = "#d9f0d3", "#d73027", "#000000", "#7b3294", "#ffffff"


def two_paths(scale: float):
    """loss = sum(x * w_live) + sum(relu(x * w_dead)) + scale * sum(x * w_weak); the relu is off everywhere."""
    x = lg.Tensor([[1.0, 2.0], [3.0, 4.0]], name="x")
    w_live = lg.Tensor([1.0, 1.0], requires_grad=True, name="w_live")
    w_weak = lg.Tensor([1.0, 1.0], requires_grad=True, name="w_weak")
    w_dead = lg.Tensor([-1.0, -1.0], requires_grad=True, name="w_dead")
    loss = (x * w_live).sum() + (x * w_dead).relu().sum() + (x * w_weak).sum() * scale
    return loss, (w_live, w_weak, w_dead)


def node_line(dot: str, label_start: str) -> str:
    (line,) = [ln for ln in dot.splitlines() if f'label="{label_start}' in ln]
    return line


def fill(dot: str, label_start: str) -> str:
    return re.search(r'fillcolor="(#[0-9a-f]{6})"', node_line(dot, label_start)).group(1)


def test_dot_has_every_op_and_shape_and_no_gradients_before_backward():
    loss, _ = two_paths(1e-9)
    dot = viz.graph(loss).dot
    assert dot.startswith("digraph leakygrad {") and dot.rstrip().endswith("}")
    for op in ("add", "sum", "mul", "relu"):
        assert f'shape=ellipse, label="{op}"' in dot
    assert 'label="x | 2x2"' in dot  # a named constant, its shape
    assert 'label="w_live | 2"' in dot
    assert "value 10" in dot  # a single number shows its value
    assert "grad" not in dot.replace("leakygrad", "")
    assert fill(dot, "w_live") == NO_GRAD


def test_after_backward_each_tensor_shows_its_gradient_norm():
    loss, (w_live, w_weak, w_dead) = two_paths(1e-9)
    viz.retain_grads(loss)
    loss.backward()
    dot = viz.graph(loss).dot
    live_norm = np.linalg.norm(w_live.grad.data)  # sqrt(4^2 + 6^2)
    assert f"w_live | 2 | \\|grad\\| {live_norm:.3g}" in dot
    assert "w_weak | 2 | \\|grad\\| 7.21e-09" in dot
    assert "w_dead | 2 | \\|grad\\| 0" in dot
    assert dot.count("\\|grad\\|") >= 10  # intermediates too, thanks to retain_grads


def test_shading_makes_the_vanishing_and_the_dead_path_stand_out():
    loss, _ = two_paths(1e-9)
    loss.backward()
    dot = viz.graph(loss).dot
    assert fill(dot, "w_live") == HEALTHY  # the largest gradient
    assert fill(dot, "w_weak") == VANISHED  # 1e-9 of it: eight decades or more is full red
    assert fill(dot, "w_dead") == ZERO  # exactly zero: black, with white text
    assert 'fontcolor="#ffffff", label="w_dead' in dot


@pytest.mark.parametrize("scale", [1e-1, 1e-3, 1e-5, 1e-7])
def test_shading_fades_with_each_decade(scale):
    """The green channel falls from healthy to vanished as the gradient shrinks: one step per decade."""
    shades = []
    for s in (1.0, scale, scale / 10):
        loss, _ = two_paths(s)
        loss.backward()
        shades.append(int(fill(viz.graph(loss).dot, "w_weak")[3:5], 16))
    assert shades[0] > shades[1] > shades[2]


def test_a_nan_gradient_is_purple():
    w = lg.Tensor([0.0, 1.0], requires_grad=True, name="w")
    loss = w.sqrt().sum() * 0.0
    loss.backward()
    assert fill(viz.graph(loss).dot, "w") == NOT_FINITE


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_svg_rendering_keeps_every_label(tmp_path):
    loss, _ = two_paths(1e-9)
    viz.retain_grads(loss)
    loss.backward()
    drawing = viz.graph(loss)
    svg = drawing.svg()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert {"relu", "w_live", "w_dead", "|grad| 7.21e-09"} <= set(texts)
    assert drawing._repr_svg_() == svg
    saved = drawing.save(tmp_path / "graph.svg")
    assert saved.read_text() == svg


def test_save_dot_and_bad_suffix(tmp_path):
    drawing = viz.graph(two_paths(1.0)[0])
    assert drawing.save(tmp_path / "g.dot").read_text() == drawing.dot == str(drawing)
    with pytest.raises(lg.LeakygradError, match="save as .svg or .dot, not .png"):
        drawing.save(tmp_path / "g.png")


def test_without_graphviz_svg_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    drawing = viz.graph(two_paths(1.0)[0])
    with pytest.raises(lg.LeakygradError, match="apt install graphviz"):
        drawing.svg()
    assert drawing._repr_svg_() is None


def test_graph_of_something_else_is_an_error():
    with pytest.raises(lg.LeakygradError, match="viz.graph: expected a Tensor, got ndarray"):
        viz.graph(np.ones(2))


def test_names_with_graphviz_special_characters_are_escaped():
    w = lg.Tensor([1.0], requires_grad=True, name='w{1}|<"in">')
    dot = viz.graph((w * 2).sum()).dot
    assert 'label="w\\{1\\}\\|\\<\\"in\\"\\> | 1 | value 1"' in dot


def test_backslashes_in_names_are_shown_as_written():
    x = lg.Tensor([1.0], requires_grad=True, name="back\\slash")
    dot = viz.graph((x * 2).sum()).dot
    assert "back\\\\slash" in dot  # escaped for DOT, so Graphviz shows one backslash


def test_labels_with_quotes_backslashes_and_numbers_make_valid_dot(tmp_path):
    """A custom op's name is written into the DOT source as it is: a quote or a backslash broke Graphviz's
    parser; a tensor named with a number crashed the drawing."""
    from leakygrad.engine.op import Op

    class Quoted(Op):
        name = 'my "quoted" op\\'

        def forward(self, x):
            return x * 2

        def backward(self, grad):
            return grad * 2

    x = lg.Tensor([1.0, 2.0], requires_grad=True, name=3)
    dot = viz.graph(Quoted.apply(x).sum()).dot
    assert 'label="my \\"quoted\\" op\\\\"' in dot
    assert "3 | 2" in dot  # the number named the tensor, then its shape
    if shutil.which("dot") is not None:  # and Graphviz reads it (it said "syntax error in line 9")
        texts = [
            html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", viz.graph(Quoted.apply(x).sum()).svg())
        ]
        assert 'my "quoted" op\\' in texts and "3" in texts
