"""Reading PyTorch's autograd graph: node names, walks, and locating the first NaN of a forward pass.

The graph is the one autograd records in the forward pass: each `grad_fn` node knows the nodes of its inputs
(`next_functions`) and keeps the tensors its backward needs (`_saved_self`, `_saved_result`, ...). Walking it
from the loss finds every operation that took part in the step, including those written as plain function
calls inside a module's `forward`, which module hooks never see.
"""

from __future__ import annotations

import functools
import inspect
import math
import random
import re
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import torch

# (nn.MultiheadAttention's softmax on the unfused path, taken under dropout: a softmax whose fully masked rows give 0,
# not NaN; its backward, and what it saves, are softmax's)
_OP_NAMES: dict[str, str] = {"SafeSoftmaxBackward0": "softmax"}
_OP_NAMES_BY_TYPE: dict[type, str] = {}  # node class -> name: a dictionary look-up, cheaper than node.name()

ACCUMULATE = "accumulate_grad"
PARAMETER_LEAF = getattr(torch._C._functions, "AccumulateGrad", None)  # the class of the nodes named ACCUMULATE

# Forward operations that turn finite inputs into NaN/Inf (log(0), 0/0, sqrt(-1), exp overflow, matmul overflow).
FORWARD_NAN_PRONE = {
    "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "div", "reciprocal", "pow", "exp", "exp2", "expm1",
    "acos", "asin", "atanh", "acosh", "xlogy", "lgamma", "digamma", "erfinv", "tan", "mm", "addmm", "bmm",
    "matmul", "convolution", "cudnn_convolution", "mkldnn_convolution", "sum", "prod", "cumprod", "mul", "cosh",
    "sinh", "softmax", "log_softmax",  # (a row entirely -inf, every position masked: 0/0)
    "logit",  # (log(p / (1 - p)): inf at a probability rounded to 1)
}  # fmt: skip
# Backward operations whose local derivative is infinite somewhere (1/x, 1/(2 sqrt x), ...): 0 x inf = NaN.
BACKWARD_NAN_PRONE = {
    "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "div", "reciprocal", "pow", "acos", "asin", "atanh",
    "acosh", "xlogy", "norm", "linalg_vector_norm", "std", "var", "atan2", "lgamma", "digamma", "erfinv", "cdist",
    "prod", "cumprod", "tan", "logit", "exp",  # (exp: grad * e^x, 0 * inf where e^x overflowed)
}  # fmt: skip
# Unary forward operations we can recompute from the input their node saved, to confirm a NaN was born there.
RECOMPUTABLE = {
    "log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "exp": torch.exp, "acos": torch.acos,
    "asin": torch.asin, "atanh": torch.atanh, "expm1": torch.expm1, "cosh": torch.cosh, "sinh": torch.sinh,
}  # fmt: skip


def op_name(node) -> str:
    """'ClampMinBackward0' -> 'clamp_min', 'torch::autograd::AccumulateGrad' -> 'accumulate_grad'."""
    name = _OP_NAMES_BY_TYPE.get(type(node))
    return name if name is not None else _name_from_node(node)


def _name_from_node(node) -> str:
    raw = node.name()
    name = _OP_NAMES.get(raw)
    if name is None:
        short = raw.rsplit("::", 1)[-1]
        short = re.sub(r"Backward\d*$", "", short)
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", short).lower()
        _OP_NAMES[raw] = name
    if type(node).__name__ == raw.rsplit("::", 1)[-1]:  # a class of its own (not a generic one): name by class
        _OP_NAMES_BY_TYPE[type(node)] = name
    return name


class NodeTags:
    """Values written into autograd nodes under one key, and read back: a mapping node -> value for the walks below.

    Each node carries a dict of its own (`node.metadata`, kept by PyTorch with the node, whichever Python object
    stands for it). A name kept there holds no node: a graph that no backward uses (an evaluation pass run with
    gradients on) is freed with its outputs, as it would be unwatched, instead of living on in a dict of ours.
    """

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def tag(self, node, value) -> None:
        """Write `value` on `node`, unless it holds one already (the innermost module names its output)."""
        node.metadata.setdefault(self.key, value)

    def add(self, node, value) -> None:
        """Add `value` to the set that `node` holds."""
        node.metadata.setdefault(self.key, set()).add(value)

    def get(self, node, default=None):
        return node.metadata.get(self.key, default)

    def __contains__(self, node) -> bool:
        return self.key in node.metadata

    def __getitem__(self, node):
        return node.metadata[self.key]


@dataclass
class Graph:
    nodes: list  # every node reachable from the roots, in breadth-first order from the loss
    children: dict  # node -> the nodes of its inputs
    parents: dict = field(default_factory=dict)  # node -> the nodes that consume its output


def walk(roots, with_parents: bool = False) -> Graph:
    """Every node reachable from `roots` (grad_fn nodes), breadth first."""
    nodes = [node for node in roots if node is not None]
    seen = set(nodes)
    children = {}
    for node in nodes:  # the list grows as the walk goes: it is the queue
        kids = [child for child, _ in node.next_functions if child is not None]
        children[node] = kids
        for child in kids:
            if child not in seen:
                seen.add(child)
                nodes.append(child)
    parents: dict = {}
    if with_parents:
        for node, kids in children.items():
            for child in kids:
                parents.setdefault(child, []).append(node)
    return Graph(nodes, children, parents)


WEIGHTED_OPS = ("addmm", "mm", "bmm", "baddbmm", "matmul", "addmv", "mv", "linear", "convolution", "cudnn_convolution")


def weighs_its_input(node) -> bool:
    """Whether an operation is a layer's: a matrix product or convolution (with weights of any origin: MAML's fast
    weights are no leaves), or an operation on a parameter itself or a reshaped view of one (`x * self.gamma`)."""
    if op_name(node) in WEIGHTED_OPS:
        return True
    return any(
        child is not None and isinstance(beneath_reshapes(child), PARAMETER_LEAF) for child, _ in node.next_functions
    )


def beneath(starts) -> set:
    """Every node at or beneath `starts` (towards the leaves): what their values were computed from."""
    found, stack = set(), [node for node in starts if node is not None]
    while stack:
        node = stack.pop()
        if node in found:
            continue
        found.add(node)
        stack.extend(child for child, _ in node.next_functions if child is not None and child not in found)
    return found


def new_nodes(roots, seen: set) -> list:
    """The operations reachable from `roots` that are not in `seen`, breadth first; they are added to `seen`.

    A node in `seen` is not walked through: everything it leads to was seen with it (an earlier backward pass of
    the same step, through a shared part of the graph). The parameters' leaves (AccumulateGrad) are left out:
    they are no operation and lead nowhere."""
    nodes = [node for node in dict.fromkeys(roots) if node is not None and node not in seen]
    seen.update(nodes)
    for node in nodes:  # the list grows as the walk goes: it is the queue
        for child, _ in node.next_functions:
            if child is not None and child not in seen and type(child) is not PARAMETER_LEAF:
                seen.add(child)
                nodes.append(child)
    return nodes


def forward_order(graph: Graph) -> list:
    """The nodes with every node after the nodes of its inputs (the order the forward pass ran them)."""
    order, state = [], {}
    for root in graph.nodes:
        if root in state:
            continue
        stack = [(root, iter(graph.children.get(root, ())))]
        state[root] = 1
        while stack:
            node, kids = stack[-1]
            child = next(kids, None)
            if child is None:
                stack.pop()
                order.append(node)
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(graph.children.get(child, ()))))
    return order


def region(outputs, is_stop) -> set:
    """Nodes from `outputs` up to (not including) the nodes where `is_stop(node)`: the operations inside one
    module's forward, when the stops are the nodes of its inputs. An output is inside even when it is also a stop:
    a recurrent cell's output at one call is its input at the next, and what made it is the earlier call's work."""
    inside, queue = set(), deque(n for n in outputs if n is not None)
    inside.update(queue)
    while queue:
        node = queue.popleft()
        if op_name(node) == ACCUMULATE:
            continue
        for child, _ in node.next_functions:
            if child is not None and child not in inside and not is_stop(child):
                inside.add(child)
                queue.append(child)
    return inside


def loss_side(roots, module_outputs) -> dict:  # module_outputs: a dict or NodeTags of the modules' output nodes
    """Nodes between the loss and the model's outputs: the loss computation, outside every watched module. The keys
    of a dict, in breadth-first order from the loss: where a look takes the first node of a kind (the first of two
    cross-entropies), the same training gives the same node, run after run (a set's order is the nodes' addresses)."""
    queue = deque(n for n in roots if n is not None and n not in module_outputs)
    side = dict.fromkeys(queue)
    while queue:
        node = queue.popleft()
        for child, _ in node.next_functions:
            if child is not None and child not in side and child not in module_outputs:
                side[child] = None
                queue.append(child)
    return side


# losses that are never negative: the one minimised, not its negative
NONNEGATIVE_LOSSES = {"mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "nll_loss", "binary_cross_entropy",
                      "binary_cross_entropy_with_logits", "soft_margin_loss", "multi_margin_loss"}  # fmt: skip


def negated_loss(root) -> str | None:
    """The loss function a backward root negates (`-F.mse_loss(...)`, `-1 * loss`, `0 - loss`, `-loss / 4`), or None:
    a non-negative loss whose negative is minimised is maximised, and the training climbs its error."""
    sign, function = signed_loss(root)
    return function if sign < 0 else None


def signed_loss(root) -> tuple[int, str | None]:
    """(sign, function) of a backward root that is a loss never negative by its definition (NONNEGATIVE_LOSSES, or a
    mean of squared or absolute errors) times constants: (-1, "mse_loss") for `-F.mse_loss(...)`, `-1 * loss`,
    `0 - loss`, `-loss / 4`; (1, "nll_loss") for `F.cross_entropy(...) / k`. Products and quotients by positive
    constants (an accumulation's 1/k, a gradient scaler's factor) keep the sign. (1, None) for any other root."""
    sign, node = _beneath_scalings(root)
    if node is None:
        return 1, None
    if op_name(node) in NONNEGATIVE_LOSSES:
        return sign, op_name(node)
    terms = _calls_of_one_loss_added(node)
    if terms:  # (a sum of them is never negative either: a decoder's per-step losses added up)
        return sign, op_name(terms[0])
    return sign, _mean_of_errors(node)


SUMMED_TERMS_LOOKED = 64  # nodes looked through for the terms of a sum of losses


def _calls_of_one_loss_added(node) -> list:
    """The loss nodes, when `node` is a sum of calls of one loss function never negative, each times a positive
    constant at most (`loss = loss + criterion(out_t, y_t)` over a decoder's steps, from `loss = 0`); else []."""
    if op_name(node) != "add":
        return []
    terms, stack = [], [node]
    for _ in range(SUMMED_TERMS_LOOKED):
        if not stack:
            break
        node = stack.pop()
        op, inputs = op_name(node), [child for child, _ in node.next_functions if child is not None]
        if op == "add":
            stack.extend(inputs)
        elif op in ("mul", "div") and len(inputs) == 1 and (_constant_factor(node) or 0) > 0:
            stack.append(inputs[0])
        elif op in NONNEGATIVE_LOSSES:
            terms.append(node)
        else:
            return []
    if stack or len({op_name(term) for term in terms}) != 1:
        return []
    return terms


def _beneath_scalings(root) -> tuple[int, object]:
    """(sign, node) under a few negations and products or quotients by constants at the root; (1, None) when one of
    them scales by something that is not a constant."""
    node, sign = root, 1
    for _ in range(4):  # (a few scalings deep)
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if len(inputs) != 1 or op not in SIGNED_SCALINGS:
            break
        factor = 1.0 if op in ("neg", "rsub") else _constant_factor(node)
        if factor is None:
            return 1, None
        sign = -sign if op in ("neg", "rsub") or factor < 0 else sign
        node = beneath_reshapes(inputs[0])
    return sign, node


def probability_without_log(root) -> tuple[object, torch.Tensor] | None:
    """A hand-written cross-entropy that lost its log: the root is minus a sum or mean of `t * softmax(z)`, t with
    no graph (`-(t * F.softmax(z, -1)).sum(-1).mean()` where `log_softmax` was meant; sums, means, negations and
    constant factors followed down from the root). (the softmax's node, 1.0 on the device where t is a distribution,
    every entry >= 0 and each row summing to 1, else 0.0) or None. Probabilities weighted by values that are no
    distribution (an all-action policy gradient's `pi * Q.detach()`) are left to the caller to tell by that flag."""
    sign, node = _beneath_scalings(root)
    for _ in range(6):  # (sums and means of rows and of the batch, a minus or a constant between them)
        op = op_name(node) if node is not None else None
        inputs = [] if node is None else [child for child, _ in node.next_functions if child is not None]
        if len(inputs) != 1 or op not in ("sum", "mean", "neg", "mul", "div"):
            break
        if op in ("mul", "div"):
            factor = _constant_factor(node)
            if factor is None:
                break  # (a product by a tensor: `t * softmax(z)` itself)
            sign = -sign if factor < 0 else sign
        sign = -sign if op == "neg" else sign
        node = beneath_reshapes(inputs[0])
    if sign > 0 or node is None or op_name(node) != "mul" or len(node.next_functions) != 2:
        return None
    constant = [child is None for child, _ in node.next_functions]
    if constant.count(True) != 1:
        return None
    softmax = beneath_reshapes(node.next_functions[constant.index(False)][0], also=SELECTIONS)
    target = saved_value(node, "_saved_self" if constant[0] else "_saved_other")
    probabilities = saved_value(softmax, "_saved_result") if op_name(softmax) == "softmax" else None
    if not isinstance(target, torch.Tensor) or not isinstance(probabilities, torch.Tensor):
        return None
    if target.shape != probabilities.shape or target.dim() < 1 or target.shape[-1] < 2:
        return None
    rows = target.detach().float().sum(dim=saved_dim(softmax))
    is_distribution = (target.detach().amin() >= 0) & ((rows - 1).abs().amax() < 1e-3)
    return softmax, is_distribution.float()


# losses never negative while their input is in its domain, and unbounded below outside it: the input -> its domain
# (binary cross-entropy's targets are probabilities; nll_loss's input is log-probabilities: -input[target] >= 0)
LOSS_DOMAINS = {
    "binary_cross_entropy_with_logits": ("_saved_target", "targets", (0.0, 1.0)),
    "binary_cross_entropy": ("_saved_target", "targets", (0.0, 1.0)),
    "nll_loss": ("_saved_self", "input", (None, 0.0)),  # (no lower bound)
}


def loss_outside_its_domain(root) -> dict | None:
    """For a loss of LOSS_DOMAINS at the root (times positive constants) that came out negative: the range its
    input spanned (`{"loss_function", "input", "low", "high", "domain"}`), read from what its node saved, or None."""
    sign, node = _beneath_scalings(root)
    terms = [node] if node is not None and op_name(node) in LOSS_DOMAINS else _calls_of_one_loss_added(node)
    function = op_name(terms[0]) if terms and node is not None else None
    if sign < 0 or function not in LOSS_DOMAINS:
        return None
    saved, role, domain = LOSS_DOMAINS[function]
    values = [saved_value(term, saved) for term in terms]
    if not all(isinstance(value, torch.Tensor) and value.numel() for value in values):
        return None
    value = torch.cat([value.detach().flatten() for value in values])  # (every call's: a sum's terms, one by one)
    return {"loss_function": function, "input": role, "low": float(value.amin()), "high": float(value.amax()),
            "domain": list(domain)}  # fmt: skip


def kl_div_of_probabilities(root) -> str | None:
    """The op ("softmax", "sigmoid") that made the input of `F.kl_div(input, target)` at the backward's root (times
    constants, or one of the terms it adds up), when it holds probabilities where kl_div reads log-probabilities; else
    None."""
    for given, _ in _kl_divs(root):
        made_by = op_name(beneath_reshapes(given)) if given is not None else None
        if made_by in ("softmax", "sigmoid"):
            return made_by
    return None


def kl_div_target_below_zero(root) -> torch.Tensor | None:
    """1.0 (on the device) when the target of a `F.kl_div` at the backward's root, or among the terms it adds up, has
    a negative entry: logits given where probabilities are read (`F.kl_div(log_softmax(s / T), t_logits / T)`),
    whose t log t is NaN; else 0.0. None without such a kl_div (or with `log_target=True`, whose target is no tensor
    saved so)."""
    targets = [target for _, target in _kl_divs(root) if isinstance(target, torch.Tensor) and target.numel()]
    if not targets:
        return None
    return (targets[0].detach().amin() < 0).float()


def _kl_divs(root) -> list[tuple]:
    """(the input's node, the target) of each `F.kl_div(input, target)` at the root, under constant factors, or among
    the terms of a sum there (a distillation's soft term beside its hard one). kl_div computes sum(xlogy(t, t) - t *
    input): a subtraction whose second operand is the product of the target and the input."""
    found, terms = [], [_beneath_scalings(root)[1]]
    for _ in range(8):  # (a few terms deep)
        if not terms:
            break
        node = terms.pop()
        if node is not None and op_name(node) == "add":
            terms.extend(_beneath_scalings(child)[1] for child, _ in node.next_functions if child is not None)
            continue
        if node is None or op_name(node) not in ("sum", "mean") or not node.next_functions:
            continue
        difference = node.next_functions[0][0]
        if difference is None or op_name(difference) != "sub" or len(difference.next_functions) != 2:
            continue
        (entropy, _), (product, _) = difference.next_functions
        if (entropy is not None and op_name(entropy) != "xlogy") or product is None or op_name(product) != "mul":
            continue
        given = product.next_functions[-1][0] if len(product.next_functions) == 2 else None  # (t * input: the second)
        found.append((given, saved_value(product, "_saved_self")))
    return found


SIGNED_SCALINGS = ("neg", "rsub", "mul", "div")


def root_scale(root) -> float:
    """The constant a backward root multiplies its loss by, through a few products and quotients by numbers
    (`loss / 8`: 0.125; `-0.5 * loss`: -0.5); 1.0 for a root that is no such scaling, or one by an unknown factor."""
    node, scale = root, 1.0
    for _ in range(4):  # (a few scalings deep)
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if len(inputs) != 1 or op not in ("mul", "div"):
            break
        factor = _constant_factor(node)
        if not factor:  # (None, or 0)
            return 1.0
        scale = scale * factor if op == "mul" else scale / factor
        node = beneath_reshapes(inputs[0])
    return scale


def _constant_factor(node) -> float | None:
    """The constant a product or quotient node multiplies or divides by (its one saved factor that is a number, on
    the CPU: a factor on a GPU, a gradient scaler's, is taken as positive rather than read, which would wait for the
    device); None when it saved none."""
    for name in ("_saved_other", "_saved_self"):
        factor = saved_value(node, name)
        if isinstance(factor, (int, float)):
            return float(factor)
        if isinstance(factor, torch.Tensor) and factor.numel() == 1 and not factor.requires_grad:
            return float(factor.item()) if factor.is_cpu else 1.0
    return None


def masking_factor(node, position: int = 0) -> torch.Tensor | None:
    """The constant tensor that the input of `node` (a gating op) at `position` was multiplied by just before,
    `x * mask`: where its entries are 0 the input gets no gradient whatever the gate does (center loss's
    `(distmat * mask).clamp(1e-12)`, whose masked entries sit below the clamp's floor). None when there is none, or
    it is a number. Also a mask written as a selection of constants: `x.masked_fill(~mask, 0)` or
    `torch.where(mask, x, 0)` (the entries kept: nonzero in the mask returned)."""
    child = node.next_functions[position][0] if len(node.next_functions) > position else None
    if op_name(child) in ("masked_fill", "where"):
        return _kept_by_selection(child)
    if op_name(child) != "mul" or len(child.next_functions) != 2:
        return None
    constant = [position for position, (factor, _) in enumerate(child.next_functions) if factor is None]
    if len(constant) != 1:
        return None
    factor = getattr(child, "_saved_self" if constant[0] == 0 else "_saved_other", None)
    if not isinstance(factor, torch.Tensor) or factor.numel() <= 1 or factor.requires_grad or factor.is_complex():
        return None
    return factor


def _kept_by_selection(node) -> torch.Tensor | None:
    """The entries of its computed input that a masked_fill or a where with a constant keeps (True where kept), or
    None: `x.masked_fill(m, v)` keeps where m is False; `where(c, x, v)` where c is True, `where(c, v, x)` where
    False. A where choosing between two computed tensors masks nothing."""
    computed = [position for position, (child, _) in enumerate(node.next_functions) if child is not None]
    if len(computed) != 1:
        return None
    selector = saved_value(node, "_saved_mask" if op_name(node) == "masked_fill" else "_saved_condition")
    if not isinstance(selector, torch.Tensor) or selector.dtype != torch.bool:
        return None
    # (where: the first of its two values where the condition holds; masked_fill: its value where the mask does)
    keeps_where_true = computed[0] == (0 if op_name(node) == "where" else 1)
    return selector if keeps_where_true else ~selector


def _mean_of_errors(node) -> str | None:
    """A mean or sum of absolute or squared values (`l1_loss`, which PyTorch computes so, or a hand-written
    `((pred - y) ** 2).mean()`), or of a loss left unreduced: how to call it, or None."""
    if op_name(node) not in ("mean", "sum"):
        return None
    inputs = [child for child, _ in node.next_functions if child is not None]
    inner = beneath_reshapes(inputs[0]) if len(inputs) == 1 else None
    if inner is None:
        return None
    if op_name(inner) in NONNEGATIVE_LOSSES:  # (one with reduction="none", reduced by hand)
        return op_name(inner)
    if op_name(inner) == "abs":
        return f"{op_name(node)}(abs(...))"
    if op_name(inner) == "pow" and getattr(inner, "_saved_exponent", None) == 2:
        return f"{op_name(node)}((...) ** 2)"
    return None


# what lies between an attention softmax and its scores: masking, reshapes, sums, products and constant factors, and
# the stacking of a decoder's steps' scores (a pointer network's)
ALONG_THE_SCORES = ("masked_fill", "where", "add", "sub", "mul", "div", "sum", "mm", "bmm", "addmm", "matmul",
                    "stack", "cat")  # fmt: skip
SCORE_PRODUCTS = ("mm", "bmm", "addmm", "matmul")


def scoring_tanhs(softmax, limit: int = 8) -> set:
    """The tanh nodes an attention softmax's scores are made from by one score per position, `v(tanh(W h + U s))`
    (additive, Bahdanau attention; a pointer network's): a product down to one output, or a sum over the features,
    between the tanh and the softmax. Those tanh units sit saturated when the attention is sharp, by design. (A
    softmax over a layer's several outputs, a policy's over its actions, reads no such score: its tanh is a hidden
    layer's.)"""
    found, frontier, seen = set(), [(softmax, False)], {softmax}
    for _ in range(limit):
        next_frontier = []
        for node, scored in frontier:
            for child, _ in node.next_functions:
                if child is None or child in seen:
                    continue
                seen.add(child)
                op = op_name(child)
                if op == "tanh":
                    if scored:
                        found.add(child)
                    continue
                if op in SCORE_PRODUCTS:  # (one score per position, v(...); any other product, q @ k.T, ends the path)
                    shape = output_shape(child)
                    if shape is not None and shape[-1:] == (1,):
                        next_frontier.append((child, True))
                elif op in ALONG_THE_SCORES or op in RESHAPES:
                    next_frontier.append((child, scored or op == "sum"))
        frontier = next_frontier
    return found


def output_shape(node, output_nr: int = 0) -> tuple | None:
    """The shape of a node's forward output (what its backward receives), or None where PyTorch does not say."""
    try:
        return tuple(node._input_metadata[output_nr].shape)
    except (AttributeError, IndexError, RuntimeError, TypeError):
        return None


VIEWS = ("view", "reshape", "unsafe_view")


def classes_mixed_by_view(log_softmax) -> dict | None:
    """A log_softmax (cross_entropy's) over the classes of a view whose input held those classes at another place in
    memory: `logits.view(-1, C)` of a segmenter's (N, C, H, W), `logits.view(N, C, T)` of a tagger's (N, T, C). A view
    reads the values in memory order, so each row of what the softmax sees mixes classes and positions. The classes
    axis is kept when some axis of the input of that length has as many values after it in memory as the classes axis
    has after it in the view ((N, H, W, C) as (-1, C): 1 and 1). {"input_shape", "shape", "dim"}, or None."""
    below = log_softmax.next_functions[0][0] if log_softmax.next_functions else None
    if below is None or op_name(below) not in VIEWS:
        return None
    sizes, shape = saved_value(below, "_saved_self_sym_sizes"), output_shape(below)
    dim = saved_dim(log_softmax)
    if not sizes or not shape or dim is None or len(shape) < 2:
        return None
    sizes, dim = tuple(int(size) for size in sizes), dim % len(shape)
    classes, after = shape[dim], math.prod(shape[dim + 1 :])
    axes = [axis for axis, size in enumerate(sizes) if size == classes]
    if classes < 2 or not axes or any(math.prod(sizes[axis + 1 :]) == after for axis in axes):
        return None  # (kept; or classes made by splitting an axis, a grouped head's: not judged)
    return {"input_shape": list(sizes), "shape": list(shape), "dim": dim}


def examples_mixed_by_view(node, batch: int) -> dict | None:
    """A view (or reshape) that gives a tensor holding the batch's `batch` examples on an axis after the first, with
    more than one entry before it, the shape (batch, ...) without moving that axis first: `h_n.view(N, -1)` of a
    bidirectional RNN's (2, N, H), `out.view(N, -1)` of a (T, N, H). A view reads the values in memory order, so row i
    of the result holds pieces of several examples, not example i. {"input_shape", "output_shape", "batch"}, or
    None (a (T * N, H) view keeps each row one example's; (1, N, H) viewed as (N, H) moves nothing; a 2-D (N * T, C),
    or one split into (N, T, ...), is example-major already; nor a (B, T, H) merged into the (B * T, H) rows a loss
    per token counts as its examples)."""
    sizes, shape = saved_value(node, "_saved_self_sym_sizes"), output_shape(node)
    if not sizes or not shape or batch < 2:
        return None
    sizes = tuple(int(size) for size in sizes)
    swapped = len(sizes) == len(shape) >= 2 and tuple(shape[:2]) == (sizes[1], batch)
    if swapped and sizes[0] == batch != sizes[1] > 1:  # ((N, 1, E) as (1, N, E) moves nothing: one time step)
        # (N, T, ...) viewed as (T, N, ...), a view written for a transpose: a sequence-first layer's input
        # (`nn.MultiheadAttention` without batch_first) made so holds pieces of several examples in each column
        return {"input_shape": list(sizes), "output_shape": list(shape), "batch": batch, "swapped_by_view": True}
    if shape[0] != batch:
        return None
    if batch not in sizes[1:] or sizes[0] == shape[0]:
        return None  # (the first axis kept as it was: each row the input's own, a product's (B, T, d) laid out anew)
    if sizes[0] % batch == 0 and (len(sizes) == 2 or (len(shape) > 1 and sizes[0] == batch * shape[1])):
        return None  # ((N * T, C) split into (N, T, C): each row one example's, example-major, as it was)
    if any(math.prod(sizes[:axis]) == batch for axis in range(2, len(sizes))):
        return None  # ((B, T, H) merged into (B * T, H) for a loss per token: its rows are the targets' own)
    axis = sizes.index(batch, 1)
    if math.prod(sizes[:axis]) == 1:
        return None
    return {"input_shape": list(sizes), "output_shape": list(shape), "batch": batch}


def integer_mask_as_index(node) -> dict | None:
    """`x[mask]` with a mask of 0s and 1s held as integers (`torch.zeros_like(token_ids)` with 1s written in): an
    integer index picks rows 0 and 1 again and again, not the rows where the mask is 1, as a boolean one would. An
    index of one axis, as long as that axis (8 or more), holding only 0s and 1s, both, on the CPU (read there; on a GPU
    it would wait for the device). {"length", "ones"} or None."""
    indices, sizes = saved_value(node, "_saved_indices"), saved_value(node, "_saved_self_sym_sizes")
    if not indices or not sizes:
        return None
    given = [(axis, index) for axis, index in enumerate(indices) if index is not None]
    if len(given) != 1:
        return None
    axis, index = given[0]
    if not isinstance(index, torch.Tensor) or index.dim() != 1 or not index.is_cpu or index.is_floating_point():
        return None
    if index.dtype == torch.bool or index.numel() < 8 or index.numel() != int(sizes[axis]):
        return None
    low, high = index.aminmax()
    ones = int(index.sum())
    if int(low) != 0 or int(high) != 1 or ones in (0, index.numel()):
        return None
    return {"length": index.numel(), "ones": ones, "integer_mask": True}


FULL_REDUCTIONS = ("SumBackward0", "MeanBackward0")  # (`x.sum()`, `x.mean()`: over every axis; with dim=, "...1")


def batch_summed_into_each(node) -> tuple[object, dict] | None:
    """An addition, subtraction or broadcast (`node`, whose output holds N >= 2 rows) of a sum over every axis of a
    product whose first axis holds as many rows: `mu + b_u + b_i + (P[u] * Q[i]).sum()` where `.sum(dim=1)` was meant,
    a matrix factorisation's dot products. One number, the whole batch's sum, goes into every example's result, and
    every example's error sends gradient to every other example's factors. (the reduction's node, {"input_shape",
    "output_shape", "batch", "reduction", "summed_over_batch": True}) or None (`.sum(1)`, per example, keeps rows)."""
    for child, _ in node.next_functions:
        if child is None or type(child).__name__ not in FULL_REDUCTIONS or not child.next_functions:
            continue
        product, shape = child.next_functions[0][0], output_shape(node)
        summed = output_shape(product) if product is not None and op_name(product) == "mul" else None
        if shape and summed and len(summed) >= 2 and summed[0] == shape[0] >= 2:
            found = {"input_shape": list(summed), "output_shape": list(shape), "batch": shape[0]}
            return child, {**found, "reduction": op_name(child), "summed_over_batch": True}
    return None


def column_added_to_row(node, module_outputs) -> dict | None:
    """An addition or subtraction (`node`) of a module's output of shape (N, 1), taken as it is, and a tensor of shape
    (N,): broadcasting makes (N, N), every example's column value against every example's row value. A matrix
    factorisation's bias `nn.Embedding(users, 1)(u)` added to its (N,) dot products without `.squeeze(-1)`.
    {"module", "column_shape", "row_shape", "output_shape", "batch", "column_added_to_row": True} or None (a pairwise
    sum written `sq[:, None] + sq`, a distance matrix's, makes its column with an unsqueeze, on purpose)."""
    shape = output_shape(node)
    if not shape or len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
        return None
    inputs = [(child, nr) for child, nr in node.next_functions if child is not None]
    if len(inputs) != 2:
        return None
    batch, shapes = shape[0], [output_shape(child, nr) for child, nr in inputs]
    for (child, _), own, other in zip(inputs, shapes, shapes[::-1]):
        module = module_outputs.get(child)
        if module is not None and own == (batch, 1) and other == (batch,):
            found = {"module": module, "column_shape": [batch, 1], "row_shape": [batch], "output_shape": list(shape)}
            return {**found, "batch": batch, "column_added_to_row": True}
    return None


def rows_written_twice(node) -> tuple[int, torch.Tensor] | None:
    """An `index_put` that does not accumulate (`agg[dst] += m[src]`, `x[idx] = v`) or an `index_copy` writing
    computed values (with a graph) at a 1-D integer index: (the writes, how many of them repeat an index already
    written, on the device). Where an index repeats, the forward keeps one of the values written there and drops the
    others, while the backward sends each of them the gradient of the place it was written to: the gradient is not
    the forward's. None for other ops, an accumulating write, a mask, or values with no graph."""
    op = op_name(node)
    if op == "index_put":
        indices, values = (
            saved_value(node, "_saved_indices"),
            node.next_functions[-1][0] if node.next_functions else None,
        )
        if saved_value(node, "_saved_accumulate") or not indices or len(indices) != 1:
            return None
        index = indices[0]
    elif op == "index_copy":
        index, values = saved_value(node, "_saved_index"), node.next_functions[-1][0] if node.next_functions else None
    else:
        return None
    if values is None or not isinstance(index, torch.Tensor) or index.dim() != 1 or index.numel() < 2:
        return None
    if index.dtype == torch.bool or index.is_floating_point():
        return None
    ordered = index.detach().sort().values
    return index.numel(), (ordered[1:] == ordered[:-1]).sum()


def softmax_over_the_examples(node, batch: int) -> dict | None:
    """A softmax over dim 0 of a tensor of 2 or more axes whose first holds the batch's `batch` examples and whose
    second does not: attention pooling's `softmax(scores, dim=0)` over (N, T) scores, meant over the T positions.
    Each example's weights then depend on the other examples of the batch, and sum to 1 across them, not across its
    own positions. {"input_shape", "output_shape", "batch", "softmax_dim": 0}, or None (a sequence-first (T, N)
    layout normalises over T on dim 0 on purpose)."""
    result = saved_value(node, "_saved_result")
    if not isinstance(result, torch.Tensor) or result.dim() < 2 or batch < 2:
        return None
    shape = list(result.shape)
    if saved_dim(node) % result.dim() != 0 or shape[0] != batch or shape[1] == batch:
        return None
    return {"input_shape": shape, "output_shape": shape, "batch": batch, "softmax_dim": 0}


# loss operations that broadcast their inputs against each other: the loss functions (through an `expand` made by
# their broadcast_tensors, which PyTorch warns about) and the arithmetic of a hand-written one
BROADCASTING_LOSSES = {"mse_loss", "huber_loss", "smooth_l1_loss"}
BROADCASTING_ARITHMETIC = {"sub", "rsub", "add", "mul", "div"}


def prediction_broadcast(loss_nodes, module_outputs) -> dict | None:
    """A loss that compares a module's output of shape (N, 1) with a target of shape (N,), or of shape (N,) with a
    target of shape (N, 1), or of shape (N, L) with a target of shape (N, 1, L): broadcasting lines them up as (N, N,
    ...), every prediction against every target of the batch.
    Found at the loss operation that does it: the `expand` under `mse_loss`, `huber_loss`, `smooth_l1_loss` (their
    broadcast_tensors), or `sub` in a hand-written `(pred - y) ** 2` (and `l1_loss`, which PyTorch writes so). Only a
    module's output taken as it is, against a constant: a pairwise loss says `x[:, None]` (an unsqueeze, not a module
    output), or compares the model's outputs with each other (`scores - scores.t()`: both need gradient)."""
    for node in loss_nodes:
        op = op_name(node)
        if op not in BROADCASTING_LOSSES and op not in BROADCASTING_ARITHMETIC:
            continue
        inputs = [(child, nr) for child, nr in node.next_functions if child is not None]
        if len(inputs) != 1:
            continue
        compared, (base, base_nr) = node, inputs[0]
        if op in BROADCASTING_LOSSES:  # (what it compares is the expand beneath it, if any)
            if op_name(base) != "expand" or len(base.next_functions) != 1 or base.next_functions[0][0] is None:
                continue
            compared, (base, base_nr) = base, base.next_functions[0]
        before, after = output_shape(base, base_nr), output_shape(compared)
        if not before or after is None:
            continue
        module = module_outputs.get(base)
        if module is None and len(before) == 1:  # (an (N,) squeezed from the output: `model(x).squeeze(-1)`)
            module = module_outputs.get(beneath_reshapes(base))
        if module is None:  # (picked from the output: a DQN's `net(s).gather(1, a[:, None])`, (N, 1) against (N,))
            module = module_outputs.get(beneath_reshapes(base, also=PICKS))
        if module is None:
            continue
        batch = before[0]
        column = len(before) == len(after) >= 2 and before[1] == 1  # (N, 1) against (N,)
        row = len(before) == 1 and len(after) == 2  # (N,) against (N, 1)
        # ((N, L) against (N, 1, L): an autoencoder's (N, L) output against its (N, C, L) input, C = 1)
        grown = len(after) == len(before) + 1 >= 3 and tuple(after[2:]) == tuple(before[1:])
        if batch > 1 and (column or row or grown) and after[:2] == (batch, batch):
            return {
                "op": op,
                "module": module,
                "prediction": list(before),
                "compared_as": list(after),
                "by_loss_function": op in BROADCASTING_LOSSES or _squared_over_a_variance(node, loss_nodes),
            }
    return None


def _squared_over_a_variance(difference, loss_nodes) -> bool:
    """Whether a difference (prediction - target) is squared and divided by a computed variance that is also under a
    `log` of the same loss: a Gaussian negative log-likelihood, `0.5 * (log(var) + (x - y) ** 2 / var)`, the graph
    `F.gaussian_nll_loss` makes (in Python: it checks the variance's shape, not the target's). Its broadcast is no
    energy distance meant to compare every pair: a mistake, as in a loss function."""
    readers: dict = {}
    for node in loss_nodes:
        for child, _ in node.next_functions:
            if child is not None:
                readers.setdefault(child, []).append(node)
    squares = [n for n in readers.get(difference, ()) if op_name(n) == "pow"]
    divisions = [n for square in squares for n in readers.get(square, ()) if op_name(n) == "div"]
    logged = {child for n in loss_nodes if op_name(n) == "log" for child, _ in n.next_functions if child is not None}
    for division in divisions:
        denominators = [child for child, _ in division.next_functions[1:] if child is not None]
        if any(beneath_reshapes(d) in {beneath_reshapes(c) for c in logged} for d in denominators):
            return True
    return False


# what a prediction squashed by these can reach: (lowest, highest), None for no bound
OUTPUT_RANGES = {
    "relu": (0.0, None), "sigmoid": (0.0, 1.0), "tanh": (-1.0, 1.0), "softplus": (0.0, None), "exp": (0.0, None),
}  # fmt: skip
REGRESSION_LOSSES = ("mse_loss", "huber_loss", "smooth_l1_loss")  # (their nodes keep the target)


SUMMING_LOSSES = ("nll_loss", "mse_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy", "huber_loss",
                  "smooth_l1_loss")  # fmt: skip
REDUCTION_SUM = 2  # (PyTorch's enum: 0 none, 1 mean, 2 sum)


def summed_loss(root) -> dict | None:
    """{"loss", "terms"} when the backward pass starts from a loss function called with `reduction="sum"`, as it is:
    its gradient is `terms` times the mean's. Else None."""
    node = beneath_reshapes(root)  # (not beneath constant factors: `mse_loss(..., reduction="sum") / n` is a mean)
    if op_name(node) not in SUMMING_LOSSES or getattr(node, "_saved_reduction", None) != REDUCTION_SUM:
        return None
    shape = output_shape(node.next_functions[0][0]) if node.next_functions and node.next_functions[0][0] else None
    if not shape:
        return None
    terms = shape[0] if op_name(node) == "nll_loss" else math.prod(shape)  # (nll_loss: one term per example)
    return {"loss": op_name(node), "terms": int(terms)}


def examples_no_branch_takes(loss_nodes) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(the share of examples neither condition takes, the share the second takes), on the device, when the loss adds
    two `torch.where` terms that each keep a computed value where their condition holds and 0 elsewhere:
    `where(c1, a, 0) + where(c2, b, 0)`, as `cosine_embedding_loss` is computed (c1: target == 1, c2: target == -1).
    An example neither condition holds for adds 0 to the loss and passes no gradient. Else None."""
    for node in loss_nodes:
        if op_name(node) != "add" or len(node.next_functions) != 2:
            continue
        wheres = [child for child, _ in node.next_functions]
        if not all(w is not None and op_name(w) == "where" for w in wheres):  # (None: an operand with no graph)
            continue
        conditions = [saved_value(w, "_saved_condition") for w in wheres]
        one_sided = all(len(w.next_functions) == 2 and w.next_functions[1][0] is None for w in wheres)
        if not one_sided or not all(isinstance(c, torch.Tensor) and c.dtype == torch.bool for c in conditions):
            continue
        # (cosine_embedding_loss's own terms: 1 - cos where target == 1, clamp_min(cos - margin, 0) where -1; a masked
        # loss beside a guard that rarely fires is another where-pair, and no mistake)
        terms = [op_name(w.next_functions[0][0]) for w in wheres]
        if terms[0] not in ("sub", "rsub") or terms[1] != "clamp_min":
            continue
        first, second = conditions
        if first.shape != second.shape or first.numel() == 0:
            continue
        neither = (~(first | second)).float().mean()
        return neither, second.float().mean()
    return None


def gather_across_batch(loss_nodes, module_outputs) -> tuple[dict, torch.Tensor] | None:
    """({"module", "batch", "columns"}, the share of the output's rows the gather reads, on the device) when the loss
    picks entries of a module's (N, C) output with `gather` along dim 0, the batch axis, with one index per example
    and C < N columns: `q.gather(0, a.unsqueeze(1))` where `gather(1, ...)` was meant (a DQN's Q-value of the action
    taken). Each example then reads another example's row (the row numbered by its action), and only those rows get a
    gradient. Else None."""
    for node in loss_nodes:
        if op_name(node) != "gather" or getattr(node, "_saved_dim", None) not in (0, -2):
            continue
        index, source = saved_value(node, "_saved_index"), node.next_functions[0][0] if node.next_functions else None
        shape = output_shape(source) if source is not None else None
        if not isinstance(index, torch.Tensor) or shape is None or len(shape) != 2 or index.dim() != 2:
            continue
        batch, columns = shape
        module = module_outputs.get(beneath_reshapes(source))
        if module is None or not 2 <= columns < batch or tuple(index.shape) != (batch, 1):
            continue
        rows = torch.zeros(batch, device=index.device).index_fill_(0, index.reshape(-1), 1.0)
        # (indices as large as the columns or larger pick examples on purpose, the hardest positive of a triplet
        # loss: counted as every row read)
        read = torch.where(index.max() < columns, rows.mean(), torch.ones((), device=index.device))
        return {"module": module, "batch": batch, "columns": columns}, read
    return None


def targets_out_of_reach(loss_nodes, module_outputs) -> dict | None:
    """A regression loss (mse, huber, smooth L1) whose prediction comes straight out of a ReLU, sigmoid or tanh,
    compared with targets: {"loss", "activation", "module", "range", "target"}, the target (detached) to measure
    against the range the prediction can reach, or None. Targets below 0 behind a ReLU can never be fitted: the
    predictions pushed towards them sit at 0, where the ReLU passes no gradient."""
    rate_twice = None
    for node in loss_nodes:
        op = op_name(node)
        if op == "sub" and rate_twice is None:
            rate_twice = rate_exponentiated_twice(node, module_outputs)
        if op not in REGRESSION_LOSSES:
            continue
        inputs = [child for child, _ in node.next_functions if child is not None]
        target = saved_value(node, "_saved_target")
        if not inputs or not isinstance(target, torch.Tensor) or target.requires_grad or target.numel() == 0:
            continue
        squashing = beneath_reshapes(inputs[0], also=PICKS)  # (a DQN's Q of the actions taken: `q.gather(1, a)`)
        activation = op_name(squashing)
        if activation not in OUTPUT_RANGES:
            continue
        return {"loss": op, "activation": activation, "module": module_outputs.get(squashing),
                "range": list(OUTPUT_RANGES[activation]), "target": target.detach()}  # fmt: skip
    return rate_twice


def rate_exponentiated_twice(node, module_outputs) -> dict | None:
    """`poisson_nll_loss(torch.exp(out), y)`: with log_input=True (its default) the loss computes
    exp(input) - y * input, so given a rate already exponentiated it predicts the rate exp(exp(out)), never below 1.
    `node` is that subtraction; the result is as `targets_out_of_reach`'s, or None."""
    if op_name(node) != "sub" or len(node.next_functions) != 2:
        return None
    (rate, _), (product, _) = node.next_functions
    if rate is None or product is None or op_name(rate) != "exp" or op_name(product) != "mul":
        return None
    log_rate = rate.next_functions[0][0]  # (the input the loss takes for a log-rate)
    if log_rate is None or not any(child is log_rate for child, _ in product.next_functions):
        return None
    inner = beneath_reshapes(log_rate, also=SELECTIONS)
    target = saved_value(product, "_saved_self")  # (y * input: y is the product's first operand)
    if op_name(inner) != "exp" or not isinstance(target, torch.Tensor) or target.requires_grad or not target.numel():
        return None
    return {"loss": "poisson_nll_loss", "activation": "exp", "module": module_outputs.get(inner),
            "range": [1.0, None], "target": target.detach()}  # fmt: skip


def divergence_sides(node) -> tuple | None:
    """(target, prediction): the nodes of the two distributions `F.kl_div(prediction, target)` compares, where `node`
    is the subtraction (or product) it is computed by: xlogy(t, t) - t * p, or with `log_target=True`,
    exp(t) * (t - p). None for any other node, or a target that carries no graph (made under `no_grad`, detached)."""
    inputs = [child for child, _ in node.next_functions]
    if len(inputs) != 2 or None in inputs:
        return None
    first, second = inputs
    if op_name(node) == "sub" and op_name(first) == "xlogy" and op_name(second) == "mul":
        target = first.next_functions[0][0]
        below = [child for child, _ in second.next_functions]
        if target is not None and len(below) == 2 and below[0] is target and below[1] is not None:
            return target, below[1]
    if op_name(node) == "mul" and op_name(first) == "exp" and op_name(second) == "sub":
        target = first.next_functions[0][0]
        below = [child for child, _ in second.next_functions]
        if target is not None and len(below) == 2 and below[0] is target and below[1] is not None:
            return target, below[1]
    return None


def modules_upstream(node, names, limit: int = 512) -> set:
    """The watched modules whose outputs lie upstream of `node` (the first `limit` nodes looked at)."""
    found, seen, queue = set(), {node}, [node]
    for current in queue:
        if len(seen) > limit:
            break
        if current in names:
            found.add(names[current])
        for child, _ in current.next_functions:
            if child is not None and child not in seen and type(child) is not PARAMETER_LEAF:
                seen.add(child)
                queue.append(child)
    return found


def rate_read_as_rate(log_node, nodes) -> bool:
    """Whether `log_node` is the log of `poisson_nll_loss(input, y, log_input=False)`, which computes
    input - y * log(input + eps), reading its input as the rate itself: among `nodes`, a subtraction of a product
    holding that log from the very input the log was taken of (plus its eps). Given a log-rate (any real number),
    the log of its negative entries is NaN."""
    if op_name(log_node) != "log" or not log_node.next_functions or log_node.next_functions[0][0] is None:
        return False
    shifted = log_node.next_functions[0][0]
    rate = shifted.next_functions[0][0] if op_name(shifted) == "add" and shifted.next_functions else None
    for node in nodes:
        if rate is None or op_name(node) != "sub" or len(node.next_functions) != 2:
            continue
        (first, _), (product, _) = node.next_functions
        if first is rate and op_name(product) == "mul" and any(c is log_node for c, _ in product.next_functions):
            return True
    return False


def regression_target(loss_nodes) -> tuple[str, torch.Tensor, torch.Tensor] | None:
    """(loss, prediction, target), detached, of the first regression loss (mse, huber, smooth L1) on the loss side
    that saved both, or None: to compare the targets' scale with the predictions'."""
    for node in loss_nodes:
        op = op_name(node)
        if op not in REGRESSION_LOSSES:
            continue
        prediction, target = saved_value(node, "_saved_self"), saved_value(node, "_saved_target")
        if isinstance(prediction, torch.Tensor) and isinstance(target, torch.Tensor) and target.numel():
            if target.is_floating_point() and not target.requires_grad:
                return op, prediction.detach(), target.detach()
    return None


def positive_weight(loss_nodes) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(pos_weight, target), detached, of the first `binary_cross_entropy_with_logits` on the loss side given a
    pos_weight, or None. A positive example's loss is pos_weight * -log(sigmoid(x)): weighted 0, it passes no
    gradient back at all (`n_pos // n_neg`, an integer division the wrong way round, is 0)."""
    for node in loss_nodes:
        if op_name(node) != "binary_cross_entropy_with_logits":
            continue
        weight, target = saved_value(node, "_saved_pos_weight"), saved_value(node, "_saved_target")
        if isinstance(weight, torch.Tensor) and isinstance(target, torch.Tensor) and weight.numel():
            return weight.detach(), target.detach()
    return None


def class_weight(loss_nodes) -> tuple[torch.Tensor, torch.Tensor, int] | None:
    """(weight, target, ignore_index) of the first `nll_loss` on the loss side given class weights (`cross_entropy(...,
    weight=w)`), or None. An example's loss is multiplied by its class's weight: a class weighted 0 sends no gradient
    back at all (weights from `n // count`, an integer division, are 0 for every class above the mean count)."""
    for node in loss_nodes:
        if op_name(node) not in ("nll_loss", "nll_loss2_d"):  # (op_name spells NllLoss2dBackward "nll_loss2_d")
            continue
        weight, target = saved_value(node, "_saved_weight"), saved_value(node, "_saved_target")
        if isinstance(weight, torch.Tensor) and isinstance(target, torch.Tensor) and weight.numel() and target.numel():
            return weight.detach(), target.detach(), signed(node._saved_ignore_index)
    return None


def huber_errors(loss_nodes) -> tuple[float, torch.Tensor] | None:
    """(delta, prediction - target, detached) of the first `huber_loss` on the loss side, or None. Past delta its
    derivative is delta * sign(error): a delta far below the errors scales every example's gradient down to it."""
    for node in loss_nodes:
        if op_name(node) != "huber_loss":
            continue
        prediction, target = saved_value(node, "_saved_self"), saved_value(node, "_saved_target")
        delta = getattr(node, "_saved_delta", None)
        if isinstance(prediction, torch.Tensor) and isinstance(target, torch.Tensor) and isinstance(delta, float):
            if prediction.numel() and prediction.is_floating_point() and delta > 0:
                return delta, (prediction.detach() - target.detach()).float()
    return None


def multilabel_margin_target(loss_nodes) -> torch.Tensor | None:
    """The target, detached, of the first `multilabel_margin_loss` on the loss side, or None. Its target holds class
    indices, each row's list ended by -1 (`[3, 0, -1, ...]`: classes 3 and 0), not a multi-hot row of 0s and 1s."""
    for node in loss_nodes:
        if op_name(node) == "multilabel_margin_loss":
            target = saved_value(node, "_saved_target")
            return target.detach() if isinstance(target, torch.Tensor) and target.dim() >= 1 else None
    return None


def soft_targets(root) -> tuple[torch.Tensor, int, str] | None:
    """(target, dim, loss), the target detached, of a loss that compares a softmax's class probabilities with a
    target of the same shape, at the backward root: a cross-entropy given class probabilities (PyTorch builds
    `cross_entropy(logits, target)` with a float target as -sum(target * log_softmax(logits, dim)) / N, and a
    hand-written one is the same graph), or `binary_cross_entropy` of a softmax's output. Followed down from the root
    through sums, means, negations, products and quotients by numbers, and the terms of a sum of losses; None when
    there is none. (A per-row division by a tensor, as in a supervised contrastive loss's mean over each row's
    positives, normalises the target: not followed.)"""
    stack, looked = [root], 0
    while stack and looked < 32:
        node, looked = stack.pop(), looked + 1
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if op in ("add", "sub"):
            stack.extend(inputs)
        elif op == "binary_cross_entropy" and inputs:
            found = _softmax_given_to_bce(node, inputs[0])
            if found is not None:
                return found
        elif len(inputs) != 1:
            continue
        elif op in ("neg", "sum", "mean") or (op == "div" and _constant_factor(node) is not None):
            stack.append(inputs[0])
        elif op == "mul":
            below = beneath_reshapes(inputs[0])
            # (a contrastive loss's similarities over a batch, supervised with k positives a row, aim at 1/k each by
            # design: not a classifier's logits)
            if op_name(below) == "log_softmax" and attention_scores(below) is None:
                result = saved_value(below, "_saved_result")
                for name in ("_saved_other", "_saved_self"):
                    target = saved_value(node, name)
                    if isinstance(target, torch.Tensor) and isinstance(result, torch.Tensor):
                        if target.is_floating_point() and not target.requires_grad and target.shape == result.shape:
                            return target.detach(), saved_dim(below), "cross_entropy"
            elif _constant_factor(node) is not None:
                stack.append(inputs[0])
    return None


def _softmax_given_to_bce(node, prediction) -> tuple[torch.Tensor, int, str] | None:
    """(target, dim, "binary_cross_entropy") when `binary_cross_entropy` is given a softmax's output (a multi-label
    head ending in a softmax, where each tag wants a sigmoid of its own), reached through reshapes and a clamp away
    from 0 and 1 (`softmax(z).clamp(1e-7, 1 - 1e-7)`); else None."""
    below = beneath_reshapes(prediction)
    if op_name(below) in ("clamp", "clamp_min", "clamp_max") and below.next_functions:
        below = beneath_reshapes(below.next_functions[0][0])
    if below is None or op_name(below) != "softmax" or attention_scores(below) is not None:
        return None
    target, result = saved_value(node, "_saved_target"), saved_value(below, "_saved_result")
    if not (isinstance(target, torch.Tensor) and isinstance(result, torch.Tensor)) or target.shape != result.shape:
        return None
    return target.detach(), saved_dim(below), "binary_cross_entropy"


def ctc_input(loss_nodes) -> tuple[torch.Tensor, tuple] | None:
    """(input, input lengths) `ctc_loss` was given, the input detached, (T, N, C), from its node among the loss's; or
    None. The frames past each sequence's length are padding, whatever they hold."""
    for node in loss_nodes:
        if op_name(node) == "ctc_loss":
            log_probs, lengths = saved_value(node, "_saved_log_probs"), saved_value(node, "_saved_input_lengths")
            if isinstance(log_probs, torch.Tensor) and log_probs.is_floating_point() and log_probs.dim() == 3:
                return log_probs.detach(), tuple(lengths) if isinstance(lengths, (tuple, list)) else ()
    return None


def ctc_targets(loss_nodes) -> dict | None:
    """What `ctc_loss` was given to align, read from its node among the loss's: {"blank", "with_blank", "too_long",
    "sequences", "zero_infinity"}: the blank's index, how many target sequences hold it as a label (a blank that is a
    class of its own: `nn.CTCLoss()` keeps blank=0 when the model's blank is its last class), and how many need more
    frames than their input has (each label one frame, and a blank between two equal labels: no alignment exists,
    and the loss is infinite), and "frames", "longest_input": the frames given, and the most any `input_lengths` lets
    the loss read. None without a ctc_loss, or with targets it cannot read."""
    for node in loss_nodes:
        if op_name(node) != "ctc_loss":
            continue
        targets, blank = saved_value(node, "_saved_targets"), saved_value(node, "_saved_blank")
        target_lengths = saved_value(node, "_saved_target_lengths")
        input_lengths = saved_value(node, "_saved_input_lengths")
        if not isinstance(targets, torch.Tensor) or not isinstance(blank, int):
            return None
        if not isinstance(target_lengths, (tuple, list)) or not isinstance(input_lengths, (tuple, list)):
            return None
        if len(target_lengths) != len(input_lengths):
            return None
        flat = targets.detach().cpu()
        if flat.dim() == 2:  # (N, S) padded: each row's first target_length entries
            sequences = [flat[i, :length] for i, length in enumerate(target_lengths)]
        else:  # (sum of the lengths,) concatenated
            sequences = list(torch.split(flat, list(target_lengths)))
        with_blank = sum(bool((sequence == blank).any()) for sequence in sequences)
        repeats = [int((sequence[1:] == sequence[:-1]).sum()) if len(sequence) > 1 else 0 for sequence in sequences]
        too_long = sum(len(s) + r > frames for s, r, frames in zip(sequences, repeats, input_lengths))
        zero_infinity = saved_value(node, "_saved_zero_infinity")
        log_probs = saved_value(node, "_saved_log_probs")  # ((T, N, C): the frames the model gave)
        frames = int(log_probs.shape[0]) if isinstance(log_probs, torch.Tensor) and log_probs.dim() == 3 else None
        return {"blank": blank, "with_blank": with_blank, "too_long": too_long, "sequences": len(sequences),
                "zero_infinity": bool(zero_infinity), "frames": frames,
                "longest_input": max(input_lengths) if input_lengths else None}  # fmt: skip
    return None


SCORE_SHAPING = ("masked_fill", "add", "sub")  # a mask or a position bias added to (or filled into) the scores


def attention_scores(softmax_node) -> tuple[float, torch.Tensor | None] | None:
    """(the constant the scores under a softmax were multiplied by, the mask filled into them or None), when they are
    attention scores, or similarities: a product of two computed tensors (`bmm`, `mm`), reached through reshapes,
    products and quotients by numbers, and masks or biases added or filled in (the first term of a sum that is such
    a product or a scaling of one is followed). `q @ k.T / sqrt(d)` gives 1/sqrt(d); `masked_fill(mask, -inf)` its
    mask, True where filled. None for any other softmax (a classifier's, a router's, a Gumbel-softmax's over logits
    from a linear layer, `x @ W.T` with W a weight)."""
    scale, mask = 1.0, None
    for node, op, inputs in _beneath_a_softmax(softmax_node):
        if op in ("bmm", "baddbmm", "mm"):  # (baddbmm: nn.MultiheadAttention's, adding its mask)
            # (two computed tensors: not `x @ W.T` with W a weight, whose node is a parameter's under a transpose)
            computed = [child for child in inputs if type(beneath_reshapes(child)) is not PARAMETER_LEAF]
            if len(computed) != 2:
                return None
            for factor in computed:  # (PyTorch's unfused attention scales q and k by sqrt(1 / sqrt(d)) each)
                under = beneath_reshapes(factor, also=("transpose", "t", "permute"))
                if op_name(under) == "mul" and len([c for c, _ in under.next_functions if c is not None]) == 1:
                    scale *= _constant_factor(under) or 1.0
            return scale, mask
        if op == "masked_fill" and mask is None:
            filled = saved_value(node, "_saved_mask")
            mask = filled.detach() if isinstance(filled, torch.Tensor) and filled.dtype == torch.bool else None
        if op in ("mul", "div") and len(inputs) == 1:
            factor = _constant_factor(node)
            if not factor:
                return None
            scale = scale * factor if op == "mul" else scale / factor
        elif op not in SCORE_SHAPING or not inputs:
            return None
    return None


def _beneath_a_softmax(softmax_node, limit: int = 8):
    """(node, its op, its inputs) of each operation under a softmax, reshapes passed over, down towards its scores:
    after a sum (scores + bias) the branch that is a product or a scaling is followed, else the first input."""
    node = softmax_node.next_functions[0][0] if softmax_node.next_functions else None
    for _ in range(limit):
        if node is None:
            return
        node = beneath_reshapes(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        yield node, op_name(node), inputs
        if not inputs:
            return
        node = next((child for child in inputs if op_name(beneath_reshapes(child)) in ("bmm", "mul", "div")), inputs[0])


def masked_scores(softmax_node) -> tuple[torch.Tensor | None, object, object] | None:
    """(the keys each query may read, True where it may, or None for every key; the two factors' nodes) of a softmax
    over `q @ k^T` scores reached only through reshapes, scalings, `masked_fill` (its mask, True where shut) and the
    addition of a constant (a float mask, -inf where shut, nn.MultiheadAttention's on its unfused path: the keys it
    shuts are those the softmax gave exactly 0). None when a computed tensor was added to the scores (a learnt position
    bias: which keys it shuts is not read), or for `baddbmm` (whose added mask its node does not keep)."""
    shut, added = None, False
    for node, op, inputs in _beneath_a_softmax(softmax_node):
        if op in ("bmm", "mm", "matmul"):
            if len(inputs) != 2 or any(type(beneath_reshapes(child)) is PARAMETER_LEAF for child in inputs):
                return None
            if added:  # (what the float mask shut: the softmax's exact zeros; a masked_fill's too)
                probabilities = saved_value(softmax_node, "_saved_result")
                if not isinstance(probabilities, torch.Tensor):
                    return None
                return probabilities.detach() > 0, inputs[0], inputs[1]
            return (None if shut is None else ~shut), inputs[0], inputs[1]
        if op == "add" and len(inputs) == 1 and not added:
            added = True
        elif op == "masked_fill" and shut is None:
            filled = saved_value(node, "_saved_mask")
            if not isinstance(filled, torch.Tensor) or filled.dtype != torch.bool:
                return None
            shut = filled.detach()
        elif not (op in ("mul", "div") and len(inputs) == 1 and _constant_factor(node)):
            return None
    return None


def is_attention_kernel(op: str) -> bool:
    """Whether an op is a fused attention's (`F.scaled_dot_product_attention`, which nn.MultiheadAttention and
    nn.Transformer call): softmax(q k^T / sqrt(d) + mask) v in one kernel, no softmax node of its own."""
    return op.startswith("scaled_dot_product_")


def attention_kernel_keys(node) -> tuple[torch.Tensor | None, object, object, int] | None:
    """(the keys each query may read, True where it may, or None for every key; the query's node; the key's node;
    the number of positions) of a fused attention's node, or None under `is_causal=True` or when the query and the
    keys differ in length. A float mask is added to the scores: -inf (or a large negative number) shuts a key."""
    if saved_value(node, "_saved_is_causal") is True:
        return None
    query, key = saved_value(node, "_saved_query"), saved_value(node, "_saved_key")
    inputs = [child for child, _ in node.next_functions[:2]]
    if not isinstance(query, torch.Tensor) or not isinstance(key, torch.Tensor) or query.dim() < 2 or len(inputs) < 2:
        return None
    length = query.shape[-2]
    if key.shape[-2] != length:
        return None
    told, mask = _kernel_mask(node)
    if not told:
        return None
    if isinstance(mask, torch.Tensor) and mask.dim() >= 2:
        allowed = mask.detach() if mask.dtype == torch.bool else mask.detach() > -1e4
    else:
        allowed = None
    return allowed, inputs[0], inputs[1], length


PARAMETER_SLICES = ("split", "split_with_sizes", "unsafe_split", "chunk", "slice", "select", "t", "transpose")


def _data_upstream(start, limit: int) -> set:
    """The nodes within `limit` operations upstream of `start`, parameters and the pieces cut from them aside (the
    query's and the key's parts of nn.MultiheadAttention's one `in_proj_weight`)."""
    found, frontier = {start}, [start]
    for _ in range(limit):
        frontier = [
            child
            for current in frontier
            for child, _ in current.next_functions
            if child is not None
            and child not in found
            and type(beneath_reshapes(child, also=PARAMETER_SLICES)) is not PARAMETER_LEAF
        ]
        found.update(frontier)
    return found


KERNEL_ROWS = 256  # query rows of a fused attention whose weights are recomputed (spread over the sequence)
KERNEL_SLICES = 8  # ... of its first (example, head) slices


KERNEL_MASKS = ("_saved_attn_mask", "_saved_attn_bias")  # (the CPU kernel's; the CUDA efficient and cuDNN kernels')


def float_mask_range(node) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(its least, its largest entry) of the float mask a fused attention's node kept, as 0-d tensors where the mask
    lives; None for a boolean mask, or none. A float mask is added to the scores: only -inf, or a large negative
    number, shuts a key; a 0/1 mask (`torch.triu(torch.ones(T, T), 1)`, the shape of a causal mask) shuts none."""
    told, mask = _kernel_mask(node)
    if not told or not isinstance(mask, torch.Tensor) or not mask.is_floating_point() or mask.numel() == 0:
        return None
    mask = mask.detach()
    return mask.amin(), mask.amax()


def _kernel_mask(node) -> tuple[bool, torch.Tensor | None]:
    """(whether the fused attention's node tells its mask, that mask or None for none). A kernel whose node keeps no
    mask attribute (CUDA's flash kernel, which takes none) does not tell: its mask, if any, is unknown."""
    for name in KERNEL_MASKS:
        try:
            if hasattr(node, name):
                mask = saved_value(node, name)
                return True, mask if isinstance(mask, torch.Tensor) else None
        except RuntimeError:  # (freed)
            return False, None
    return False, None


def kernel_weights(node) -> tuple[torch.Tensor, torch.Tensor, float, int] | None:
    """A fused attention's weights, which its kernel never writes out, recomputed from the queries and keys its node
    kept: (softmax(q k^T * scale + mask) for up to KERNEL_ROWS query rows of its first KERNEL_SLICES (example, head)
    slices, the number of keys each of those rows may read, the scale, the heads' width d). None when the node kept no
    queries or keys of a known layout (a nested tensor's, say)."""
    query, key = saved_value(node, "_saved_query"), saved_value(node, "_saved_key")
    if not isinstance(query, torch.Tensor) or not isinstance(key, torch.Tensor) or query.dim() < 2 or key.dim() < 2:
        return None
    if query.is_nested or key.is_nested or query.shape[-1] != key.shape[-1] or query.shape[:-2] != key.shape[:-2]:
        return None
    told, mask = _kernel_mask(node)
    if not told:
        return None
    width, queries, keys = query.shape[-1], query.shape[-2], key.shape[-2]
    scale = saved_value(node, "_saved_scale")
    scale = float(scale) if scale is not None else 1 / math.sqrt(width)
    rows = torch.arange(0, queries, max(1, queries // KERNEL_ROWS), device=query.device)
    q = query.detach().reshape(-1, queries, width)[:KERNEL_SLICES, rows].float()
    k = key.detach().reshape(-1, keys, width)[:KERNEL_SLICES].float()
    scores = (q @ k.transpose(-2, -1)) * scale
    allowed = None
    if isinstance(mask, torch.Tensor) and mask.dim() >= 2:
        grid = _first_slices(mask.detach(), query.shape[:-2], queries, keys)
        if grid is not None:
            grid = grid[:, rows]
            allowed = grid if grid.dtype == torch.bool else grid > -1e4
            scores = scores.masked_fill(~grid, float("-inf")) if grid.dtype == torch.bool else scores + grid.float()
    elif saved_value(node, "_saved_is_causal") is True:  # (the top-left causal mask: query i reads keys 0..i)
        allowed = torch.arange(keys, device=query.device)[None, :] <= rows[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
    counts = torch.full(scores.shape[:-1], float(keys), device=scores.device)  # (a mask that did not broadcast: all)
    if allowed is not None:
        counts = torch.broadcast_to(allowed, scores.shape).sum(-1).float()
    return torch.softmax(scores, dim=-1), counts, scale, width


def _first_slices(mask: torch.Tensor, leading: tuple, queries: int, keys: int) -> torch.Tensor | None:
    """The first KERNEL_SLICES (example, head) slices of a mask broadcast over the scores' leading axes, (slices,
    queries, keys): only those are gathered (a per-example mask broadcast over the heads is not copied whole). None
    when it does not broadcast to the scores."""
    try:
        grid = torch.broadcast_to(mask, tuple(leading) + (queries, keys))  # (a view: nothing copied)
    except RuntimeError:
        return None
    count = min(KERNEL_SLICES, math.prod(leading))
    if not leading:
        return grid[None]
    index = torch.unravel_index(torch.arange(count, device=mask.device), tuple(leading))
    return grid[index]


def same_source(one, other, limit: int = 8) -> bool:
    """Whether two nodes are computed from one tensor within `limit` operations (parameters aside): a
    self-attention's queries and keys, both projections of one sequence, and not a cross-attention's (queries of the
    decoder's, keys of the encoder's)."""
    if one is None or other is None:
        return False
    return not _data_upstream(one, limit).isdisjoint(_data_upstream(other, limit))


def keys_ahead(allowed: torch.Tensor | None, length: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """For a self-attention over `length` positions: (the share of the queries that may read the position right after
    their own, the furthest ahead any query may read), as tensors where the mask lives. (0, 0) under a causal mask;
    (1, 1) under `triu(ones, diagonal=2)` taken for the mask where `diagonal=1` is meant; (1, length - 1) with no mask.
    Masks per example or head (padding) count a key readable when any of them lets it be read."""
    if allowed is None:
        return torch.ones((), device=device), torch.tensor(float(length - 1), device=device)
    grid = allowed.reshape(-1, *allowed.shape[-2:]).any(0)  # (readable in any example or head; then broadcast the
    grid = torch.broadcast_to(grid, (length, length))  # rows of a key-padding mask, (..., 1, S), to each query)
    positions = torch.arange(length, device=grid.device)
    ahead = (positions[None, :] - positions[:, None]) * grid  # (j - i where query i may read key j)
    return grid.diagonal(1).float().mean(), ahead.amax().float()


def next_token_targets(loss_nodes, start, budget: int = 4096) -> torch.Tensor | None:
    """The share of a classification loss's targets that are the next tokens of the sequence an embedding upstream of
    `start` reads (`y = x[:, 1:]`, a language model's), or None when no such pair is found: the targets of the first
    `nll_loss` (cross_entropy's) with integer targets, against the indices of each embedding of a (batch, positions)
    grid met within `budget` nodes upstream of `start` (a self-attention's keys: a seq2seq encoder's reach the
    source's embedding only); the largest share over them (a positional embedding's are no grid)."""
    target, ignored = None, None
    for node in loss_nodes:
        if op_name(node) in ("nll_loss", "nll_loss2_d"):  # (2_d: logits (B, V, L) and targets (B, L), a conv model's)
            found = saved_value(node, "_saved_target")
            if isinstance(found, torch.Tensor) and not found.is_floating_point():
                target, ignored = found.detach(), signed(node._saved_ignore_index)
                break
    if target is None or start is None:
        return None
    shares = [share for ids in _embedded_ids(start, budget) for share in _next_token_share(ids, target, ignored)]
    return torch.stack(shares).amax() if shares else None


def _embedded_ids(start, budget: int) -> list:
    """The index tensors the embeddings upstream of `start` looked up, within `budget` nodes (the parameters' own
    leaves not entered)."""
    found, seen, frontier = [], {start}, [start]
    while frontier and len(seen) < budget:
        node = frontier.pop()
        if op_name(node) == "embedding":
            found.append(saved_value(node, "_saved_indices"))
        for child, _ in node.next_functions:
            if child is not None and child not in seen and type(child) is not PARAMETER_LEAF:
                seen.add(child)
                frontier.append(child)
    return found


def sine_of_a_layer(node, names) -> tuple[str, float] | None:
    """(layer, w0) for a `sin` node over a layer's output times a constant w0 (1 when none): SIREN's activation,
    sin(w0 * (W x + b)). Else None."""
    below = node.next_functions[0][0] if node.next_functions else None
    factor = 1.0
    if below is not None and op_name(below) == "mul" and len([c for c, _ in below.next_functions if c]) == 1:
        factor = _constant_factor(below) or 1.0
        below = next(child for child, _ in below.next_functions if child is not None)
    layer = names.get(below) if below is not None else None
    return None if layer is None else (layer, factor)


def difference_of_itself(node) -> bool:
    """A `sub` node whose two inputs are one tensor, `a - a`: always 0, and its gradient g - g exactly 0, so nothing
    above it learns through it. `TripletMarginLoss()(anchor, anchor, negative)`: the anchor given as its own positive,
    the distance d(a, p) = ||a - a + eps|| a constant."""
    inputs = node.next_functions
    return len(inputs) == 2 and inputs[0][0] is not None and inputs[0] == inputs[1]


SAME_AXES = ("view", "unsafe_view", "reshape", "expand", "native_dropout", "dropout")  # (the last two axes kept)


def softmax_over_the_queries(node) -> object | None:
    """The softmax, when the left factor of a batched product (`node`, a bmm: `attn @ values`) is attention weights
    normalised over dim -2, the queries' axis, of scores that are themselves a product of two computed tensors
    (`softmax(q @ k.T, dim=1)` of (B, T_q, T_k) where dim=-1 was meant): each query's weights over the keys do not sum
    to 1, and each depends on the other queries' scores, later positions' among them. Followed only through views and
    dropout, which keep the last two axes (a transpose makes dim -2 the keys' axis); None otherwise. Slot
    attention's softmax over the slots is renormalised over the inputs (a division) before its product: not this."""
    left = node.next_functions[0][0] if node.next_functions else None
    for _ in range(4):
        if left is None or op_name(left) not in SAME_AXES:
            break
        left = left.next_functions[0][0] if left.next_functions else None
    if left is None or op_name(left) != "softmax":
        return None
    weights = saved_value(left, "_saved_result")
    if not isinstance(weights, torch.Tensor) or weights.dim() < 3 or weights.shape[-2] < 2:
        return None
    if saved_dim(left) % weights.dim() != weights.dim() - 2:
        return None
    scores = beneath_scaling(left.next_functions[0][0]) if left.next_functions[0][0] is not None else None
    for _ in range(3):  # (a mask filled in, a bias added: `scores.masked_fill(...)`)
        if scores is None or op_name(scores) not in ("masked_fill", "add", "where"):
            break
        scores = beneath_scaling(scores.next_functions[0][0]) if scores.next_functions[0][0] is not None else None
    if scores is None or op_name(scores) not in SCORE_PRODUCTS:
        return None
    if sum(child is not None for child, _ in scores.next_functions) != 2:
        return None
    return left


def embeddings_of_the_same_ids(node) -> tuple | None:
    """An addition of two embedding tables' lookups of one and the same index tensor (`tok_emb(x) + pos_emb(x)`, where
    the positions, `pos_emb(torch.arange(T))`, were meant): the pair, from different tables, of the same rows, is one
    table's lookup; nothing tells a position from another. (the two embedding nodes) or None."""
    inputs = [beneath_reshapes(child) for child, _ in node.next_functions if child is not None]
    if len(inputs) != 2 or not all(op_name(child) == "embedding" for child in inputs):
        return None
    ids = [saved_value(child, "_saved_indices") for child in inputs]
    tables = [child.next_functions[0][0] if child.next_functions else None for child in inputs]
    if not all(isinstance(found, torch.Tensor) for found in ids) or tables[0] is tables[1]:
        return None
    same = (
        ids[0].data_ptr() == ids[1].data_ptr() and ids[0].shape == ids[1].shape and ids[0].stride() == ids[1].stride()
    )
    return tuple(inputs) if same and ids[0].dim() >= 2 else None


def ratio_of_itself(node) -> bool:
    """A quotient of a tensor by itself, `l / l` or `l / (l + eps)`, or a product by its own reciprocal, `l * (1 /
    l)`: a constant 1 (or nearly) whatever `l` is, and a gradient of 0 (eps / (l + eps)^2 at most). Loss terms weighted
    by `1 / l` without `.detach()`, each term l / l. Under the denominator a constant added, a clamp and reshapes are
    looked through; a normalisation by a sum or norm of the tensor is another tensor, and no ratio of itself."""
    inputs = [child for child, _ in node.next_functions]
    if len(inputs) != 2 or None in inputs:
        return False
    op = op_name(node)
    if op == "div":
        return _beneath_offsets(inputs[1]) is inputs[0]
    if op == "mul":
        for factor, other in (inputs, inputs[::-1]):
            factor = beneath_scaling(factor)  # (`1.0 / x` is reciprocal(x) times 1.0)
            if op_name(factor) == "reciprocal" and factor.next_functions[0][0] is not None:
                if _beneath_offsets(factor.next_functions[0][0]) is other:
                    return True
    return False


def _beneath_offsets(node):
    """The node under a few additions of a constant (`l + 1e-8`), clamps and reshapes."""
    for _ in range(4):
        node = beneath_reshapes(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if op_name(node) not in ("add", "sub", "clamp", "clamp_min") or len(inputs) != 1:
            break
        node = inputs[0]
    return node


def convolution_reach_ahead(node) -> tuple[torch.Tensor, int, dict] | None:
    """(positions ahead, a 0-d tensor; positions; {"kernel", "dilation", "left", "right"}) for a 1-D convolution's node
    (stride 1) padded so that its output is as long as its input, by its own `padding` and by an `F.pad` just before
    it (`padding='same'` with an even kernel, `padding_mode='replicate'`): output t reads inputs t - left to
    t - left + d (k - 1), the furthest of them through a tap whose weights are not all 0 (a masked convolution's
    future taps are). None for any other: a causal one padded on the left of raw inputs (its output is shorter than
    what it reads), or one whose output is longer than its input (the end cut off after it decides which it is)."""
    weight, x = saved_value(node, "_saved_weight"), saved_value(node, "_saved_input")
    if not isinstance(weight, torch.Tensor) or not isinstance(x, torch.Tensor) or weight.dim() != 3 or x.dim() != 3:
        return None
    if getattr(node, "_saved_transposed", True) or tuple(getattr(node, "_saved_stride", ())) != (1,):
        return None
    (padding,), (dilation,), kernel = node._saved_padding, node._saved_dilation, weight.shape[-1]
    left = right = padding
    below = node.next_functions[0][0] if node.next_functions else None
    pads = _padding_of(below) if below is not None else None
    if pads is not None:
        left, right = left + pads[0], right + pads[1]
    positions = x.shape[-1] - (pads[0] + pads[1] if pads is not None else 0)  # (before the F.pad)
    if left <= 0 or x.shape[-1] + 2 * padding - dilation * (kernel - 1) != positions:
        return None
    taps = (weight.detach() != 0).flatten(0, 1).any(0)  # (the kernel's positions holding any weight)
    last = (taps * torch.arange(1, kernel + 1, device=taps.device)).amax() - 1  # (-1: every tap 0)
    ahead = (last * dilation - left).clamp(min=0)
    return ahead, positions, {"kernel": kernel, "dilation": dilation, "left": left, "right": right}


def _padding_of(node) -> tuple[int, int] | None:
    """(left, right) an `F.pad` node added along the last axis only (constant, replicate or reflect), else None."""
    op = op_name(node)
    pads = saved_value(node, "_saved_pad") if op == "constant_pad_nd" else None
    if op in ("replication_pad1_d", "reflection_pad1_d"):
        pads = saved_value(node, "_saved_padding")
    if pads is None or len(pads) != 2:
        return None
    return int(pads[0]), int(pads[1])


POSITION_POOLS = ("max", "amax", "mean", "sum", "logsumexp", "max_pool2_d_with_indices", "avg_pool2_d",
                  "adaptive_max_pool2_d", "adaptive_avg_pool2_d", "max_pool1_d", "avg_pool1_d")  # fmt: skip


def reaches_by_position(loss_nodes, node, budget: int = 4096) -> bool:
    """Whether the loss's prediction reaches `node` through no pooling (a max, mean or sum, a pooling layer): its
    positions are then the prediction's, one for one (a convolution pooled into one code per sequence, which a
    decoder then reads, is not)."""
    frontier = [child for loss in loss_nodes if op_name(loss) in NEXT_STEP_LOSSES for child, _ in loss.next_functions]
    seen = {child for child in frontier if child is not None}
    frontier = list(seen)
    while frontier and len(seen) < budget:
        current = frontier.pop()
        if current is node:
            return True
        if op_name(current) in POSITION_POOLS:
            continue
        for child, _ in current.next_functions:
            if child is not None and child not in seen and type(child) is not PARAMETER_LEAF:
                seen.add(child)
                frontier.append(child)
    return False


NEXT_STEP_LOSSES = ("nll_loss", "nll_loss2_d", "mse_loss", "huber_loss", "smooth_l1_loss")


def next_step_targets(loss_nodes, start, budget: int = 4096) -> torch.Tensor | None:
    """The share of the loss's targets that are the sequence's next entries: next_token_targets's share, or for a
    regression loss (`mse_loss(model(x[..., :-1]), x[..., 1:])`, a WaveNet's or a TCN's forecast one step on) the
    share of its targets that equal, one position on, the input of a 1-D convolution upstream of `start`; None when
    neither is found."""
    tokens = next_token_targets(loss_nodes, start, budget)
    if tokens is not None:
        return tokens
    target = next((saved_value(n, "_saved_target") for n in loss_nodes if op_name(n) in REGRESSION_LOSSES), None)
    if not isinstance(target, torch.Tensor) or start is None:
        return None
    shares, seen, frontier = [], {start}, [start]
    while frontier and len(seen) < budget:
        node = frontier.pop()
        if op_name(node) == "convolution":
            shares.extend(_next_value_share(saved_value(node, "_saved_input"), target.detach()))
        for child, _ in node.next_functions:
            if child is not None and child not in seen and type(child) is not PARAMETER_LEAF:
                seen.add(child)
                frontier.append(child)
    return torch.stack(shares).amax() if shares else None


def _next_value_share(x, target: torch.Tensor) -> list:
    """[the share of `target` equal to `x` one position on, along the last axis], for a 1-D convolution's input x of
    shape (batch, channels, positions) and a target of its shape, or (batch, positions, channels), or of its size
    with one channel; [] otherwise. Counted only where it clearly beats the share equal at the same position (a
    signal that rarely changes, an on/off trace, equals itself one step on as much: no evidence of a forecast)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] < 4 or x.device != target.device:
        return []
    if target.shape != x.shape:
        if target.dim() == 3 and target.shape == (x.shape[0], x.shape[2], x.shape[1]):
            target = target.transpose(1, 2)  # (a multivariate series given as (batch, positions, channels))
        elif target.numel() == x.numel() and x.shape[1] == 1:
            target = target.reshape(x.shape)
        else:
            return []
    following = (target[..., :-1] == x[..., 1:]).float().mean()
    return [_beyond_the_same_position(following, (target[..., :-1] == x[..., :-1]).float().mean())]


def token_targets(loss_nodes, budget: int = 4096) -> dict | None:
    """How a token classifier's targets sit against the (batch, positions) grids of token ids embedded under the first
    cross_entropy's scores (within `budget` nodes), or None when it has no integer targets or no such grid:

    - "previous": the share of the targets that are the token the input held one position back (`inp, tgt =
      seq[:, 1:], seq[:, :-1]`: a language model's shift written the wrong way round), counted only where it beats by
      0.5 or more the share equal to the input at their own position;
    - "unshifted": the share of the targets equal to a grid's token at their own position (the decoder fed the very
      tokens it is asked for; masked-LM labels read after the masking), 0 when some grid's next tokens are the
      targets (a seq2seq decoder's shifted input beside a copy task's source);
    - "counted": the share of the targets the loss counts (not its ignore_index);
    - "grids": how many distinct grids of tokens were embedded (a seq2seq embeds a source and a decoder input).

    All on the device."""
    for nll, _, scores in cross_entropies(loss_nodes):
        target = saved_value(nll, "_saved_target")
        if not isinstance(target, torch.Tensor) or target.is_floating_point():
            return None
        target, ignored = target.detach(), signed(nll._saved_ignore_index)
        grids = _distinct(ids for ids in _embedded_ids(scores, budget) if _a_grid(ids, target))
        aligned = [ids for ids in grids if ids.numel() == target.numel()]  # (one target per position)
        if not aligned:
            return None
        previous = torch.stack([_previous_token_share(ids, target, ignored) for ids in aligned]).amax()
        same = torch.stack([_same_position_share(ids, target, ignored) for ids in aligned]).amax()
        following = [share for ids in grids for share in _next_token_share(ids, target, ignored)]
        shifted = torch.stack(following).amax() >= 0.5 if following else torch.zeros((), device=target.device)
        counted = (target != ignored).float().mean()
        return {
            "previous": previous,
            "unshifted": same * ~shifted,
            "counted": counted,
            "grids": torch.stack([_varied_tokens(ids) for ids in grids]).sum(),
        }
    return None


def _varied_tokens(ids: torch.Tensor) -> torch.Tensor:
    """1 (on the device) for a grid of tokens: rows that differ, and more than two values (not positions repeated for
    every example, nor 0/1 segment ids); else 0."""
    return ((ids != ids[:1]).any() & (ids.amax() - ids.amin() >= 2)).float()


def _a_grid(ids, target: torch.Tensor) -> bool:
    """Whether `ids` is a (batch, positions) grid of token ids, 4 positions or more, on the targets' device."""
    return isinstance(ids, torch.Tensor) and ids.dim() == 2 and ids.shape[1] >= 4 and ids.device == target.device


def _distinct(tensors) -> list:
    """The tensors, each view of one storage with the same shape and strides kept once."""
    kept, keys = [], set()
    for tensor in tensors:
        key = (tensor.data_ptr(), tuple(tensor.shape), tensor.stride())
        if key not in keys:
            keys.add(key)
            kept.append(tensor)
    return kept


def _same_position_share(ids, target: torch.Tensor, ignored: int) -> torch.Tensor:
    """The share of the targets the loss counts that are the token of `ids` at their own position, on the device."""
    target = target.reshape(ids.shape)
    counted = target != ignored
    return ((target == ids) & counted).sum().float() / counted.sum().clamp(min=1).float()


def _previous_token_share(ids, target: torch.Tensor, ignored: int) -> torch.Tensor:
    """The share of `target` that is `ids` one position back, beyond the share at their own position, for a grid of
    ids (batch, positions) with one target per position (`_a_grid`, as many entries)."""
    predicted = target.reshape(ids.shape)[:, 1:]  # (the first position's target has no input before it)
    counted = predicted != ignored
    total = counted.sum().clamp(min=1).float()
    earlier = ((predicted == ids[:, :-1]) & counted).sum().float() / total
    same = ((predicted == ids[:, 1:]) & counted).sum().float() / total
    return _beyond_the_same_position(earlier, same)


def _next_token_share(ids, target: torch.Tensor, ignored: int) -> list:
    """[the share of `target` that is `ids` one position on, targets the loss ignores (padding) aside], for ids of
    shape (batch, positions) and targets of one per position, or of one per position but the last; [] for any other
    shapes."""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[1] < 4 or ids.device != target.device:
        return []
    batch, length = ids.shape
    if target.numel() == batch * length:
        predicted = target.reshape(batch, length)[:, :-1]  # (the last position's target lies past the input)
    elif target.numel() == batch * (length - 1):
        predicted = target.reshape(batch, length - 1)
    else:
        return []
    counted = predicted != ignored
    following = ((predicted == ids[:, 1:]) & counted).sum().float() / counted.sum().clamp(min=1).float()
    same = ((predicted == ids[:, :-1]) & counted).sum().float() / counted.sum().clamp(min=1).float()
    return [_beyond_the_same_position(following, same)]


def _beyond_the_same_position(following: torch.Tensor, same: torch.Tensor) -> torch.Tensor:
    """The share of targets equal to the next entry, counted only where it beats by 0.5 or more the share equal to
    the entry at their own position (a signal that rarely changes equals itself one step on as often: no forecast);
    else 0. Both on the device."""
    return following * (following - same >= 0.5)


WEIGHT_PATH = ("select", "slice", "view", "reshape", "squeeze", "unsqueeze", "neg", "index", "expand")


def unheld_loss_weights(nodes) -> list:
    """The small learnable tensors (parameters of 16 entries at most) every use of which, in the graph of `nodes`, is
    a factor exp(+-s) multiplying a single number (a loss term): `exp(-s) * ce + exp(-s2) * mse` with no `+ s` beside
    it. Nothing holds such a weight back: the optimiser lowers the loss by moving s until the weight is 0, and the
    loss's gradient to the model goes with it. Kendall's uncertainty weighting adds s (or log sigma) for that reason."""
    parents: dict = {}
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None:
                parents.setdefault(child, []).append(node)
    found = []
    for node in list(parents):  # (the leaves too: `nodes` may leave them out, as new_nodes does)
        variable = getattr(node, "variable", None) if isinstance(node, PARAMETER_LEAF) else None
        if variable is None or variable.numel() > 16 or variable.numel() == 0:
            continue
        uses = _uses(node, parents)
        if uses and all(_weighs_a_loss_term(use, parents) for use in uses):
            found.append(variable)
    return found


def _uses(leaf, parents) -> list:
    """The first operations above a leaf that are not selections, reshapes or negations of it."""
    uses, frontier = [], list(parents.get(leaf, ()))
    for _ in range(8):
        next_frontier = []
        for node in frontier:
            if op_name(node) in WEIGHT_PATH:
                next_frontier.extend(parents.get(node, ()))
            else:
                uses.append(node)
        frontier = next_frontier
    return uses


def _weighs_a_loss_term(use, parents) -> bool:
    """Whether `use` is exp(...) whose every reader multiplies it with a single number that carries gradient."""
    if op_name(use) != "exp":
        return False
    readers = parents.get(use, ())
    if not readers:
        return False
    for reader in readers:
        factors = [child for child, _ in reader.next_functions]
        if op_name(reader) != "mul" or len(factors) != 2 or None in factors:
            return False
        other = factors[1] if factors[0] is use else factors[0]
        if output_shape(other) not in ((), (1,)):
            return False
    return True


def loss_terms(root) -> list:
    """The terms of the backward's root, when it is a sum (under negations and constant factors): `ce + lam * penalty`
    gives the node of each term, and None for a term added that has no graph at all (a penalty computed from tensors
    with no history: a gradient taken without create_graph, a value computed under no_grad). The first operand with no
    graph of a sum inside another sum, beside one that has a graph, is taken for the start of a running total (`loss =
    torch.zeros(()); loss = loss + a; loss = loss + b`, or `total = 0.0` first, which adds the number second), not a
    term; at the root's own sum it is a term (`pde_residual + boundary`). [] when the root is no sum."""
    terms, stack, looked = [], [(root, False)], 0
    while stack and looked < 16:
        (node, inside_a_sum), looked = stack.pop(), looked + 1
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if op in ("add", "sub"):
            # (inside a sum, an operand with no graph beside one that has one is a running total's start, on either
            # side: `total = 0.0; total = total + mse` is add(mse, 0.0), the Python number second)
            operands = [] if inside_a_sum and len(inputs) == 1 else node.next_functions
            terms.extend(None for child, _ in operands if child is None)
            stack.extend((child, True) for child in inputs)
        elif len(inputs) == 1 and (op == "neg" or (op in ("mul", "div") and _constant_factor(node) is not None)):
            stack.append((inputs[0], inside_a_sum))
        elif node is not root:
            terms.append(node)
    return terms


def loss_term_weights(root) -> list[float]:
    """The constant each term of the backward's root is weighted by, in the order `loss_terms` meets them: `ce + beta *
    kl / n` gives [1.0, beta / n]. A weight that changes from step to step is a schedule (KL annealing's warm-up), and
    the weighted total is then no measure of progress. [] when the root is no sum."""
    weights, stack, looked = [], [(root, 1.0, False)], 0
    while stack and looked < 16:
        (node, weight, inside_a_sum), looked = stack.pop(), looked + 1
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        factor = _constant_factor(node) if op in ("mul", "div") and len(inputs) == 1 else None
        if op in ("add", "sub"):
            stack.extend((child, weight, True) for child in inputs)
        elif op == "neg" and len(inputs) == 1:
            stack.append((inputs[0], -weight, inside_a_sum))
        elif factor is not None and (op == "mul" or factor != 0):
            stack.append((inputs[0], weight * factor if op == "mul" else weight / factor, inside_a_sum))
        elif inside_a_sum:
            weights.append(weight)
    return weights


def summed_beside_a_mean(root) -> dict | None:
    """A loss function called with `reduction="sum"` added beside one that takes the mean (`ce + F.mse_loss(recon, x,
    reduction="sum")`, a VAE's reconstruction copied beside a classifier's loss): its gradient is its terms' count
    times a mean's. {"summed", "terms", "beside", "weight_ratio"} (the summed term's weight times its terms over the
    mean's weight) for the largest such ratio, or None; the root followed through sums and constant factors."""
    found, stack, looked = [], [(root, 1.0)], 0
    while stack and looked < 16:
        (node, weight), looked = stack.pop(), looked + 1
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        factor = _constant_factor(node) if op in ("mul", "div") and len(inputs) == 1 else None
        if op == "add":
            stack.extend((child, weight) for child in inputs)
        elif factor is not None and factor > 0:
            stack.append((inputs[0], weight * factor if op == "mul" else weight / factor))
        elif op in SUMMING_LOSSES and getattr(node, "_saved_reduction", None) in (1, REDUCTION_SUM):
            shape = output_shape(node.next_functions[0][0]) if node.next_functions[0][0] is not None else None
            terms = (shape[0] if op == "nll_loss" else math.prod(shape)) if shape else 1
            if op == "nll_loss" and op_name(node.next_functions[0][0]) == "log_softmax":
                op = "cross_entropy"  # (as the script calls it)
            found.append((op, node._saved_reduction == REDUCTION_SUM, int(terms), weight))
    summed = [entry for entry in found if entry[1]]
    means = [entry for entry in found if not entry[1]]
    if not summed or not means:
        return None
    (op, _, terms, weight), (beside, _, _, mean_weight) = max(summed, key=lambda e: e[2] * e[3]), means[0]
    return {"summed": op, "terms": terms, "beside": beside, "weight_ratio": weight * terms / mean_weight}


def subtracted_weight_penalty(root) -> tuple[str, list] | None:
    """(form, parameters) of a penalty on the weights that the backward root subtracts instead of adding: `ce - lam *
    sum(w ** 2)` gives ("squares", [w]). The root is followed through its sums, negations and constant factors; a
    term of negative sign that is a sum or mean of the squares or absolute values of parameters (or their norms),
    or a sum of such, is one. Minimising it makes the weights grow without bound. None when there is none, or when a
    term added beside it multiplies one of those parameters by itself (||W W^T - I||^2 written out as
    `(W @ W.T).pow(2).sum() - 2 * (W * W).sum() + n`: an orthogonality penalty, whose minus belongs to it)."""
    stack, looked, found, added = [(root, 1)], 0, None, []
    while stack and looked < 16:
        (node, sign), looked = stack.pop(), looked + 1
        penalty = _weight_penalty(node, []) if sign < 0 else None  # (the whole of a sum first: all its parameters)
        if penalty is not None:
            found = found or penalty
            continue
        op = op_name(node)
        children = [(i, child) for i, (child, _) in enumerate(node.next_functions) if child is not None]
        if op in ("add", "sub"):
            stack.extend((child, -sign if op == "sub" and i == 1 else sign) for i, child in children)
        elif op in ("neg", "rsub") and len(children) == 1:
            stack.append((children[0][1], -sign))
        elif op in ("mul", "div") and len(children) == 1 and _constant_factor(node) is not None:
            stack.append((children[0][1], -sign if _constant_factor(node) < 0 else sign))
        elif sign > 0:
            added.append(node)
    if found is None:
        return None
    penalised = {id(p) for p in found[1]}
    if any(_product_of_itself(node, penalised, 8) for node in added):
        return None
    return found


# ops that read a module's outputs as they are, summed, averaged, or some of them picked
SCORE_READS = ("sum", "mean", "gather", "index", "select", "slice", "max", "amax")
SCORE_PICKS = ("gather", "index", "max", "amax")  # (one class's score per example, or the largest)


def score_of_an_output(root, module_outputs) -> tuple[object, list[str]] | None:
    """(the module output, the ops between) when the backward's root only reads a module's output, with one score
    per example picked from it (`scores.gather(1, y[:, None]).sum()`, `model(x).max(1).values.sum()`: a saliency
    map's, or an attack's score), no loss in between; else None. A critic's whole output averaged (`D(x).mean()`, an
    old WGAN's `backward(one)`) picks nothing: not one."""
    node, reads = reads_at_the_root(root, module_outputs)
    if node not in module_outputs or not any(op in SCORE_PICKS for op in reads):
        return None
    return node, reads


def reads_at_the_root(root, module_outputs=()) -> tuple[object, list[str]]:
    """(the node beneath, the ops from it up to the root) of the chain of SCORE_READS and RESHAPES at the root, down
    to a module's output or the first other op (reshapes left out of the list)."""
    node, reads = root, []
    for _ in range(8):
        if node in module_outputs:
            break
        op = op_name(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if (op not in SCORE_READS and op not in RESHAPES) or len(inputs) != 1:
            break
        if op not in RESHAPES:
            reads.append(op)
        node = inputs[0]
    return node, reads[::-1]


# ops that keep, select or average log-probabilities without weighing them by anything computed (`logp.mean(1)`,
# `logp.gather(1, y)`, `logp[:, 0]`): a term made of these alone over a log_softmax is a log-probability
LOG_PROBABILITY_READS = ("mean", "sum", "gather", "index", "select", "slice")  # (and the RESHAPES)


def log_probability_added(root) -> str | None:
    """The form of a term the backward root adds (with a plus sign, through its sums, negations and constant factors)
    that is nothing but log-probabilities, averaged or picked out: `loss = nll + eps * logp.mean()`, label smoothing's
    -mean(log p) written without its minus. A log-probability is never positive, and minimising it drives it to -inf:
    the loss has no lower bound. "log_softmax" when found, else None. Not an entropy bonus (`p * logp`: weighed by the
    probabilities), nor a policy gradient's `logp * advantage`, nor a term the root subtracts."""
    stack, looked = [(root, 1)], 0
    while stack and looked < 16:
        (node, sign), looked = stack.pop(), looked + 1
        op = op_name(node)
        children = [(i, child) for i, (child, _) in enumerate(node.next_functions) if child is not None]
        if op in ("add", "sub"):
            stack.extend((child, -sign if op == "sub" and i == 1 else sign) for i, child in children)
        elif op in ("neg", "rsub") and len(children) == 1:
            stack.append((children[0][1], -sign))
        elif op in ("mul", "div") and len(children) == 1 and (_constant_factor(node) or 0) > 0:
            # (a positive constant keeps the sign; a negative number is as often data as a constant, an actor-critic's
            # `-logp[a] * advantage.item()` with an advantage below 0: not followed)
            stack.append((children[0][1], sign))
        elif sign > 0 and (op in LOG_PROBABILITY_READS or op in RESHAPES):
            below = beneath_reshapes(node, also=LOG_PROBABILITY_READS)
            if op_name(below) == "log_softmax":
                return "log_softmax"
            if op_name(below) == "log" and below.next_functions[0][0] is not None:  # (`torch.log(F.softmax(z))`)
                if op_name(beneath_reshapes(below.next_functions[0][0])) == "softmax":
                    return "log of softmax"
    return None


def _product_of_itself(node, parameters: set[int], depth: int) -> bool:
    """Whether a matrix or elementwise product of one of `parameters` (ids) by itself (`W @ W.T`) lies within `depth`
    operations below `node`."""
    op = op_name(node)
    children = [child for child, _ in node.next_functions if child is not None]
    if op in ("mm", "bmm", "matmul", "mul") and len(children) == 2:
        leaves = [getattr(beneath_reshapes(child), "variable", None) for child in children]
        if leaves[0] is not None and leaves[0] is leaves[1] and id(leaves[0]) in parameters:
            return True
    return depth > 0 and any(_product_of_itself(child, parameters, depth - 1) for child in children)


WEIGHT_PENALTY_FORMS = {"pow": "squares", "abs": "absolute values", "linalg_vector_norm": "norms", "norm": "norms"}


def _weight_penalty(node, parameters: list, depth: int = 0) -> tuple[str, list] | None:
    """(form, parameters) when `node` is a non-negative penalty on parameters alone: the sum or mean of w ** 2,
    w * w, |w| or norm(w) ** 2, a norm of w, those times positive constants, and sums of them (a Python `sum` over the
    layers starts from 0; `torch.stack([...]).sum()` gathers them first)."""
    op = op_name(node)
    children = [child for child, _ in node.next_functions if child is not None]
    if depth > 12 or not children:
        return None
    if op in ("sum", "mean") and len(children) == 1 and op_name(beneath_reshapes(children[0])) in ("stack", "cat"):
        node, op = beneath_reshapes(children[0]), "add"  # (the terms gathered in one tensor, then summed)
        children = [child for child, _ in node.next_functions if child is not None]
    if op == "add" or (op == "mul" and len(children) == 1 and (_constant_factor(node) or 0) > 0):
        forms = [_weight_penalty(child, parameters, depth + 1) for child in children]
        return None if None in forms else (forms[0][0], parameters)
    if op in ("sum", "mean") and len(children) == 1:
        node = beneath_reshapes(children[0], also=SELECTIONS)
        op = op_name(node)
        if op not in ("pow", "abs", "mul"):
            return None
        children = [child for child, _ in node.next_functions if child is not None]
    if op == "mul" and len(children) == 2 and children[0] is children[1]:  # (w * w: one leaf, read twice)
        op, children = "pow", children[:1]
    elif op not in WEIGHT_PENALTY_FORMS or len(children) != 1 or op == "mul":
        return None
    elif op == "pow" and getattr(node, "_saved_exponent", None) != 2:
        return None
    leaf = beneath_reshapes(children[0], also=SELECTIONS)
    if op == "pow" and op_name(leaf) in ("linalg_vector_norm", "norm"):  # (norm(w) ** 2)
        below = [child for child, _ in leaf.next_functions if child is not None]
        leaf = beneath_reshapes(below[0], also=SELECTIONS) if len(below) == 1 else None
    variable = getattr(leaf, "variable", None)  # (an AccumulateGrad node holds its leaf: the parameter)
    if variable is None:
        return None
    parameters.append(variable)
    return WEIGHT_PENALTY_FORMS[op], parameters


PER_TOKEN_LOSSES = ("nll_loss", "nll_loss2_d", "binary_cross_entropy_with_logits", "mse_loss")  # (2_d: 2-D targets)


def minus_its_logsumexp(node):
    """z's node when `node` is z - logsumexp(z) (a log_softmax written out: how `Categorical(logits=z)` normalises
    its logits, or by hand), else None."""
    inputs = [child for child, _ in node.next_functions]
    if op_name(node) != "sub" or len(inputs) != 2 or inputs[0] is None or inputs[1] is None:
        return None
    logsumexp = beneath_reshapes(inputs[1])
    if op_name(logsumexp) != "logsumexp" or not logsumexp.next_functions:
        return None
    z = beneath_reshapes(inputs[0])
    return z if beneath_reshapes(logsumexp.next_functions[0][0]) is z else None


def loss_mask(loss_nodes) -> torch.Tensor | None:
    """The constant mask (detached) a per-example loss left unreduced is multiplied by on the loss side
    (`(ce * mask).sum() / mask.sum()`, ce from `cross_entropy(..., reduction="none")`), or None."""
    for node in loss_nodes:
        inputs = [child for child, _ in node.next_functions if child is not None]
        if op_name(node) != "mul" or len(inputs) != 1 or op_name(beneath_reshapes(inputs[0])) not in PER_TOKEN_LOSSES:
            continue
        for name in ("_saved_other", "_saved_self"):
            mask = saved_value(node, name)
            if isinstance(mask, torch.Tensor) and not mask.requires_grad and mask.numel() > 1:
                return mask.detach()
    return None


def class_targets(loss_nodes) -> tuple[torch.Tensor, int, int] | None:
    """(target, number of classes, ignore_index) of the first `nll_loss` (cross_entropy's) on the loss side that
    compares one row of class scores per example with a class index each, or None: a batch's targets, to count the
    classes it holds."""
    for node in loss_nodes:
        if op_name(node) != "nll_loss":
            continue
        scores, target = saved_value(node, "_saved_self"), saved_value(node, "_saved_target")
        if isinstance(scores, torch.Tensor) and isinstance(target, torch.Tensor) and scores.dim() == 2:
            if target.dim() == 1 and target.numel() == scores.shape[0] and not target.is_floating_point():
                return target.detach(), scores.shape[1], signed(node._saved_ignore_index)
    return None


def cross_entropies(loss_nodes):
    """(nll_loss node, log_softmax node, the scores' node) of each cross_entropy on the loss side: its nll_loss over a
    log_softmax of the scores."""
    for node in loss_nodes:
        if op_name(node) != "nll_loss" or not node.next_functions or node.next_functions[0][0] is None:
            continue
        log_softmax = node.next_functions[0][0]
        if op_name(log_softmax) == "log_softmax" and log_softmax.next_functions[0][0] is not None:
            yield node, log_softmax, log_softmax.next_functions[0][0]


def _beneath_a_scale(node):
    """The node under constant factors and under a product with one number that has a history of its own (CLIP's
    learnable temperature, `logit_scale.exp() * z1 @ z2.T`)."""
    for _ in range(4):
        node = beneath_scaling(node)
        factors = [child for child, _ in node.next_functions if child is not None]
        if op_name(node) not in ("mul", "div") or len(factors) != 2:
            return node
        sizes = [output_shape(factor) for factor in factors]
        scalar = [size is not None and math.prod(size) == 1 for size in sizes]
        if scalar.count(True) != 1:
            return node
        node = factors[scalar.index(False)]
    return node


def diagonal_of_a_self_similarity(loss_nodes) -> tuple[object, int] | None:
    """(the node that made z, the number of rows) when cross_entropy's scores are z @ z.T (times or over constants, a
    temperature) and its targets are 0, 1, ..., N - 1: each row's class is its similarity to itself, the diagonal.
    A contrastive loss meant `z1 @ z2.T` (two views): with z1 @ z1.T every example's "positive" is itself, the
    largest similarity there is (1 for unit vectors). Else None. (SimCLR's z @ z.T over both views masks the diagonal
    and takes the other view's row for target: not this.)"""
    for node, _, scores in cross_entropies(loss_nodes):
        product = _beneath_a_scale(scores)
        if op_name(product) not in ("mm", "bmm") or len(product.next_functions) != 2:
            continue
        (left, _), (right, _) = product.next_functions
        # (z @ z.T, z.mm(z.t()), torch.einsum("nd,md->nm", z, z): one tensor, on both sides, laid out anew, or scaled
        # by a learnable temperature, `logit_scale.exp() * z @ z.T`)
        if left is None or right is None or _beneath_a_scale(right) is not _beneath_a_scale(left):
            continue
        target = saved_value(node, "_saved_target")
        if isinstance(target, torch.Tensor) and target.dim() == 1 and not target.is_floating_point():
            rows = target.numel()
            if rows >= 2 and torch.equal(target, torch.arange(rows, device=target.device, dtype=target.dtype)):
                return _beneath_a_scale(left), rows
    return None


def one_class_over_pairs(loss_nodes) -> tuple[int, torch.Tensor, torch.Tensor] | None:
    """(rows, 1.0 where every target is one class else 0.0, that class), the two on the device, when cross_entropy's
    scores are a square (N, N) product of two computed tensors, `z1 @ z2.T` (under constant factors or a temperature:
    a contrastive loss over the batch's pairs, CLIP's): with one class for all, each row is asked to pick out that
    example of the batch (`torch.zeros(N)`), not its own pair on the diagonal (`torch.arange(N)`). Else None.
    (MoCo's zeros are right: its scores are the positive's column joined to a queue's, a `cat`, not one product.)"""
    for node, _, scores in cross_entropies(loss_nodes):
        product = _beneath_a_scale(scores)
        factors = [child for child, _ in product.next_functions]
        if op_name(product) != "mm" or len(factors) != 2 or None in factors:
            continue
        shape, target = output_shape(product), saved_value(node, "_saved_target")
        if shape is None or len(shape) != 2 or shape[0] != shape[1] or shape[0] < 4:
            continue
        if not isinstance(target, torch.Tensor) or target.dim() != 1 or target.is_floating_point():
            continue
        if target.numel() == shape[0]:  # (read with the step's other numbers: no wait for a GPU here)
            return shape[0], (target == target[0]).all().float(), target[0].float()
    return None


def confined_logits(loss_nodes) -> dict | None:
    """{"factor", "classes"} when cross_entropy's scores are cosine similarities (the products of rows scaled to unit
    length, `F.normalize(a) @ F.normalize(b).T`) times or over constants only: every score then lies within
    +-factor, whatever the weights. Else None (a learnable temperature, scores of vectors not normalised)."""
    for _, log_softmax, scores in cross_entropies(loss_nodes):
        product, factor, learnt = beneath_reshapes(scores), 1.0, None
        for _ in range(4):  # (`z1 @ z2.T * tau`, `z1 @ z2.T / tau`: constant factors only, read on the host)
            inputs = [child for child, _ in product.next_functions if child is not None]
            if op_name(product) == "masked_fill" and len(inputs) == 1:  # (the diagonal left out: SimCLR's self-pairs)
                product = beneath_reshapes(inputs[0])
                continue
            scale = _learnt_scale(product)
            if scale is not None:  # (CLIP's `logit_scale.exp() * a @ b.T`: its value now; divided by it, the mistake)
                value, beneath = scale
                factor = factor * value if op_name(product) == "mul" else factor / value
                learnt = op_name(product)
                product = beneath_reshapes(beneath)
                continue
            scaling = op_name(product) in ("mul", "div") and len(inputs) == 1
            if scaling and not _factor_on_the_host(product):
                break  # (a temperature held on a GPU: not read, which would wait for the device)
            constant = _constant_factor(product) if scaling else None
            if not constant:
                break
            factor = factor * abs(constant) if op_name(product) == "mul" else factor / abs(constant)
            product = beneath_reshapes(inputs[0])
        if not (_product_of_unit_rows(product) or _summed_product_of_unit_rows(product)):
            continue
        shape = output_shape(log_softmax)
        if shape is not None and len(shape) == 2 and shape[1] >= 2:
            return {"factor": factor, "classes": shape[1], **({"learnt_scale": learnt} if learnt else {})}
    return None


def _learnt_scale(node) -> tuple[float, object] | None:
    """(its value, the other factor's node) when `node` multiplies or divides by a learnt number: one entry that
    requires grad, on the CPU (read there; on a GPU it would wait for the device). None otherwise."""
    if op_name(node) not in ("mul", "div") or len(node.next_functions) != 2:
        return None
    for name, other in (("_saved_other", 0), ("_saved_self", 1)):
        if op_name(node) == "div" and name == "_saved_self":
            break  # (a quotient's numerator is the scores, not a scale)
        scale = saved_value(node, name)  # (not unpacked through a saved-tensor hook: a checkpoint would recompute)
        beneath = node.next_functions[other][0]
        if isinstance(scale, torch.Tensor) and scale.numel() == 1 and scale.requires_grad and beneath is not None:
            if not scale.is_cpu or not scale.is_floating_point():
                return None
            value = abs(float(scale.detach()))
            return (value, beneath) if value > 0 and math.isfinite(value) else None
    return None


def _product_of_unit_rows(product) -> bool:
    """`a @ b.T` (or `torch.einsum("nd,md->nm", a, b)`) of two tensors of unit rows, summed over the axis they were
    normalised along: each entry is a cosine, within [-1, 1]."""
    if op_name(product) not in ("mm", "bmm") or len(product.next_functions) != 2:
        return False
    (left, _), (right, _) = product.next_functions
    if left is None or right is None:
        return False
    units = [beneath_reshapes(left), beneath_reshapes(right)]
    if not all(_unit_rows(unit) for unit in units):
        return False
    if op_name(right) in ("t", "transpose", "permute"):  # (`a @ b.T`: rows against rows)
        return True
    # einsum lays both operands out anew before its bmm: the summed axis must be the one normalised, told by its
    # length (only where no other axis of either tensor has that length, which would leave it in doubt)
    summed = output_shape(left)  # (the axis a matrix product sums over: its left operand's last)
    shapes = [output_shape(unit) for unit in units]
    if not summed or None in shapes:
        return False
    return all(shape[-1] == summed[-1] and summed[-1] not in shape[:-1] for shape in shapes)


def _summed_product_of_unit_rows(node) -> bool:
    """`F.cosine_similarity(a[:, None], b[None], dim=-1)`: the sum, over the last axis, of the product of two tensors
    of unit rows along it (PyTorch's own spelling of it divides each by its norm, then multiplies and sums)."""
    if op_name(node) != "sum" or not node.next_functions or node.next_functions[0][0] is None:
        return False
    product = node.next_functions[0][0]
    shape, dims = output_shape(product), getattr(node, "_saved_dim", None)
    if op_name(product) != "mul" or len(product.next_functions) != 2 or shape is None:
        return False
    if not isinstance(dims, tuple) or len(dims) != 1 or getattr(node, "_saved_keepdim", True):
        return False
    factors = [child for child, _ in product.next_functions]
    if None in factors or not all(_unit_rows(beneath_reshapes(factor)) for factor in factors):
        return False
    return signed(dims[0]) % len(shape) == len(shape) - 1


# what lies between a loss and the similarity it is made of: sums, means, constant factors, the norm of a difference
# (and reshapes)
ALONG_THE_LOSS = ("neg", "mean", "sum", "add", "sub", "rsub", "mul", "div", "pow", "mse_loss", "stack", "cat",
                  "linalg_vector_norm", "diagonal", "diagonal_backward0_copy", "select")  # fmt: skip
# a loss with any of these holds the examples apart (negatives under a softmax, a classifier's term): no collapse
HOLDS_EXAMPLES_APART = ("logsumexp", "log_softmax", "softmax", "nll_loss", "binary_cross_entropy_with_logits",
                        "binary_cross_entropy", "exp", "log", "log_sigmoid")  # fmt: skip


def predictor_without_stop_gradient(roots, names, limit: int = 64) -> dict | None:
    """{"predictor", "target"} when the loss pulls a predictor's output towards the output of a module that the
    predictor itself reads, both with their gradient: SimSiam's `D(p1, z2)` with `z2 = enc(x2)` not detached (BYOL
    and SimSiam stop the target's gradient; without it both sides may move to one constant, which every example
    matches: collapse). Found where the loss, through sums, means and constant factors only (no softmax over other
    examples: a contrastive loss has negatives that hold the examples apart), reads a cosine or a squared distance
    of two tensors of unit rows: p/|p| against z/|z|, whose module `z` came from is upstream of `p`'s, and not the
    other way round. Else None."""
    frontier, seen = [root for root in roots if root is not None], set()
    while frontier:
        node = frontier.pop()
        if node in seen or len(seen) > limit:
            continue
        seen.add(node)
        factors = [beneath_reshapes(child) for child, _ in node.next_functions if child is not None]
        if (
            op_name(node) in ("mm", "bmm", "mul", "mse_loss", "sub")
            and len(factors) == 2
            and all(_unit_rows(factor) for factor in factors)
        ):
            operands = [beneath_reshapes(factor.next_functions[0][0]) for factor in factors]
            found = _predicting_its_own_input(*operands, names) or _predicting_its_own_input(*operands[::-1], names)
            if found is not None:
                return found
            continue
        if op_name(node) in ALONG_THE_LOSS or op_name(node) in RESHAPES:
            frontier.extend(child for child, _ in node.next_functions if child is not None)
    return None


def _predicting_its_own_input(prediction, target, names) -> dict | None:
    """{"predictor", "target"} when `target` was made by a module that `prediction`'s module reads (within a few
    operations), and not the other way round; both carrying a gradient (a detached target has no node at all)."""
    made_prediction = names.get(prediction) or nearest_upstream(prediction, names)
    made_target = names.get(target) or nearest_upstream(target, names)
    if made_prediction is None or made_target is None or made_prediction == made_target:
        return None
    if made_target in _names_upstream(prediction, names) and made_prediction not in _names_upstream(target, names):
        return {"predictor": made_prediction, "target": made_target}
    return None


def _names_upstream(node, names, limit: int = 256) -> set:
    """The names `names` knows among the nodes upstream of `node` (at most `limit` nodes looked at)."""
    found, frontier, seen = set(), [node], {node}
    while frontier and len(seen) < limit:
        current = frontier.pop()
        for child, _ in current.next_functions:
            if child is None or child in seen:
                continue
            seen.add(child)
            if child in names:
                found.add(names[child])
            frontier.append(child)
    return found


def _factor_on_the_host(node) -> bool:
    """Whether a product's or quotient's constant factor can be read without the device: a number, or a tensor on the
    CPU (`_constant_factor` takes a GPU tensor's for positive without reading it)."""
    for name in ("_saved_other", "_saved_self"):
        factor = saved_value(node, name)
        if isinstance(factor, torch.Tensor) and factor.numel() == 1 and not factor.requires_grad:
            return factor.is_cpu
    return True


def _unit_rows(node) -> bool:
    """A tensor divided by its own L2 norm over its last axis (`F.normalize(z, dim=-1)`, `z / z.norm(dim=1,
    keepdim=True)` for a matrix): rows of length 1, whose dot products lie within [-1, 1]. Rows of several such
    tensors stacked (`torch.cat([z1, z2])` of two views, SimCLR's) are too."""
    inputs = [child for child, _ in node.next_functions]
    if op_name(node) == "cat" and getattr(node, "_saved_dim", None) is not None and signed(node._saved_dim) == 0:
        return bool(inputs) and all(child is not None and _unit_rows(beneath_reshapes(child)) for child in inputs)
    if op_name(node) != "div" or len(inputs) != 2 or inputs[0] is None or inputs[1] is None:
        return False
    norm = beneath_reshapes(inputs[1])
    # (F.normalize's `.clamp_min(eps)`; F.cosine_similarity's copy of the norm, clamped in place)
    clamped = op_name(norm) in ("clamp_min", "clamp", "clone")
    if clamped and norm.next_functions and norm.next_functions[0][0] is not None:
        norm = norm.next_functions[0][0]
    if op_name(norm) != "linalg_vector_norm" or not norm.next_functions or norm.next_functions[0][0] is not inputs[0]:
        return False
    shape, dims = output_shape(node), getattr(norm, "_saved_dim", None)
    if shape is None or not isinstance(dims, tuple) or len(dims) != 1 or getattr(norm, "_saved_ord", None) != 2:
        return False
    return signed(dims[0]) % len(shape) == len(shape) - 1


EXAMPLE_PICKS = ("topk", "sort", "kthvalue", "index", "index_select", "masked_select", "slice", "select")


def _users_among(nodes) -> dict:
    """node -> the nodes among `nodes` that read it (its consumers, the way back up to the root)."""
    users: dict = {}
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None:
                users.setdefault(child, []).append(node)
    return users


def _examples_picked_after(node, users) -> bool:
    """Whether some of the per-example values `node` made are picked out before the loss reduces them (`losses.topk(k,
    largest=False)`, `losses[idx]`: co-teaching's small-loss selection), the others dropped; a few levels up."""
    level = [node]
    for _ in range(6):
        level = [user for current in level for user in users.get(current, ())]
        if any(op_name(user) in EXAMPLE_PICKS for user in level):
            return True
    return False


def _weights_applied_after(node, users, examples: int) -> torch.Tensor | None:
    """The constant that the per-example values `node` made are multiplied by before the loss reduces them, one per
    example (`(losses * mask).sum() / mask.sum()`: a padding mask of a tagger's tokens), through reshapes, a few
    levels up; None without one."""
    level = [node]
    for _ in range(3):
        level = [user for current in level for user in users.get(current, ())]
        for user in level:
            if op_name(user) != "mul" or [child is None for child, _ in user.next_functions].count(True) != 1:
                continue
            for name in ("_saved_other", "_saved_self"):
                weights = saved_value(user, name)
                if isinstance(weights, torch.Tensor) and not weights.requires_grad and weights.numel() == examples:
                    return weights.detach().reshape(-1, 1)
    return None


def target_log_probability(loss_nodes) -> tuple[torch.Tensor, int, torch.Tensor] | None:
    """(the mean log-probability the examples give their target class, the number of classes, the share of the
    examples that give it more than chance, 1/C) where the loss picks it
    out of a `log_softmax` with integer targets, by `gather` (`logp.gather(1, y)`: a focal loss written by hand) or by
    `nll_loss` (cross_entropy with reduction="none", turned into another loss); else None. Read from what the nodes
    saved: no value of the run is recomputed. Where the loss picks from one `log_softmax` with several targets (mixup:
    `lam * ce(out, y) + (1 - lam) * ce(out, y[perm])`), each example counts the best of its targets. Examples weighted
    0 after it (`(losses * mask).sum() / mask.sum()`, padding) are left out, as those with an ignored target are."""
    picks, first, classes = {}, None, 0  # the logits' node -> [(log-probability picked, 1 where a class was), ...]
    users = None  # node -> the loss nodes that read it (built once a pick is met)
    for node in loss_nodes:
        op = op_name(node)
        if op not in ("gather", "nll_loss") or not node.next_functions or node.next_functions[0][0] is None:
            continue
        users = users if users is not None else _users_among(loss_nodes)
        if _examples_picked_after(node, users):
            return None  # (small-loss selection under label noise: the mean over every row is not what is minimised)
        log_softmax = beneath_reshapes(node.next_functions[0][0])
        if op_name(log_softmax) != "log_softmax":
            continue
        scores = saved_value(log_softmax, "_saved_result")
        if op == "gather":
            index = saved_value(node, "_saved_index")
            dim = signed(node._saved_dim) if hasattr(node, "_saved_dim") else 1
        else:
            index, dim = saved_value(node, "_saved_target"), 1
        if not isinstance(scores, torch.Tensor) or not isinstance(index, torch.Tensor) or scores.dim() != 2:
            continue
        if index.is_floating_point() or index.numel() != scores.shape[0] or saved_dim(log_softmax) % 2 != 1:
            continue
        if dim % 2 != 1:
            continue
        index = index.reshape(-1, 1)
        valid = (index >= 0).float()  # (an ignore_index of -100 is no class: left out, on the device)
        weights = _weights_applied_after(node, users, index.shape[0]) if op == "nll_loss" else None
        if weights is not None:  # (a padding mask multiplied in: its 0s are no examples either)
            valid = valid * (weights != 0).float()
        # (cross_entropy called twice on one output: two log_softmaxes; under autocast, each over its own cast)
        logits = beneath_reshapes(log_softmax.next_functions[0][0], also=("to_copy",))
        if first is None:
            first, classes = logits, scores.shape[1]
        picked = scores.detach().gather(1, index.clamp(min=0)).float().masked_fill(index < 0, -math.inf)
        picks.setdefault(logits, []).append((picked, valid))
    if first is None:
        return None
    picked, valid = picks[first][0]
    for other, other_valid in picks[first][1:]:
        picked, valid = torch.maximum(picked, other), torch.maximum(valid, other_valid)
    counted = valid.sum()
    above = ((picked > math.log(1 / classes)).float() * valid).sum() / counted  # (a few rejected labels drag the mean)
    return picked.masked_fill(valid == 0, 0).sum() / counted, classes, above


RESHAPES = {
    "view",
    "reshape",
    "reshape_alias",
    "unsafe_view",
    "unsqueeze",
    "squeeze",
    "expand",
    "permute",
    "transpose",
    "t",
    "alias",
}


SELECTIONS = ("select", "slice")  # (`p[:, 0]`, `p[:, :1]`: some of the values, unchanged)
# ... and those picked by index (`q.gather(1, actions)`, a DQN's Q of the actions taken; `p[rows, cols]`)
PICKS = SELECTIONS + ("gather", "index")


def sum_of_exponentials(node) -> bool:
    """Whether `node`, a sum, adds up exponentials, each perhaps weighted: `(pi * torch.exp(log_prob)).sum(-1)`, a
    mixture's likelihood written out, whose log is a log-sum-exp formed the unstable way."""
    inputs = [child for child, _ in node.next_functions if child is not None]
    if len(inputs) != 1:
        return False
    below = beneath_reshapes(inputs[0])
    if op_name(below) == "mul":
        factors = [beneath_reshapes(child) for child, _ in below.next_functions if child is not None]
        return any(op_name(factor) == "exp" for factor in factors)
    return op_name(below) == "exp"


def beneath_reshapes(node, also=()):
    """The node under any chain of operations that only lay the same values out anew (view, unsqueeze, expand,
    ...), and those named in `also` (SELECTIONS, say): what `w[:, :, None, None]` in `x * w[:, :, None, None]` was
    computed by."""
    for _ in range(8):
        if op_name(node) not in RESHAPES and op_name(node) not in also:
            break
        inputs = [child for child, _ in node.next_functions if child is not None]
        if len(inputs) != 1:
            break
        node = inputs[0]
    return node


def beneath_scaling(node):
    """The node under reshapes and under products or quotients by a constant (`relu6(x + 3) / 6`, a hand-written
    hard sigmoid): what a gate multiplying another tensor was computed by."""
    for _ in range(8):
        below = beneath_reshapes(node)
        inputs = [child for child, _ in below.next_functions if child is not None]
        if op_name(below) not in ("div", "mul") or len(inputs) != 1:
            return below
        node = inputs[0]
    return node


def gate_chain(node) -> list:
    """The nodes a gate multiplying another tensor was computed through, from its factor down: under reshapes and
    selections (a slice of a layer's gates), products, quotients, sums and differences with a constant (`1 - p`), and
    a clamp to a range. Each is part of the gate: in a hard-concrete gate, x * clamp(sigmoid(a) * (zeta - gamma) +
    gamma, 0, 1), the clamp and the sigmoid both; in a soft decision tree's `mu * p[:, k:n]` and `mu * (1 - p)`, the
    routing sigmoid."""
    chain = []
    for _ in range(12):
        node = beneath_reshapes(node, also=SELECTIONS)
        chain.append(node)
        inputs = [child for child, _ in node.next_functions if child is not None]
        if op_name(node) not in ("div", "mul", "add", "sub", "rsub", "clamp", "hardtanh") or len(inputs) != 1:
            break
        node = inputs[0]
    return chain


def gate_tree(node, limit: int = 16) -> list:
    """`gate_chain`, also followed into each term of a sum of computed tensors: ACT's halting weights, `w = p * still
    + new_halted * remainders`, then `acc + w * s`, where p, a sigmoid, weighs each step's state (through a product
    with a 0/1 mask that needs no gradient, `still`, and the sum). At most `limit` nodes."""
    found, queue = [], [node]
    while queue and len(found) < limit:
        chain = gate_chain(queue.pop(0))
        found.extend(step for step in chain if step not in found)
        last = chain[-1]
        if op_name(last) in ("add", "sub"):
            queue.extend(child for child, _ in last.next_functions if child is not None and child not in found)
    return found[:limit]


def times_a_tensor(mul_node) -> bool:
    """Whether a product with one factor in the graph multiplies it by a tensor of values (an input, `x * gate`), not
    by a constant number: the other factor, saved for the backward, has axes."""
    other = saved_value(mul_node, "_saved_self")
    other = saved_value(mul_node, "_saved_other") if other is None else other
    return isinstance(other, torch.Tensor) and other.dim() > 0


def additions(nodes) -> list:
    """The additions and subtractions among `nodes` (where a straight-through path joins: `straight_through`)."""
    return [node for node in nodes if op_name(node) in ("add", "sub")]


def straight_through(gate, sums) -> bool:
    """Whether an operation whose derivative is zero (round, sign, clamp) is bypassed by a straight-through path
    written around it: `round(x) - x.detach() + x`, or `sign(W) - W.detach() + W`, one of the additions or
    subtractions `sums` that reads the operation's input directly beside a path to the operation. The gradient
    reaches the input through it as if the operation were the identity: by design, no leak. (`x + (round(x) -
    x).detach()` keeps the operation out of the graph altogether.)"""
    source = _gate_source(gate)
    if source is None:
        return False
    for node in sums:
        children = [child for child, _ in node.next_functions if child is not None]
        direct = [child for child in children if beneath_scaling(child) is source]
        if direct and any(_reaches(child, gate, 4) for child in children if child not in direct):
            return True
    return False


def cancelled_straight_through(gate, sums) -> bool:
    """Whether a straight-through estimator around `gate`, an op whose derivative is 0 everywhere (round, sign), was
    written without its detach, `z + (round(z) - z)` or `z - (z - round(z))`: one of the subtractions `sums` takes
    the op's input z itself (not `z.detach()`) and a path to the op, one from the other. The forward is round(z), but
    the gradient reaching z is +g through the outer `z`, 0 through the op and -g through the inner one: exactly 0."""
    source = _gate_source(gate) if op_name(gate) in ZERO_DERIVATIVE else None
    if source is None:
        return False
    for node in sums:
        children = [child for child, _ in node.next_functions]
        if op_name(node) != "sub" or len(children) != 2 or None in children:
            continue
        for one, other in (children, children[::-1]):
            if beneath_scaling(one) is source and _reaches(other, gate, 4):
                return True
    return False


def turned_straight_through(gate, sums) -> bool:
    """Whether a straight-through path written around `gate` hands its input z the gradient turned around:
    `round(z) - z + z.detach()`, where `z + (round(z) - z).detach()` was meant. The outermost addition or subtraction
    joining z and a path to the gate subtracts z more often than it adds it, and is itself an addition of something
    with no graph (the `z.detach()`): the forward gives round(z), the gradient reaching z is -g, and what comes before
    it climbs the loss. Only for ops flat everywhere (round, sign, ...); a penalty `(round(z) - z) ** 2` or
    `(z.clamp(-1, 1) - z) ** 2` has no detached term, and is no estimator."""
    source = _gate_source(gate) if op_name(gate) in ZERO_DERIVATIVE else None
    if source is None:
        return False
    joining = [node for node in sums if _reaches(node, gate, 4) and _direct_reads(node, source, gate, 4)[1]]
    tops = [node for node in joining if not any(other is not node and _reaches(other, node, 4) for other in joining)]
    if not tops or op_name(tops[0]) != "add" or all(child is not None for child, _ in tops[0].next_functions):
        return False
    return _direct_reads(tops[0], source, gate, 4)[0] < 0


def _direct_reads(node, source, gate, depth: int) -> tuple[int, int]:
    """(how many times a chain of additions and subtractions from `node` adds `source`, under constant factors, less
    how many times it subtracts it; how many times it reads it). Paths through the gate, or anything else, count 0."""
    if beneath_scaling(node) is source:
        return 1, 1
    if depth == 0 or node is gate or op_name(node) not in ("add", "sub"):
        return 0, 0
    net = reads = 0
    for sign, (child, _) in zip((1, -1) if op_name(node) == "sub" else (1, 1), node.next_functions):
        if child is not None:
            below = _direct_reads(child, source, gate, depth - 1)
            net, reads = net + sign * below[0], reads + below[1]
    return net, reads


ZERO_DERIVATIVE = ("sign", "round", "floor", "ceil", "trunc")  # flat everywhere: their derivative is 0 where defined


def times_its_own_magnitude(gate, products) -> bool:
    """Whether an operation whose derivative is 0 everywhere (sign) multiplies, among `products`, a factor computed
    from its own input: soft thresholding `sign(z) * relu(|z| - theta)`, a signed power `sign(x) * |x| ** p`. The
    derivative reaches the input through that factor (d/dz = sign(z)^2 relu'(...)): the zero one of the sign is no
    leak, by design. The factor must have the sign's shape, a magnitude per entry: `sign(W) * mean(|W|)`, a binarised
    weight times its scale, passes W one number's gradient, and the signs themselves never learn."""
    source = _gate_source(gate) if op_name(gate) in ZERO_DERIVATIVE else None
    if source is None:
        return False
    for node in products:
        factors = [child for child, _ in node.next_functions if child is not None]
        if len(factors) == 2 and any(beneath_scaling(factor) is gate for factor in factors):
            other = factors[1] if beneath_scaling(factors[0]) is gate else factors[0]
            made = beneath_reshapes(other)  # (a mean expanded to the sign's shape is still one number per row)
            if output_shape(made) is None or output_shape(made) != output_shape(gate):
                continue
            if other is source or _reaches(other, source, 6):
                return True
    return False


def _gate_source(gate):
    """What a gating op's input was computed by, under reshapes and constant factors (`round(W * 8)`: W), or None."""
    inputs = [child for child, _ in gate.next_functions if child is not None]
    return beneath_scaling(inputs[0]) if inputs else None


def sparse_projection(gate) -> bool:
    """Whether a clamp at 0 is the last step of a sparsemax (or entmax): `clamp(z - tau, min=0)` with the threshold
    tau computed from z itself through a sort (or topk) of it. Its zero derivative outside the support is what makes
    the output sparse, by design: entries below tau get no gradient, as a softmax's tiny entries get almost none."""
    inputs = [child for child, _ in gate.next_functions if child is not None]
    if op_name(gate) not in ("clamp", "clamp_min") or len(inputs) != 1 or op_name(inputs[0]) != "sub":
        return False
    below = [child for child, _ in inputs[0].next_functions if child is not None]
    return len(below) == 2 and _finds_op(below[1], ("sort", "topk"), 8)


def _finds_op(node, ops: tuple, depth: int) -> bool:
    """Whether an operation among `ops` is `node` or lies within `depth` operations below it."""
    if op_name(node) in ops:
        return True
    if depth == 0:
        return False
    return any(child is not None and _finds_op(child, ops, depth - 1) for child, _ in node.next_functions)


def _reaches(node, target, depth: int) -> bool:
    """Whether `target` is `node` or lies within `depth` operations below it."""
    if node is target:
        return True
    if depth == 0:
        return False
    return any(child is not None and _reaches(child, target, depth - 1) for child, _ in node.next_functions)


def saved_value(node, name: str):
    """A number or tensor an autograd node saved for its backward (`_saved_min_val`, `_saved_result`), or None once
    the backward has freed it, or when this kind of node saves no such value (`MulBackward1`, a product with a
    number, saves no `_saved_self`), or when a saved-tensor hook holds it: unpacking it would run the training's own
    code (a non-reentrant checkpoint recomputes its whole block, batch norms updating their statistics again;
    `save_on_cpu` copies it back), so it is not read."""
    try:
        raw = getattr(node, "_raw" + name, None)  # (`_raw_saved_result`: the tensor as saved, not unpacked)
        if raw is not None and not isinstance(raw, (list, tuple)) and raw.unpack_hook is not None:
            return None
        return getattr(node, name, None)
    except RuntimeError:
        return None


def hinge_mean(node) -> torch.Tensor | None:
    """The mean of a floor at 0's output, max(x, 0), from what its node saved (a ReLU its result, a clamp its input):
    on a loss, the margin loss's own value, whatever other terms the step's loss adds. None for other ops."""
    op = op_name(node)
    bound = constant_bound(node) if op in ("maximum", "fmax") else None
    if bound is not None and bound[1] == 0:  # (max(x, 0): its input is the one that is computed)
        op, saved = "clamp", saved_value(node, "_saved_self" if bound[0] == 0 else "_saved_other")
    else:
        saved = saved_value(node, "_saved_result") if op == "relu" else saved_value(node, "_saved_self")
    if op not in ("relu", "clamp", "clamp_min") or not isinstance(saved, torch.Tensor) or not saved.is_floating_point():
        return None
    values = saved.detach()
    return (values if op == "relu" else values.clamp(min=0)).float().mean()


# a layer's product, the input position it reads, and where its node keeps that input (saved for the weight's gradient)
LAYER_PRODUCTS = {"addmm": (1, "_saved_mat1"), "mm": (0, "_saved_self"), "convolution": (0, "_saved_input")}


def layer_output_read_as_made(node, names) -> tuple[str, torch.Tensor] | None:
    """When `node` is a layer's product (a Linear's addmm or mm, a convolution) reading another layer's output with no
    operation between the two in the graph (reshapes aside): that layer's name, and the values the product saved.
    Whatever those values hold, autograd will pass the gradient back to that layer as the product computed it."""
    entry = LAYER_PRODUCTS.get(op_name(node))
    if entry is None or len(node.next_functions) <= entry[0]:
        return None
    child = node.next_functions[entry[0]][0]
    if child is None:
        return None
    made_by = beneath_reshapes(child)
    if op_name(made_by) not in LAYER_PRODUCTS:
        return None
    name = None  # (a Linear on 3-D input is named at the view over its product: look at every level)
    while name is None and child is not None:
        name = names.get(child)
        child = None if child is made_by else next((c for c, _ in child.next_functions if c is not None), None)
    if name is None:
        return None
    saved = saved_value(node, entry[1])
    return (name, saved) if isinstance(saved, torch.Tensor) and saved.is_floating_point() else None


MARGIN_TERMS = ("rsub", "sub", "add", "neg", "view", "reshape", "_unsafe_view", "squeeze", "unsqueeze", "expand")


def label_factor(hinge) -> torch.Tensor | None:
    """The constant factor y of the product y * f that a margin loss's hinge max(0, m - y f) reads, through the
    margin's subtraction, negations, reshapes and constant factors: the labels, as the product's node saved them.
    None when the hinge reads no such product (a triplet loss's distances), when no subtraction lies between them
    (`relu(mask * t)`: a mask of valid triplets, no labels), or when both factors carry gradient. A product of a
    constant with another product (`y * f * mask`) is looked into: the labels are the factor beside the score."""
    frontier = [(child, False) for child, _ in hinge.next_functions if child is not None]  # (node, subtracted above)
    for _ in range(6):
        next_frontier = []
        for node, subtracted in frontier:
            op, factors = op_name(node), [child for child, _ in node.next_functions]
            if op == "mul" and len(factors) == 2 and subtracted and factors.count(None) == 1:
                constant = factors.index(None)
                other = factors[1 - constant]
                if op_name(beneath_reshapes(other)) == "mul":  # (the score is further in: y * f * mask)
                    next_frontier.append((beneath_reshapes(other), subtracted))
                    continue
                # (y * f: the node keeps y to give f its gradient, grad * y)
                labels = saved_value(node, "_saved_self" if constant == 0 else "_saved_other")
                return labels if isinstance(labels, torch.Tensor) else None
            if op in MARGIN_TERMS or (op == "mul" and len(factors) == 1):  # (a product with a number: 0.5 * y f)
                below = subtracted or op in ("rsub", "sub", "neg")
                next_frontier.extend((child, below) for child in factors if child is not None)
        frontier = next_frontier
    return None


BOUNDING_OPS = ("maximum", "fmax", "minimum", "fmin")  # elementwise max or min of two tensors


def constant_bound(node) -> tuple[int, float] | None:
    """For an elementwise max or min of a computed tensor and a constant number (`torch.maximum(kl, torch.tensor(3.0))`,
    free nats as Dreamer writes them; `torch.min(x, c)`; a tensor full of one number): (the position of the computed
    input, the number). The computed input gets no gradient wherever the number wins, as under a clamp. None for two
    computed tensors (the max of two branches: one or the other gets the gradient everywhere), or against data that
    varies (the corners of target boxes in an IoU loss: a comparison, not a bound), or a constant on a GPU (not read:
    that would wait for the device)."""
    if op_name(node) not in BOUNDING_OPS or len(node.next_functions) != 2:
        return None
    computed = [position for position, (child, _) in enumerate(node.next_functions) if child is not None]
    if len(computed) != 1:
        return None
    try:
        constant = getattr(node, "_saved_other" if computed[0] == 0 else "_saved_self", None)
    except RuntimeError:  # (freed)
        return None
    if not isinstance(constant, torch.Tensor) or not constant.is_cpu or constant.numel() == 0 or constant.is_complex():
        return None
    first = constant.reshape(-1)[0]
    if constant.numel() > 1 and not bool((constant == first).all()):
        return None
    return computed[0], float(first)


def floors_at_zero(node) -> bool:
    """Whether a clamp-like operation is a floor at 0: a ReLU, written as relu, clamp(min=0), (ReLU6) hardtanh(0, 6),
    (nn.Threshold) threshold(x, t, v) or max(x, 0), or, on a loss, the hinge of a margin loss. Below it no gradient
    passes, by design. (A clamp to a range, such as [0, 1], is no floor: it blocks above too.)"""
    op = op_name(node)
    if op in ("relu", "threshold"):  # (threshold: a ReLU whose knee may sit at t, not 0; it blocks only below t)
        return True
    if op in ("maximum", "fmax"):
        bound = constant_bound(node)
        return bound is not None and bound[1] == 0
    try:
        if op == "hardtanh":
            return node._saved_min_val == 0
        return getattr(node, "_saved_min", None) == 0 and getattr(node, "_saved_max", None) is None  # clamp(_min)
    except RuntimeError:  # a bound given as a tensor, already freed
        return False


def floors_at_an_epsilon(node) -> bool:
    """Whether a clamp has a lower bound only, above 0 and below SMALLEST_FLOOR (`x.clamp(min=1e-6).pow(p)`, GeM
    pooling's guard): a ReLU that keeps its outputs off 0 for a root or a log, blocking what a ReLU blocks."""
    try:
        if op_name(node) not in ("clamp", "clamp_min") or getattr(node, "_saved_max", None) is not None:
            return False
        low = getattr(node, "_saved_min", None)
    except RuntimeError:  # a bound given as a tensor, already freed
        return False
    if isinstance(low, torch.Tensor) and low.numel() == 1 and low.is_cpu:
        low = low.item()
    return isinstance(low, (int, float)) and 0 < low < SMALLEST_FLOOR


def clamp_range(node) -> tuple[float | None, float | None] | None:
    """(lower, upper) bound of a clamp (`clamp`, `clamp_min`, `clamp_max`, `hardtanh`) given as numbers, None for a
    side left open; None for any other operation, or bounds given as tensors."""
    op = op_name(node)
    try:
        if op == "hardtanh":
            low, high = node._saved_min_val, node._saved_max_val
        elif op in ("clamp", "clamp_min", "clamp_max"):
            low, high = getattr(node, "_saved_min", None), getattr(node, "_saved_max", None)
        else:
            return None
    except RuntimeError:  # (freed)
        return None
    if not all(bound is None or isinstance(bound, (int, float)) for bound in (low, high)):
        return None
    return low, high


SPREADS = ("std", "var", "std_mean", "var_mean")


def too_few_to_spread(node) -> dict | None:
    """{"values", "correction", "dims"} when a standard deviation or variance reduced `values` entries per result with
    a `correction` (Bessel's, 1 by default) at least as large: it divides by values - correction <= 0, and the
    result is NaN (`h.std(0)` over a batch of one example); else None."""
    if op_name(node) not in SPREADS:
        return None
    try:
        saved = getattr(node, "_saved_self", None)
        dims, correction = getattr(node, "_saved_dim", None), getattr(node, "_saved_correction", None)
    except RuntimeError:  # (freed)
        return None
    if not isinstance(saved, torch.Tensor):
        return None
    dims = tuple(range(saved.dim())) if dims is None or dims == () else tuple(d % max(saved.dim(), 1) for d in dims)
    values = math.prod(saved.shape[d] for d in dims) if saved.dim() else 1
    correction = 1 if correction is None else correction
    if not isinstance(correction, (int, float)) or values - correction > 0:
        return None
    return {"values": values, "correction": correction, "dims": list(dims)}


SMALLEST_FLOOR = 1e-3  # a lower bound below this guards a log or a division (`p.clamp(min=1e-7).log()`): no floor


def floor_above_zero(node) -> float | None:
    """A clamp's lower bound when it has no upper one and the bound is a number of at least SMALLEST_FLOOR
    (`kl.clamp(min=free_nats)`: a floor on a loss term, free bits or free nats, below which the term passes no
    gradient); else None."""
    if op_name(node) in ("maximum", "fmax"):  # (`torch.maximum(kl, torch.tensor(3.0))`: the same floor)
        bound = constant_bound(node)
        return bound[1] if bound is not None and bound[1] >= SMALLEST_FLOOR else None
    try:
        low = getattr(node, "_saved_min", None) if op_name(node) in ("clamp", "clamp_min") else None
        if getattr(node, "_saved_max", None) is not None:
            return None
    except RuntimeError:  # a bound given as a tensor, already freed
        return None
    if isinstance(low, torch.Tensor) and low.numel() == 1 and low.is_cpu:
        low = low.item()
    return float(low) if isinstance(low, (int, float)) and low >= SMALLEST_FLOOR else None


READS_DATA = ("bmm", "linear", "matmul", "embedding", "embedding_bag", "index_select", "index", "gather")


def of_parameters_alone(node, budget: int = 24, largest: int = 16) -> bool:
    """Whether `node` is computed from small learnable leaves (of `largest` entries at most, at least one: a learned
    rate or temperature, watched or not) and constants alone, within `budget` operations, none of them one that reads
    data through a parameter (a layer's product, an embedding's lookup): a learned probability turned into a mask
    with noise (concrete dropout's), not a layer's output. (A layer's output is computed from parameters and
    constants too, its input being a constant to autograd: the product, and its weight's size, tell it.)"""
    seen, frontier, parameters = {node}, [node], 0
    while frontier:
        current = frontier.pop()
        if type(current) is PARAMETER_LEAF:
            if current.variable.numel() > largest:  # (a weight: `x * w + b` reads data through it)
                return False
            parameters += 1
            continue
        if op_name(current) in LAYER_PRODUCTS or op_name(current) in READS_DATA:
            return False
        for child, _ in current.next_functions:
            if child is not None and child not in seen:
                if len(seen) >= budget:
                    return False
                seen.add(child)
                frontier.append(child)
    return parameters > 0


def nearest_upstream(node, names, limit: int = 8) -> str | None:
    """The name of the nearest node upstream (towards the input) that `names` knows: the layer feeding `node`."""
    frontier, seen = [node], {node}
    for _ in range(limit):
        next_frontier = []
        for current in frontier:
            for child, _ in current.next_functions:
                if child is None or child in seen:
                    continue
                if child in names:
                    return names[child]
                seen.add(child)
                next_frontier.append(child)
        frontier = next_frontier
    return None


def leads_to_where(node, parents: dict, limit: int = 6) -> bool:
    """Does the output of `node` flow into a torch.where within a few operations (towards the loss)?"""
    frontier, seen = [node], {node}
    for _ in range(limit):
        next_frontier = []
        for current in frontier:
            for parent in parents.get(current, ()):
                if parent in seen:
                    continue
                if op_name(parent) == "where":
                    return True
                seen.add(parent)
                next_frontier.append(parent)
        frontier = next_frontier
    return False


def saved_tensors(node) -> list:
    """The tensors a node saved for its backward (inputs, outputs), as far as they are still held."""
    out = []
    for attribute in dir(node):
        if not attribute.startswith("_saved_") or attribute.endswith(("_sizes", "_strides", "_sym_sizes")):
            continue
        try:
            value = getattr(node, attribute)
        except RuntimeError:  # freed by an earlier backward
            continue
        values = value if isinstance(value, (tuple, list)) else (value,)
        out.extend(v for v in values if isinstance(v, torch.Tensor))
    return out


def is_finite(tensor: torch.Tensor) -> bool:
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return True
    return bool(torch.isfinite(tensor).all())


def kind_of_nonfinite(tensor: torch.Tensor) -> str:
    """'nan', 'inf', '-inf', or a combination such as 'nan and -inf'."""
    kinds = []
    if bool(torch.isnan(tensor).any()):
        kinds.append("nan")
    if bool((tensor == float("inf")).any()):
        kinds.append("inf")
    if bool((tensor == float("-inf")).any()):
        kinds.append("-inf")
    return " and ".join(kinds) or "nan"


@dataclass
class ForwardCulprit:
    phase: str  # "forward", or "update" when the non-finite values were already in the parameters
    op: str | None
    node: object | None
    candidates: list[str]
    exact: bool
    value: str
    parameters: list  # non-finite parameter tensors (phase "update")
    data_fed: bool = False  # (phase "forward") `node` read non-finite data: the NaN/Inf came in with it
    fed_tensor: object = None  # (data_fed) the non-finite tensor it read: the data, or a module's output without grad
    half_precision: bool = False  # (phase "forward") `node` ran in float16/bfloat16 and saved an infinite result


POLES_AT_ZERO = ("log", "log2", "log10", "div", "reciprocal", "rsqrt", "sqrt", "pow")  # infinite at 0 (or their slope)


def fed_by_a_floor_at_zero(node) -> str | None:
    """The op ("relu", "clamp", ...) whose output, exactly 0 for every input below 0, an op with a pole at 0 reads (a
    log, a division's denominator: `log(relu(z))`, `x / relu(z)`), under reshapes and selections; else None. A ReLU
    makes a positive quantity (a variance, a scale) with exact zeros in it, and log(0) = -inf."""
    if op_name(node) not in POLES_AT_ZERO or not node.next_functions:
        return None
    position = 1 if op_name(node) == "div" else 0  # (a division's pole is its denominator's zero)
    if len(node.next_functions) <= position or node.next_functions[position][0] is None:
        return None  # (a division by a number, or by a tensor with no history: data, not a ReLU's output)
    read = node.next_functions[position]
    below = beneath_reshapes(read[0], also=SELECTIONS)
    return op_name(below) if floors_at_zero(below) else None


# operations whose tensor arguments may rightly hold inf: bounds
BOUND_OPS = {"clamp", "clamp_min", "clamp_max", "clip", "minimum", "maximum", "fmin", "fmax"}


def nonfinite_target(node) -> bool:
    """Whether a loss's node saved a target that holds NaN or Inf (`mse_loss(prediction, torch.log(price))` with a
    price of 0)."""
    target = saved_value(node, "_saved_target")
    return isinstance(target, torch.Tensor) and not is_finite(target)


def locate_forward_nonfinite(loss: torch.Tensor) -> ForwardCulprit:
    """Where did a non-finite loss come from? Read the values every node saved, find the first that is not finite.

    A node's output is known when a consumer saved it (or it saved its own result); its inputs when it saved
    them. The culprit is the earliest operation whose output is non-finite (or unknown and on the path to one)
    while its inputs are finite; unary operations (log, sqrt, exp, ...) are recomputed to confirm.
    """
    graph = walk([loss.grad_fn])
    finite: dict = {loss.grad_fn: False}
    bad_params, data_fed = [], {}  # data_fed: node -> (kind of the non-finite data (no gradient) it saved, the data)
    for node in graph.nodes:
        if op_name(node) == ACCUMULATE:
            variable = node.variable
            finite[node] = is_finite(variable)
            if not finite[node]:
                bad_params.append(variable)
            continue
        for tensor in saved_tensors(node):
            producer = tensor.grad_fn
            ok = is_finite(tensor)
            if producer is not None:
                finite[producer] = finite.get(producer, True) and ok
            elif not tensor.requires_grad and not ok:
                kind = kind_of_nonfinite(tensor)
                if "nan" in kind or op_name(node) not in BOUND_OPS:  # (an infinite bound is no bad data)
                    data_fed.setdefault(node, (kind, tensor))
    order = forward_order(graph)
    if bad_params:
        return ForwardCulprit("update", None, None, [], False, "nan", bad_params)
    first = next((node for node in order if finite.get(node) is False), loss.grad_fn)
    # Candidates: `first` and the unknown-valued operations feeding it, up to known-finite values.
    candidates, queue = [first], [first]
    while queue:
        node = queue.pop()
        for child in graph.children.get(node, ()):
            if child not in candidates and finite.get(child) is None and op_name(child) != ACCUMULATE:
                candidates.append(child)
                queue.append(child)
    position = {node: i for i, node in enumerate(order)}
    candidates.sort(key=lambda node: position.get(node, 0))
    if _softmax_of_rows_masked_whole(first, candidates):  # attention over a sequence with every position masked
        names = [op_name(n) for n in candidates]
        return ForwardCulprit("forward", op_name(first), first, names, exact=True, value="nan", parameters=[])
    # an operation recomputed from its saved, finite inputs to a finite value is not the culprit (x ** 2 of finite x)
    candidates = [n for n in candidates if not _recomputed_finite(n)] or candidates
    # one recomputed from finite inputs to NaN/Inf made it (log(1 - p) of a p rounded to 1, below a product that saved
    # only its other factor); else the first that could have
    confirmed = next(
        (
            n
            for n in candidates
            if _recomputed_nonfinite(n) or _divides_by_zero(n) or _logdet_of_negative_determinant(n)
        ),
        None,
    )
    # else one that ran in half precision and saved an infinite result: float16 overflows past 65504 (exp past 11)
    overflowed = next((n for n in candidates if _half_precision_overflow(n)), None) if confirmed is None else None
    # ... or an exponential whose own saved result holds inf: exp overflows float32 past 88.7 (an unbounded log-scale)
    exploded = next((n for n in candidates if _exponential_overflow(n)), None) if confirmed is None else None
    confirmed = confirmed or (exploded if overflowed is None else None)
    culprit = confirmed or overflowed
    culprit = culprit or next((n for n in candidates if op_name(n) in FORWARD_NAN_PRONE), candidates[0])
    exact = len(candidates) == 1 or confirmed is not None
    fed = next((node for node in candidates if node in data_fed), None)
    if fed is not None and confirmed is None:
        # Unconfirmed, and one of them read a non-finite tensor from outside the graph: the NaN/Inf came in with it.
        # (Confirmed, an operation made it: a clamp may read an upper bound of inf, which is no bad data.)
        return ForwardCulprit(
            "forward",
            op_name(fed),
            fed,
            [op_name(fed)],
            exact=True,
            value=data_fed[fed][0],
            parameters=[],
            data_fed=True,
            fed_tensor=data_fed[fed][1],
        )
    value = "nan"
    recomputed = _recompute(culprit)
    if culprit is exploded:
        value = "inf"  # (what it made, whatever came of it after: inf * 0 is NaN)
    elif recomputed is not None:
        value = kind_of_nonfinite(recomputed)
    elif loss.numel() == 1:
        value = "inf" if math.isinf(float(loss.detach())) else "nan"
    names = [op_name(n) for n in candidates]
    half = culprit is overflowed
    if _logdet_of_negative_determinant(culprit):  # (torch.logdet is slogdet, then NaN where the sign is -1)
        return ForwardCulprit("forward", "logdet", culprit, ["logdet"], True, "nan", [])
    return ForwardCulprit("forward", op_name(culprit), culprit, names, exact, value, [], half_precision=half)


def divided_by_constant(node) -> float | None:
    """The number a node's input was divided by, when it was divided by a constant right before (`(logits + g) / tau`
    under a softmax: the temperature), else None."""
    below = next((child for child, _ in node.next_functions if child is not None), None)
    if below is None or op_name(below) != "div":
        return None
    divisor = saved_value(below, "_saved_other")
    if isinstance(divisor, torch.Tensor) and divisor.numel() == 1 and divisor.grad_fn is None:
        return float(divisor)
    return None


def saved_dim(node) -> int:
    """A node's saved `dim` (softmax's, say) as a Python index."""
    return signed(node._saved_dim)


def signed(saved: int) -> int:
    """A negative integer a node saved (a dim, an ignore_index) as the Python int it was: autograd saves them as
    unsigned 64-bit integers, -1 reading 2^64 - 1."""
    return saved - 2**64 if saved >= 2**63 else saved


def softmax_over_one_entry(node) -> dict | None:
    """A softmax (or log_softmax) taken over an axis of length 1 (`softmax(scores, dim=-1)` on scores of shape
    (N, T, 1)): every output is exactly 1 (0), its derivative exactly 0. {"dim", "shape"} or None."""
    try:
        result, dim = saved_value(node, "_saved_result"), saved_dim(node)
    except (AttributeError, RuntimeError):  # (freed: a second backward through a retained graph)
        return None
    if result is None:
        return None
    if result.dim() == 0 or result.shape[dim] != 1 or result.numel() <= 1:
        return None
    axis_of = dim % result.dim()
    # (N, 1): no axis it was meant over but the batch's (see read_by_a_loss)
    others = [size for axis, size in enumerate(result.shape) if axis not in (0, axis_of)]
    batch_axis_only = axis_of != 0 and all(size == 1 for size in others)
    return {"dim": dim, "shape": list(result.shape), "batch_axis_only": batch_axis_only}


def leaves_requiring_grad(roots, most: int) -> list[torch.Tensor]:
    """The leaf tensors requiring grad that the graphs of `roots` (tensors) reach, at most `most` of them, each once."""
    stack = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen, leaves = set(), []
    while stack and len(leaves) < most:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node) is PARAMETER_LEAF:
            leaves.append(node.variable)
            continue
        stack.extend(child for child, _ in node.next_functions)
    return leaves


ONE_OF_SEVERAL = ("topk", "max", "kthvalue", "gather", "index", "select", "slice")  # what picks k of n entries


def divided_by_own_sum_over_one(node) -> dict | None:
    """`w / w.sum(dim, keepdim=True)` where dim has length 1 and w was picked from several (top-1 gates renormalised
    to sum to 1, as for top-k): every output is exactly 1 (or NaN), whatever w, its derivative exactly 0.
    {"dim", "shape"} or None."""
    if op_name(node) != "div" or len(node.next_functions) != 2:
        return None
    (numerator, _), (denominator, _) = node.next_functions
    total = beneath_reshapes(denominator) if denominator is not None else None
    if numerator is None or total is None or op_name(total) != "sum" or not total.next_functions:
        return None
    if total.next_functions[0][0] is not numerator or not getattr(total, "_saved_keepdim", False):
        return None  # (without keepdim, w / w.sum(-1) of (N, 1) broadcasts to (N, N): not all ones)
    if op_name(beneath_reshapes(numerator)) not in ONE_OF_SEVERAL:
        return None  # (one weight of its own, a mixture of one component, is 1 by design)
    dims, sizes = getattr(total, "_saved_dim", None), saved_value(total, "_saved_self_sym_sizes")
    if not dims or not sizes or len(dims) != 1:
        return None
    sizes = [int(size) for size in sizes]
    dim = signed(dims[0])
    if len(sizes) < 2 or sizes[dim] != 1 or math.prod(sizes) <= 1:
        return None
    return {"dim": dim, "shape": sizes, "own_sum": True}


def read_on_the_loss_side(node, loss_nodes) -> bool:
    """Whether an operation of the loss reads `node`'s output, reshapes aside (`nll_loss(log(p))` of a model that ends
    in a softmax: its output, the prediction)."""
    return any(
        child is not None and beneath_reshapes(child) is node
        for reader in loss_nodes
        for child, _ in reader.next_functions
    )


def read_by_a_loss(node, loss_nodes) -> bool:
    """Whether a loss function (`nll_loss`, a binary cross-entropy, a regression loss) reads `node`'s output directly,
    reshapes aside: a one-output classifier's log_softmax under cross_entropy (its loss 0 whatever the scores), a
    softmax over one output before BCE. A one-component mixture's log_softmax, added to its component's log-density,
    is not (its mixing weight is 1 by design)."""
    for reader in loss_nodes:
        op = op_name(reader)
        if op.endswith("_loss") or op.startswith("binary_cross_entropy") or op == "kl_div":
            if any(child is not None and beneath_reshapes(child) is node for child, _ in reader.next_functions):
                return True
    return False


def _softmax_of_rows_masked_whole(node, candidates) -> bool:
    """A softmax (or log_softmax) whose NaN rows are exactly rows that a masked_fill before it filled whole: every
    score of the row set to -inf (an attention query over a sequence whose every position is padding), so that
    softmax divides 0 by 0 there. Then the softmax made the NaN, not the products before it, which were finite."""
    if op_name(node) not in ("softmax", "log_softmax"):
        return False
    try:
        result, dim = saved_value(node, "_saved_result"), saved_dim(node)
    except (AttributeError, RuntimeError):
        return False
    if result is None:
        return False
    for fill in (n for n in candidates if op_name(n) == "masked_fill"):
        try:
            mask = saved_value(fill, "_saved_mask")
            whole = mask.expand(result.shape).all(dim=dim)
        except (AttributeError, RuntimeError):  # (freed, or not of the softmax's shape: a reshape in between)
            continue
        nan_rows = result.isnan().any(dim=dim)
        if bool(nan_rows.any()) and bool((nan_rows <= whole).all()):
            return True
    return _masked_by_an_additive_mask(node, result, dim)


def _masked_by_an_additive_mask(node, result: torch.Tensor, dim: int) -> bool:
    """The same for a mask added to the scores (`scores + mask`, -inf where a position is masked, 0 elsewhere), which
    autograd does not keep: the softmax's input is a sum with a constant, its NaN rows are NaN whole (a row of -inf
    everywhere), and the rows that are not hold exact zeros (their masked positions: exp(-inf) = 0)."""
    inputs = [child for child, _ in node.next_functions if child is not None]
    below = beneath_reshapes(inputs[0]) if len(inputs) == 1 else None
    if below is None or op_name(below) != "add":
        return False
    if sum(child is not None for child, _ in below.next_functions) != 1:  # (scores + a constant, not x + y)
        return False
    nan = result.isnan()
    nan_rows, whole_rows = nan.any(dim=dim), nan.all(dim=dim)
    if not bool(nan_rows.any()) or not bool((nan_rows == whole_rows).all()):
        return False
    rows_left = result.masked_fill(nan, 1.0)  # (rows with NaN: out of the count of zeros below)
    return bool((rows_left == 0).any())


def _recompute(node):
    operands = _saved_operands(node)
    if operands is None:
        return None
    name = op_name(node)
    function = torch.mul if name == "mul" else RECOMPUTABLE.get(name)
    if name == "pow" and isinstance(getattr(node, "_saved_exponent", None), (int, float)):
        function = functools.partial(torch.pow, exponent=node._saved_exponent)  # x ** c, c a number
    if name == "logit":
        function = functools.partial(torch.logit, eps=getattr(node, "_saved_eps", None))  # (clamped to [eps, 1 - eps])
    if function is None:
        return None
    try:
        with torch.no_grad():
            return function(*operands)
    except RuntimeError:
        return None


def _saved_operands(node) -> list | None:
    """The inputs a node saved, when they are all it was computed from: a unary operation's input, or both factors of
    a product that saved them (x * x, or two tensors that both need a gradient; a product by a constant saves one)."""
    if op_name(node) == "mul":
        operands = [getattr(node, "_saved_self", None), getattr(node, "_saved_other", None)]
        return operands if all(isinstance(t, torch.Tensor) for t in operands) else None
    saved = getattr(node, "_saved_self", None)
    return [saved] if isinstance(saved, torch.Tensor) else None


def _recomputed_finite(node) -> bool:
    """Recomputed from its saved inputs, all finite, the operation gives finite values: it made no NaN or Inf. (A
    product of finite factors recomputed to finite values did not overflow.)"""
    try:
        operands = _saved_operands(node)
        inputs_finite = operands is not None and all(is_finite(t) for t in operands)
    except (AttributeError, RuntimeError):
        return False
    recomputed = _recompute(node) if inputs_finite else None
    return recomputed is not None and is_finite(recomputed)


def _half_precision_overflow(node) -> bool:
    """A NaN-prone operation whose saved result, in float16 or bfloat16, holds an infinity."""
    if op_name(node) not in FORWARD_NAN_PRONE:
        return False
    result = _saved_result(node)
    return result is not None and result.dtype in (torch.float16, torch.bfloat16) and bool(torch.isinf(result).any())


def half_precision_root(node) -> str | None:
    """The dtype ("bfloat16", "float16") of a square root (sqrt, rsqrt, a power) computed in half precision, or None.
    Its argument is usually a variance: written E[x^2] - E[x]^2, half precision's 8 or 11 bits of mantissa cancel it
    to 0 or below once the mean is a few times the spread, and the root of that is inf or NaN."""
    if op_name(node) not in ("sqrt", "rsqrt", "pow"):
        return None
    saved = _saved_result(node)
    if saved is None:
        saved = saved_value(node, "_saved_self")
    if isinstance(saved, torch.Tensor) and saved.dtype in (torch.float16, torch.bfloat16):
        return str(saved.dtype).removeprefix("torch.")
    return None


def _saved_result(node) -> torch.Tensor | None:
    """The output a node saved for its backward (exp, sigmoid, tanh, ... keep it), or None."""
    try:
        result = saved_value(node, "_saved_result")
    except (AttributeError, RuntimeError):  # (none saved, or freed by the backward pass)
        return None
    return result if isinstance(result, torch.Tensor) else None


EXPONENTIALS = ("exp", "exp2")  # (they save their result: exp(x) = its own derivative)


def _exponential_overflow(node) -> bool:
    """An exponential whose saved result holds an infinity: its input passed the dtype's limit (88.7 for float32)."""
    if op_name(node) not in EXPONENTIALS:
        return False
    result = _saved_result(node)
    return result is not None and result.is_floating_point() and bool(torch.isinf(result).any())


def _divides_by_zero(node) -> bool:
    """A division whose divisor, saved for its backward (a / b saves b), holds an exact zero and is otherwise finite:
    x / 0 is inf, 0 / 0 NaN (a masked mean `(loss * mask).sum() / mask.sum()` over a batch whose mask is all 0)."""
    if op_name(node) != "div":
        return False
    try:
        divisor = saved_value(node, "_saved_other")
    except (AttributeError, RuntimeError):  # (a division by a number saves none; or freed)
        return False
    return isinstance(divisor, torch.Tensor) and is_finite(divisor) and bool((divisor == 0).any())


def _logdet_of_negative_determinant(node) -> bool:
    """`torch.logdet(A)`, which PyTorch computes as `where(sign == -1, nan, logabsdet)` after `linalg_slogdet`, whose
    saved condition holds a True: A's determinant was negative (A not positive definite), and the where put in NaN."""
    if op_name(node) != "where" or not any(
        child is not None and op_name(child) == "linalg_slogdet" for child, _ in node.next_functions
    ):
        return False
    condition = saved_value(node, "_saved_condition")
    return isinstance(condition, torch.Tensor) and condition.dtype == torch.bool and bool(condition.any())


def _recomputed_nonfinite(node) -> bool:
    try:
        operands = _saved_operands(node)
        inputs_finite = operands is not None and all(is_finite(t) for t in operands)
    except (AttributeError, RuntimeError):
        return False
    recomputed = _recompute(node) if inputs_finite else None
    return recomputed is not None and not is_finite(recomputed)


# --- a custom autograd.Function's backward: does it use the gradient it is given? ------------------------------------
# Names in a backward's code that mean calling it once more would do more than compute: run autograd (a reversible
# or checkpointed block that recomputes its forward and backpropagates through it inside), or step an optimiser.
_NOT_CALLED_TWICE = {"autograd", "backward", "enable_grad", "set_grad_enabled", "step", "grad_fn", "requires_grad_"}


GRADIENT_REVERSAL = re.compile(r"revers|revgrad|grl", re.IGNORECASE)  # GradReverse, ReverseLayerF, RevGrad, GRL


def named_as_gradient_reversal(name: str) -> bool:
    """Whether a custom Function's class name says it reverses the gradient (DANN's gradient reversal layer)."""
    return bool(GRADIENT_REVERSAL.search(name))


def along_grad_output(grad_inputs, grad_outputs) -> torch.Tensor | None:
    """The cosine between the gradient a Function's backward returned for its first input and the gradient it was
    given (of the same shape), or None: +1 passes it on, -1 reverses it."""
    given = next((g for g in grad_outputs if isinstance(g, torch.Tensor)), None)
    returned = next((g for g in grad_inputs if isinstance(g, torch.Tensor)), None)
    if given is None or returned is None or given.shape != returned.shape or not given.is_floating_point():
        return None
    given, returned = given.detach().double().flatten(), returned.detach().double().flatten()
    return torch.dot(given, returned) / (given.norm() * returned.norm()).clamp_min(1e-300)


def custom_function(node, testable: bool = True) -> str | None:
    """The class name of the user's `torch.autograd.Function` whose backward `node` runs, when that backward may be
    called once more to test it: written outside PyTorch, with no autograd or optimiser calls in its code, and no
    in-place changes (`testable=False`: whatever its backward does)."""
    if not isinstance(node, torch.autograd.function.BackwardCFunction):
        return None
    function = node._forward_cls
    if function.__module__.split(".")[0] == "torch":  # (PyTorch's own: checkpointing, and the like)
        return None
    if not testable:
        return function.__name__
    names = _names_in_code(function.backward)
    if names is None or not _NOT_CALLED_TWICE.isdisjoint(names) or any(map(_in_place, names)):
        return None
    return function.__name__


def _names_in_code(method) -> tuple[str, ...] | None:
    """The names a Function's forward or backward code uses (unwrapped: `@once_differentiable`), or None."""
    code = getattr(inspect.unwrap(method), "__code__", None)
    return None if code is None else code.co_names


def _in_place(name: str) -> bool:
    """A method that changes its tensor in place (`mul_`, `copy_`): a backward that writes into what it saved
    (to spare memory) would write into it once more if called again."""
    return name.endswith("_") and not name.startswith("_")


def ignores_grad_output(node, grad_inputs, grad_outputs) -> list[torch.Tensor] | None:
    """Per input of a custom Function's `node`: whether its backward returned the same nonzero gradient when given
    -2 times the gradients it was given (a 0-dim bool tensor each, on the device; None for an input without a
    gradient). The chain rule makes a backward linear in grad_output; one that returns the local derivative alone,
    forgetting to multiply it by grad_output, returns the same whatever the loss asks of it. Called after the real
    backward (a post-hook), while the node still holds what it saved; the random generators are restored after, so
    that the training draws the same numbers. None when the backward draws random numbers itself: not tested."""
    flipped = [None if g is None else -2 * g for g in grad_outputs]
    devices = sorted({g.device.index for g in grad_outputs if g is not None and g.is_cuda})
    with torch.no_grad(), torch.random.fork_rng(devices=devices):
        before = _generator_states(devices)
        again = node.apply(*flipped)
        if any(not torch.equal(a, b) for a, b in zip(before, _generator_states(devices))):
            return None  # it draws random numbers (Shake-Shake's beta): a different gradient each call, by design
    again = again if isinstance(again, tuple) else (again,)
    flags = []
    for given, other in zip(grad_inputs, again):
        if not isinstance(given, torch.Tensor) or not isinstance(other, torch.Tensor) or given.shape != other.shape:
            flags.append(None)
            continue
        flags.append((given == other).all() & (given != 0).any())
    return flags


def _generator_states(devices) -> list[torch.Tensor]:
    """The states of PyTorch's CPU generator and of the given CUDA devices' (a few kilobytes each)."""
    return [torch.get_rng_state(), *(torch.cuda.get_rng_state(device) for device in devices)]


# --- a custom autograd.Function's backward against its forward: the dot-product test of gradcheck ------------------
FORWARD_STEP = 1e-5  # the finite-difference step, times each input's root mean square (the forward runs in float64)
CHECK_DIRECTIONS = 2  # random directions each test looks along


def forward_may_run_again(function) -> bool:
    """Whether a custom Function's forward may be called again, on copies of its inputs, to test its backward: no
    autograd or optimiser calls in its code (see `_NOT_CALLED_TWICE`)."""
    names = _names_in_code(function.forward)
    return names is not None and _NOT_CALLED_TWICE.isdisjoint(names)


def held_for_backward(node) -> list[torch.Tensor]:
    """The tensors a custom Function's node holds for its backward: those it saved (`ctx.save_for_backward`) and those
    kept as attributes of its context (`ctx.beta = beta`). [] when they cannot be read (freed)."""
    try:
        saved = list(node.saved_tensors)
    except RuntimeError:
        saved = []
    kept = [value for value in getattr(node, "__dict__", {}).values() if isinstance(value, torch.Tensor)]
    return [t for t in saved + kept if isinstance(t, torch.Tensor)]


def backward_against_forward(
    forward, args, differentiated, grad_inputs, grad_outputs, outputs, held=()
) -> torch.Tensor | None:
    """Compare a custom Function's backward with its forward, as `torch.autograd.gradcheck` does with one number per
    direction. The chain rule asks the backward for g = J^T u (u the gradient that arrived, `grad_outputs`; J the
    forward's Jacobian), so for any direction v of the inputs <g, v> = <u, J v>; and J v is the forward's change
    along v, (f(x + h v) - f(x - h v)) / 2h. `forward` runs the Function again, in float64, on copies of its inputs
    made for each call (nothing it writes into in place is the training's), every random generator it may draw from
    put back after (PyTorch's, a `torch.Generator` among its arguments, NumPy's and Python's); the inputs moved are
    those `differentiated` that got a gradient.

    Returns, on the inputs' device, [T, then per direction: <g, v>, <u, J v> with step h, the same with step h/2]:
    T = ||g * scale||, the typical size of <g, v> (each input's entries drawn N(0, its rms^2)); the second
    estimate tells a smooth forward (the two agree) from one with a kink or a jump close by. None when it cannot be
    tested: no input got a gradient, a shape that does not match, a forward that fails in float64, or one that does
    not give again the `outputs` the training got from it (random numbers drawn otherwise than from the generators
    put back: a float64 draw is not a float32 one)."""
    grad_inputs = grad_inputs if isinstance(grad_inputs, tuple) else (grad_inputs,)
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]  # (the node's inputs: its tensors)
    if len(grad_inputs) != len(tensors):
        return None
    grad_inputs = dict(zip(tensors, grad_inputs))  # argument's position -> its gradient
    moved = [  # (the arguments moved along a direction: those that required grad and got one)
        i
        for i, g in grad_inputs.items()
        if differentiated[i] and isinstance(g, torch.Tensor) and g.shape == args[i].shape and g.is_floating_point()
    ]
    if not moved or _passes_gradient_through(moved, grad_inputs, grad_outputs):
        return None
    generators = [a for a in args if isinstance(a, torch.Generator)]
    states = [g.get_state() for g in generators], np.random.get_state(), random.getstate()
    try:
        # (the tensors given to it, not moved, that its backward holds: one its forward does not read is there for the
        # backward alone, Shake-Shake's beta)
        for_backward = [i for i, a in enumerate(args) if i not in moved and _among(a, held)]
        return _compare(forward, args, moved, grad_inputs, grad_outputs, outputs, for_backward)
    except Exception:  # (a forward that cannot run in float64, or asserts its dtype: left untested)
        return None
    finally:
        for generator, state in zip(generators, states[0]):
            generator.set_state(state)
        np.random.set_state(states[1])
        random.setstate(states[2])


def _among(value, tensors) -> bool:
    """Whether `value` is a floating-point tensor with the memory and shape of one of `tensors`."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() == 0:
        return False
    return any(t.data_ptr() == value.data_ptr() and t.shape == value.shape for t in tensors)


def _compare(forward, args, moved, grad_inputs, grad_outputs, outputs, for_backward=()) -> torch.Tensor | None:
    base = [
        (a.detach().to(torch.float64, copy=True) if a.is_floating_point() else a.detach().clone())
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    ]
    device = base[moved[0]].device
    devices = [device.index] if device.type == "cuda" else []

    def run(shifted):
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in shifted]
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            return _as_tuple(forward(*copies))

    again = run(base)
    if not _same_outputs(again, outputs):
        return None  # (it does not compute again what the training got: nothing to compare its backward with)
    if len(moved) == 1 and _is_its_input(again, base[moved[0]]):
        return None  # the identity forward: written for its backward alone (a gradient reversal, a clip, a scale)
    if _reads_not_at_all(run, base, for_backward, again):
        return None  # a tensor given to it that its forward ignores: there for the backward (Shake-Shake's beta)
    scales = [base[i].square().mean().sqrt().clamp_min(1e-3) for i in moved]
    generator = torch.Generator(device=device).manual_seed(0)  # (its own: the training's generators are not drawn)
    typical = torch.stack([(grad_inputs[i].double() * s).square().sum() for i, s in zip(moved, scales)]).sum().sqrt()
    values = [typical]

    def change_along(directions, step):
        plus, minus = list(base), list(base)
        for i, v in zip(moved, directions):
            plus[i], minus[i] = base[i] + step * v, base[i] - step * v
        total = torch.zeros((), dtype=torch.float64, device=device)
        for u, p, m in zip(grad_outputs, run(plus), run(minus)):
            if isinstance(u, torch.Tensor) and isinstance(p, torch.Tensor) and p.shape == u.shape:
                total = total + (u.double() * (p.double() - m.double())).sum() / (2 * step)
        return total

    for k in range(len(moved) if len(moved) > 1 else 0):  # (one input at a time: is it rounded?)
        directions = [
            torch.randn(base[i].shape, generator=generator, dtype=torch.float64, device=device) * s * (j == k)
            for j, (i, s) in enumerate(zip(moved, scales))
        ]
        if change_along(directions, FORWARD_STEP).item() == 0:
            return None  # flat along one input (LSQ's quantiser rounds x, its step size is smooth): a surrogate
    for _ in range(CHECK_DIRECTIONS):
        directions = [
            torch.randn(base[i].shape, generator=generator, dtype=torch.float64, device=device) * s
            for i, s in zip(moved, scales)
        ]
        backward_dot = sum((grad_inputs[i].double() * v).sum() for i, v in zip(moved, directions))
        values += [backward_dot, change_along(directions, FORWARD_STEP), change_along(directions, FORWARD_STEP / 2)]
    return torch.stack([v.reshape(()).to(torch.float64) for v in values])


def _reads_not_at_all(run, base: list, for_backward: list[int], again: tuple) -> bool:
    """Whether one of the tensors given to the Function that its backward holds (the positions `for_backward`) leaves
    its forward's outputs exactly as they were when changed: passed for the backward alone, which is then no
    derivative of the forward by design (Shake-Shake's forward mixes its branches by alpha, its backward by another
    draw, beta)."""
    for i in for_backward:
        value = base[i]
        shifted = list(base)
        shifted[i] = value * 2 + 1
        outputs = run(shifted)
        same = len(outputs) == len(again) and all(
            torch.equal(a, b) if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else True
            for a, b in zip(outputs, again)
        )
        if same:
            return True
    return False


def _same_outputs(again: tuple, outputs: tuple) -> bool:
    """Whether the forward run again (float64) gave the training's outputs (float32 or less: to their precision)."""
    pairs = [(a, o) for a, o in zip(again, outputs) if isinstance(o, torch.Tensor) and o.is_floating_point()]
    if not pairs or len(again) != len(outputs):
        return False
    for a, o in pairs:
        if not isinstance(a, torch.Tensor) or a.shape != o.shape:
            return False
        o = o.detach().double()
        tolerance = 1e-3 * (o.abs().amax() if o.numel() else 0) + 1e-6
        if o.numel() and not bool(((a.double() - o).abs() <= tolerance).all()):
            return False
    return True


def _passes_gradient_through(moved, grad_inputs, grad_outputs) -> bool:
    """Whether the backward returned the gradient it was given, unchanged: a straight-through estimator (a rounding,
    a clamp, a sampling step whose gradient is taken to be the identity's), whose surrogate gradient is meant."""
    given = [u for u in grad_outputs if isinstance(u, torch.Tensor)]
    if len(moved) != 1 or len(given) != 1:
        return False
    g, u = grad_inputs[moved[0]], given[0]
    return g.shape == u.shape and torch.equal(g, u)


def _is_its_input(output: tuple, x: torch.Tensor) -> bool:
    """Whether a forward's output is its one moved input, unchanged (the identity)."""
    return (
        len(output) == 1
        and isinstance(output[0], torch.Tensor)
        and output[0].shape == x.shape
        and torch.equal(output[0].double(), x)
    )


def _as_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def backward_disagrees(numbers) -> dict | None:
    """Read `backward_against_forward`'s numbers: None when the test says nothing (the forward is flat along a
    direction, a straight-through estimator's rounding; or not smooth there, a kink or a jump within the step; or
    no gradient came out), else {"agrees", "mismatch" (the larger of the directions'), "backward_dot",
    "numerical_dot" (that direction's), and "scaled_by" when the backward is the true gradient times one constant
    (the same ratio along both directions: a sign, or a factor, missing or added)}."""
    typical, rest = numbers[0], numbers[1:]
    directions = [rest[k : k + 3] for k in range(0, len(rest), 3)]
    if not directions or not typical > 0:
        return None
    mismatches, ratios = [], []
    for backward_dot, numerical, numerical_half in directions:
        size = max(abs(numerical), abs(numerical_half))
        if size == 0 or abs(numerical - numerical_half) > 1e-3 * size:
            return None  # flat (a rounding), or a kink or a jump within the step: nothing to compare
        scale = max(abs(backward_dot), abs(numerical), 0.1 * typical)
        mismatches.append(abs(backward_dot - numerical) / scale)
        ratios.append(backward_dot / numerical)
    worst = max(range(len(mismatches)), key=mismatches.__getitem__)
    result = {
        "agrees": mismatches[worst] <= 0.1,
        "mismatch": mismatches[worst],
        "backward_dot": directions[worst][0],
        "numerical_dot": directions[worst][1],
    }
    low, high = min(ratios), max(ratios)
    if not result["agrees"] and len(ratios) >= 2 and low * high > 0 and high - low <= 0.05 * max(-low, high):
        result["scaled_by"] = sum(ratios) / len(ratios)
    return result
