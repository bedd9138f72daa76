"""Explanations and remedies: the chain-rule account of each finding, told with this run's numbers.

Backprop multiplies the gradient, on its way from the loss to each weight, by one local derivative per
operation (the chain rule). Every leak is one of those factors being too small, too large, zero or not a
number; each function below says which factor it was, how big it measured, and what changes it.
One function per symptom, evidence in, (explanation, remedies) out.
"""

from __future__ import annotations

from leakygrad.doctor.findings import Finding

DERIVATIVE_BOUNDS = {
    "sigmoid": "sigma'(z) = sigma(z)(1 - sigma(z)) <= 0.25",
    "tanh": "tanh'(z) = 1 - tanh(z)^2 <= 1, and near 0 once |z| > 2",
    "relu": "relu'(z) = 1 where z > 0, else 0",
    "hardtanh": "hardtanh'(z) = 1 inside [-1, 1], else 0",
    "hardsigmoid": "hardsigmoid'(z) = 1/6 inside [-3, 3], else 0",
}


def fmt(x) -> str:
    """A number the way a person reads it: 3 significant digits, scientific when tiny or huge."""
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-3:
        return f"{x:.2g}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
    return f"{x:.3g}"


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _listed(names: list[str], most: int = 6) -> str:
    """`a`, `b`, `c` (and the count of the rest, past `most`)."""
    shown = ", ".join(f"`{name}`" for name in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _layers(count: int) -> str:
    return "1 layer" if count == 1 else f"{count} layers"


# --- vanishing / exploding --------------------------------------------------------------------------------------
DEEP_PLAIN_STACK = 20  # weighted layers in a chain from which residual connections come first among the remedies


def _explain_unheld_loss_weight(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is learned, and used only as a weight exp(+-s) on loss terms, with nothing in the loss holding "
        "it back. The loss falls fastest by moving it: the weights go towards 0, the recorded loss with them, while "
        "the terms they weigh stay where they are; and every gradient those terms send to the model is multiplied by "
        f"its weight, so the model's gradient vanishes with it. Its values went from {e['values_first']} to "
        f"{e['values_last']}."
    )
    remedies = [
        f"Add the term that holds it back, as in uncertainty weighting (Kendall et al. 2018): `loss = exp(-s) * L + s` "
        f"for each term (s = log sigma^2 of that task), or fix the weights instead of learning `{f.where}`.",
    ]
    return text, remedies


def _explain_hooks_piling_up(f: Finding):
    e = f.evidence
    hooks = e["hooks_piling_up"]
    text = (
        f"`{hooks['parameter']}` carries {hooks['hooks_last']} gradient hooks, {hooks['hooks_first']} at the first "
        f"of these sampled steps, {e['steps_between']} steps before: one more every step, registered (in forward(), "
        "or in the loop) and never removed. Every backward runs them all, each on what the one before returned, so a "
        "hook that multiplies the gradient by c multiplies it by c^n after n steps. The gradient of "
        f"`{f.where}`'s parameters went from {fmt(e['grad_norm_first'])} to "
        + (f"{fmt(e['grad_norm_last'])} over those steps ({fmt(e['ratio'])} times)." if e["ratio"] else "exactly 0.")
    )
    if e.get("also_layers"):
        text += f" The parameters of {_listed(e['also_layers'])} carry hooks piling up the same way."
    remedies = [
        "Register the hook once (in `__init__`, or before the loop), or keep the handle it returns and call "
        "`handle.remove()` when it has run; to scale a part of the model's updates, give it its own learning rate "
        "in a parameter group instead.",
    ]
    return text, remedies


def _explain_state_from_parameter(f: Finding):
    e = f.evidence
    cell = f.where.split(" (")[0]
    text = (
        f"`{cell}` is called {e['state_from_parameter_every_call']} times a step, and at every call its state is a "
        "parameter, the learned initial state, never its own last output: the state is set back to h0 at each time "
        "step (`h = self.h0.expand(N, -1)` inside the loop over time, where it belongs before it). Nothing is carried "
        "from one step to the next: d h_t / d h_(t-1) = 0 along every path, the gradient through time vanishes at "
        "once, and the prediction reads the last input alone. W_hh still gets a gradient (it multiplies h0), so "
        "nothing looks dead."
    )
    remedies = [
        "Expand the initial state once per sequence, before the loop, and pass each call's output to the next: "
        "`h = self.h0.expand(N, -1)` then `for t ...: h = cell(x[:, t], h)`."
    ]
    return text, remedies


def _explain_base_rate(f: Finding):
    e = f.evidence
    p = e["positives"]
    text = (
        f"{pct(p)} of the targets of `{f.where}` are 1, and the loss over the last third of the run "
        f"({fmt(e['loss_last_third'])}) sits at the entropy of that share, -(p ln p + (1 - p) ln(1 - p)) = "
        f"{fmt(e['base_rate_entropy'])}: the loss of a model that predicts {fmt(p)} for every entry, whatever its "
        "input. So it has learnt the base rate and nothing else. With positives this rare, the constant prediction "
        "is where the unweighted loss settles first: each positive's gradient is outweighed by the many negatives "
        "near it, and the logits stay where they rank nothing."
    )
    remedies = [
        f"Weigh the positives up: `F.binary_cross_entropy_with_logits(logits, y, pos_weight=torch.tensor("
        f"{fmt((1 - p) / p)}))` (negatives over positives), or use a focal or Dice loss.",
        "Start the output bias at the base rate's logit, log(p / (1 - p)), so the first steps are spent on the "
        "input, not on finding the rate; and check that the positives can be told from the input at all.",
    ]
    return text, remedies


def _explain_first_position_only(f: Finding):
    e = f.evidence
    text = (
        f"Of the {e['positions']} positions whose embeddings `{f.where}` hands to the model, only the first gets any "
        f"gradient from the loss: exactly 0 at positions 1 to {e['positions'] - 1} on each of the first {e['looks']} "
        "sampled steps. So the loss reads the model's output at position 0 alone, and nothing there depends on the "
        "later tokens: under a causal mask (a GPT-style decoder) position 0 attends to itself only, and a classifier "
        "reading `h[:, 0]`, a CLS token at the front, sees one token of each sequence; a recurrence read at its first "
        "step does the same. The rest of the sequence never reaches the prediction, or the gradient."
    )
    remedies = [
        "Read the position that has seen the whole sequence: the last (`h[:, -1]`, or each sequence's last real token "
        "when they are padded), or pool over the positions (`h.mean(1)`).",
        "For a classifier with a CLS token at the front, drop the causal mask: a bidirectional encoder lets position 0 "
        "attend to every token.",
    ]
    return text, remedies


def _explain_last_call_only(f: Finding):
    calls = f.evidence["calls_per_step"]
    text = (
        f"`{f.where}` is called {calls} times in each step, and the loss reaches only the output of its last call: the "
        f"other {calls - 1} outputs, and whatever they predict, get no gradient at all. The usual cause is a loss "
        "overwritten in the loop that makes them, `loss = criterion(out_t, y_t)` where `loss = loss + criterion(out_t, "
        "y_t)` was meant (a decoder's steps, an unrolled model's outputs): each step's loss replaces the one before, "
        "and only the last position is trained."
    )
    remedies = [
        "Add the losses up: start from `loss = 0` before the loop and write `loss = loss + criterion(out_t, y_t)` "
        "(or collect the outputs and call the loss once on all of them).",
    ]
    return text, remedies


def explain_vanishing_gradient(f: Finding):
    e = f.evidence
    if e.get("last_call_only"):
        return _explain_last_call_only(f)
    if "hooks_piling_up" in e:
        return _explain_hooks_piling_up(f)
    if "loss_weight_unheld" in e:
        return _explain_unheld_loss_weight(f)
    if e.get("state_from_parameter_every_call"):
        return _explain_state_from_parameter(f)
    if e.get("across") == "time":
        return _explain_time(f, vanishing=True)
    if e.get("across") == "positions":
        return _explain_first_position_only(f)
    if e.get("through_one_layer"):
        return _explain_one_layer(f, vanishing=True)
    if e.get("across") == "softmax twice":
        return _explain_softmax_twice(f)
    if e.get("across") == "sigmoid twice":
        return _explain_sigmoid_twice(f)
    if e.get("across") == "sigmoid then softmax":
        return _explain_sigmoid_then_softmax(f)
    if e.get("across") == "softmax then sigmoid":
        return _explain_softmax_then_sigmoid(f)
    if e.get("across") == "softmax without log":
        return _explain_softmax_without_log(f)
    derivatives = e.get("activation_mean_derivative") or {}
    squashing = [name for name in ("sigmoid", "tanh") if name in derivatives]
    parts = [
        f"The gradient reaching `{e['input_layer']}` is {fmt(e['ratio'])} of the gradient at `{e['output_layer']}`, "
        f"{_layers(e['layers'] - 1)} nearer the loss.",
        "Backprop multiplies the gradient, layer by layer, by each layer's local derivative: the transposed weight "
        "matrix and the activation's derivative.",
        f"Measured mean factor per layer: {fmt(e['mean_factor_per_layer'])}.",
    ]
    for name in squashing:
        parts.append(f"Here {DERIVATIVE_BOUNDS[name]}; measured mean {fmt(derivatives[name])}.")
    parts.append("Multiplied over the depth, the layers nearest the input receive almost no gradient and barely learn.")
    zeroed = e.get("zero_gradient_layers")
    if zeroed:
        span = f"`{zeroed[0]}`" if len(zeroed) == 1 else f"`{zeroed[0]}` to `{zeroed[-1]}`"
        parts.append(
            f"Below `{e['input_layer']}`, {_layers(len(zeroed))} ({span}) receive a gradient of exactly zero: it "
            "fell below the smallest number float32 holds (about 1e-45) and they do not learn at all."
        )
    # The squashing functions are to blame when their derivatives are small (sigmoid's is at most 1/4); a tanh
    # working near its centre (derivative near 1) is not: then the weights shrink the gradient, and come first.
    squashed = [name for name in squashing if derivatives[name] is None or derivatives[name] < 0.5]  # (None: unread)
    if squashing and not squashed:
        parts.append(
            "With a mean derivative that high, the activation is not what shrinks the gradient most: the weights are, "
            "initialised too small for the depth."
        )
    replace = [
        f"Replace {' and '.join(squashing)} in the hidden layers by ReLU or GELU (derivative 1 over half the "
        "inputs) and keep the squashing function only where an output must be bounded."
    ]
    remedies = replace if squashed else []
    initialise = (
        "Initialise for the activation: `nn.init.kaiming_normal_` (He) for ReLU-family, `nn.init.xavier_uniform_` "
        "for tanh/sigmoid (with `gain=nn.init.calculate_gain('tanh')` for tanh), so each layer keeps the gradient's "
        "scale."
    )
    normalise = "Put a normalisation layer (BatchNorm / LayerNorm) between layers."
    residual = (
        "Add residual connections (x + f(x)): the identity path has derivative 1 whatever f does. Where the model has "
        "them, check that the identity path carries the gradient: `x + f(x)`, not `x.detach() + f(x)`, and skips kept "
        "for later (a U-Net's) stored without `.detach()`."
    )
    # (through dozens of layers a gain of 1 per layer is a knife's edge that no initialisation holds for long: the
    # identity path of a residual connection is what deep networks rely on)
    deep = (e.get("layers") or 0) >= DEEP_PLAIN_STACK
    remedies += [residual, initialise, normalise] if deep else [initialise, normalise, residual]
    if squashing and not squashed:
        remedies += replace
    if e.get("weights_shrank_by"):
        parts.append(_weights_shrank(e["weights_shrank_by"]))
        remedies.insert(0, _weight_decay_remedy(e))
    return " ".join(parts), remedies


def _explain_softmax_twice(f: Finding):
    e = f.evidence
    if e.get("as_logits"):
        return _explain_softmax_as_logits(f)
    text = (
        f"`{f.where}` is a softmax, and the loss takes log_softmax of its output again (`cross_entropy` expects "
        "logits and applies log_softmax itself). The second softmax sees inputs in [0, 1], so its output stays "
        f"near uniform: with {e['classes']} classes the loss cannot fall below {fmt(e['loss_floor'])} even for a "
        "perfect prediction. And the chain rule multiplies the gradient by the first softmax's derivative, "
        "p (1 - p), which vanishes as the predictions grow confident: learning slows to a crawl."
    )
    if e.get("loss_stalled"):
        text += " The loss has stalled."
    remedies = [
        f"Remove the softmax `{f.where}` from the model and give `cross_entropy` the logits; apply softmax only "
        "when you need probabilities (at prediction time).",
        "Or keep the probabilities and use `F.nll_loss(torch.log(p + 1e-12), y)`, though `log_softmax` of the "
        "logits is more stable.",
    ]
    return text, remedies


def _explain_softmax_as_logits(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is a softmax, and the loss treats its output as logits: it takes p - logsumexp(p), a "
        "log_softmax of the probabilities (`Categorical(logits=p)` normalises so; so does `p - p.logsumexp(-1)`), a "
        "second softmax. That one sees inputs in [0, 1], so the distribution it makes stays near uniform: with "
        f"{e['classes']} classes no class can get more than {fmt(e['max_probability'])} of the probability, however "
        "sure the model is, and what is sampled from it stays that random. And the chain rule multiplies the "
        "gradient by the first softmax's derivative, p (1 - p), which vanishes as the model grows confident."
    )
    remedies = [
        "Give the distribution the probabilities as probabilities: `Categorical(probs=p)`; or remove the softmax "
        f"`{f.where}` from the model and pass its input: `Categorical(logits=z)`.",
    ]
    return text, remedies


def _explain_sigmoid_twice(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is a sigmoid, and the loss applies a sigmoid to its output again "
        "(`binary_cross_entropy_with_logits` / `BCEWithLogitsLoss` expects logits). The second sigmoid sees inputs "
        "in [0, 1], so the probability it gives lies between 0.5 and 0.73: the loss cannot fall below "
        f"{fmt(e['loss_floor_positive'])} for a positive example nor below {fmt(e['loss_floor_negative'])} (log 2) "
        "for a negative one, even for a perfect prediction, and a negative can never be predicted below 0.5. And "
        "the chain rule multiplies the gradient by the first sigmoid's derivative, p (1 - p), which vanishes as "
        "the predictions grow confident."
    )
    if e.get("loss_stalled"):
        text += " The loss has stalled."
    remedies = [
        f"Remove the sigmoid `{f.where}` from the model and give `BCEWithLogitsLoss` the logits; apply "
        "`torch.sigmoid` only when you need probabilities (at prediction time).",
        "Or keep the probabilities and use `BCELoss` on them, though the logits version is more stable.",
    ]
    return text, remedies


def _explain_softmax_without_log(f: Finding):
    classes = f.evidence["classes"]
    text = (
        f"The loss is minus the target-weighted sum of `{f.where}`'s probabilities over its {classes} classes, "
        "-sum_k t_k p_k: a cross-entropy without its log (that is -sum_k t_k log p_k). It rewards the target's "
        "probability linearly, and its derivative with respect to the target class's logit z_y, -p_y (1 - p_y) for a "
        "one-hot target, vanishes as p_y goes to 0: an example the model gets confidently wrong sends back almost no "
        "gradient, where cross-entropy's -(1 - p_y) is largest. Those mistakes are never corrected, and what the "
        "probabilities say stops meaning anything (soft targets, label smoothing's, are pushed towards one-hot)."
    )
    remedies = [
        "Take the log: `-(t * F.log_softmax(logits, dim=-1)).sum(-1).mean()`, or "
        "`F.cross_entropy(logits, y, label_smoothing=eps)` (class indices) or `F.cross_entropy(logits, t)` "
        "(probability targets), which compute it stably.",
    ]
    return text, remedies


def _explain_sigmoid_then_softmax(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is a sigmoid, and the loss takes log_softmax of its output (`cross_entropy` / "
        "`CrossEntropyLoss` expects logits and applies log_softmax itself). The softmax sees scores squashed into "
        f"[0, 1], so its output stays near uniform: with {e['classes']} classes the loss cannot fall below "
        f"{fmt(e['loss_floor'])} even for a perfect prediction. And the chain rule multiplies the gradient by the "
        "sigmoid's derivative, s (1 - s) <= 1/4, which vanishes as the scores saturate: no log cancels it here, as "
        "`BCEWithLogitsLoss` would."
    )
    if e.get("loss_stalled"):
        text += " The loss has stalled."
    remedies = [
        f"Remove the sigmoid `{f.where}` from the model and give `cross_entropy` the logits; apply softmax only "
        "when you need probabilities (at prediction time).",
        "If the classes are not exclusive (several labels per example), keep one score per class and use "
        "`BCEWithLogitsLoss` on the logits instead of cross-entropy.",
    ]
    return text, remedies


def _explain_softmax_then_sigmoid(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is a softmax, and the loss applies a sigmoid to each of its outputs "
        "(`binary_cross_entropy_with_logits` / `BCEWithLogitsLoss` expects logits). The sigmoid sees probabilities in "
        "[0, 1], so the probability it gives lies between 0.5 and 0.73: the loss cannot fall below "
        f"{fmt(e['loss_floor_positive'])} for a positive entry nor below {fmt(e['loss_floor_negative'])} (log 2) "
        "for a negative one, even for a perfect prediction. And the chain rule multiplies the gradient by the "
        "softmax's Jacobian, diag(p) - p p^T, which vanishes as the predictions grow confident."
    )
    if e.get("loss_stalled"):
        text += " The loss has stalled."
    remedies = [
        f"For one class per example, remove the softmax `{f.where}` and give `cross_entropy` the logits and the "
        "class indices.",
        "For several labels per example, remove the softmax and give `BCEWithLogitsLoss` the logits: one "
        "independent sigmoid per label.",
    ]
    return text, remedies


def _explain_subtracted_penalty(f: Finding):
    e = f.evidence
    penalty = e["penalty_subtracted"]
    form, parameters = penalty["form"], penalty["parameters"]
    shown = ", ".join(f"`{name}`" for name in parameters[:4]) + (
        f" and {len(parameters) - 4} more" if len(parameters) > 4 else ""
    )
    text = (
        f"The loss the backward pass starts from subtracts a penalty on the {form} of {shown} instead of adding it "
        "(`loss - lam * sum(w ** 2)` where weight decay is `loss + lam * ...`). Minimising it maximises the penalty: "
        "its gradient points away from 0, so every step pushes each weight further out (for squares, the update "
        "adds 2 lr lam w: the weights grow geometrically), the recorded loss falls below zero as they do, and the "
        "data's gradient is drowned by the penalty's."
    )
    if e.get("weights_grew_by"):
        text += f" The weights' norm grew {fmt(e['weights_grew_by'])}-fold over the run (median over the layers)."
    text += _folded_sentence(e)
    remedies = [
        "Add the penalty: `loss = loss + lam * penalty`. Or drop it and use the optimiser's `weight_decay` "
        "(`torch.optim.AdamW(..., weight_decay=...)`, or SGD's), which decays the weights without a loss term.",
    ]
    return text, remedies


def _explain_log_probability_added(f: Finding):
    e = f.evidence
    text = (
        "The loss the backward pass starts from adds a term made of log-probabilities alone (a "
        f"`{e['log_probabilities_added']}` averaged or picked out, with a plus sign: label smoothing's -mean(log p) "
        "written `eps * logp.mean()`, its minus dropped; or a likelihood `logp.gather(1, y).mean()` minimised). A "
        "log-probability is at most 0 and has "
        "no lower bound: minimising it pushes the logits apart without end, so the logits and their gradients grow "
        "step after step and the loss falls below zero, where a cross-entropy plus a smoothing term never goes."
    )
    if e.get("loss_lowest") is not None:
        text += f" The loss went down to {fmt(e['loss_lowest'])}."
    text += _folded_sentence(e)
    remedies = [
        "Put the minus back: the smoothing term is `-logp.mean(1).mean()` (and the likelihood's loss "
        "`-logp.gather(1, y).mean()`); or let PyTorch do both: `F.cross_entropy(logits, y, label_smoothing=0.1)`.",
    ]
    return text, remedies


def _explain_wrong_class_rewarded(f: Finding):
    e = f.evidence
    text = (
        f"The loss fell (a mean of {fmt(e['loss_first_third'])} over the first third of the run, "
        f"{fmt(e['loss_last_third'])} over the last), while the log-probability the model gives each example's own "
        f"class fell too, from {fmt(e['target_log_probability_first_third'])} to "
        f"{fmt(e['target_log_probability_last_third'])}, below chance ({fmt(e['chance_log_probability'])}, a "
        "uniform guess): the objective is lowest where the model is wrong. A loss made from the target's "
        "probability p_t must fall as p_t rises; one weighted by a factor that grows with p_t, `pt ** gamma * "
        "-log(pt)` where the focal loss is `(1 - pt) ** gamma * -log(pt)`, is 0 at p_t = 0 as well as at 1, and the "
        "gradient pushes the probability away from the right class."
    )
    text += _folded_sentence(e)
    remedies = [
        "Check the loss's formula: the focal loss weighs -log(p_t) by `(1 - pt) ** gamma` (small for easy examples), "
        "and any such weight must leave the loss falling as p_t rises. Test it on a few values of p_t by hand.",
        "Or use a library's: `torchvision.ops.sigmoid_focal_loss` (binary), or `F.cross_entropy` with class weights.",
    ]
    return text, remedies


def _explain_attention_pooled(f: Finding):
    e = f.evidence
    text = (
        f"The gradient arriving at the attention softmax `{f.where}` is the same for every one of the {e['entries']} "
        f"entries along the axis it normalises ({pct(e['gradient_same_along_axis'])} of it, on the first "
        f"{e['sampled_steps']} sampled steps). The softmax's backward is p * (g - sum(p * g)): it removes exactly that "
        "part, so almost nothing reaches the scores, nor the queries and keys that make them. That happens when the "
        "softmax's output is summed or averaged afterwards over the same axis it normalised, where it sums to 1 "
        "whatever the scores: attention weights normalised over the queries (`softmax(q @ k.T, dim=1)`), then pooled "
        "over the queries. The model then averages the values with weights that do not depend on the input."
    )
    text += _folded_sentence(e)
    remedies = [
        "Normalise attention weights over the keys, the last axis: `torch.softmax(q @ k.transpose(-2, -1) / "
        "sqrt(d), dim=-1)`, so that each query's weights sum to 1.",
        "If the pooling is meant to weigh the tokens, score each token once (`softmax(w @ h, dim=1)`, a weight per "
        "token) and take the weighted sum over the same axis.",
    ]
    return text, remedies


def _explain_maximized_loss(f: Finding):
    e = f.evidence
    loss = e["maximized"]
    grew = f", {fmt(e['error_grew_by'])}-fold" if e.get("error_grew_by") else ""
    text = (
        f"The optimiser was made with `maximize=True`, and the backward pass starts from `{loss}`, a loss that is "
        "never negative: each step moves the weights along the gradient instead of against it, which is gradient "
        f"ascent on the error. The loss rose from a mean of {fmt(e['loss_first_third'])} over the first third of the "
        f"run to {fmt(e['loss_last_third'])} over the last{grew}."
    )
    remedies = [
        "Drop `maximize=True` from the optimiser to minimise the loss; keep it only for an objective you mean to "
        "increase (a reward, a log-likelihood).",
    ]
    return text, remedies


def _explain_negative_learning_rate(f: Finding):
    e = f.evidence
    text = (
        f"From step {e['negative_from_step']} the optimiser's learning rate is below 0 "
        f"({fmt(e['negative_learning_rate'])} on the last sampled step): its update, -lr * gradient, then moves each "
        "weight along the gradient instead of against it, which is gradient ascent on the loss. A schedule that "
        "multiplies the rate by a factor falling in a straight line (`LambdaLR(opt, lambda s: 1 - s / total_steps)`) "
        "does this once the steps run past `total_steps`: counted for another batch size or number of epochs, say."
    )
    if e.get("loss_when_negative") is not None and e.get("loss_last") is not None:
        text += f" The loss was {fmt(e['loss_when_negative'])} then, and {fmt(e['loss_last'])} at the end"
        text += f" (non-finite on {e['nonfinite_loss_steps']} steps)." if e.get("nonfinite_loss_steps") else "."
    remedies = [
        "Keep the schedule's factor at 0 or above: `lambda s: max(0.0, 1 - s / total_steps)`, with `total_steps` "
        "counted as the loop runs (epochs * len(loader)); or use `torch.optim.lr_scheduler.LinearLR`, which stops at "
        "its end factor.",
        "Lowering the learning rate does not help: a smaller negative rate climbs the loss more slowly.",
    ]
    return text, remedies


def _explain_negated_loss(f: Finding):
    e = f.evidence
    loss = e["negated"]
    text = (
        f"The backward pass starts from the negative of `{loss}`, a loss that is never negative: the optimiser "
        f"descends -{loss}, which is gradient ascent on {loss} itself. Backprop hands every layer the gradient of "
        f"the error with its sign flipped, so each step makes the predictions worse: the recorded loss fell from a "
        f"mean of {fmt(e['loss_first_third'])} over the first third of the run to {fmt(e['loss_last_third'])} over "
        "the last, which is the error growing"
    )
    text += f" {fmt(e['error_grew_by'])}-fold."
    remedies = [
        f"Minimise `{loss}` itself: drop the minus sign. To maximise a reward, negate the reward, not a loss.",
    ]
    return text, remedies


def _explain_loss_below_zero(f: Finding):
    """A loss never negative in its domain went below zero: its input left the domain, where it has no lower bound."""
    e = f.evidence
    loss, measured = e["loss_function"], e.get("input") is not None
    lowest = f"lowest recorded {fmt(e['loss_lowest'])}" if e.get("loss_lowest") is not None else "down to -inf"
    if loss == "nll_loss":
        text = (
            f"`nll_loss` went below zero ({lowest}), which it cannot do on log-probabilities: it is "
            "-input[target], and log_softmax's outputs are all <= 0"
            + (f"; its input reached {fmt(e['input_high'])}" if measured else "")
            + ". So it was given raw scores or probabilities instead, and on those the loss has no lower bound: its "
            "gradient is -1 at the target's score whatever its value, so the training raises that score without end "
            "and the loss falls with it."
        )
        remedies = [
            "Give `nll_loss` log-probabilities: `F.nll_loss(F.log_softmax(logits, dim=1), y)`, or use "
            "`F.cross_entropy(logits, y)`, which does both in one numerically stable step.",
        ]
    else:
        text = (
            f"`{loss}` went below zero ({lowest}), which it cannot do while its targets are "
            "probabilities, in [0, 1]"
            + (f"; here they ranged from {fmt(e['input_low'])} to {fmt(e['input_high'])}" if measured else "")
            + ". Outside [0, 1] the loss has no lower bound: its gradient with respect to a logit z is sigma(z) - t, "
            "which for a target t > 1 stays negative however large z grows (for t < 0, positive however small), so "
            "the training pushes those logits without end, and the loss falls with them, instead of fitting the data."
        )
        remedies = [
            "Scale the targets into [0, 1]: masks stored as 0/255 divided by 255 (or `(mask > 0).float()`); labels "
            "of -1/+1 mapped to 0/1 (or use `soft_margin_loss`, made for -1/+1).",
        ]
    text += (
        f" Below zero on {e['records_below_zero']} of {e['records']} sampled steps: the falling loss is no sign of "
        "learning."
    )
    if e.get("nonfinite_from_step") is not None:
        text += f" From step {e['nonfinite_from_step']} it was infinite: the loss itself ran off to -inf (then NaN)."
    return text, remedies


def _explain_ctc_raw_scores(f: Finding):
    e = f.evidence
    text = (
        "`ctc_loss` is given scores that are not log-probabilities: over its "
        f"{e['classes']} classes a frame's logsumexp is {fmt(e['input_logsumexp_over_classes'])} (median frame), "
        f"where log_softmax's is 0, and its input reaches {fmt(e['input_high'])}. The loss is -log of a sum, over the "
        "alignments of the labels, of products of exp(input): unnormalised, it falls as the scores of every class "
        "grow together, so backprop pushes all of them up instead of teaching which class belongs to which frame. "
        "The falling loss is no sign of learning, and it has no lower bound."
    )
    remedies = [
        "Give `ctc_loss` log-probabilities over the classes: `F.ctc_loss(logits.log_softmax(dim=-1), targets, "
        "input_lengths, target_lengths)`, with the classes on the last axis and the time steps first (T, N, C).",
    ]
    return text, remedies


def _explain_stepped_without_gradients(f: Finding):
    text = (
        f"The optimiser stepped `{f.where}`'s parameters, and on {f.evidence['stepped_without_gradients']} sampled "
        "steps not one of them held a gradient: no `backward()` ran during the whole run, so nothing was ever stored "
        "in their `.grad`, and `step()` skips a parameter without one. The model never changed. Gradients computed "
        "with `torch.func.grad` (`vmap(grad(...))` for per-example gradients) or `torch.autograd.grad` are returned, "
        "not stored; written to `.grad` by hand, they must go to the tensors the optimiser holds, not to copies of "
        "them (`{k: v.detach() for k, v in model.named_parameters()}` makes new tensors)."
    )
    remedies = [
        "Store the gradients in the model's own parameters before `step()`: `for name, p in "
        "model.named_parameters(): p.grad = grads[name]`.",
        "Check before stepping: `all(p.grad is not None for p in model.parameters())` should be True.",
    ]
    return text, remedies


def _explain_optimizer_without_gradient(f: Finding):
    e = f.evidence
    modules = ", ".join(f"`{m}`" for m in e["modules"])
    text = (
        f"An optimiser steps the parameters of {modules} on {e['sampled_steps']} sampled steps, and not one of them "
        "has a gradient when it does: the loss differentiated before its step does not reach them, so step() skips "
        f"them all and `{f.where}` never changes. In a GAN, the usual cause is the generator's loss computed from the "
        "fake samples detached for the discriminator's step (`D(fake.detach())` reused): backprop stops at the "
        "detach, before the generator. A loss built under `torch.no_grad()`, or from `.item()` or NumPy values, "
        "does the same."
    )
    remedies = [
        "Compute this optimiser's loss from the undetached output: `loss_g = bce(D(fake), ones)` with "
        "`fake = G(z)`; detach only in the discriminator's loss (`D(fake.detach())`).",
        f"Check after its backward: `any(p.grad is not None for p in {f.where}.parameters())` should be True.",
    ]
    return text, remedies


def _explain_softmax_over_one(f: Finding):
    e = f.evidence
    if e.get("own_sum"):
        return _explain_own_sum_over_one(f)
    value = "1" if f.where == "softmax" else "0"
    zeroed = e.get("zero_gradient_modules") or []
    text = (
        f"`{f.where}` (after `{e['site']}`) is taken over dim {e['dim']} of a tensor of shape {tuple(e['shape'])}, an "
        f"axis of length 1: a {f.where} over a single entry has nothing to weigh it against, so every output is "
        f"exactly {value} whatever its input, and its derivative is exactly 0. The chain rule multiplies every "
        "gradient reaching it by that 0: nothing that computes its input learns"
        + (f" ({', '.join(f'`{m}`' for m in zeroed)}: gradient exactly zero)." if zeroed else ".")
    )
    remedies = [
        f"Take the {f.where} over the axis that holds the alternatives: for attention pooling over a sequence of "
        "shape (N, T, 1), `dim=1` (the time steps), not `dim=-1`.",
    ]
    if len(e["shape"]) >= 2 and e["dim"] % len(e["shape"]) == 1:  # (a classes or channels axis of one: a binary output)
        remedies.insert(
            0,
            "For a yes/no output from one channel (a binary mask, one logit per example), use `torch.sigmoid` "
            "(trained with `F.binary_cross_entropy_with_logits` on the logit), or give the layer two output channels "
            f"and take the {f.where} over them (`dim=1`).",
        )
    return text, remedies


def _explain_own_sum_over_one(f: Finding):
    e = f.evidence
    text = (
        f"`div` (after `{e['site']}`) divides a tensor of shape {tuple(e['shape'])} by its own sum over dim "
        f"{e['dim']}, an axis of length 1: w / w.sum() over a single entry is exactly 1 whatever w, and its "
        "derivative is exactly 0. The chain rule multiplies every gradient reaching it by that 0, so what computes "
        "w gets nothing from this path: one weight picked from several and renormalised as if there were k of "
        "them (top-1 gates normalised as for top-k) leaves what chose it, a router, to be trained by the other "
        "terms of the loss alone (a load-balancing loss), never by the task."
    )
    remedies = [
        "Use the gate's probability as it is when one expert is chosen (Switch Transformer: `gate = probs.gather(-1, "
        "idx)`, the output multiplied by it); renormalise over the top k only for k >= 2.",
    ]
    return text, remedies


def _folded_sentence(e: dict) -> str:
    """The sentence that names the findings folded into this one ("" when none were)."""
    folded = e.get("folded") or []
    if not folded:
        return ""
    named = " and ".join(f"`{symptom}`" for symptom in folded)
    if len(folded) == 1:
        return f" This run's {named} finding follows from it, and is folded in."
    return f" This run's {named} findings follow from it, and are folded in."


def _explain_dropout_on_prediction(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is a dropout (p = {fmt(e['p'])}) whose output the loss reads directly: the prediction itself "
        f"(the logits) has {pct(e['p'])} of its entries zeroed at random at every training step, and the rest "
        f"multiplied by {fmt(1 / (1 - e['p']))}. The loss's gradient reaches none of the dropped entries (dropout's "
        "local derivative is 0 there), and to be right despite the noise the network learns to grow its logits, "
        "which makes it overconfident once dropout is off at evaluation."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Remove `{f.where}` after the last layer: put dropout between hidden layers, never on the output the loss "
        "reads.",
    ]
    return text, remedies


def _explain_custom_backward(f: Finding):
    """A custom autograd.Function whose backward returns its local derivative without multiplying by grad_output."""
    e = f.evidence
    inputs = ", ".join(str(i) for i in e["inputs_ignoring_grad_output"])
    text = (
        f"The backward of your `torch.autograd.Function` `{f.where}` (after `{e['site']}`) returned exactly the same "
        f"gradient for input {inputs} when it was called again with -2 times the `grad_output` it had been given: it "
        "does not use `grad_output`. The chain rule asks each backward for dL/dx = dL/dy * dy/dx, the gradient that "
        "arrives (dL/dy, `grad_output`) times the local derivative dy/dx; this one returns dy/dx alone. So "
        "everything below it gets a gradient that does not depend on the loss: its size is the local derivative's "
        f"(norm {fmt(e['grad_input_norm'])} out, for {fmt(e['grad_output_norm'])} in), its direction the same "
        "whatever the prediction's error, and the layers before it cannot learn the task."
    )
    if e.get("grad_output_one"):
        text = (
            f"The backward of your `torch.autograd.Function` `{f.where}` returned exactly the same gradient for input "
            f"{inputs} when it was called again with -2 times its `grad_output`: it does not use `grad_output`. "
            f"Here `{f.where}` is the loss itself, so `grad_output` is 1 and the gradients are right, for now. As soon "
            "as the loss is scaled (`loss / k` for accumulation, a GradScaler) or summed with another term, the chain "
            "rule's dL/dx = dL/dy * dy/dx needs the dL/dy this backward leaves out, and the gradients below it will "
            "be wrong."
        )
    remedies = [
        f"In `{f.where}.backward`, multiply the local derivative by the gradient it receives: "
        "`return grad_output * local_derivative` (one product per input).",
        f"Check it with `torch.autograd.gradcheck({f.where}.apply, (x.double().requires_grad_(),))` on a small "
        "input before training with it: it compares the backward with finite differences.",
    ]
    return text, remedies


def _explain_zeros_outside_autograd(f: Finding):
    e = f.evidence
    reader = f"`{e['read_by']}`" if e.get("read_by") else "the next layer"
    text = (
        f"The output of `{f.where}` holds exact zeros in {pct(e['zeros_outside_autograd'])} of its entries (among the "
        f"examples and units that are not all zero), and {reader} reads it with no operation between the two in the "
        "autograd graph. A layer's output is never exactly 0 by chance: something set those values that autograd did "
        "not record, an activation applied through `.data` (`h.data.clamp_(min=0)`, `h.data.relu_()`) or an in-place "
        "change under `no_grad`. The forward computes that activation; the backward does not know it, and passes "
        "the gradient through the zeroed entries with a local derivative of 1, as through the identity, where the "
        f"activation's derivative is 0. Every layer up to `{f.where}` learns from a gradient that is not the loss's "
        "(units that are off get the gradient of units that are on), which also makes the gradient grow with depth "
        "as in a network with no activations."
    )
    if e.get("also_layers"):
        text += f" The outputs of {_listed(e['also_layers'])} are changed the same way."
    remedies = [
        "Apply the activation with a recorded operation: `h = torch.relu(h)` (or `F.relu(h, inplace=True)`, which "
        "autograd records too). Never change a tensor that needs a gradient through `.data`.",
    ]
    return text, remedies


def _explain_relu_output_changed(f: Finding):
    e = f.evidence
    text = (
        f"The ReLU output at `{f.where}`, which its backward keeps to mask the gradient with, held negative values "
        f"(as low as {fmt(e['relu_output_negative'])}) on {e['looks_negative']} of the first {e['looks']} sampled "
        "steps. A ReLU never outputs one: "
        "the output was changed after the ReLU made it, by something autograd did not record, `out.data += h` (the "
        "usual way round PyTorch's error for an in-place change of a tensor the backward needs) or an in-place change "
        "under `no_grad`. The forward computes relu(z) + h; the backward knows only the ReLU, so it masks the gradient "
        "with the changed values (it passes where they are > 0, not where z was), and what was added, h, gets no "
        "gradient along that path: a residual connection added this way is cut from the backward pass."
    )
    if e.get("also_sites"):
        text += f" {_listed(e['also_sites'])} are changed the same way."
    remedies = [
        "Add with a recorded operation, out of place: `out = F.relu(self.fc(h)) + h` (an in-place `out += h` on a "
        "tensor the ReLU's backward needs raises; the out-of-place sum does not). Never change a tensor that needs a "
        "gradient through `.data`.",
    ]
    return text, remedies


def _explain_reversal_not_reversed(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` (after `{e['site']}`) is named as a gradient reversal layer, but its backward passes the "
        f"gradient it is given on in the same direction (cosine {fmt(e['along_grad_output'])} between what it "
        f"returned and what it was given, on {e['tests']} test(s); a reversal gives -1). A reversal layer is the "
        "identity forward and -lambda times the gradient backward: the layers before it then move to make the next "
        "head's loss larger (to fool a domain classifier). Without the minus sign they make it smaller, helping the "
        "head: the features learn to tell the domains apart, the opposite of what domain-adversarial training wants."
    )
    remedies = [
        f"Negate the gradient in `{f.where}.backward`: `return -ctx.lambd * grad_output, None` (or "
        "`grad_output.neg() * ctx.lambd`).",
    ]
    return text, remedies


def _explain_unstopped_target(f: Finding):
    e = f.evidence
    text = (
        f"The loss compares the output of `{e['predictor']}` with the output of `{e['target_from']}`, a module "
        f"`{e['predictor']}` itself reads, by their cosine, and the gradient flows into both sides. Along the target "
        f"side the chain rule moves `{e['target_from']}`'s output towards the prediction made from it, so prediction "
        "and target chase each other, and the cheapest way for them to agree is the same output for every example: "
        "the loss reaches its minimum while the features carry nothing (collapse). SimSiam and BYOL learn only "
        "because the target's gradient is stopped (Chen & He 2021: without it the outputs collapse at once)."
    )
    remedies = [
        f"Detach the target: `D(p1, z2.detach())` (and `D(p2, z1.detach())` for the symmetric loss), so only the "
        f"side through `{e['predictor']}` carries a gradient.",
        "Or take the target from a momentum copy of the encoder under `torch.no_grad()` (BYOL), or add negatives "
        "(a contrastive loss such as InfoNCE), which hold the examples apart.",
    ]
    return text, remedies


def _explain_eval_mode_left(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` trained in training mode until step {e['trained_until_step']} and has run in eval mode on every "
        f"sampled step since step {e['eval_since_step']} ({e['sampled_steps_in_eval']} of them), while its optimiser "
        "kept stepping: `model.eval()` for a validation pass, and no `model.train()` after it."
    )
    if e["batch_norms"]:
        text += (
            f" In eval mode its batch norms ({', '.join(f'`{n}`' for n in e['batch_norms'][:3])}) normalise with "
            "the running statistics frozen when it was called, not the batch's: as the weights move on, the layers' "
            "outputs drift off the scale those statistics assume, and the backward, which in training mode carries "
            "the batch statistics' own derivative (the gradient's mean and its part along the outputs are taken out), "
            "no longer does. Activations and gradients can grow without bound: a divergence or NaN told as a learning "
            "rate too high."
        )
    if e["dropouts"]:
        text += " Its dropouts are off too: the regularisation they were put there for is gone."
    remedies = [
        f"Call `{f.where}.train()` after each evaluation (or at the top of each epoch's training loop): evaluate "
        "under `model.eval()` and `torch.no_grad()`, then switch back.",
        "If batch norms are to stay frozen on purpose (fine-tuning), set them to eval one by one "
        "(`m.eval()` for each BatchNorm) and leave the model in training mode.",
    ]
    return text, remedies


def _explain_graph_across_steps(f: Finding):
    e = f.evidence
    modules = ", ".join(f"`{name}`" for name in e["modules_reached"])
    text = (
        f"The backward at step {e['at_step']} went back into the graph of step {e['reached_back_to_step']}: it reached "
        f"outputs {modules} made then (on {e['sampled_steps']} sampled steps). The loss is called with "
        "`backward(retain_graph=True)`, and a state carried from one batch to the next (an RNN's hidden state, "
        "`out, h = rnn(x, h)`) still holds its graph: each step's graph hangs on the one before, back to the first "
        "batch. PyTorch stops this with an error at the second backward through a freed graph; retain_graph keeps "
        "every graph alive instead, so each backward runs through all the batches so far (its time and memory grow "
        "with the step), and the chain rule adds to today's gradient terms computed with the weights as they were "
        "then."
    )
    remedies = [
        "Cut the carried state at each batch (truncated backprop through time): `h = h.detach()`, or "
        "`h = tuple(v.detach() for v in h)` for an LSTM's (h, c), before the next forward; then drop "
        "`retain_graph=True`.",
        "If gradients through earlier batches are wanted, keep them within a window: backward once every k batches, "
        "then detach.",
    ]
    return text, remedies


def _explain_future_visible(f: Finding):
    e = f.evidence
    if "convolution" in e:
        return _explain_convolution_ahead(f)
    shuts_nothing = e["no_mask"] and "float_mask" in e  # (a float mask given, with no -inf in it)
    if shuts_nothing:
        low, high = e["float_mask"]
        mask = (
            f"is given a float mask (its entries from {low:g} to {high:g}), which is added to the scores: it shifts "
            "them and shuts no key, as only -inf (or a large negative number) does. Each of its "
            f"{e['positions']} positions attends to every other, the later ones too"
        )
    elif e["no_mask"]:
        mask = f"has no causal mask: each of its {e['positions']} positions attends to every other, the later ones too"
    else:
        mask = (
            f"lets {pct(e['next_position_readable'])} of its queries read keys up to {e['furthest_ahead']} "
            f"position{'s' if e['furthest_ahead'] > 1 else ''} after their own: the causal mask is "
            f"{e['furthest_ahead']} diagonal{'s' if e['furthest_ahead'] > 1 else ''} off"
        )
    text = (
        f"The self-attention at `{f.where}` {mask}. The loss's targets are the next tokens of the sequence the model "
        f"reads ({pct(e['targets_next_tokens'])} of them are `x[:, t + 1]`), so the output at position t can read its "
        "own target from the input at t + 1. The gradient of the loss then rewards copying that token through the "
        "attention, not predicting it: the training loss falls fast and far, and generation, where the next token "
        "is not there to read, fails."
    )
    make_it_shut = (
        "Make the mask shut what it marks: a boolean one, `torch.triu(torch.ones(T, T, dtype=torch.bool), "
        "diagonal=1)` (True = shut), or a float one holding -inf there, "
        "`torch.triu(torch.full((T, T), float('-inf')), diagonal=1)`."
    )
    if e.get("also_sites"):
        text += f" The same holds at {', '.join(f'`{site}`' for site in e['also_sites'])}."
    remedies = [make_it_shut] if shuts_nothing else []
    if e.get("decoder"):
        remedies.append(
            "Give the decoder its causal mask: `tgt_mask=nn.Transformer.generate_square_subsequent_mask(T)` (and "
            "`tgt_is_causal=True`) in the call of `nn.Transformer` or `nn.TransformerDecoder`, T the target's length."
        )
    remedies += [
        "Shut every key after the query's own position: `mask = torch.triu(torch.ones(T, T, dtype=torch.bool), "
        "diagonal=1)` with `masked_fill(mask, float('-inf'))` (True = shut), or `is_causal=True` in "
        "`F.scaled_dot_product_attention`, or `nn.Transformer.generate_square_subsequent_mask(T)` for "
        "nn.TransformerEncoder's `mask=` (with `is_causal=True`).",
        "Check it: the output at position t must not change when the tokens after t do "
        "(`model(x)[:, t]` against `model(x_changed_after_t)[:, t]`).",
    ]
    return text, remedies


def _explain_convolution_ahead(f: Finding):
    e, c = f.evidence, f.evidence["convolution"]
    ahead, span, left = e["furthest_ahead"], c["dilation"] * (c["kernel"] - 1), c["left"]
    text = (
        f"The 1-D convolution `{f.where}` (kernel {c['kernel']}, dilation {c['dilation']}) is padded by {left} on the "
        f"left and {c['right']} on the right, so that its output is as long as its input: its output at position t "
        f"reads the inputs up to t + {ahead}, {ahead} position{'s' if ahead > 1 else ''} after its own. The loss's "
        f"targets are the next entries of the sequence the model reads ({pct(e['targets_next_tokens'])} of them are "
        "`x[..., t + 1]`), so the output at position t can read its own target from the input at t + 1. The gradient "
        "of the loss then rewards copying that value through the convolution, not predicting it: the training loss "
        "falls fast and far, and generation or forecasting, where the next entry is not there to read, fails."
    )
    remedies = [
        f"Make it causal: pad on the left only, `F.pad(x, ({span}, 0))` before a `Conv1d(..., padding=0)`, or "
        f"`padding={span}` and cut the end off its output, `y[..., :-{span}]` (dilation * (kernel - 1) = {span}); "
        "or mask the kernel's taps after the centre (a masked convolution).",
        "Check it: the output at position t must not change when the entries after t do "
        "(`model(x)[..., t]` against `model(x_changed_after_t)[..., t]`).",
    ]
    return text, remedies


def _explain_target_trained(f: Finding):
    e = f.evidence
    teacher, student = f.where, e["prediction_module"]
    text = (
        f"The loss is a KL divergence of `{student}`'s distribution from a target computed by `{teacher}`, and that "
        f"target kept its graph: the backward pass sends the loss's gradient into `{teacher}` too, and an optimiser "
        f"steps its parameters. A distillation's teacher is then pulled towards its student as much as the student "
        "towards it, and the two drift to whatever is easiest to agree on (a near-uniform distribution): the loss "
        "falls towards 0 while the teacher forgets what it knew."
    )
    remedies = [
        f"Compute the target without gradient and leave the teacher out of the optimiser: "
        f"`with torch.no_grad(): target = {teacher}(x)` (or `.detach()` it), `{teacher}.requires_grad_(False)`, "
        f"`{teacher}.eval()`, and give the optimiser `{student}.parameters()` only.",
    ]
    return text, remedies


def _explain_turned_straight_through(f: Finding):
    op, after = f.where, f.evidence["site"]
    text = (
        f"A straight-through estimator around `{op}` (after `{after}`) has its detach on the wrong term, "
        f"`{op}(z) - z + z.detach()`: the forward gives {op}(z) as meant, but the gradient reaching z is 0 through "
        f"`{op}`, -g through `- z` and nothing through `z.detach()`, that is -g. Every layer before it gets the "
        "loss's gradient turned around and steps up the loss, not down: the codes it feeds drift to the ends of "
        "their range and stay there."
    )
    remedies = [
        f"Detach the correction, not z: `z + ({op}(z) - z).detach()` (or `{op}(z) - z.detach() + z`), so that the "
        "backward sees the identity.",
    ]
    return text, remedies


def _explain_stepped_twice(f: Finding):
    others = f.evidence["stepped_by_others"]
    count = len(others) + 1
    text = (
        f"Besides the training optimiser, {len(others)} other optimiser(s) ({', '.join(others)}) stepped exactly the "
        f"same parameters within each training step, on {f.evidence['sampled_steps']} sampled steps: the "
        f"parameters are updated {count} times per step, each time by an optimiser with a momentum and step size "
        "of its own, as if the learning rate were several times larger. Usually one model where several were "
        "meant: a list made as `[make_model()] * 3` holds the same model three times (an ensemble that collapses to "
        "one member), or an optimiser made twice over `model.parameters()` and both stepped."
    )
    remedies = [
        "Make each member separately: `members = [make_model() for _ in range(3)]`, one optimiser each; or keep one "
        "optimiser over the model and step only it.",
    ]
    return text, remedies


def _explain_previous_token_targets(f: Finding):
    text = (
        f"{pct(f.evidence['previous_token_targets'])} of the targets of `{f.where}` are the token the model's input "
        "held one position back: the sequence was shifted the wrong way round (`inp, tgt = seq[:, 1:], seq[:, :-1]`). "
        "At each position the model is asked for what it has just read, which a recurrence or a causal attention "
        "holds already: the training loss falls towards 0, its gradient teaches the model to copy its last input, "
        "and nothing of what comes next is learnt (a language model's held-out loss stays at chance or worse)."
    )
    remedies = ["Predict the next token: `inp, tgt = seq[:, :-1], seq[:, 1:]` (the target at t is the input at t + 1)."]
    return text, remedies


def _explain_unshifted_targets(f: Finding):
    e = f.evidence
    if e["token_grids"] >= 2:
        how = (
            "the model embeds two sequences, a source and a decoder input, and the decoder is fed the very tokens it "
            "is asked for: teacher forcing without the shift (`model(src, tgt)` with `tgt` as the targets)"
        )
        fix = (
            "Feed the decoder the targets shifted right and predict them one position on: `logits = model(src, "
            "tgt[:, :-1])`, `loss = cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1))` (tgt starting "
            "with a BOS token)."
        )
    else:
        how = (
            f"the loss counts {pct(e['targets_counted'])} of the positions (the rest at its ignore_index), and at "
            "those the input holds the answer: a masked model's labels read from the ids after they were masked, or "
            "the masking never applied to the input"
        )
        fix = (
            "Take the labels from the ids before corrupting them (`labels = ids.clone()` first, then write [MASK] "
            "into `ids`), and give the model the corrupted ids: at a masked position the input must not be the label."
        )
    text = (
        f"{pct(e['unshifted_targets'])} of the targets of `{f.where}` are the token the model reads at their own "
        f"position: {how}. Each position can copy its answer from its input, so the training loss falls towards 0 "
        "and its gradient teaches copying, not prediction; at generation or on held-out data, where the answer is "
        "not in the input, the model fails."
    )
    return text, [fix]


def _explain_multi_hot_margin(f: Finding):
    text = (
        f"`multilabel_margin_loss` (`nn.MultiLabelMarginLoss`) was given a multi-hot target, 0s and 1s over "
        f"{f.evidence['classes']} classes, on {f.evidence['sampled_steps']} sampled steps. It reads its target as a "
        "list of class indices per row, ended by -1 (`[3, 0, -1, -1]` means classes 3 and 0): a row of 0s and 1s with "
        "no -1 is read as the classes 0 and 1, for every example, whatever its labels. The gradient pushes every "
        "example's scores for classes 0 and 1 above the others, and nothing is learnt of the real labels."
    )
    remedies = [
        "For multi-hot targets use `nn.MultiLabelSoftMarginLoss` or `nn.BCEWithLogitsLoss` (a float 0/1 target).",
        "To keep the margin loss, give it indices: each row's classes first, padded with -1 "
        "(`torch.where(y.bool(), torch.arange(C), -1)` sorted so the -1s come last).",
    ]
    return text, remedies


def _explain_updates_undone(f: Finding):
    e = f.evidence
    text = (
        f"The optimiser moves the weights of `{f.where}` at every step, yet measured every 16 steps they stay within "
        f"{e['displacement_in_updates']} single updates of where they were at step {e['since_step']} (on "
        f"{e['measures_near_start']} of {e['measures']} measures): something writes them back between steps, so every "
        "update, and the gradient behind it, is thrown away. Training then goes nowhere, whatever the learning rate. "
        "Common causes: an optimiser wrapper that restores saved weights after its base step (SAM's `second_step` "
        "calling `base_optimizer.step()` before `p.data = old_p`), a Lookahead that resets its fast weights to the "
        "slow ones before moving the slow ones, weights re-quantised in place in forward (`w.data = quant(w.data)`), "
        "or a saved copy loaded back."
    )
    remedies = [
        "Find what writes the weights after `optimizer.step()` (`p.data = ...`, `p.copy_(...)`, `load_state_dict`) "
        "and put it before the step, or make it write a copy: SAM restores w, then calls `base_optimizer.step()`; "
        "Lookahead moves the slow weights towards the fast ones, then resets the fast ones.",
        "For quantisation-aware training keep float weights and fake-quantise in forward with a straight-through "
        "estimator (`w + (quant(w) - w).detach()`), never writing the quantised values into the parameter.",
    ]
    return text, remedies


def _explain_kl_div_target_below_zero(f: Finding):
    text = (
        f"`F.kl_div(input, target)` was given a target with negative entries on {f.evidence['sampled_steps']} "
        "sampled steps: logits, where kl_div reads probabilities (or log-probabilities with `log_target=True`). It "
        "computes sum(t * (log t - input)): log t of a negative t is NaN, so the loss is NaN, and its gradient with "
        "respect to the input, -t, pulls each class by its raw logit, negative ones pushed down, with no distribution "
        "to match. A distillation's student learns nothing of the teacher's soft targets."
    )
    remedies = [
        "Turn the teacher's logits into probabilities first: `F.kl_div(F.log_softmax(s / T, -1), "
        'F.softmax(t / T, -1), reduction="batchmean") * T * T` (or `F.log_softmax(t / T, -1)` with '
        "`log_target=True`).",
    ]
    return text, remedies


def _explain_kl_div_of_probabilities(f: Finding):
    e = f.evidence
    made_by = e["kl_div_input"]
    text = (
        f"`F.kl_div(input, target)` was given the output of `{made_by}`, probabilities, as its input, on "
        f"{e['sampled_steps']} sampled steps. kl_div reads its input as log-probabilities: it computes "
        "sum(t * (log t - input)), which is the KL divergence only when input = log q. With input = q it is "
        "sum(t log t) - sum(t * q): linear in q and always negative"
        + (f" (the loss's median here: {fmt(e['loss_median'])})" if "loss_median" in e else "")
        + ". Its gradient with respect to q is -t, so every step raises each class in proportion to the target's "
        "mass, and the loss is lowest with all the mass on the target's top class: the model is pushed onto the "
        "target's argmax instead of towards its distribution (a distillation loses the teacher's soft information)."
    )
    remedies = [
        f'Give kl_div log-probabilities: `F.kl_div(F.log_softmax(s / T, dim=1), target, reduction="batchmean")` '
        f"in place of `{made_by}`.",
    ]
    return text, remedies


def _explain_score_backward(f: Finding):
    e = f.evidence
    reads = ", ".join(e["score_reads"])
    text = (
        f"At each of {e['sampled_steps']} sampled step(s), {e['backward_passes']} backward passes added into the "
        f"same `.grad` before the optimiser step: one from the loss (`{e['loss']}`), one from a score picked off "
        f"`{e['score_of']}`'s output ({reads}) with no loss in it, as a saliency map takes it "
        "(`scores.gather(1, y[:, None]).sum().backward()`). backward() does not compute the input's gradient "
        "alone: it adds d score / d w into every parameter's `.grad` as well, and nothing reset them between the "
        "two passes, so the step applies d loss / d w + d score / d w. Besides lowering the loss it lowers that "
        "score at every step, without bound (a class's score pushed to minus infinity, and the outputs with it)."
    )
    remedies = [
        "Take the input's gradient without touching the parameters': `grad_x, = torch.autograd.grad(score, x)`.",
        "Or reset the gradients after the score's backward: `optimizer.zero_grad()` between it and the loss's.",
    ]
    return text, remedies


def _explain_classes_mixed_by_view(f: Finding):
    e = f.evidence
    mixed = e["classes_mixed_by_view"]
    given, seen, dim = tuple(mixed["input_shape"]), tuple(mixed["shape"]), mixed["dim"]
    classes = seen[dim]
    text = (
        f"`cross_entropy` reads the classes on dim {dim} of a view of `{e['classes_from']}`'s output, {given} viewed "
        f"as {seen}. A view keeps the values in memory order and only cuts them anew: the {classes} classes do not "
        f"lie along that axis in {given}, so each row the softmax normalises mixes the scores of several classes "
        "and positions. The loss still falls (the model learns to fit the scrambled rows), but the gradient reaching "
        "each position's scores is not the gradient of its own prediction: what it learns is not the task."
    )
    remedies = [
        "Move the classes last before flattening: `logits.permute(0, 2, 3, 1).reshape(-1, C)` for (N, C, H, W), or "
        "give `cross_entropy` the classes on dim 1 as they are: (N, C, H, W) or (N, C, T) logits with (N, H, W) or "
        "(N, T) targets; for a tagger's (N, T, C), `logits.transpose(1, 2)`, not `view(N, C, T)`.",
    ]
    return text, remedies


def _explain_freeze_by_attribute(f: Finding):
    modules = f.evidence["requires_grad_attribute"]
    first = modules[0]
    text = (
        f"`{first}.requires_grad = False` was meant to freeze `{first}`, but an `nn.Module` has no `requires_grad` "
        "flag: Python stores the attribute and nothing reads it. Its parameters still require grad, backprop still "
        "reaches them, and the optimiser still steps them: the part meant to stay fixed (a pretrained backbone) "
        "trains on, at the rate meant for the rest, and can forget what it knew."
    )
    if len(modules) > 1:
        text += f" The same at {', '.join(f'`{m}`' for m in modules[1:])}."
    remedies = [
        f"Call the method: `{first}.requires_grad_(False)` (or `for p in {first}.parameters(): p.requires_grad = "
        "False`), before the optimiser is made, or leave its parameters out of the optimiser.",
    ]
    return text, remedies


def _explain_ctc_blank_as_label(f: Finding):
    e = f.evidence
    blank = e["blank"]
    text = (
        f"`ctc_loss`'s blank is class {blank}, and {e['targets_with_blank']} of the {e['sequences']} target sequences "
        f'of a sampled batch hold {blank} as a label. CTC sums over alignments in which the blank means "no label at '
        f"this frame\": a label equal to the blank is read as one, so its frames are scored as the blank's, and the "
        "gradient pulls the blank's score up where the label belongs. The label cannot be learnt as itself, and the "
        "loss is no longer -log of a probability (it can go below 0). `nn.CTCLoss()` keeps `blank=0`: a model "
        "whose blank is its last class, with labels from 0, collides with it."
    )
    remedies = [
        f"Give the loss the blank the model uses, `nn.CTCLoss(blank=C - 1)` for the last of C classes, or shift the "
        f"labels so that none is {blank} (labels 1..C-1 with blank=0).",
    ]
    return text, remedies


def _explain_ctc_targets_zeroed(f: Finding):
    share = f.evidence["ctc_targets_too_long"]["share"]
    text = (
        f"{fmt(100 * share)}% of `ctc_loss`'s target sequences are longer than their inputs allow: CTC emits at most "
        "one label per input frame, and needs a blank between two equal labels, so a sequence of L labels with r "
        "repeats needs L + r frames. No alignment exists for them: their loss is infinite, and `zero_infinity=True` "
        "sets it, and its gradient, to 0. Those examples teach nothing."
    )
    remedies = [
        "Subsample the input less (a smaller stride or fewer pooling layers before the loss), or drop or cut the "
        "examples whose targets are too long for their inputs; compare `target_lengths` (plus repeats) with "
        "`input_lengths` after the model's subsampling.",
    ]
    return text, remedies


def _explain_softmax_over_queries(f: Finding):
    text = (
        f"`{f.where}` normalises attention scores (queries x keys) over the queries' axis, dim -2, and the weights "
        "go to the values as they are: each query's weights over the keys do not sum to 1, and each depends on every "
        "other query's scores. In a decoder, a step's weights then carry its later steps' states, what it is asked "
        "to predict among them: the training loss can fall lower than the right model's while generation, one step "
        "at a time, fails. The gradient of each query flows into the others'."
    )
    remedies = ["Normalise over the keys: `F.softmax(scores, dim=-1)` (the last axis, the positions attended to)."]
    return text, remedies


def _explain_rows_written_twice(f: Finding):
    e = f.evidence
    op = f.where.split(" ")[0]
    text = (
        f"`{f.where}` writes {e['writes']} computed values by index, and {e['repeated_writes']} of them go to a place "
        "an earlier one was written to. Without accumulation a write replaces: the forward keeps one value per "
        "place and drops the others (`agg[dst] += m[src]` reads agg[dst] once, before any of the writes, so "
        "several edges into one node leave one message, not their sum). The backward does not know which was kept: "
        "it sends every one of them the gradient of the place it was written to. The gradient is not the forward's "
        "derivative, and the model trains on messages it never used."
    )
    remedies = [
        "Sum the values written to one place: `agg.index_add_(0, dst, m[src])` (or "
        "`agg.index_put_((dst,), m[src], accumulate=True)`, or `scatter_add_`/`scatter_reduce_` for a mean or max)."
        if op == "index_put"
        else "Give `index_copy` each place once, or sum what lands on one place: `index_add` instead.",
    ]
    return text, remedies


def _log_formed_unstably(seen: dict, remedies: list) -> None:
    """The first remedy for a NaN at a log of a determinant or of a sum of exponentials: the stable form."""
    if seen["of"] == "det":
        remedies.insert(
            0,
            f"The sampled steps take `{seen['log']}` of a determinant: det(K) is the product of K's eigenvalues, "
            "and in float32 it underflows (below about 1e-38 it loses precision, below 1e-45 it is 0) long before K "
            "is singular, where log's derivative 1/det is inf. Use `torch.logdet(K)` or `torch.linalg.slogdet(K)`, "
            "or from a Cholesky factor L, `2 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)`, and "
            "`torch.cholesky_solve` in place of `torch.inverse`.",
        )
    else:
        remedies.insert(
            0,
            f"The sampled steps take `{seen['log']}` of a sum of exponentials (a mixture's likelihood written out): "
            "each exp(log p) underflows to 0 once log p is below about -103 in float32, and for a target far from "
            "every component the whole sum is 0, its log -inf. Use `torch.logsumexp(log_pi + log_prob, dim=-1)` "
            "(or `torch.distributions.MixtureSameFamily`, which does).",
        )


def explain_wrong_gradient(f: Finding):
    """A custom autograd.Function whose backward disagrees with its forward's finite differences, a layer's output
    changed outside autograd, a gradient reversal that does not reverse, or a target whose gradient is not stopped."""
    e = f.evidence
    if "targets_with_blank" in e:
        return _explain_ctc_blank_as_label(f)
    if e.get("rows_written_twice"):
        return _explain_rows_written_twice(f)
    if e.get("softmax_over_queries"):
        return _explain_softmax_over_queries(f)
    if "requires_grad_attribute" in e:
        return _explain_freeze_by_attribute(f)
    if "classes_mixed_by_view" in e:
        return _explain_classes_mixed_by_view(f)
    if "stepped_by_others" in e:
        return _explain_stepped_twice(f)
    if "score_of" in e:
        return _explain_score_backward(f)
    if "kl_div_input" in e:
        return _explain_kl_div_of_probabilities(f)
    if e.get("kl_div_target") == "below zero":
        return _explain_kl_div_target_below_zero(f)
    if "previous_token_targets" in e:
        return _explain_previous_token_targets(f)
    if "unshifted_targets" in e:
        return _explain_unshifted_targets(f)
    if e.get("multi_hot_target"):
        return _explain_multi_hot_margin(f)
    if "zeros_outside_autograd" in e:
        return _explain_zeros_outside_autograd(f)
    if "relu_output_negative" in e:
        return _explain_relu_output_changed(f)
    if e.get("gradient_reversal_not_reversed"):
        return _explain_reversal_not_reversed(f)
    if "target_detached" in e:
        return _explain_unstopped_target(f)
    if "targets_next_tokens" in e:
        return _explain_future_visible(f)
    if e.get("graph_from_earlier_step"):
        return _explain_graph_across_steps(f)
    if e.get("model_in_eval_mode"):
        return _explain_eval_mode_left(f)
    if e.get("straight_through_turned"):
        return _explain_turned_straight_through(f)
    if e.get("examples_mixed"):
        return _explain_examples_mixed(f)
    if e.get("target_trained"):
        return _explain_target_trained(f)
    text = (
        f"The backward of your `torch.autograd.Function` `{f.where}` (after `{e['site']}`) does not match its "
        "forward. The chain rule asks each backward for g = J^T u, the gradient that arrives (u, `grad_output`) "
        "carried back through the forward's Jacobian J; so for any direction v of its inputs, <g, v> must equal "
        "<u, J v>, and J v is how the forward's output moves along v, (f(x + h v) - f(x - h v)) / 2h. The doctor ran "
        "the forward again on copies of the inputs (float64) along two random directions on each of "
        f"{e['tests']} sampled steps, and on {e.get('tests_disagreeing', e['tests'])} of them the two sides differed: "
        f"the backward gave <g, v> = {fmt(e['backward_dot'])} where the forward's change gives "
        f"{fmt(e['finite_difference_dot'])}, {pct(e['relative_mismatch'])} apart."
    )
    if e.get("scaled_by") is not None:
        text += (
            f" Along every direction the backward's gradient was {fmt(e['scaled_by'])} times the true one: a sign "
            "or a constant factor is wrong (a mean's 1/N left out, a minus sign lost)."
        )
    text += (
        " Every layer before it learns from a gradient that is not the loss's: the training may still move, towards "
        "the wrong place."
    )
    remedies = [
        f"Fix `{f.where}.backward`: `torch.autograd.gradcheck({f.where}.apply, (x, w))`, with small float64 copies of "
        "every tensor it takes (`x.double().requires_grad_()`, its weights too: a weight's gradient is checked only "
        "if it is given), compares it with finite differences entry by entry and shows which entries differ (a sign, "
        "a missing factor, a gradient transposed, a derivative taken of the wrong variable).",
        f"Or drop `{f.where}` and write its forward with PyTorch operations: autograd then derives the backward "
        "itself.",
    ]
    return text, remedies


def _explain_no_branch_taken(f: Finding):
    share = f.evidence["examples_no_branch_takes"]
    text = (
        "The loss adds two `torch.where` terms, each keeping its value where its condition holds and 0 elsewhere, "
        f"and for {pct(share)} of the examples neither condition holds: they add 0 to the loss, and where's backward "
        "passes them no gradient. The second term's condition held for no example at all. `CosineEmbeddingLoss` "
        "(`F.cosine_embedding_loss`) computes itself this way, with target == 1 for pairs to pull together and "
        "target == -1 for pairs to push apart: targets of 1 and 0, the usual labels for same and different, leave "
        "every different pair out, so the embedding is only ever pulled together."
    )
    remedies = [
        "Give CosineEmbeddingLoss targets 1 and -1: `target = 2 * same.float() - 1` (same: 1 for a matching pair, 0 "
        "for a different one).",
    ]
    return text, remedies


def _explain_gather_across_batch(f: Finding):
    e = f.evidence
    batch, columns, module = e["batch"], e["columns"], e["output_of"]
    text = (
        f"The loss picks entries of `{module}`'s output, {batch} examples by {columns} columns, with `gather` along "
        f"dim 0, the batch axis: example i reads the row numbered by its own index (an action, a class: 0 to "
        f"{columns - 1}), which is another example's row. Only {pct(e['rows_read'])} of the {batch} rows are read "
        "at all; gather's backward puts the gradient only where it read, so the other examples' outputs get none, "
        "and the ones read are pushed towards targets that belong to other examples."
    )
    remedies = [
        "Gather along the columns: `q.gather(1, a.unsqueeze(1)).squeeze(1)` (dim 1 picks, for each example, the "
        "entry its index names), or `q[torch.arange(len(a)), a]`.",
    ]
    return text, remedies


def _explain_targets_out_of_reach(f: Finding):
    """A regression's prediction squashed into a range (ReLU, sigmoid, tanh) that a share of its targets is not in."""
    e = f.evidence
    function, (low, high) = e["prediction_activation"], e["prediction_range"]
    if e["regression_loss"] == "poisson_nll_loss":
        return _explain_rate_exponentiated_twice(f)
    reach = f">= {fmt(low)}" if high is None else f"between {fmt(low)} and {fmt(high)}"
    text = (
        f"The prediction compared by `{e['regression_loss']}` comes straight out of a {function}"
        + (f" (`{f.where}`)" if e.get("prediction_module") else "")
        + f", so it is always {reach}, but {pct(e['targets_outside'])} of the targets lie outside that range: "
        "those can never be fitted. "
    )
    if function == "relu":
        text += (
            "A prediction pushed towards a negative target stops at 0, and there the ReLU's derivative is 0: the "
            "chain rule passes no gradient back through it, and the layers below stop learning from that example."
        )
    else:
        text += (
            f"Predictions pushed towards those targets go into the {function}'s flat tails, where its derivative "
            "is near 0: the gradient through them vanishes, and the error stays."
        )
    remedies = [
        f"Drop the {function} after the last layer: a regression's output layer is linear (`nn.Linear` last), "
        "or scale the targets into the range it can reach.",
        "If the targets are meant to be non-negative or bounded, check their scaling (standardising makes half "
        "of them negative).",
    ]
    return text, remedies


def _explain_rate_exponentiated_twice(f: Finding):
    """`poisson_nll_loss(torch.exp(out), y)`: the loss exponentiates its input again (log_input=True)."""
    e = f.evidence
    text = (
        "`poisson_nll_loss` takes the log of the rate by default (`log_input=True`) and computes exp(input) - y * "
        "input, but it was given a rate already exponentiated, `exp(out)`: the rate it fits is exp(exp(out)), "
        f"which is never below exp(0) = 1, and {pct(e['targets_outside'])} of the targets are below 1 (counts of 0). "
        "Pushed towards them, exp(out) goes to 0, and so does the rate's derivative exp(exp(out)) * exp(out): "
        "the gradient through the two exponentials vanishes there, while for large outputs it grows as an "
        "exponential of an exponential."
    )
    remedies = [
        "Give the loss the model's output itself, the log-rate: `F.poisson_nll_loss(out, y)`; or keep "
        "`exp(out)` and pass `log_input=False`. Predict the rate with `torch.exp(out)` at evaluation.",
    ]
    return text, remedies


CLIP_IN_ORDER = (
    "Clip between `loss.backward()` and `optimizer.step()`: `loss.backward(); "
    "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm); optimizer.step()`"
)


def _norm_stepped(e: dict) -> str:
    """The gradients' norm the optimiser stepped past an idle clip_grad_norm_, as the clipping findings say it."""
    return f"{fmt(e['grad_norm_stepped'])} (median)" if e.get("grad_norm_stepped") is not None else "NaN or inf"


def _explain_clipping_before_backward(f: Finding):
    e = f.evidence
    if e.get("clip_given_no_parameters"):
        return _explain_clipping_nothing(f)
    text = (
        f"`clip_grad_norm_` (max_norm {fmt(e['clip_max_norm'])}) measured a gradient norm of 0 on "
        f"{e['sampled_steps']} sampled steps, while the optimiser then stepped gradients of norm "
        + _norm_stepped(e)
        + ": it runs before `loss.backward()`, after `zero_grad()`, when there "
        "is no gradient yet, and clips nothing. The gradients backward() computes next reach the optimiser whole: "
        "the cap the script relies on against exploding gradients is not there."
    )
    remedies = [
        CLIP_IN_ORDER + " (with a GradScaler, after `scaler.unscale_(optimizer)`).",
    ]
    return text, remedies


def _explain_value_clipping(f: Finding):
    e = f.evidence
    text = (
        f"`clip_grad_value_` (clip_value {fmt(e['clip_value'])}) capped {pct(e['capped_share'])} of the gradients' "
        f"entries on {e['sampled_steps']} sampled steps: a typical entry is {fmt(e['grad_entry_rms'])} (root mean "
        f"square), and the cap cut the gradients' norm from {fmt(e['grad_norm_before_clip'])} to "
        f"{fmt(e['grad_norm_after_clip'])} (medians). A capped entry is clip_value times the sign of the gradient: "
        "its derivative with respect to the gradient is zero, so how large the chain rule made it no longer reaches "
        "the update, and every weight moves by at most lr x clip_value per step. The training follows the "
        "gradients' signs, in steps as small as the cap."
    )
    text += _folded_sentence(e)
    remedies = [
        f"To guard against exploding gradients, clip the norm instead: `torch.nn.utils.clip_grad_norm_("
        f"model.parameters(), max_norm={fmt(2 * e['grad_norm_before_clip'])})` (twice the median norm measured "
        "here) leaves ordinary steps whole and cuts only the spikes.",
        f"Or raise clip_value well above the typical entry ({fmt(e['grad_entry_rms'])}), so that it caps the rare "
        "outliers only.",
    ]
    return text, remedies


def _explain_zero_class_weight(f: Finding):
    e = f.evidence
    count = e["classes_weighted_zero"]
    text = (
        f"`cross_entropy` is given class weights of exactly 0 for {count} of its {e['classes']} classes, which hold "
        f"{pct(e['examples_weighted_zero'])} of the examples. Each example's loss is multiplied by its class's weight, "
        "and so is its gradient: those examples teach the model nothing, and their classes are learnt only as what "
        "the other examples are not."
    )
    remedies = [
        'Compute the weights as floats: `weight = n / (classes * counts)` (scikit-learn\'s "balanced"), not with an '
        "integer division, which gives 0 for every class above the mean count.",
        "To leave one class out on purpose, give its label to `ignore_index` instead of a weight of 0.",
    ]
    return text, remedies


def _explain_zero_pos_weight(f: Finding):
    e = f.evidence
    text = (
        f"`binary_cross_entropy_with_logits` is given a pos_weight of {fmt(e['pos_weight_min'])} for "
        f"{pct(e['positives_weighted_zero'])} of the positive targets ({pct(e['positive_targets'])} of all targets "
        "are positive). A positive example's loss is pos_weight * -log(sigmoid(x)), so its derivative is pos_weight "
        "times that of the plain loss: 0. Not one positive example sends a gradient back, and the model learns to "
        "call everything negative."
    )
    remedies = [
        "pos_weight is the number of negatives over the number of positives, as a float: "
        "`pos_weight=torch.tensor(n_neg / n_pos)` (an integer division such as `n_pos // n_neg` gives 0 when the "
        "positives are the fewer).",
    ]
    return text, remedies


def _explain_inverted_loss_mask(f: Finding):
    e = f.evidence
    text = (
        f"The per-token loss is multiplied by a mask that keeps the padding: {pct(e['padding_of_kept'])} of the "
        f"positions it keeps are padding (token {e['padding_idx']}, the embedding's padding_idx), and it keeps "
        f"{pct(e['real_tokens_kept'])} of the real tokens. The derivative of loss * mask with respect to the loss is "
        "the mask, so every real token's gradient is multiplied by 0: the model learns only what to predict at the "
        "padding, and the loss, taken over padding alone, falls fast."
    )
    remedies = [
        "Build the mask the other way round: `mask = torch.arange(T)[None] < lengths[:, None]` (or `ids != pad`), "
        "so that it keeps the real tokens; or give `cross_entropy` the padding's target as `ignore_index`.",
    ]
    return text, remedies


def _explain_penalty_without_graph(f: Finding):
    if f.evidence.get("create_graph"):
        return _explain_penalty_detached(f)
    text = (
        "`torch.autograd.grad` is called without `create_graph=True`, and the loss adds a term that reaches no "
        f"parameter (on {f.evidence['sampled_steps']} sampled steps): the gradient it returns is a plain tensor, with "
        "no record of how it was computed from the weights, so a term made of it (a gradient penalty, double "
        "backprop, a physics-informed residual) is a constant to the parameters. It adds to the loss's value and "
        "passes them no gradient: the model is trained as if the term were not there. (`retain_graph=True` only "
        "silences the error a second backward through the same graph would raise.)"
    )
    remedies = [
        "Pass `create_graph=True` to `torch.autograd.grad` when its result goes into the loss: "
        "`g, = torch.autograd.grad(out, x, create_graph=True)`, so that backward differentiates through it.",
    ]
    return text, remedies


def _explain_ran_on_other_tensors(f: Finding):
    e = f.evidence
    at_output = e["gradient_at_output"]
    text = (
        f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none had a gradient in "
        f"{e['sampled_steps_checked']} sampled steps, not even right after `loss.backward()`, although the backward "
        f"pass reached the layer: the gradient arriving at `{at_output['layer']}`'s output had norm "
        f"{at_output['norm']}. So the layer computed with other tensors in its parameters' place, and backprop "
        "delivered the gradient to those: copies cut from the parameters (`(p - lr * g).detach().requires_grad_()`, "
        "MAML's fast weights detached from the meta-parameters), passed to `torch.func.functional_call`, or weights "
        "swapped in with `p.data = ...`. The parameters the optimiser holds are not on that path, so they never learn."
    )
    remedies = [
        "Compute the tensors the layer runs with from its parameters, keeping the graph: no `.detach()` on them "
        "(MAML: `fast = {n: p - lr * g for ...}` with `create_graph=True`, or `g.detach()` alone for first-order "
        "MAML), then `functional_call(model, fast, x)`.",
        "If the weights are generated (a hypernetwork), pass them to the layer through `torch.func.functional_call` "
        "rather than `p.data = ...`, and give the optimiser the generator's parameters.",
    ]
    return text, remedies


def _explain_penalty_detached(f: Finding):
    text = (
        "`torch.autograd.grad` is called with `create_graph=True`, so the gradient it returns keeps its graph back to "
        f"the weights; yet the loss adds a term that reaches no parameter (on {f.evidence['sampled_steps']} sampled "
        "steps). A term made of that gradient lost its graph on the way (`g.detach()`, `g.data`, `g.item()`, a NumPy "
        "round trip, or computed under `torch.no_grad()`): it is a constant to the parameters, adds to the loss's "
        "value and passes them no gradient. The model is trained as if the term (a gradient penalty, double "
        "backprop, a physics-informed residual) were not there."
    )
    remedies = [
        "Build the term from the gradient itself, with its graph: `penalty = g.pow(2).sum(1).mean()`, not "
        "`g.detach()...`, so that backward differentiates through it.",
    ]
    return text, remedies


def _explain_soft_targets(f: Finding):
    if f.where == "binary_cross_entropy":
        return _explain_softmax_into_bce(f)
    e = f.evidence
    text = (
        f"`cross_entropy` is given targets of 0s and 1s whose rows sum to {fmt(e['target_row_sum'])} on average "
        f"({pct(e['rows_summing_over_one'])} of them to more than 1): several classes are marked 1 in one row, a "
        "multi-label target. A softmax shares one unit of probability among the classes, and the derivative "
        "of -sum(t * log softmax(z)) with respect to the logits is s * softmax(z) - t, with s the row's sum: it is 0 "
        f"once each of the k marked classes has probability 1/k (about {fmt(e['probability_per_class_at_most'])} "
        "here). Backprop stops pushing a tag up halfway, and the tags of one example compete instead of each being "
        "learnt."
    )
    remedies = [
        "For a multi-label task, give each class its own sigmoid: `F.binary_cross_entropy_with_logits(logits, "
        "multi_hot)`, and predict the tags whose logit is above 0.",
        "If one class per example is meant, give `cross_entropy` the class indices (`target.argmax(1)`), or "
        "probabilities that sum to 1 (`target / target.sum(1, keepdim=True)`).",
    ]
    return text, remedies


def _explain_softmax_into_bce(f: Finding):
    e = f.evidence
    text = (
        "`binary_cross_entropy` is given a softmax's output and targets of 0s and 1s whose rows sum to "
        f"{fmt(e['target_row_sum'])} on average ({pct(e['rows_summing_over_one'])} of them to more than 1): a "
        "multi-label target. A softmax shares one unit of probability among the classes, so each of k marked "
        f"classes can have 1/k of it (about {fmt(e['probability_per_class_at_most'])} here), never the 1 each tag's "
        "term asks for: backprop pushes one tag's probability up only by pushing the others' down, through the "
        "softmax's Jacobian diag(p) - p p^T, and the tags of one example compete instead of each being learnt. "
        "Predicted with a 0.5 threshold, an example with two tags or more gets none."
    )
    remedies = [
        "Give each class its own sigmoid: drop the softmax and train the logits with "
        "`F.binary_cross_entropy_with_logits(logits, multi_hot)` (numerically stable), predicting the tags whose "
        "logit is above 0.",
        "If one class per example is meant, use `F.cross_entropy(logits, target.argmax(1))` on the logits.",
    ]
    return text, remedies


def _explain_huber_delta(f: Finding):
    e = f.evidence
    text = (
        f"`huber_loss` has delta {fmt(e['huber_delta'])}, while its errors (prediction - target) are "
        f"{fmt(e['error_mean'])} on average, {fmt(e['error_over_delta'])} times delta, and "
        f"{pct(e['errors_beyond_delta'])} of them lie past it (medians over {e['sampled_steps']} sampled steps). "
        "Past delta the Huber loss is delta * (|error| - delta / 2), whose derivative is delta * sign(error): "
        "backprop starts every example's gradient at delta, however wrong the prediction. The loss is an L1 loss "
        "scaled down by delta, and with SGD every step is as many times smaller."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Set delta to the size of error you want treated quadratically, about the errors' scale (they are "
        f"{fmt(e['error_mean'])} here; around 1 for standardised targets): `F.huber_loss(prediction, target, "
        "delta=1.0)`.",
        "If an L1 loss was meant, use `F.l1_loss`, or `F.smooth_l1_loss(..., beta=...)`, whose gradient past beta is "
        "sign(error), not delta times it.",
    ]
    return text, remedies


def _explain_raw_targets(f: Finding):
    e = f.evidence
    text = (
        f"The targets of `{f.where}` are in raw units: their typical size (root mean square) is "
        f"{fmt(e['target_rms'])}, against {fmt(e['prediction_rms'])} for the network's first predictions. The loss's "
        "gradient with respect to a prediction, 2 (prediction - target) for a squared error, is of the targets' "
        "size, and backprop multiplies every layer's gradient by it"
        + (
            f" (gradient norm {fmt(e['grad_norm_first'])} at the first sampled step)"
            if e.get("grad_norm_first")
            else ""
        )
        + ". The layers must grow their weights by orders of magnitude to reach such outputs: with SGD the updates "
        "are huge and the weights blow up; with Adam, which takes steps of about the learning rate, it takes "
        "forever."
    )
    text += _folded_sentence(e)
    remedies = [
        "Standardise the targets: `y = (y_raw - mean) / std` with the training set's mean and std, and undo it on "
        "the predictions (`prediction * std + mean`); for targets spanning orders of magnitude (prices), regress "
        "`log(y)` instead.",
        "Or start the output layer at the targets' scale: its bias at their mean (`model[-1].bias.data.fill_(mean)`).",
    ]
    return text, remedies


def _explain_clipping_scaled(f: Finding):
    e = f.evidence
    text = (
        f"`clip_grad_norm_` (max_norm {fmt(e['clip_max_norm'])}) runs on gradients that a `GradScaler` has multiplied "
        f"by its factor ({fmt(e['loss_scale'])}) on {e['sampled_steps']} sampled steps: `scaler.unscale_(optimizer)` "
        f"was not called first. It measured a norm of {fmt(e['clip_measured_norm_scaled'])}, where the true one is "
        f"{fmt(e['grad_norm_unscaled'])}, and cut the gradients to max_norm; once the scaler's step unscales them, "
        f"every update is {fmt(e['clip_max_norm'])} / {fmt(e['loss_scale'])} of a norm-1 step: the training crawls."
    )
    remedies = [
        "Unscale before clipping: `scaler.scale(loss).backward(); scaler.unscale_(optimizer); "
        "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm); scaler.step(optimizer); scaler.update()`.",
    ]
    return text, remedies


def _explain_clipping_after_step(f: Finding):
    e = f.evidence
    stepped = _norm_stepped(e)
    text = (
        f"`clip_grad_norm_` (max_norm {fmt(e['clip_max_norm'])}) runs after `optimizer.step()` on {e['sampled_steps']} "
        f"sampled steps, while the gradients stepped had a norm of {stepped}: the update has already used them "
        "unclipped, and the clipped gradients are then cleared by the next `zero_grad()` without being used. The cap "
        "the script relies on against exploding gradients is not there."
    )
    remedies = [
        CLIP_IN_ORDER + ".",
    ]
    return text, remedies


def _explain_clipping_nothing(f: Finding):
    e = f.evidence
    stepped = _norm_stepped(e)
    text = (
        f"`clip_grad_norm_` (max_norm {fmt(e['clip_max_norm'])}) was given no parameters at all on "
        f'{e["sampled_steps"]} sampled steps (an empty generator: PyTorch warned "`parameters` is an empty '
        'generator"), so it measured a norm of 0 and clipped nothing, while the optimiser stepped gradients of '
        f"norm {stepped}. A generator such as `model.parameters()` can be read once: kept in a variable and handed "
        "to the optimiser first, it is used up when the clipping reads it. The cap the script relies on against "
        "exploding gradients is not there."
    )
    remedies = [
        "Pass `model.parameters()` afresh at each call: `torch.nn.utils.clip_grad_norm_(model.parameters(), "
        "max_norm)`; or keep the parameters in a list (`params = list(model.parameters())`) and use it for both.",
    ]
    return text, remedies


def _explain_broadcast(f: Finding):
    e = f.evidence
    shape, compared = tuple(e["prediction_shape"]), tuple(e["compared_as"])
    n = shape[0]
    text = (
        f"The loss compares `{e['prediction']}`'s output, of shape {shape}, with a target of another shape, and "
        f"`{f.where}` broadcast them to {compared}: each of the {n} predictions is compared with every target of the "
        "batch, not with its own. Backprop through the broadcast sums the gradient over the new axis, so prediction "
        "p_i receives 2/N (p_i - mean(y)) in place of 2/N (p_i - y_i) (for a squared error): every prediction is "
        "pulled towards the batch's mean target, whatever its input. The model can learn that mean and nothing "
        "more, and the loss cannot fall below the targets' variance."
    )
    if e.get("loss_stalled"):
        text += " The loss has stalled."
    grown = len(e.get("compared_as") or ()) == len(shape) + 1 >= 3  # ((N, L) against (N, 1, L))
    same_shape = (
        "`loss_fn(pred, y.squeeze(1))`, or `loss_fn(pred.unsqueeze(1), y)`"
        if grown
        else "`loss_fn(pred, y.squeeze(-1))`, or `loss_fn(pred.unsqueeze(-1), y)`"
        if len(shape) == 1
        else "`loss_fn(pred.squeeze(-1), y)`, or `loss_fn(pred, y.unsqueeze(-1))`"
    )
    remedies = [
        f"Give the prediction and the target the same shape: {same_shape}.",
        "PyTorch's own losses warn about this ('Using a target size ... that is different to the input size'): "
        "make that warning an error while debugging (`warnings.simplefilter('error', UserWarning)`).",
    ]
    return text, remedies


def _how_alike(spread: float) -> str:
    if spread == 0:
        return "to the last bit: not one weight differs between two units"
    return f"the largest difference between two units is {fmt(spread)} of the largest weight"


def _how_moved(update_ratio: float | None) -> str:
    return "updated without an optimiser" if update_ratio is None else f"update/weight ratio {fmt(update_ratio)}"


def _explain_symmetric_units(f: Finding):
    e = f.evidence
    units, looks = e["units"], e["alike_at_steps"]
    text = (
        f"All {units} units of `{f.where}` have the same incoming weights and bias ({_how_alike(e['unit_spread'])}), "
        f"from step {looks[0]} to step {looks[-1]}, "
        f"though the weights move ({_how_moved(e['update_ratio'])}). Units that start alike compute "
        "the same output for every input, so backprop hands each the same gradient: dL/dW_j = delta_j x, and "
        "delta_j = sum_k W'_kj delta'_k f'(z_j) is the same for every unit j when the layer above reads them all "
        "alike. Every update moves them together, and nothing in the chain rule can ever tell them apart: the "
        f"layer acts as one unit, {units} times over, and the loss can only fall as far as a network that narrow "
        "allows."
    )
    if e.get("loss_first_third") is not None:
        first, last = fmt(e["loss_first_third"]), fmt(e["loss_last_third"])
        text += f" (The loss: {first} over the first third, {last} over the last.)"
    if e.get("also_alike"):
        text += " The same holds in " + ", ".join(f"`{name}`" for name in e["also_alike"]) + "."
    remedies = [
        f"Initialise `{f.where}`'s weights at random, not with a constant: PyTorch's default for nn.Linear and "
        "nn.Conv does (remove the `constant_`, `fill_`, `ones_` or `zeros_` call), or use "
        "`nn.init.kaiming_uniform_` before a ReLU and `nn.init.xavier_uniform_` before tanh or sigmoid.",
        "A constant start is fine for biases, and for the weights of an output layer only (its units get different "
        "gradients from different targets): never for a hidden layer.",
    ]
    return text, remedies


def _explain_one_layer(f: Finding, vanishing: bool):
    """Across depth, when one layer accounts for nearly all of the change: that layer is the leak, not the depth."""
    e = f.evidence
    layer = e["through_one_layer"]
    gain = next((g for lower, g in e["backward_gain_by_layer"].items() if _layer_above(e, lower) == layer), None)
    change = "shrinks" if vanishing else "grows"
    text = (
        f"The gradient reaching `{e['input_layer']}` is {fmt(e['ratio'])} of the gradient at `{e['output_layer']}`, "
        f"and nearly all of that happens in one place: passing back through `{layer}` "
        f"({e.get('through_one_layer_kind', 'a layer')}), it {change} by a factor of "
        f"{fmt(gain)}, while every other layer's backward gain is near 1 ({_other_gains(e, layer)}). The chain rule "
        f"multiplies by `{layer}`'s local derivative there, so everything below it "
        f"{'barely learns' if vanishing else 'gets updates that large'}: the depth of the network is not the cause."
    )
    remedies = [
        f"Look at `{layer}`: what it computes and from what. A normalisation over a single feature (LayerNorm(1), "
        "BatchNorm on a one-unit output) returns its bias whatever its input, so its derivative is 0; a layer with "
        "weights near zero, or a bottleneck of one unit, passes almost nothing back.",
    ]
    if e.get("through_one_layer_kind", "").startswith("BatchNorm") and vanishing:
        remedies.insert(
            0,
            f"`{layer}` takes its statistics over the batch (and an image's positions): with a batch of one or two, "
            "or when what follows averages over exactly those values (global average pooling after a BatchNorm2d "
            "that saw one image), its output is its bias whatever the input, and its derivative 0. Train on batches "
            "of several examples, or use GroupNorm or LayerNorm, which normalise each example on its own.",
        )
    if "Norm" in e.get("through_one_layer_kind", "") and layer == e["output_layer"]:
        remedies.insert(0, f"Remove the normalisation `{layer}` from the output: the output layer needs none.")
    if not vanishing:
        remedies.append("Clip the gradient norm meanwhile, and check that layer's initialisation.")
    return text, remedies


def _layer_above(e: dict, lower: str) -> str | None:
    names = list(e["grad_norm_by_layer"])
    return names[names.index(lower) + 1] if lower in names and names.index(lower) + 1 < len(names) else None


def _other_gains(e: dict, layer: str) -> str:
    others = [g for lower, g in e["backward_gain_by_layer"].items() if _layer_above(e, lower) != layer]
    return f"from {fmt(min(others))} to {fmt(max(others))}" if others else "none other measured"


def _explain_cut_every_step(f: Finding):
    e = f.evidence
    cell = f.where.split(" ")[0]
    stepped = e["kind"] in ("RNN", "LSTM", "GRU")  # (a whole-sequence layer run one time step a call)
    call = "out, h = rnn(x[:, t:t+1], h.detach())" if stepped else "h = cell(x[t], h.detach())"
    text = (
        f"`{cell}` ({e['kind']}) was given its own last output detached at {e['cut_calls']} of its {e['time_steps']} "
        f"calls (`{call}`): backprop through time stops at every step. The loss at step t teaches "
        "the cell only about step t, never about what it should carry over from the steps before, so it cannot "
        "learn anything that depends on earlier inputs (truncated backprop through time, truncated to one step)."
    )
    if not e.get("loss_stalled"):
        text += " The loss is improving, so the task may need only each step's own input; it matters if it does not."
    remedies = [
        "Pass the hidden state on without detaching it within a sequence; detach it only between sequences (or "
        "every k steps of a very long one, for truncated backprop through time over k steps).",
    ]
    return text, remedies


def _explain_parts_cut_every_step(f: Finding):
    e = f.evidence
    cell, cut = f.where.split(" ")[0], e["parts_cut_every_step"]
    text = f"`{cell}` ({e['kind']}) was given its own last state at {e['cut_calls']} of its {e['time_steps']} calls "
    if cut == ["c"]:
        text += (
            "with h carried on but the cell state c detached (`h, c = cell(x[t], (h, c.detach()))`). The cell state is "
            "the LSTM's path for the gradient across time: along it d c_t / d c_(t-1) is the forget gate alone, "
            "close to 1 for what the cell keeps, so a gradient crosses many steps. Detached, that path is cut at every "
            "step; what still crosses goes through h and the gates, multiplied at every step by W_hh and the gates' "
            "derivatives, and fades within a few steps: the cell learns only short dependencies, as a plain RNN would."
        )
    else:
        text += (
            f"with {' and '.join(cut)} detached and the rest carried on: the paths of the gradient through time that "
            f"run through {' and '.join(cut)} are cut at every step (the gates stop learning from later steps through "
            "them), while the rest still carries it."
        )
    if not e.get("loss_stalled"):
        text += " The loss is improving, so the task may need only short memory; it matters if it does not."
    remedies = [
        "Pass the whole state on with its gradient within a sequence (`cell(x[t], (h, c))`); detach all of it "
        "together only between sequences, or every k steps of a very long one (truncated backprop through time).",
    ]
    return text, remedies


def explain_exploding_gradient(f: Finding):
    e = f.evidence
    if "hooks_piling_up" in e:
        return _explain_hooks_piling_up(f)
    if e.get("clip_measured_norm") is not None:
        return _explain_clipping_before_backward(f)
    if e.get("clip_after_step"):
        return _explain_clipping_after_step(f)
    if e.get("clip_on_scaled_gradients"):
        return _explain_clipping_scaled(f)
    if e.get("across") == "target scale":
        return _explain_raw_targets(f)
    if e.get("across") == "time":
        return _explain_time(f, vanishing=False)
    if e.get("through_one_layer"):
        return _explain_one_layer(f, vanishing=False)
    if e.get("across") == "steps":
        text = (
            f"The total gradient norm grew from {fmt(e['grad_norm_start'])} to {fmt(e['grad_norm_end'])} "
            f"(x{fmt(e['growth'])}) over the run, most at `{f.where}`. Each update made by such a gradient is larger "
            "than the last: a feedback loop between big weights and big gradients, the usual road to NaN."
        )
        remedies = [
            "Clip the gradient norm before the optimiser step: "
            f"`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm={fmt(e['clip_suggestion'])})` "
            "(about 5x the norm measured early in this run).",
            "Lower the learning rate (try 10x lower) or add a warm-up.",
            "Add normalisation layers; check the initialisation scale.",
        ]
        return text, remedies
    text = (
        f"The gradient at `{e['input_layer']}` is {fmt(e['ratio'])} times the gradient at `{e['output_layer']}`: "
        "each layer multiplies it by its transposed weights and its activation's derivative, and here that factor "
        f"averages {fmt(e['mean_factor_per_layer'])} per layer (above 1), so it compounds over the "
        f"{_layers(e['layers'] - 1)} between them. The weights are initialised too large for the depth."
    )
    if e.get("sine_layers"):
        w0 = max(e["sine_layers"].values())
        text += (
            f" These layers are sines, sin(w0 * (W x + b)) with w0 = {fmt(w0)} (a SIREN): the derivative of each is "
            f"w0 cos(...), so a layer passes the gradient back multiplied by w0 times its weights, and PyTorch's "
            "default initialisation leaves that far above 1. SIREN's own initialisation divides by w0."
        )
        remedies = [
            f"Use SIREN's initialisation: the first layer's weights uniform in +-1/fan_in, every later layer's in "
            f"+-sqrt(6/fan_in)/w0 (w0 = {fmt(w0)}); He or Xavier initialisations are larger still, and do not help.",
            "Or lower w0 (30 is SIREN's choice for the first layer; the hidden layers then take it inside their init).",
        ]
        return text, remedies
    remedies = [
        "Initialise with `nn.init.kaiming_normal_` (ReLU) or `nn.init.xavier_uniform_` (tanh/sigmoid): variance "
        "2/fan_in or 2/(fan_in + fan_out) keeps the factor near 1.",
        "Add normalisation (BatchNorm / LayerNorm) between layers.",
        "Clip the gradient norm (`torch.nn.utils.clip_grad_norm_`) while you fix the initialisation.",
    ]
    return text, remedies


def _explain_time(f: Finding, vanishing: bool):
    e = f.evidence
    if e.get("cut_every_step"):
        return _explain_cut_every_step(f)
    if e.get("parts_cut_every_step"):
        return _explain_parts_cut_every_step(f)
    first, last = e["early_steps"], e["late_steps"]
    factor = e["mean_factor_per_time_step"]
    text = (
        f"In `{f.where.split(' ')[0]}` ({e['kind']}), the gradient reaching time steps {first[0]}-{first[1]} is "
        f"{fmt(e['ratio'])} of the gradient at time steps {last[0]}-{last[1]}. Backprop through time multiplies the "
        "gradient at every step by the recurrent Jacobian, W_hh^T times the activation's derivative; "
        f"here that factor averages {fmt(factor)} per time step, over {last[0] - first[0]} steps."
    )
    if e.get("zero_before_step"):
        text = text[:-1] + (
            f" (measured from step {e['zero_before_step']}: before it the gradient has underflowed to exactly 0)."
        )
    if vanishing:
        text += " So the loss cannot teach the layer anything that depends on the early inputs" + (
            ", and the loss is not improving." if e.get("loss_stalled") else "."
        )
        if not e.get("loss_stalled"):
            # (a warning only: a model that learns may rightly need only its recent inputs)
            text += (
                " The loss is improving, so this may be fine: a task that needs only the recent inputs (a forecast "
                "from the last few values) makes a healthy model forget the early ones. It matters if the target "
                "depends on the early inputs."
            )
        remedies = _vanishing_time_remedies(e.get("kind") or "")
        if e.get("forget_bias") is not None:
            bias = e["forget_bias"]
            text += (
                f" Its forget gate is nearly shut: its bias averages {fmt(bias)}, so the gate keeps about "
                f"sigmoid({fmt(bias)}) = {fmt(e['forget_gate_keeps'])} of the cell state per step, and the cell "
                "state, the path along which the gradient crosses a step multiplied by that gate alone, forgets at "
                "once. A chrono initialisation with its sign lost (`-log(u)` where `log(u)` was meant) does this."
            )
            remedies = [
                f"Set the forget-gate bias positive (it is {fmt(bias)} now): 1 to 2, or chrono initialisation, "
                "b_f = log(U(1, T - 1)) for sequences of length T (the input gate's bias its negative); the slice is "
                "`bias_ih_l0[H:2 * H]` (gates in the order i, f, g, o).",
                *(r for r in remedies if "forget-gate bias" not in r),
            ]
        if e.get("update_bias") is not None:
            bias = e["update_bias"]
            text += (
                f" Its update gate is nearly shut: its bias averages {fmt(bias)}, so in h' = (1 - z) n + z h the gate "
                f"keeps about z = sigmoid({fmt(bias)}) = {fmt(e['update_gate_keeps'])} of the state per step and "
                "replaces the rest: the state, and the gradient crossing a step through it, forgets at once."
            )
            remedies = [
                f"Set the update-gate bias positive (it is {fmt(bias)} now): 1 to 2, or chrono initialisation, "
                "b_z = log(U(1, T - 1)) for sequences of length T; the slice is `bias_ih_l0[H:2 * H]` (gates in the "
                "order r, z, n), or leave PyTorch's initialisation (a gate half open).",
                *remedies,
            ]
        if e.get("late_steps_padding") is not None:
            text += (
                f" The late time steps are padding: the input there is all zeros for {pct(e['late_steps_padding'])} of "
                "the sequences. A readout at the last time step (`out[:, -1]`) sees the real steps only through the "
                "padding after them, and the gradient must cross it to reach them."
            )
            remedies.insert(
                0,
                "Read each sequence's output at its own last real step, `out[torch.arange(N), lengths - 1]`, or pack "
                "the sequences (`nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, "
                "enforce_sorted=False)`) and use the final hidden state `h_n`.",
            )
    else:
        text += (
            " The factor is above 1, so it compounds: the earliest steps get gradients large enough to wreck the "
            "weights."
        )
        remedies = [
            "Clip the gradient norm before each step: `torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)`.",
            "Initialise W_hh orthogonally (`nn.init.orthogonal_`) or scale it so its spectral radius is below 1.",
            "Use `nn.LSTM` / `nn.GRU`, lower the learning rate, or shorten the sequences (truncated BPTT).",
        ]
        if e.get("clipped_at") is not None:  # (clipping bounds the step, not the factor across time)
            text += (
                f" The gradient norm is clipped already (to {fmt(e['clipped_at'])}): that bounds each update's size, "
                "but not the growth across time, and the earliest steps still dominate the clipped direction."
            )
            remedies = [
                "Scale W_hh so its spectral radius is below 1: `nn.init.orthogonal_(W_hh)` with a gain of 1 at most "
                "(a gain above 1 starts every singular value above 1), or an identity scaled below 1 (IRNN).",
                remedies[2],
            ]
    return text, remedies


GATED = ("LSTM", "GRU")


def _vanishing_time_remedies(kind: str) -> list[str]:
    """What to try when the gradient vanishes over time; a layer that is already gated is not told to be gated."""
    if kind.startswith(GATED):
        remedies = [
            "If the target depends on the early inputs, let attention (or a skip from the early steps) carry them to "
            "the output: a gated layer already runs this memory as long as its gates allow.",
            "Shorten the dependency: truncated backprop through time, or feeding the early input later.",
        ]
        if kind.startswith("LSTM"):
            remedies.insert(
                1, "Initialise the forget-gate bias to 1 (or more) so that the cell keeps its state by default."
            )
        return remedies
    return [
        "Use a gated layer, `nn.LSTM` or `nn.GRU`: its additive cell state carries the gradient with a factor "
        "near 1 (the forget gate).",
        "Initialise W_hh orthogonally (`nn.init.orthogonal_`) so its singular values are 1.",
        "Shorten the dependency: truncated backprop through time, attention, or feeding the early input later.",
    ]


# --- dead and saturated units ------------------------------------------------------------------------------------
# Where each function of the ReLU family passes no gradient: (the unit's output there, the flat region, its derivative)
DEAD_REGIONS = {
    "relu": ("output zero", "negative", "relu'(z) = 0 wherever z < 0"),
    "relu6": (
        "sit at 0 or at 6",
        "below 0 or above 6",
        "relu6'(z) = 1 inside (0, 6) and 0 outside: it is flat on both sides",
    ),
    "relu_n": (
        "sit at 0 or at their ceiling",
        "below 0 or above the ceiling n",
        "A ReLU-n, clamp(z, 0, n), has local derivative 1 inside (0, n) and 0 outside: it is flat on both sides",
    ),
    "hardswish": ("output zero", "below -3", "hardswish'(z) = 0 wherever z < -3"),
    "leaky_relu": ("output zero", "negative", "With negative_slope=0, leaky_relu'(z) = 0 wherever z < 0, as relu's"),
}


def explain_dead_relu(f: Finding):
    text, remedies = _explain_dead_units(f)
    culprit = f.evidence.get("after_wrong_gradient")
    if culprit:
        text += (
            f" They died after the backward of your `{culprit['custom_function']}` returned a gradient "
            f"{fmt(culprit['scaled_by'])} times the true one (the `wrong_gradient` finding): updates that much too "
            "large push a ReLU's inputs below 0 for every example in a few steps."
        )
        remedies.insert(0, f"Fix `{culprit['custom_function']}`'s backward first (the `wrong_gradient` finding).")
    raised = f.evidence.get("after_rate_raised")
    if raised:
        text += (
            f" They died after the learning rate had been raised from {fmt(raised['lr_given'])} to "
            f"{fmt(raised['lr_at_onset'])} and the loss diverged (the `diverging_loss` finding): updates that large "
            "push a ReLU's inputs below 0 for every example in a few steps."
        )
        remedies.insert(0, "Cap the learning rate's rise first (the `diverging_loss` finding).")
    return text, remedies


def _explain_dead_units(f: Finding):
    e = f.evidence
    function = e.get("function") or "relu"
    output, region, derivative = DEAD_REGIONS.get(function, DEAD_REGIONS["relu"])
    feeder = f" back to `{e['feeds_from']}`" if e.get("feeds_from") else ""
    text = (
        f"{pct(e['dead_fraction'])} of the units at `{f.where}` ({e['dead_units']} of {e['units']}) {output} for "
        f"every one of the {e['window_examples']} examples of the last sampled steps. {derivative}, "
        f"so a unit whose input is {region} for every example passes no gradient{feeder}: its incoming weights and "
        "bias get none from the loss, and only a change in the layers before it can bring it back. This is not "
        f"sparsity: a healthy {function} layer passes no gradient for many of the examples of a batch "
        f"(this one: {pct(e['zero_fraction'])} of its outputs) but has almost no unit that passes none for any "
        "example."
    )
    if e.get("loss_last_third_to_first_step") is not None:
        text += (
            f" The loss still fell to {fmt(e['loss_last_third_to_first_step'])} of its first step's (last third): "
            "the live units carry the task, and the dead ones are capacity lost rather than a training that stopped."
        )
    if e.get("loss_rose_with_normal_updates"):
        text += (
            " The loss rose while the updates stayed of a normal size (see the `diverging_loss` finding): its targets "
            "move with the model, as a value function's do, so it cannot tell whether the live units carry the task. "
            "Worth a look, not a verdict."
        )
    if e.get("also_dead"):
        sites = list(e["also_dead"].items())
        shown = ", ".join(f"`{site}` ({pct(share)})" for site, share in sites[:6]) + (", ..." if len(sites) > 6 else "")
        text += f" Units are dead at {len(sites)} more sites too: {shown}."
    if e.get("zero_gradient_modules"):
        modules = ", ".join(f"`{m}`" for m in e["zero_gradient_modules"])
        text += (
            f" With every unit dead, no gradient at all passes: {modules} get exactly zero gradient because of it, "
            "and learn again once this layer does."
        )
    remedies = [
        "Lower the learning rate: one large update that pushes a unit's bias far negative is the usual cause.",
        "Use LeakyReLU, ELU or GELU, whose derivative is not zero for negative inputs.",
        "Initialise with `nn.init.kaiming_normal_` and a zero or small positive bias; "
        f"put BatchNorm before the {function} so its input stays centred.",
    ]
    if e.get("feeds_from_weights_zero") and e.get("feeds_from_kind"):
        text += (
            f" `{e['feeds_from']}` is a {e['feeds_from_kind']} whose scale (gamma) is exactly zero, so its output is "
            "its bias alone, the same for every input, and at 0 or below the units never fire. A gamma of 0 in a "
            "block's last normalisation is the zero-init-residual trick: the block starts as the identity because it "
            "adds its input back (`relu(out + x)`). Without that `+ x`, the block outputs relu(beta) = 0 for "
            "everything, and nothing behind it gets a gradient."
        )
        remedies = [
            f"If `{e['feeds_from']}` ends a residual block, add the block's input back before its last activation: "
            f"`return F.relu(out + x)`; if not, initialise its scale at 1 (`nn.init.ones_(...weight)`, PyTorch's "
            "default).",
        ] + remedies[1:]
    elif e.get("feeds_from_weights_zero"):
        text += (
            f" `{e['feeds_from']}`'s weights are all exactly zero: every unit gets the same input, its bias, and with "
            "it at 0 or below none ever fires, so no gradient reaches those weights to change them. The "
            "initialisation did this, not the training."
        )
        remedies = [
            f"Initialise `{e['feeds_from']}`'s weights randomly (PyTorch's default, or `nn.init.kaiming_normal_`): "
            "all-zero weights give every unit the same input and the same gradient, and with a ReLU, none at all.",
        ] + remedies[1:]
    elif e.get("died_after_first_step") is not None:
        text += (
            f" {pct(e['died_after_first_step'])} of the units fired for some example at the first sampled step, with "
            "the weights the run started from, and were silent over the sampled steps that followed: the first "
            "updates killed those, not the initialisation."
        )
        if e.get("silent_at_first_step"):
            text += f" ({pct(e['silent_at_first_step'])} were silent already at the first step.)"
    elif e.get("dead_from_start"):
        text += (
            " They were dead from the first sampled steps, before the training could push them there: the "
            "initialisation or the scale of the inputs did this, not the learning rate."
        )
        initialise, other_activation = remedies[2], remedies[1]
        standardise = "Standardise the inputs (zero mean, unit variance), so that the pre-activations start centred."
        remedies = [initialise, other_activation, standardise]
    if e.get("loss_summed_over"):
        n = e["loss_summed_over"]
        text += (
            f' The loss is `{e["summed_loss"]}` with `reduction="sum"` over {n} terms: each gradient step is {n} '
            f"times the mean's, as if the learning rate were {n} times larger, and steps that large push a unit's "
            "inputs below zero for every example at once."
        )
        remedies.insert(
            0,
            f'Average the loss (`reduction="mean"`, the default), or divide the learning rate by {n}: a rate '
            "tuned for a mean is far too high for a sum.",
        )
    if e.get("behind_vanishing_gradient"):
        text += (
            f" The gradient vanishes across depth here too (see the `vanishing_gradient` finding at "
            f"`{e['behind_vanishing_gradient']}`): the layers that shrink the gradient on its way back shrink the "
            "signal on its way forward, so this layer's inputs are tiny next to its biases, and each unit's bias alone "
            "decides its sign for every example. The same cause, not the learning rate."
        )
        remedies = [
            f"Fix the vanishing gradient first (the finding at `{e['behind_vanishing_gradient']}`: its initialisation "
            "or its layer); with the signal kept at its scale, the units see their inputs again.",
        ] + [r for r in remedies if not r.startswith("Lower the learning rate")]
    if e.get("read_by_loss"):
        text += (
            " The loss reads this layer's outputs directly too, beside the layer after it (a penalty on the "
            "activations, such as an L1 sparsity term `lam * h.abs().sum()`): that term's gradient pushes every unit's "
            "output towards 0 at every step, and a penalty summed over the batch and the units, or weighted too "
            "heavily, outweighs what the task asks of them."
        )
        remedies = [
            "Average the activation penalty (`h.abs().mean()`, not `.sum()`: a sum over the batch and the layer's "
            f"{e['units']} units is batch size x {e['units']} times the mean) or lower its weight; compare its "
            "gradient at this layer with the main loss's.",
        ] + remedies
    if function == "leaky_relu":  # (meant to keep a slope, given none)
        remedies = [
            "Give the LeakyReLU a negative slope: `nn.LeakyReLU(0.01)` (its default) or 0.1. With "
            "`negative_slope=0` it is a plain ReLU, and its units die as a ReLU's do."
        ] + [r for r in remedies if not r.startswith("Use LeakyReLU")]
    if function == "relu6":  # (stuck above 6 as well as below 0: its inputs are too large, more often than not)
        remedies.insert(
            0,
            "Standardise the inputs (zero mean, unit variance: raw pixel values of 0-255 put most units above 6) and "
            "put BatchNorm before the ReLU6, so that its input stays inside (0, 6).",
        )
    lower = [r for r in remedies if r.startswith("Lower the learning rate")]
    if lower and e.get("loss_last_third_to_first_step") is not None:
        # (a lower rate keeps more units alive, and slows the learning that works: sweep 32's healthy runs at Adam's
        # 1e-3 lost more by it than the dead units cost them)
        remedies = [r for r in remedies if r not in lower] + [
            "Lower the learning rate only if the dead share keeps growing: here the loss still falls, and a lower "
            "rate slows that too.",
        ]
    return text, remedies


def _explain_saturated_attention(f: Finding):
    """An attention's softmax nearly one-hot from the first sampled steps."""
    e = f.evidence
    scale = e["scores_scaled_by"]
    text = (
        f"The attention weights out of `{f.where}` are nearly one-hot from the first sampled steps: each row's largest "
        f"weight is {fmt(e['max_probability'])} on average, over {e['entries']} entries, where a freshly initialised "
        "attention spreads its weights nearly evenly. The softmax's derivative is diag(p) - p p^T, whose size "
        "1 - sum(p^2) is 1 - 1/m for a row spread over m entries and 0 for a one-hot row; here it keeps "
        f"{pct(e['derivative_capacity'])} of the even rows' value. So backprop passes almost no gradient to the "
        "scores, and the queries and keys under them barely learn where to look."
    )
    if scale > 1:
        text += (
            f" The scores are multiplied by {fmt(scale)} before the softmax: scaled dot-product attention divides "
            "q . k by sqrt(d_k), so that scores of d_k summed products stay of unit size."
        )
    remedies = [
        "Divide the scores by sqrt(d_k) (the head's width): `scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)`, or "
        "use `F.scaled_dot_product_attention(q, k, v)`, which does.",
        "If the scores are large for another reason (inputs not normalised before the query and key projections), "
        "put a LayerNorm before them.",
    ]
    width = e.get("head_width")
    if not width and 0 < scale < 0.6:  # (scores divided already, by sqrt(d) with d = 1 / scale^2: PyTorch's own)
        width = round(scale**-2)
    if width and scale <= 1.01 * width**-0.5:  # (a fused kernel, or PyTorch's unfused path, divides by sqrt(d))
        text += (
            f" The attention already divides q . k by sqrt({width}), the heads' width: the scores are large because "
            "the queries and keys are, that is because the attention's input is."
        )
        remedies = [
            "Look at the size of what enters the attention: an embedding multiplied by sqrt(d_model) (once is the "
            "Transformer paper's, with embeddings initialised at std d_model^-0.5; twice, or with std 1, makes the "
            "tokens' vectors far larger than the positions'), or inputs not standardised. Put a LayerNorm before "
            "the attention (`norm_first=True`), or remove the extra scaling.",
            remedies[1],
        ]
    return text, remedies


def explain_saturated_activation(f: Finding):
    e = f.evidence
    if "targets_outside" in e:
        return _explain_targets_out_of_reach(f)
    if "derivative_capacity" in e:
        return _explain_saturated_attention(f)
    function = e.get("function", "")
    bound = DERIVATIVE_BOUNDS.get(function, "its derivative is near zero in its flat regions")
    text = (
        f"{pct(e['saturated_fraction'])} of the outputs of `{f.where}` ({function}) sit in its flat tails, where the "
        f"local derivative is below {pct(e['derivative_threshold'])} of its maximum ({bound}); "
        f"measured mean derivative {fmt(e['mean_derivative'])}. Backprop multiplies the gradient by that derivative, "
        "so most of it stops here and the layers below learn slowly. The inputs to the activation are too large."
    )
    if e.get("loss_last_third_to_first_step") is not None:
        text += (
            f" The loss still fell to {fmt(e['loss_last_third_to_first_step'])} of its first step's (last third): "
            "enough gradient gets through to train, but the layers below it learn slower than they could."
        )
    if e.get("rounded_to_0_or_1"):
        text += (
            f" It is the model's output, rounded to the ends of its range: in float32 a {function} of an input this "
            "large is exactly 0 or 1, and its derivative exactly 0. A log loss would cancel a small derivative (its "
            "1/sigma against sigma'), but not a zero one (`BCELoss` clamps its log at -100 and passes nothing back): "
            "the examples it gets wrong teach the model nothing."
        )
        remedies = [
            "Give the loss the logits: drop the output sigmoid and use `BCEWithLogitsLoss` (or `cross_entropy`), "
            "which computes the log of the sigmoid without rounding.",
            "Standardise the inputs, so that the logits start small.",
        ]
        return text, remedies
    if e.get("output_activation"):
        ops = ", ".join(f"`{op}`" for op in e.get("loss_ops") or [])
        bounds = "(0, 1)" if function in ("sigmoid", "hardsigmoid") else "(-1, 1)"
        text += (
            f" It is the model's output, and the loss ({ops}) takes no log of it and barely improves: a squared error "
            f"does not cancel {function}'s derivative, so outputs pinned in its tails far from their targets stay "
            f"there. Targets outside its range {bounds} pin them for good."
        )
        remedies = [
            f"Check that the targets lie inside {function}'s range {bounds}; for regression to other values, drop the "
            f"output {function} (or scale the targets into its range).",
        ]
        if function == "sigmoid":
            remedies.append(
                "For probabilities, give the loss the logits: `BCEWithLogitsLoss` instead of a sigmoid and "
                "`mse_loss`; and standardise the inputs."
            )
        return text, remedies
    if e.get("saturated_at_start") is not None:  # (grown in training: not the initialisation's doing)
        text += (
            f" Its outputs were not there at the start ({pct(e['saturated_at_start'])} saturated on the first sampled "
            "step): its inputs grew large in training, so the initialisation is not the cause."
        )
        normalise = (
            "Normalise the regression targets (scale the rewards or returns, normalise value targets, PopArt), or "
            "scale the head's output to their size (`v = c * head(h)`), so that the features need not grow to reach "
            "them."
        )
        layer_norm = "Put LayerNorm before the activation so its input stays near zero whatever the weights do."
        slower = "Lower the learning rate, or add weight decay: the weights around it grew too large, too fast."
        if e.get("after_replaced_gradient"):
            replaced = e["after_replaced_gradient"]
            text += (
                f" The gradient the optimiser applied was changed by hand, {fmt(replaced['norm_ratio'])} times "
                "backward's and nearly orthogonal to it (the loss's finding): steps that are mostly noise walk the "
                "weights outwards, and the inputs here with them."
            )
            return text, ["Fix what is added to the gradient first (the loss's finding).", slower, layer_norm]
        if e.get("regression_loss_ops"):
            ops = ", ".join(f"`{op}`" for op in e["regression_loss_ops"])
            text += (
                f" The loss regresses ({ops}): a head trained to reach large targets (returns in reinforcement "
                "learning, unnormalised labels) from the features this layer makes grows the weights around it until "
                "its outputs sit at +-1."
            )
            return text, [normalise, layer_norm, slower]
        return text, [slower, layer_norm]
    remedies = [
        "Initialise with `nn.init.xavier_uniform_` (scaled for tanh/sigmoid) and standardise the inputs.",
        "Put BatchNorm / LayerNorm before the activation so its input stays near zero.",
        "Use ReLU or GELU in hidden layers; if the output must be a probability, use a loss that takes logits "
        "(`BCEWithLogitsLoss`, `cross_entropy`) instead of a sigmoid followed by a loss.",
    ]
    return text, remedies


# --- non-finite values --------------------------------------------------------------------------------------------
def explain_nonfinite(f: Finding):
    e = f.evidence
    op = e.get("op")
    module = e.get("module")
    if module == "the loss":
        at = f"`{f.where}` (in the loss)"
    elif e.get("inside"):
        at = f"`{f.where}` (in `{module}`)"
    else:
        at = f"`{f.where}`" + (f" (after `{module}`)" if module and module not in f.where else "")
    phase = e.get("phase")
    if phase == "forward":
        masked = op in ("softmax", "log_softmax") and e.get("value") == "nan"  # (an overflow gives inf, not NaN)
        if e.get("exact"):
            inputs = "from a row of inputs that were all -inf" if masked else "from finite inputs"
            produced = f"produced {e['value']} at {at}, {inputs}"
        else:  # (the values around it were not all saved: the place is narrowed down, not pinned)
            produced = (
                f"produced {e['value']} at {at} or just before it (or a non-finite value entered there from outside "
                "the graph: a constant, or a tensor computed without gradient)"
            )
        text = (
            f"At step {f.first_step} the forward pass {produced}. From there it "
            "spreads to what is computed from it: the loss is non-finite, and the gradients that flow back through "
            "a non-finite value, then the weights they update, can turn non-finite too."
        )
        if op in ("log", "log2", "log10"):
            text += " log(0) = -inf and log of a negative number is NaN."
            if e.get("rate_read_as_rate"):
                text += (
                    " This log is `poisson_nll_loss`'s own, called with `log_input=False`: it computes "
                    "input - y * log(input + eps), reading its input as the rate itself, and the model's output "
                    "it was given is negative for some examples (a log-rate, which may be any number, or a layer "
                    "with no positive activation after it)."
                )
        elif op in ("div", "reciprocal"):
            text += " Dividing by zero gives inf (and 0/0 NaN)."
        elif op == "logdet":
            text += (
                " torch.logdet(A) is NaN when A's determinant is negative: A is not positive definite. A kernel or "
                "covariance matrix is positive semi-definite in exact arithmetic, but its smallest eigenvalues sit "
                "near 0 (points close together, features that collapse), and in float32 rounding pushes some below "
                "0; with no noise or jitter added to its diagonal, an odd number of them makes the determinant "
                "negative. Its inverse is then huge, and so is the gradient through it."
            )
        elif op in ("sqrt", "rsqrt", "pow"):
            text += " sqrt or a fractional power of a negative number is NaN."
            if e.get("half_precision_root"):
                text += (
                    f" This root was taken in {e['half_precision_root']}, whose few bits of mantissa cancel a variance "
                    "written E[x^2] - E[x]^2 to 0 or below once the mean is a few times the spread: a hand-written "
                    "normalisation under autocast, say. An epsilon added after the cancellation does not help."
                )
        elif op == "exp" and not f.evidence.get("half_precision_overflow"):
            text += (
                " exp overflows float32 above about 88.7: its input grew without bound (a flow's log-scale, a "
                "log-variance head, logits exponentiated by hand)."
            )
        elif op in ("cosh", "sinh") and not f.evidence.get("half_precision_overflow"):
            text += (
                f" {op}(x) = (e^x {'+' if op == 'cosh' else '-'} e^-x) / 2 overflows float32 once |x| passes about "
                "89: a log-cosh loss written by hand, `log(cosh(error))`, on errors that size (targets in the "
                "hundreds, not scaled) is inf, though the log of it would be only |error| - 0.69."
            )
        elif op == "logit":
            text += (
                " logit(p) = log(p / (1 - p)) is inf at p = 1 and -inf at p = 0: a probability that rounded to exactly "
                "1 in float32 (a sigmoid of more than about 17, or an average of such probabilities) leaves its "
                "logit infinite, and the loss after it NaN."
            )
        elif masked:
            text += (
                " A row whose entries are all -inf (every position masked, as for a padded sequence with no real "
                "token) has no largest finite value: its softmax is 0/0 = NaN."
            )
    elif phase == "input" and f.where.startswith("target of "):
        text = (
            f"At step {f.first_step} `{op}` was given {e['value']} in its targets: they were non-finite before the "
            "model ran (the data set, or a transformation of it such as the log of a 0). No operation of the model "
            "made it; the loss is non-finite, and so are its gradient and the weights it updates."
        )
    elif phase == "input" and e.get("read_by"):
        text = (
            f"At step {f.first_step} `{e['read_by']}` was given {e['value']} made by `{f.where}`, whose output has no "
            "gradient (it has no trained parameters, and its input none): what it computes lies outside the autograd "
            "graph, so no operation in the graph made the value. Either `{where}` made it itself, dividing by 0 (a "
            "standard deviation of 0 over a feature that is constant in the batch, `(x - x.mean(0)) / x.std(0)`) or "
            "taking the log of 0, or its input held it already. From there it spreads to the loss, the gradients and "
            "the weights they update.".replace("{where}", f.where)
        )
    elif phase == "input":
        reader = f"`{module}`" if module else f"`{op}`"
        text = (
            f"At step {f.first_step} the forward pass was given {e['value']}: the values {reader} read were already "
            "non-finite, in a tensor from outside the graph (the data, or something computed without gradient, such "
            "as a normalisation by a standard deviation of 0). No operation of the model made it; from there it "
            "spreads to the loss, the gradients and the weights they update."
        )
    elif phase == "backward":
        infinite = INFINITE_DERIVATIVES.get(
            op, "d/dx log(x) = 1/x and d/dx sqrt(x) = 1/(2 sqrt(x)) are infinite at 0, for instance"
        )
        text = (
            f"At step {f.first_step} the loss was finite but the backward pass produced {e['value']} at {at}. "
            f"A local derivative was infinite (or 0/0) where the forward value was finite: {infinite}; and the "
            "chain rule multiplies it by the incoming gradient, so inf, or 0 x inf = NaN, flows back from there."
        )
        if e.get("through_where"):
            text += (
                " It reached the gradient through the branch of `torch.where` that was not taken: "
                "torch.where(cond, f(x), y) computes f(x) for every element, and its backward sends a gradient of 0 "
                "through f for the masked elements, which f's infinite derivative turns into NaN."
            )
    elif e.get("found_at_step") is not None:
        text = (
            f"The loss was first non-finite at step {f.first_step}, and at sampled step {e['found_at_step']} "
            f"parameters were non-finite ({', '.join(e.get('parameters', [])[:4])}): an optimiser step applied "
            "the non-finite gradient that flowed back from that loss. The loss was read after its step (as on a "
            "GPU, where the doctor does not wait for the device), when the graph that would name the operation "
            "that made it was already gone."
        )
    elif e.get("eps_rounds_to_zero"):  # (the gradient was finite: the step's own division made the NaN)
        text = (
            f"At step {f.first_step} parameters became non-finite ({', '.join(e.get('parameters', [])[:4])}): the "
            "optimiser's step made them so."
        )
    elif e.get("finite_gradients"):
        made = e["finite_gradients"]
        text = (
            f"At step {f.first_step} parameters became non-finite ({', '.join(e.get('parameters', [])[:4])}), though "
            f"the gradients the optimiser was given were finite (norm {fmt(made['grad_norm'])}): the step's own "
            f"arithmetic, in `{made['optimizer']}`, made the NaN. Backprop delivered finite numbers; the update rule "
            "turned them into 0 / 0, inf - inf or the root of a negative number (a running second moment that is "
            "exactly 0 where a gradient entry is 0, divided into without an eps, or a product of two tiny factors "
            "that underflows to 0 in float32)."
        )
    else:
        text = (
            f"At step {f.first_step} parameters became non-finite ({', '.join(e.get('parameters', [])[:4])}): "
            "the optimiser applied a non-finite gradient from the backward pass of the step before."
        )
    if not e.get("exact"):
        text += f" Located to within: {e.get('detail') or ', '.join(e.get('candidates') or [])}."
    remedies = []
    if e.get("through_where"):
        remedies.append(
            "Make the untaken branch safe too (the double-where trick): "
            "`torch.where(cond, torch.log(torch.where(cond, x, 1.0)), 0.0)`."
        )
    if e.get("rate_read_as_rate"):
        remedies.append(
            "If the model outputs a log-rate, let the loss exponentiate it: `F.poisson_nll_loss(out, y)` "
            "(`log_input=True`, the default). If it should output the rate, make it positive: "
            "`F.poisson_nll_loss(F.softplus(out), y, log_input=False)`."
        )
    if op in ("log", "log2", "log10") or "log" in (e.get("candidates") or []):
        remedies.append(
            "Keep log away from 0: `torch.log(x.clamp_min(1e-12))`, or better, compute from logits with "
            "`F.log_softmax`, `F.cross_entropy`, `F.binary_cross_entropy_with_logits`."
        )
    if op in ("sqrt", "pow", "rsqrt") and e.get("half_precision_root"):
        remedies.append(
            "Compute the variance as the mean of squared deviations, `((x - mu) ** 2).mean(...)`, not "
            "`(x * x).mean(...) - mu * mu`; or the normalisation in float32 (`x.float()`); or PyTorch's own "
            "`nn.GroupNorm`, `nn.InstanceNorm1d`, `nn.LayerNorm`, whose kernels do not cancel so."
        )
    if op == "pow":  # (a fractional power of a base that can be negative: an epsilon added does not make it positive)
        remedies.append(
            "Keep the base of a fractional power positive: `x.clamp(min=1e-6).pow(p)` (generalised-mean pooling's own "
            "guard), or a ReLU before it; an epsilon added to a base that can be negative does not help."
        )
    if op in ("sqrt", "rsqrt"):
        remedies.append("Add a small epsilon inside the root: `torch.sqrt(x + 1e-12)`.")

    if op == "logdet":
        remedies.append(
            "Add the noise variance, or a jitter, to the diagonal: `K + (noise + 1e-6) * torch.eye(n)`; and factor it "
            "once, `L = torch.linalg.cholesky(K)`: log det K = `2 * L.diagonal().log().sum()`, K^-1 y = "
            "`torch.cholesky_solve(y[:, None], L)` (no explicit inverse). Cholesky fails loudly where K is not "
            "positive definite."
        )
    if op in ("div", "reciprocal"):
        remedies.append("Guard the denominator: `x / (y + 1e-12)` or `x / y.clamp_min(1e-12)`.")
    if op in ("acos", "asin", "atanh"):
        remedies.append(
            f"Keep {op}'s argument strictly inside (-1, 1): `torch.{op}(c.clamp(-1 + 1e-6, 1 - 1e-6))`. A clamp to "
            "[-1, 1] is not enough: at exactly 1 (a cosine between a vector and itself) the derivative is infinite."
        )
    if phase == "input" and f.where.startswith("target of "):
        remedies.append(
            "Check the targets before the loss: `torch.isfinite(y).all()`; a log of prices or counts that can be 0 "
            "wants `torch.log1p(y)` (or those rows filtered out), and a missing value in the data set a fill or a drop."
        )
    elif phase == "input" and e.get("read_by"):
        remedies.append(
            f"In `{f.where}`'s forward, keep every divisor off 0 (`(x - x.mean(0)) / (x.std(0) + 1e-5)`, or "
            "`nn.BatchNorm1d(num_features, affine=False)`, which adds its eps) and every log's argument above it; "
            f"and check its input: `torch.isfinite(x).all()` before `{f.where}`."
        )
    elif phase == "input":
        remedies.append(
            "Check the batch before the model: `torch.isfinite(x).all()`; look for missing values in the data set and "
            "for preprocessing that divides by 0 or takes the log of 0 (`(x - mean) / std` with a constant feature)."
        )
    if phase == "forward" and masked:
        remedies.append(
            "Leave no row fully masked: drop empty sequences, or leave one position unmasked and zero its output "
            "afterwards."
        )
    first, highest = f.evidence.get("loss_before") or (None, None)
    if f.evidence.get("half_precision_overflow"):
        text += (
            " Its result, in half precision, holds infinities: float16's largest number is 65504 (`exp` overflows "
            "it past 11.1; bfloat16 keeps float32's range but only 8 bits of precision)."
        )
        remedies.insert(
            0,
            f"Compute `{op}` and what follows it in float32 (`z.float()`), and for a softmax or log-sum-exp use "
            "`torch.log_softmax` / `F.cross_entropy`, which subtract the maximum first; under `torch.autocast` "
            "these already run in float32.",
        )
    if (f.evidence.get("log_of_probabilities") or {}).get("of") in ("det", "sum of exps"):
        _log_formed_unstably(f.evidence["log_of_probabilities"], remedies)
    elif f.evidence.get("log_of_probabilities"):
        seen = f.evidence["log_of_probabilities"]
        where = "in the loss" if seen["at"] == "the loss" else f"after `{seen['at']}`"
        stable = "F.log_softmax(z, dim)" if seen["of"] == "softmax" else "F.logsigmoid(z)"
        text += (
            f" The sampled steps take `{seen['log']}` of a {seen['of']}'s output ({where}): in float32 a probability "
            f"rounds to exactly 0 once its logit trails by about 100 (sharp or scaled logits get there), and then "
            f"{seen['log']}(p) = -inf, its derivative 1/p = inf, and inf times a zero gradient is NaN."
        )
        if seen["of"] == "sigmoid":  # (and 1 - p, the other class's probability, far sooner)
            text += (
                " A sigmoid's output rounds to exactly 1 once its logit passes about 17, so 1 - p, the other class's "
                "probability, is 0 far sooner: log(1 - p) is -inf there."
            )
        # After the double-where, when the NaN came through torch.where's untaken branch of a softmax's log: there the
        # probability is 0 by a mask, and log_softmax of a -inf logit is -inf all the same (sweep 48). A sigmoid's is 0
        # or 1 by rounding, which the logits' form avoids: `where(y == 1, -log(p), -log(1 - p))`
        masked = f.evidence.get("through_where") and seen["of"] == "softmax"
        double_where = next((i for i, r in enumerate(remedies) if "double-where" in r), None) if masked else None
        remedies.insert(
            0 if double_where is None else double_where + 1,
            f"Replace `torch.{seen['log']}({'F.softmax(z, dim)' if seen['of'] == 'softmax' else 'torch.sigmoid(z)'})` "
            f"with `{stable}` (or `F.cross_entropy` on the logits): it "
            "never forms the probability, so nothing rounds to 0."
            + (
                " For a binary cross-entropy written by hand, `F.binary_cross_entropy_with_logits(z, y)`; log(1 - p) "
                "is `F.logsigmoid(-z)`."
                if seen["of"] == "sigmoid"
                else ""
            ),
        )
    if f.evidence.get("clamped_to_the_edge") and not f.evidence.get("exact"):
        seen = f.evidence["clamped_to_the_edge"]
        op, (low, high) = seen["op"], seen["bounds"]
        where = "in the loss" if seen["at"] == "the loss" else f"after `{seen['at']}`"
        text += (
            f" The sampled steps take `{op}` of a value clamped to [{fmt(low)}, {fmt(high)}] ({where}): the clamp "
            "keeps the forward finite, but a value at exactly +-1 (a cosine of a vector with its own direction, or "
            "one rounded there; a bound of 1 - 1e-8 is 1 in float32) is still inside it, and there "
            f"{op}'s derivative 1/sqrt(1 - x^2) is infinite: inf, and inf times 0, come back as NaN."
        )
        remedies.insert(
            0,
            f"Clamp strictly inside (-1, 1): `torch.{op}(c.clamp(-1 + 1e-6, 1 - 1e-6))` (a margin float32 keeps), or "
            "train on `1 - cos` instead of the angle; its derivative is finite everywhere.",
        )
    if f.evidence.get("inputs_unscaled"):
        raw = f.evidence["inputs_unscaled"]
        text += (
            f" The features `{raw['layer']}` was given are not standardised: their columns' root mean squares run from "
            f"{fmt(raw['smallest_column_rms'])} to {fmt(raw['largest_column_rms'])}. A weight's gradient is its input "
            "times the error, so the first gradients are that large, and an update of that size overshoots to inf."
        )
        remedies.insert(
            0,
            "Standardise the inputs per feature, with the training set's statistics: `x = (x - mean) / std` "
            "(`sklearn.preprocessing.StandardScaler`); for polynomial features, scale x before raising it to powers.",
        )
    if f.evidence.get("raw_layer_output"):
        layer = f.evidence["raw_layer_output"]
        text += (
            f" `{op}` read `{layer}`'s output as that layer made it: a linear layer's output is any real number, "
            "negative for about half its entries at the start, and nothing kept it positive."
        )
        remedies.insert(
            0,
            f"If `{layer}`'s output `out` is meant as a log-scale (log sigma, a log-variance), use it as one: "
            "`sigma = out.exp()`, and `out` itself where its log is wanted; if it is meant as a positive quantity, "
            "make it one before the log or root: `F.softplus(out) + 1e-6`. A clamp only hides the NaN.",
        )
    if f.evidence.get("too_few_to_spread"):
        few = f.evidence["too_few_to_spread"]
        axes = ", ".join(str(d) for d in few["dims"])
        text += (
            f" `{op}` was taken over {few['values']} value(s) (dim {axes}) with correction {fmt(few['correction'])} "
            f"(Bessel's, the default): it divides the squared deviations by values - correction = "
            f"{fmt(few['values'] - few['correction'])}, and 0 / 0 is NaN."
        )
        if few["dims"] == [0] and few["values"] == 1:
            text += (
                " Over the batch axis that is a batch of one example: most often the last, partial batch of an epoch "
                "(a data set size that leaves one example over)."
            )
        remedies.insert(
            0,
            "Never give it a batch of one: `DataLoader(..., drop_last=True)`, or skip batches smaller than 2; or take "
            "the biased estimate, `x.std(dim, correction=0)` (`unbiased=False`), which is 0, not NaN, for one value; "
            "`nn.BatchNorm1d` raises a clear error on a batch of one instead.",
        )
    if f.evidence.get("floor_at_zero"):
        floor = f.evidence["floor_at_zero"]
        text += (
            f" `{op}` reads the output of a `{floor}`, which is exactly 0 for every input at or below 0: a positive "
            f"quantity (a variance, a scale, a rate) made by a {floor} is 0 for a share of the examples, and "
            f"`{op}` of 0 is infinite. Clamping afterwards hides the zeros but not their cause: a unit held at 0 by "
            f"the {floor} gets no gradient there and stays at the floor."
        )
        remedies.insert(
            0,
            f"Make the positive quantity with `F.softplus(z) + 1e-6` (or `torch.exp(z)` for a log-variance head) "
            f"instead of a {floor}: positive everywhere, with a gradient everywhere. (Clamping only the `{op}` leaves "
            "any division by the same quantity infinite.)",
        )
    if f.evidence.get("after_loss_without_floor"):
        text += (
            " The loss has no lower bound (see the `diverging_loss` finding at `loss`): minimising it grew the logits "
            "step after step until a value overflowed."
        )
        remedies.insert(0, "Fix the loss first (the `diverging_loss` finding at `loss`): with a floor, nothing grows.")
        first = None  # (the loss grew because of it: no learning-rate reading)
    if f.evidence.get("after_negative_learning_rate") is not None:
        text += (
            f" The learning rate was negative from step {f.evidence['after_negative_learning_rate']} (see the "
            "`diverging_loss` finding at `optimizer`): each step climbed the loss until a value overflowed."
        )
        remedies.insert(0, "Keep the learning rate at 0 or above (the `diverging_loss` finding at `optimizer`).")
        first = None  # (no learning-rate reading: the rate's sign is the cause, not its size)
    if f.evidence.get("eps_rounds_to_zero"):
        eps, dtype = f.evidence["eps_rounds_to_zero"]["eps"], f.evidence["eps_rounds_to_zero"]["dtype"]
        text += (
            f" The optimiser's eps, {fmt(eps)}, is exactly 0 in {dtype}, the weights' precision (float16's smallest "
            "number is 6e-8). Its step divides by sqrt(v) + eps, v the running mean of squared gradients: wherever a "
            "gradient's square underflows to 0, that is 0 / 0 = NaN, on the first step, whatever the learning rate."
        )
        remedies.insert(
            0,
            f"Give the optimiser an eps that {dtype} can hold, `eps=1e-4`; or better, keep the weights in float32 and "
            "compute in half precision under `torch.autocast` (the optimiser then works in float32).",
        )
        first = None  # (no learning-rate reading: the step divides by zero at any rate)
    if f.evidence.get("depth_ratio_before") is not None:
        e = f.evidence
        text += (
            f" Before it, at step {e['depth_measured_at_step']}, the gradient at `{e['input_layer']}` was already "
            f"{fmt(e['depth_ratio_before'])} times that at `{e['output_layer']}` (a factor of "
            f"{fmt(e['gain_per_layer_before'])} per layer): the network amplifies what flows through it from its "
            "first step, before any update could, and the values overflow within a few steps. That is its "
            "architecture or its initialisation, not the learning rate."
        )
        remedies.insert(
            0,
            "Check what each block adds: a residual block returns x + f(x) once (a skip added twice, x + (x + f(x)), "
            "doubles the signal per block); initialise so each layer keeps the scale (He/Xavier, and the last layer "
            "of each residual branch at zero).",
        )
        first = None  # (the loss grew because of it: no learning-rate reading)
    if first is not None and highest > 10 * abs(first):
        text += (
            f" The loss rose from {fmt(first)} to {fmt(highest)} before it: each update made the weights larger "
            "until a value overflowed, the mark of a learning rate too high for this model."
        )
        remedies.insert(0, "Lower the learning rate (try 10x lower), or clip the gradient norm.")
        if f.evidence.get("loss_summed_over"):
            n = f.evidence["loss_summed_over"]
            text += (
                f' The loss is `{f.evidence["summed_loss"]}` with `reduction="sum"` over {n} terms: each gradient '
                f"step is {n} times the mean's, as if the learning rate were {n} times larger."
            )
            remedies[0] = (
                f'Average the loss (`reduction="mean"`, the default), or divide the learning rate by {n}: a rate '
                "tuned for a mean is far too high for a sum."
            )
    if f.evidence.get("clipping_does_nothing"):
        text += " The script clips the gradient's norm, but where it does so the clipping has no effect: see the "
        text += "`clip_grad_norm_` finding."
        remedies.insert(0, "Make the clipping act first (see the `clip_grad_norm_` finding).")
    if phase == "backward" and op == "exp" and e.get("exact"):
        remedies.insert(  # (no learning rate helps: the overflow comes with the inputs)
            0,
            "Use the library's form of what exp was written into, which never overflows, forward or backward: "
            "`torch.sigmoid(z)` for 1 / (1 + exp(-z)), `torch.softmax` / `torch.log_softmax` for exp(z) / sum exp(z), "
            "`F.softplus(z)` for log(1 + exp(z)), `F.binary_cross_entropy_with_logits` for a sigmoid inside a loss.",
        )
    if phase == "forward" and op == "cosh" and e.get("exact") and not e.get("half_precision_overflow"):
        remedies.insert(  # (first: the overflow comes with the data, at any learning rate)
            0,
            "Write log(cosh(d)) in a form that cannot overflow: `d + F.softplus(-2 * d) - math.log(2)` (the same "
            "function, exactly); and scale the targets (standardise them) so that the errors start near 1.",
        )
    if phase == "forward" and op == "logit" and e.get("exact"):
        remedies.insert(
            0,
            "Stay in logits instead of taking the logit of a probability: average or combine the logits (or the "
            "log-probabilities, with `torch.logsumexp`) and give them to `binary_cross_entropy_with_logits`; where "
            "a probability must be turned back, bound it: `torch.logit(p, eps=1e-6)`.",
        )
    if phase == "forward" and op == "exp" and e.get("exact") and not e.get("half_precision_overflow"):
        remedies.insert(  # (first: a bound holds whatever the learning rate)
            0,
            "Bound what goes into exp: `s = scale * torch.tanh(s / scale)` (a soft clamp, as RealNVP's couplings use), "
            "or `s.clamp(max=...)`; for a softmax or log-sum-exp written by hand, use `torch.log_softmax` or "
            "`torch.logsumexp`, which subtract the maximum first.",
        )
    made = None if e.get("eps_rounds_to_zero") else e.get("finite_gradients")  # (the eps's own text says it)
    if made:
        remedies.insert(
            0,
            f"Check `{made['optimizer']}.step()`'s divisions and roots: each needs an eps where its operand can be 0 "
            "(`g / (v.sqrt() + eps)`, not `g / v.sqrt()`); take the root of each factor before multiplying them "
            "(`r.rsqrt() * c.rsqrt()`, not `(r * c).rsqrt()`), so that nothing underflows to 0 first."
            if made.get("custom")
            else f"Check the optimiser's settings: an `eps` of 0, or a learning rate or momentum that is not finite, "
            f"makes `{made['optimizer']}` divide 0 by 0 where a gradient entry is 0.",
        )
        if made.get("custom") and f.first_step == 0:  # (its very first step: a count not yet advanced)
            remedies.insert(
                1,
                f"This was its first step: if `{made['optimizer']}` corrects a bias as Adam does, 1 - beta^t is "
                "exactly 0 while its step count t is still 0, and m / (1 - beta1^t) divides by it. Advance the count "
                "before the correction (`t += 1`, then `m_hat = m / (1 - beta1 ** t)`).",
            )
    if phase != "input":  # (the data's NaN is named where it entered: no growth before it, no line to find)
        if f.evidence.get("after_negative_learning_rate") is None and not made:
            remedies.append(
                "If the values grew first (see exploding_gradient), clip the gradient norm and lower the learning rate."
            )
        if not made:  # (anomaly mode watches the backward pass, not the optimiser's step)
            remedies.append(
                f"To see the exact line, rerun with `--every 1`, or wrap step {f.first_step} in "
                "`torch.autograd.detect_anomaly()`."
            )
    return text, remedies


INFINITE_DERIVATIVES = {
    "exp": (
        "d/dx e^x = e^x is infinite where e^x overflowed (x above 88.7), though what came after made a finite number "
        "of it again (1 / (1 + e^-z) = 0 for z far below 0: a sigmoid written by hand), where the gradient arriving "
        "is 0"
    ),
    "logit": "d/dp logit(p) = 1/(p (1 - p)) is infinite at p = 0 and p = 1",
    "log": "d/dx log(x) = 1/x is infinite at x = 0",
    "log2": "d/dx log2(x) = 1/(x ln 2) is infinite at x = 0",
    "log10": "d/dx log10(x) = 1/(x ln 10) is infinite at x = 0",
    "log1p": "d/dx log(1 + x) = 1/(1 + x) is infinite at x = -1",
    "sqrt": "d/dx sqrt(x) = 1/(2 sqrt(x)) is infinite at x = 0",
    "rsqrt": "d/dx x^(-1/2) = -1/(2 x^(3/2)) is infinite at x = 0",
    "pow": "d/dx x^p = p x^(p - 1) is infinite at x = 0 for a power p below 1",
    "div": "d/dy (x / y) = -x / y^2 is infinite at y = 0",
    "reciprocal": "d/dx (1 / x) = -1 / x^2 is infinite at x = 0",
    "acos": "d/dx acos(x) = -1/sqrt(1 - x^2) is infinite at x = 1 and x = -1",
    "asin": "d/dx asin(x) = 1/sqrt(1 - x^2) is infinite at x = 1 and x = -1",
    "atanh": "d/dx atanh(x) = 1/(1 - x^2) is infinite at x = 1 and x = -1",
    "acosh": "d/dx acosh(x) = 1/sqrt(x^2 - 1) is infinite at x = 1",
    "xlogy": "d/dy x log(y) = x / y is infinite at y = 0",
    "tan": "d/dx tan(x) = 1 / cos(x)^2 is infinite at x = pi/2",
}  # (not norms, distances, std or atan2: PyTorch's backward gives 0 where their derivative is 0/0)
"""The local derivative of each operation that can be infinite (or 0/0) where its value is finite."""


# --- blocked gradient -----------------------------------------------------------------------------------------------
BLOCKING_DERIVATIVE = {
    "clamp": "clamp(x, lo, hi) has local derivative 1 inside [lo, hi] and 0 outside",
    "clip": "clip(x, lo, hi) has local derivative 1 inside [lo, hi] and 0 outside",
    "hardtanh": "hardtanh has local derivative 1 inside [-1, 1] and 0 outside",
    "relu": "relu has local derivative 0 wherever its input is negative",
    "relu6": "relu6 has local derivative 1 inside (0, 6) and 0 outside",
    "threshold": "threshold has local derivative 0 below the threshold",
    "maximum": "maximum(x, c) with a constant c has local derivative 0 in x wherever c is the larger",
    "fmax": "fmax(x, c) with a constant c has local derivative 0 in x wherever c is the larger",
    "minimum": "minimum(x, c) with a constant c has local derivative 0 in x wherever c is the smaller",
    "fmin": "fmin(x, c) with a constant c has local derivative 0 in x wherever c is the smaller",
    "round": "round is a staircase: its local derivative is 0 everywhere",
    "floor": "floor is a staircase: its local derivative is 0 everywhere",
    "ceil": "ceil is a staircase: its local derivative is 0 everywhere",
    "trunc": "trunc is a staircase: its local derivative is 0 everywhere",
    "sign": "sign is flat: its local derivative is 0 everywhere",
    "dropout": "dropout's local derivative is 0 for every element it drops (a share p of them, at random) and "
    "1/(1 - p) for the rest",
}


# bounds of a range, however written: a max or min with a constant is a clamp with one bound
CLAMP_LIKE = ("clamp", "clip", "hardtanh", "maximum", "fmax", "minimum", "fmin")


def _explain_cut_before_loss():
    text = (
        "The backward pass starts from a loss whose graph holds no output of the model: the loss reads the model's "
        "output through a copy cut from the graph (`.detach()`, `.data`, `.item()`, a round trip through NumPy), "
        "whose local derivative is zero for everything. The parameters still receive a gradient, from terms of the "
        "loss that read them directly (a weight penalty), so nothing raises; but that is all they receive, and the "
        "data teach the model nothing."
    )
    remedies = [
        "Compute the loss from the model's output itself; keep a detached copy only for logging "
        "(`loss = F.cross_entropy(out, y)`, then `out.detach()` for the metrics).",
    ]
    return text, remedies


def _explain_self_similarity(f: Finding):
    e = f.evidence
    text = (
        f"`cross_entropy`'s scores are a similarity of the output of `{e['self_similarity_of']}` with itself, z @ z.T "
        f"({e['rows']} x {e['rows']}), and its targets are 0, 1, ..., {e['rows'] - 1}: the diagonal. Each example's "
        '"positive" is its similarity to itself, which for unit vectors is 1, the largest there is, whatever the '
        "weights: the positive term's local derivative through the normalisation is 0, no gradient pulls an example "
        "towards its other view, and the loss only pushes the examples apart. A contrastive loss (InfoNCE, SimCLR, "
        "CLIP) compares two views or two modalities: z1 @ z2.T."
    )
    remedies = [
        "Compare the two views: `logits = z1 @ z2.T / temperature`, targets `torch.arange(N)` (the matching row of "
        "the other view).",
        "With both views in one matrix (SimCLR's z = cat(z1, z2), logits z @ z.T), mask the diagonal "
        "(`logits.fill_diagonal_(float('-inf'))`) and point each row at its other view: targets "
        "`(torch.arange(2 * N) + N) % (2 * N)`.",
    ]
    return text, remedies


def _explain_normal_without_derivative(f: Finding):
    made_by = f.evidence["read_by"]
    text = (
        f"`torch.normal(mean, std)` draws from mean and std that `{made_by}` computed, and PyTorch defines its "
        "derivative with respect to both as 0: the draw is new noise, not a function of them. So the gradient of "
        "everything computed from the draw stops there, and the layers that made the mean and std learn only from "
        "the loss's other terms (a VAE's encoder from its KL term alone, which pulls the posterior to the prior: "
        "collapse). The reparameterisation trick keeps the path: z = mean + std * eps, with eps drawn on its own."
    )
    remedies = [
        "Draw with the path kept: `z = mean + std * torch.randn_like(std)`, or "
        "`torch.distributions.Normal(mean, std).rsample()`.",
    ]
    return text, remedies


def _explain_draw_without_path(f: Finding):
    e = f.evidence
    name = e["drawn_from"]
    if name == "torch.normal":
        return _explain_normal_without_derivative(f)
    text = (
        f"`{name}(...).sample()` draws under `torch.no_grad()`: the draw has no path back to the distribution's "
        f"parameters, which the model computed (a mean and a scale), and `{e['read_by']}` reads it. So the gradient "
        f"of everything computed from the draw stops there: the layers that made the {name}'s parameters learn only "
        "from the loss's other terms (a VAE's encoder from its KL term alone, never from the reconstruction). The "
        "reparameterisation trick keeps the path: z = mean + scale * eps, with eps drawn on its own."
    )
    remedies = [
        f"Draw with `rsample()`: `z = {name}(mean, scale).rsample()` (or by hand, `mean + scale * torch.randn_like("
        "scale)`).",
        "If the draw is meant as a constant (an action handed to an environment, trained by REINFORCE through "
        "`log_prob`), pass it to modules detached on purpose, and the model learns from `log_prob` instead.",
    ]
    return text, remedies


def _explain_outputs_alike(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` gives the same output for every example of a batch (their spread is {fmt(e['spread'])} of their "
        f"size, on the first {e['looks']} sampled steps), while the outputs of `{e['last_differing']}` still differ "
        "from example to example: something between the two discards what tells the examples apart, so the "
        "prediction cannot depend on the example. The loss's gradient then reaches the per-example features only as "
        "one shared push, and the model can learn nothing but the targets' average (the class frequencies)."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Look at what lies between `{e['last_differing']}` and `{f.where}`: a mask the wrong way round "
        "(`masked_fill(mask, -inf)` that hides the real tokens and keeps the padding: `masked_fill(~mask, ...)`), a "
        "mean or sum over the batch axis (dim 0) where the time or feature axis was meant, or a tensor broadcast over "
        "the batch in place of the example's own.",
    ]
    return text, remedies


def _explain_relu_on_model_output(f: Finding):
    e = f.evidence
    module = (e.get("site") or "").rpartition(" ")[2]
    text = (
        f"The model's output is made by a ReLU (`{module}`), its last module: every score below 0 comes out as 0, "
        f"and relu'(z) = 0 there, so {pct(e['blocked_fraction'])} of the gradient the loss sends to the scores stops "
        "at it. An example whose score for its class went negative cannot push it back up, and classes whose score "
        "is 0 for every input cannot be told apart: the loss wants scores of any sign (logits), and a ReLU after "
        "the output layer takes half of that away."
    )
    remedies = [
        f"Remove the ReLU after the last layer (`{module}`): the loss takes raw scores, `F.cross_entropy(logits, y)`.",
        "For an output that must be positive (a count, a scale), use `F.softplus` instead: its slope is never 0.",
    ]
    return text, remedies


def _explain_hinge_on_zero_one_labels(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` is the hinge of a margin loss, max(0, m - y f), and its labels y are 0 or 1: "
        f"{pct(e['zero_labels'])} of them are 0. A hinge expects -1 and +1. For y = 0 the term is "
        "max(0, m - 0 f) = m whatever the score f is, and its derivative with respect to f is -y = 0: those "
        "examples give the loss a constant and the model no gradient. Only the examples labelled 1 push, all in one "
        "direction, so the model learns to score everything as positive"
    )
    if e["blocked_fraction"] >= 0.05:
        text += (
            ", and once those scores pass the margin the hinge blocks them too "
            f"({pct(e['blocked_fraction'])} of the gradient entering it leaves as zero)"
        )
    text += "."
    remedies = [
        "Map the labels to -1/+1 before the loss: `y = 2 * y - 1` (or `torch.where(y > 0, 1.0, -1.0)`).",
        "Or keep the 0/1 labels and use a loss made for them: `F.binary_cross_entropy_with_logits(f, y)`.",
    ]
    return text, remedies


def _explain_padding_idx_in_use(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` was made with `padding_idx={e['padding_idx']}`: the embedding never updates that row (its "
        "gradient is set to 0), as fits a padding token. But id "
        f"{e['padding_idx']} is a real token here: {pct(e['gradient_at_padding'])} of the gradient arriving at the "
        f"embedding's output lands on its positions, the loss asking to move it, and it is thrown away. Meanwhile id "
        f"{e['masked_id']}, on {pct(e['masked_share'])} of the positions, gets exactly no gradient at any of them: the "
        "script masks it out, so that one is the padding. The real token keeps its random initial vector for the "
        "whole run."
    )
    remedies = [
        f"Give the embedding the padding id the data uses: `nn.Embedding(..., padding_idx={e['masked_id']})` (or "
        f"none), so that id {e['padding_idx']} learns like the other tokens.",
    ]
    return text, remedies


def _floor_written(op: str, bound: float) -> str:
    """How the floor reads in code: `clamp(term, min=3)`, `maximum(term, 3)`."""
    if op in ("maximum", "fmax"):
        return f"`torch.{op}(term, torch.tensor({fmt(bound)}))`"
    return f"`{op}(term, min={fmt(bound)})`"


def _explain_floor_on_a_loss_term(f: Finding):
    e = f.evidence
    text = (
        f"{pct(e['blocked_fraction'])} of the gradient entering `{f.where}` on the loss leaves it as exactly zero. It "
        f"holds a term of the loss at or above {fmt(e['lower_bound'])}, {_floor_written(f.where, e['lower_bound'])}: "
        "below that floor its local derivative is 0, so the chain rule gives the term no gradient at all, and what "
        "only that term trains (a prior, under free bits or free nats on a KL) does not learn while the term stays "
        "under it. A floor on a KL is meant to let it fall only so far; here the term sits under the floor on most "
        "steps, so the floor decides instead of the loss."
    )
    remedies = [
        f"Lower the floor below the term's typical value (free nats of 1 rather than 3, say), or apply it per "
        f"dimension and sum (free bits), so that most of the term stays above {fmt(e['lower_bound'])} and keeps its "
        "gradient.",
        "Or drop the floor and weight the term instead (a KL weight annealed from 0 to 1).",
    ]
    return text, remedies


def _explain_difference_of_itself(f: Finding):
    site = f.evidence["site"]
    text = (
        f"A subtraction takes the output of `{site}` from itself, `a - a`: the result is 0 whatever `a` is, and the "
        "gradient it passes back is g - g, exactly 0 on every step. Whatever it was meant to measure (a distance "
        "between two embeddings, a difference between a prediction and its target) measures nothing, and the layers "
        "before it learn nothing through it: a triplet loss given the anchor as its own positive, "
        "`TripletMarginLoss()(a, a, n)`, has d(a, p) = 0 and learns from its negatives alone, its hinge met from the "
        "first step."
    )
    remedies = [
        "Pass the two tensors that were meant: the positive's embedding, `loss_fn(model(anchor), model(positive), "
        "model(negative))`; check the call's argument order.",
        "Check it: the loss term should change when one of its two inputs does.",
    ]
    return text, remedies


def _explain_ratio_of_itself(f: Finding):
    site = f.evidence["site"]
    how = "divides a tensor by itself" if f.where == "div" else "multiplies a tensor by its own reciprocal"
    text = (
        f"A `{f.where}` after `{site}` {how} (`l / l`, `l * (1 / (l + eps))`): the result is 1 whatever `l` is, "
        "and the gradient it passes back, g / l - g l / l^2, is 0 (eps / (l + eps)^2 with an eps). Loss terms "
        "weighted by the inverse of their own value to balance them, without `.detach()` on the weights, each become "
        "the constant 1: the loss stays at the number of terms, its gradient is rounding noise, and the model does "
        "not learn."
    )
    remedies = [
        "Detach what only scales: `weights = [1.0 / l.detach() for l in losses]` (or `l / l.detach()`, which is 1 "
        "with the gradient of l / l_value).",
        "Check it: the loss should change from one step to the next.",
    ]
    return text, remedies


def _explain_one_hot_rows(f: Finding):
    e = f.evidence
    divided = e.get("divided_by")
    by = f" Its scores were divided by {fmt(divided)} first: a temperature that small." if divided else ""
    text = (
        f"{pct(e['one_hot_rows'])} of the rows of `{f.where}` (over {e['entries']} entries each) are exactly one-hot: "
        "one entry 1, every other exactly 0 in floating point, which takes gaps between the scores past ~100. The "
        "softmax's local derivative is diag(p) - p p^T, exactly 0 on such a row, so by the chain rule nothing before "
        f"it gets any gradient from those rows: the layers that compute its scores stop learning.{by} A Gumbel-softmax "
        "whose temperature is annealed towards 0 (`F.gumbel_softmax(logits, tau=1e-4)`) does this, as do logits that "
        "grew without bound."
    )
    remedies = [
        "Keep the temperature above a floor of about 0.5 (anneal `tau = max(0.5, tau0 * exp(-r * step))`); for "
        "discrete codes in the forward, use the straight-through form at a moderate temperature: "
        "`F.gumbel_softmax(logits, tau=1.0, hard=True)`.",
        "Bound the scores (a LayerNorm before them, or weight decay) so that their gaps stay well under 100.",
    ]
    return text, remedies


def _explain_ctc_frames_read(f: Finding):
    found = f.evidence["ctc_frames_read"]
    longest, frames = found["longest_input"], found["frames"]
    text = (
        f"`ctc_loss` was given {frames} frames of log-probabilities per sequence, and `input_lengths` of at most "
        f"{longest}, on every look: it aligns the targets within the first {longest} frames and never reads the rest, "
        "which get no gradient. The lengths were most likely the input's before the model subsampled it, divided by "
        "another factor than the model's strides multiply to: the targets are squeezed into too few frames, many "
        "cannot be aligned at all, and the frames that hold the later labels are never trained."
    )
    remedies = [
        "Compute `input_lengths` from what the model outputs: divide the input lengths by the product of its strides "
        "(or run the length arithmetic of each conv layer), and check `max(input_lengths) == log_probs.shape[0]` for a "
        "batch padded to its longest sequence.",
    ]
    return text, remedies


def explain_blocked_gradient(f: Finding):
    e = f.evidence
    if "ctc_targets_too_long" in e:
        return _explain_ctc_targets_zeroed(f)
    if "ctc_frames_read" in e:
        return _explain_ctc_frames_read(f)
    if "outputs_alike" in e:
        return _explain_outputs_alike(f)
    if "one_hot_rows" in e:
        return _explain_one_hot_rows(f)
    if "drawn_from" in e:
        return _explain_draw_without_path(f)
    if "self_similarity_of" in e:
        return _explain_self_similarity(f)
    if "targets_outside" in e:
        return _explain_targets_out_of_reach(f)
    if "gathered_along" in e:
        return _explain_gather_across_batch(f)
    if "examples_no_branch_takes" in e:
        return _explain_no_branch_taken(f)
    if e.get("axis_length") == 1:
        return _explain_softmax_over_one(f)
    if e.get("difference_of_itself"):
        return _explain_difference_of_itself(f)
    if e.get("ratio_of_itself"):
        return _explain_ratio_of_itself(f)
    if e.get("second_derivative_zero"):
        text, remedy = _input_derivative_zero(e["second_derivative_zero"])
        text += (
            " The loss fell all the same, through its other terms: it was fitted as if that derivative were 0 (a "
            "heat equation's u_t - u_xx fitted as u_t = 0, say: a solution that never changes in time)."
        )
        return text, [remedy]
    if e.get("custom_function"):
        return _explain_custom_backward(f)
    if e.get("dropout_on_prediction"):
        return _explain_dropout_on_prediction(f)
    if "capped_share" in e:
        return _explain_value_clipping(f)
    if "huber_delta" in e:
        return _explain_huber_delta(f)
    if "pos_weight_min" in e:
        return _explain_zero_pos_weight(f)
    if "classes_weighted_zero" in e:
        return _explain_zero_class_weight(f)
    if "target_row_sum" in e:
        return _explain_soft_targets(f)
    if e.get("constant_loss_term"):
        return _explain_penalty_without_graph(f)
    if "masked_id" in e:
        return _explain_padding_idx_in_use(f)
    if "padding_of_kept" in e:
        return _explain_inverted_loss_mask(f)
    if "gradient_same_along_axis" in e:
        return _explain_attention_pooled(f)
    if e.get("model_outputs_reached") is False:
        return _explain_cut_before_loss()
    if e.get("on_model_output") and f.where == "relu":
        return _explain_relu_on_model_output(f)
    if "zero_labels" in e:
        return _explain_hinge_on_zero_one_labels(f)
    if "lower_bound" in e:
        return _explain_floor_on_a_loss_term(f)
    site = e.get("site") or ""
    op = f.where
    text = (
        f"{pct(e['blocked_fraction'])} of the gradient entering `{op}` ({site}) leaves it as exactly zero. "
        f"{BLOCKING_DERIVATIVE.get(op, 'its local derivative is zero there')}, and the chain rule multiplies every "
        "gradient below it by that derivative, so those elements teach the model nothing."
    )
    remedies = []
    if e.get("floor_at_zero") and site.startswith("loss"):
        text += (
            " A floor at zero on the loss is the hinge of a margin loss (triplet, contrastive, SVM): every example "
            "already past the margin contributes nothing. That is by design, but when it is most of them, each step "
            "learns from a few examples only."
        )
        remedies.append(
            "Mine harder examples (semi-hard or hardest negatives in the batch), or raise the margin (a hinge "
            "max(0, margin - gap) passes gradient for every example whose gap is below it), so that more "
            "of each batch carries gradient."
        )
        remedies.append("Or use a smooth version of the hinge: softplus(margin + d_pos - d_neg).")
    elif e.get("floor_at_zero"):
        text += (
            " Its floor is zero: it acts as a ReLU, and this many of its inputs below zero means most units are off."
        )
        remedies.append(
            "Use nn.ReLU (the doctor then counts dead units one by one), better initialisation, or a leaky variant."
        )
    elif op in CLAMP_LIKE and e.get("logits_clamped") and e.get("output_of"):
        text += (
            f" It clamps the output of `{e['output_of']}`, the classifier's logits, which the loss turns into "
            "probabilities: within a range, no class can be made more likely than the bounds allow, so the loss sits "
            "at a floor above 0, and every logit pushed to a bound, right or wrong, passes no gradient. The model "
            "stops learning from the examples it is sure of, and cannot correct those it is wrongly sure of."
        )
        remedies.append(
            "Remove the clamp on the logits: the loss takes them unbounded (`F.cross_entropy(logits, y)`). If they "
            "grow too large, use label smoothing (`label_smoothing=0.1`) or weight decay, which bound them smoothly."
        )
    elif op in CLAMP_LIKE and (site.startswith("loss") or e.get("on_model_output")) and e.get("output_of"):
        text += (
            f" It clamps the output of `{e['output_of']}`, the model's prediction itself: every example whose "
            "prediction lies outside the range gets no gradient, so nothing pulls it back in (an output layer whose "
            "bias or initialisation starts the predictions outside the range leaves them stuck there)."
        )
        remedies.append(
            "Bound the prediction smoothly instead (a sigmoid, scaled to the range), or clamp only when predicting, "
            "not in the loss (`if not model.training`)."
        )
        remedies.append("Start the predictions inside the range: check the output layer's initialisation and bias.")
    elif op in CLAMP_LIKE and site.startswith("loss"):
        text += (
            " Clipping the error inside the loss (the classic DQN mistake: (clamp(td, -1, 1))^2, or a per-example "
            "error capped at a maximum) returns zero gradient for every example whose error is large, exactly the "
            "ones with most to teach."
        )
        remedies.append(
            "Use the Huber loss, which is what clipping the error was meant to be: quadratic for small errors, "
            "linear (gradient +-1) for large ones: `F.smooth_l1_loss(q, target)` or "
            "`F.huber_loss(q, target, delta=1.0)`."
        )
        remedies.append("If you want bounded updates, clip the gradient norm instead of the error.")
        # The other clamp on a loss: a probability kept off 0 and 1 before its log (a hand-written cross-entropy).
        # There the blocked examples are the ones the model is sure of: right (no loss) or wrong (all of it).
        text += (
            " A clamp on a probability before its log (clamp(p, eps, 1 - eps) in a hand-written cross-entropy) does "
            "the same to every example the model is sure of: harmless while it is right, and no gradient at all to "
            "correct it when it is wrong."
        )
        remedies.append(
            "If it clamps a probability, compute the loss from the logits instead: "
            "`F.binary_cross_entropy_with_logits(logits, y)`, `F.cross_entropy(logits, y)` or `F.logsigmoid`."
        )
    elif op in ("round", "floor", "ceil", "trunc", "sign"):
        if site.startswith("on "):  # a weight quantised or binarised in the forward pass
            weight = site[3:]
            text += (
                f" It is applied to the weight `{weight}` itself (a quantised or binarised layer): `{weight}` gets no "
                f"gradient through it, and the {op} of it, the weights the layer computes with, never changes."
            )
        remedies.append(
            f"Use a straight-through estimator: `x + ({op}(x) - x).detach()` passes the gradient through as if "
            f"{op} were the identity."
        )
    elif op == "dropout":
        text += (
            f" `{site}` is set to drop {pct(e['blocked_fraction'])} of its inputs at every training step: PyTorch's p "
            "is the share dropped, not kept (TensorFlow 1's keep_prob is the opposite)."
        )
        others = e.get("also_sites") or []
        if others:
            listed = ", ".join(f"`{other}`" for other in others[:6]) + (", ..." if len(others) > 6 else "")
            text += f" {len(others)} more dropout layers drop most of their inputs too: {listed}."
        remedies.append(
            f"Set {'every such dropout' if others else f'`{site}`'}'s p to the share to drop: 0.1 to 0.5 is usual "
            "(p=1 drops everything)."
        )
    elif op == "hardtanh" and site.startswith("in "):  # (a network's hidden activation: nn.Hardtanh)
        text += (
            f" `{site[3:]}` is a hidden activation: its inputs fall outside [-1, 1] for most units and examples, as "
            "they do when the layer before it is spread too wide (weights drawn from N(0, 1) rather than with a "
            "variance of about 1/fan_in) or when nothing normalises them."
        )
        remedies.append(
            "Start the layer before it so that its outputs stay near unit scale: `nn.init.xavier_uniform_` (PyTorch's "
            "default init also does), not `nn.init.normal_(w, 0, 1)`; or normalise in front of it (BatchNorm, "
            "LayerNorm)."
        )
        remedies.append("Or use tanh, whose derivative is small outside [-1, 1] but never exactly 0.")
    else:
        remedies.append(
            f"Move `{op}` out of the training path, widen its range, or use a smooth version "
            "(tanh instead of hardtanh, softplus instead of relu on a loss)."
        )
    return text, remedies


# --- parameters without gradient and gradients never reset ------------------------------------------------------------
def _explain_run_without_grad(f: Finding):
    """no_gradient for a module whose forward ran with gradient recording off: by a reentrant checkpoint whose inputs
    do not require grad, or inside torch.no_grad()."""
    e = f.evidence
    unreached = (
        f"the backward pass never reaches the {e['parameter_count']} parameter(s) inside, and none received a "
        f"gradient in {e['sampled_steps_checked']} sampled steps, although the optimiser updates them."
    )
    if e.get("reentrant_checkpoint"):
        text = (
            f"`{f.where}` runs inside `torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`, and none of the "
            "checkpoint's inputs requires grad (they are data, not outputs of layers that learn). The reentrant "
            "checkpoint runs its function under no_grad and records the graph again during backward only when an "
            "input requires grad; here none does, so its output carries no history back to the parameters: "
            + unreached
            + " (PyTorch warns of this once: 'None of the inputs have requires_grad=True'.)"
        )
        remedies = [
            "Pass `use_reentrant=False` (PyTorch's recommended setting): the non-reentrant checkpoint records the "
            "path to the parameters whether or not its inputs require grad.",
            "Or make an input require grad before the checkpoint: `x.requires_grad_()`.",
        ]
        return text, remedies
    text = (
        f"`{f.where}`'s forward ran with gradient recording off (inside `torch.no_grad()` or "
        "`torch.inference_mode()`, or after `torch.set_grad_enabled(False)`) on every sampled step, so no graph "
        "joins its parameters to the loss: " + unreached
    )
    remedies = [
        "If it should learn, call it outside the no_grad block.",
        "If it is frozen on purpose, leave its parameters out of the optimiser (or call "
        "`module.requires_grad_(False)`), so the optimiser neither carries them nor decays them.",
    ]
    return text, remedies


def _explain_all_frozen(f: Finding):
    e = f.evidence
    text = (
        f"Every one of the {e['parameter_count']} parameters the optimiser steps is frozen (requires_grad=False): "
        "backward computes no gradient for any of them, and step() skips a parameter without one, so nothing "
        "trains, and the loss only moves with the batches (or with a change of task). A loss that reaches no "
        "parameter makes backward() fail ('element 0 of tensors does not require grad'): if an input was given "
        "requires_grad_() to silence that error, the error was this."
    )
    if not e.get("models_watched"):
        text += " (No model was watched: the doctor watches models with a trainable parameter, and this one has none.)"
    remedies = [
        "Freeze only what should stay fixed: `for p in model.backbone.parameters(): p.requires_grad_(False)`, not "
        "`model.parameters()`, and leave the head trainable; then make the optimiser over the trainable ones.",
        "Remove the `requires_grad_()` on the inputs that silenced backward()'s error, so a loss that reaches no "
        "parameter fails loudly again.",
    ]
    return text, remedies


def _explain_gradient_to_a_copy(f: Finding):
    e, copy = f.evidence, f.evidence["gradient_went_to"]
    text = (
        f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none received a gradient "
        f"in {e['sampled_steps_checked']} sampled steps, while `{copy}`, a module with the same parameters, got one "
        "that no optimiser applies. The loss was computed from the copy where the trained module was meant (a DQN's "
        "Q-values taken from its target network, an EMA copy used in the forward pass): backprop follows the graph "
        f"that was built, so the gradient went through `{copy}` and stopped there, and `{f.where}` never learns."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Compute the prediction the loss trains with `{f.where}`, and anything taken from `{copy}` (a target) under "
        "`torch.no_grad()` or with `.detach()`.",
        f"If `{copy}` is meant to learn, give its parameters to an optimiser; if it is meant to follow `{f.where}`, "
        "copy the weights across (`copy.load_state_dict(model.state_dict())`) rather than train it.",
    ]
    return text, remedies


def _explain_requires_grad_assigned(f: Finding):
    e = f.evidence
    shown = ", ".join(f"`{name}`" for name in e["requires_grad_assigned"][:4])
    more = f" and {e['parameter_count'] - 4} more" if e["parameter_count"] > 4 else ""
    text = (
        f"The optimiser steps {e['parameter_count']} frozen parameter(s) ({shown}{more}) that carry an attribute "
        "`requires_grad_` of their own: the line that meant to unfreeze them, `p.requires_grad_ = True`, assigned a "
        "value to the name of the method instead of calling it. `requires_grad` is still False, so backward computes "
        "no gradient for them, step() skips them, and they keep the values they were frozen with."
    )
    remedies = [
        "Call the method: `p.requires_grad_(True)` (or set the flag, `p.requires_grad = True`), and `del "
        "p.requires_grad_` on parameters already given the attribute (in a notebook, or restart).",
    ]
    return text, remedies


def _explain_zeroed_after_backward(f: Finding):
    e = f.evidence
    text = (
        f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, whose gradient was exactly "
        f"zero at the step in all {e['sampled_steps_checked']} sampled steps: the backward pass computed one, and "
        "the script zeroed it before `optimizer.step()` (`p.grad.zero_()` or `p.grad *= 0`), to freeze them."
    )
    moved = e.get("moved_per_step")
    if moved:
        text += (
            f" They are not frozen: the optimiser still moves them, by {fmt(moved)} of their size per step. A zero "
            "gradient is still a gradient to it: weight decay adds wd * p to it (Adam's coupled `weight_decay`, "
            "which Adam then scales up to a full step of about the learning rate, as if it were the signal), and "
            "momentum keeps applying the updates it has built up. The weights drift (towards 0, under decay), "
            "and what they had learnt goes with them."
        )
    else:
        text += " The optimiser does not move them (no weight decay or momentum to carry): a freeze, as meant."
    remedies = [
        f"Freeze `{f.where}` before the forward pass instead: call `requires_grad_(False)` on it and leave its "
        "parameters out of the optimiser (`torch.optim.Adam(head.parameters(), ...)`); or set `p.grad = None` "
        "rather than zeroing it, which the optimiser skips, weight decay and momentum included.",
        "If weight decay is meant for the rest, use `torch.optim.AdamW`, whose decay is not scaled by Adam's "
        "normalisation.",
    ]
    return text, remedies


def _explain_loss_without_graph(f: Finding):
    e = f.evidence
    text = (
        f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none received a gradient "
        f"in {e['sampled_steps_checked']} sampled steps, and the cause is the loss itself: the tensor `backward()` "
        "starts from is a leaf, made to require grad (`torch.tensor(value, requires_grad=True)`), with no graph "
        "behind it. Its value was computed outside autograd (in NumPy, or from `.item()` or `.detach()`), so "
        "backpropagation stops where it starts: the chain rule has no operation to go back through, and no "
        "parameter is reached."
    )
    remedies = [
        "Compute the loss with torch operations on the model's output, as it is (no `.detach()`, `.numpy()` or "
        "`.item()` on the way): `((pred - y) ** 2).mean()` on tensors, say, rather than the same formula in NumPy "
        "wrapped in `torch.tensor(..., requires_grad=True)`.",
        "If a part of the loss must be computed outside torch, write its derivative too: a `torch.autograd.Function` "
        "whose backward returns it.",
    ]
    return text, remedies


def _explain_script_tensor_without_grad(f: Finding):
    names = f.evidence["parameters"]
    first = names[0]
    text = (
        f"The optimiser steps {_listed(names)}, a tensor the script holds itself, but it does not require grad: "
        "backward computes no gradient for it, the optimiser skips a tensor without one, and it keeps its initial "
        "values, while the rest of the model trains around it."
    )
    remedies = [
        f"Make it require grad once it is made: `{first} = (torch.randn(...) * scale).requires_grad_()` (scaling a "
        "tensor made with `requires_grad=True` gives one that is no leaf, which an optimiser refuses).",
    ]
    return text, remedies


def _explain_script_tensor_cut(f: Finding):
    e = f.evidence
    names = e["parameters"]
    listed = _listed(names)
    text = (
        f"The optimiser updates {listed}, a tensor the script holds itself (no module), but it never received a "
        f"gradient in {e['sampled_steps_checked']} sampled steps: the backward pass never reaches it, so it never "
        "learns (only weight decay, if any, moves it). Between it and the loss the graph is cut: `.detach()` or "
        "`.data` taken of it, a computation under `torch.no_grad()`, a round trip through `.item()` or `.numpy()`, "
        "or a copy made without `requires_grad` (`torch.tensor(w)`) used in its place; or the loss does not use it."
    )
    remedies = [
        f"Find where {listed} is read on the way to the loss, and read it as it is: no `.detach()`, `.data` or "
        "`torch.tensor(...)` copy of it, nothing of it computed under `torch.no_grad()`.",
        f"If it should stay fixed, say so: `{names[0]}.requires_grad_(False)`, and leave it out of the optimiser.",
    ]
    return text, remedies


def explain_no_gradient(f: Finding):
    e = f.evidence
    if e.get("all_frozen"):
        return _explain_all_frozen(f)
    if e.get("requires_grad_assigned"):
        return _explain_requires_grad_assigned(f)
    if e.get("optimizer_steps_without_gradient"):
        return _explain_optimizer_without_gradient(f)
    if e.get("stepped_without_gradients"):
        return _explain_stepped_without_gradients(f)
    if e.get("gradient_went_to"):
        return _explain_gradient_to_a_copy(f)
    if e.get("zeroed_after_backward"):
        return _explain_zeroed_after_backward(f)
    if e.get("loss_is_a_leaf") and e["gradient"] == "none":
        return _explain_loss_without_graph(f)
    if e.get("script_tensors") and e.get("requires_grad") is False:
        return _explain_script_tensor_without_grad(f)
    if e.get("script_tensors") and e["gradient"] == "none":
        return _explain_script_tensor_cut(f)
    cuts = e.get("graph_cuts") or []
    reached_but_zero = (
        f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, and the backward pass "
        f"reaches them, but their gradient was exactly zero in all {e['sampled_steps_checked']} sampled steps: "
    )
    if e.get("drops_out_of_input_gradient"):
        names = ", ".join(f"`{name}`" for name in e["parameters"][:4])
        text = (
            f"{names} never got a gradient, in a run whose loss is made of a gradient with respect to the inputs "
            "(`torch.autograd.grad(..., create_graph=True)`: a Hamiltonian network trained on dH/dz, an energy "
            "trained on its forces). A bias adds a constant to its layer's output, and a constant has no derivative "
            "with respect to the input: it drops out of that loss by construction, and nothing cut the graph. "
            "Harmless: it never moves, and costs one parameter per unit."
        )
        return text, ["Leave it, or drop it: `bias=False` on that layer (the model computes the same gradients)."]
    if e.get("norm_scale_zero"):
        norms = _listed(e["norm_scale_zero"])
        text = reached_but_zero + (
            f"the scale (`weight`) of {norms} is exactly 0, and has stayed so. A normalisation multiplies its "
            "normalised input by that scale, so every layer after it sees an input of exactly 0: their weights get "
            "no gradient (dL/dW = g x^T, with x = 0), and a layer that passes none back at 0 (a SwiGLU's silu(a) b, "
            "whose derivatives silu'(0) b and silu(a) are both 0 there) gives the scale none either. Nothing ever "
            "moves: a saddle point at zero."
        )
        remedies = [
            f"Initialise the scale of {norms} at ones, as `nn.LayerNorm` and `nn.RMSNorm` do: "
            "`nn.Parameter(torch.ones(dim))`, or `nn.init.ones_(norm.weight)`.",
        ]
        return text, remedies
    if e.get("zero_weights"):
        layers = ", ".join(f"`{layer}`" for layer in e["zero_weights"][:6])
        text = reached_but_zero + (
            f"the weights of {layers} are exactly 0 as well, and have stayed so. They are factors of one product "
            "that all start at 0 (LoRA's A and B both zero-initialised, two layers in a row zeroed): by the chain rule "
            "each one's gradient is the others' value times something (for y = B A x, dL/dB = g (A x)^T and dL/dA = "
            "B^T g x^T), and with both at 0 both gradients are 0. The optimiser never moves them: a saddle point at "
            "the origin, and the layers they should adapt never change."
        )
        remedies = [
            "Initialise one factor at random and the other at 0 (LoRA: `nn.init.kaiming_uniform_(A.weight, a=5 ** "
            "0.5)`, `nn.init.zeros_(B.weight)`): the product still starts at 0, and B's gradient g (A x)^T is not.",
        ]
        return text, remedies
    if e.get("state_reset_every_call"):
        text = reached_but_zero + (
            f"`{e.get('cell', f.where)}` is called {e['state_reset_every_call']} times a step, and not once is it "
            "given its own last "
            "output for a state: it gets a fresh one at every call (`h = torch.zeros(...)` inside the time loop, where "
            "it belongs before it). Its state is all zeros each time, so the hidden-to-hidden weights, which multiply "
            "it, get a gradient of exactly 0 (d loss / d W_hh = sum over calls of g h^T, h = 0), and the cell sees "
            "one input at a time: the recurrence is switched off, and nothing is remembered from one step to the next."
        )
        remedies = [
            "Make the initial state once per sequence, before the loop over time steps, and pass each call's output to "
            "the next: `h = cell(x[:, t], h)`."
        ]
        return text, remedies
    if e.get("only_time_step_reached") == 0:
        text = reached_but_zero + (
            f"only the output of `{f.where}` at its first time step reaches the loss (the gradient at every later "
            "step is exactly 0), and at the first step the hidden-to-hidden weights multiply the initial state, zero: "
            "they carry nothing over. The loss reads `out[:, 0]` (or `output[0]`), the first step, where the last "
            "was probably meant; with `batch_first=False`, `output[0]` is the first time step of every sequence."
        )
        remedies = [
            "Read the last time step: `out[:, -1]` with `batch_first=True`, `output[-1]` without it, or the final "
            "hidden state `h_n[-1]` (for sequences of varied length, the last real step of each, or pack them)."
        ]
        return text, remedies
    if e.get("reverse_direction_only"):
        text = reached_but_zero + (
            f"every forward-direction parameter of the bidirectional `{f.where}` gets exactly 0, while its `_reverse` "
            "twins learn: only the reverse direction's state reaches the loss. `h_n[-1]` of a bidirectional layer is "
            "the reverse direction's final state, taken after it read the sequence from its end back to its start; "
            "the forward direction's is `h_n[-2]`. So the model reads the sequence backwards only, and what sits at "
            "its end has passed through every step of the reverse recurrence before the head sees it."
        )
        remedies = [
            "Read both directions' final states: `torch.cat([h_n[-2], h_n[-1]], dim=1)` (the head then takes "
            "`2 * hidden_size` inputs), or pool `out` over time (mean or max); if one direction is meant, drop "
            "`bidirectional=True`.",
        ]
        return text, remedies
    if e.get("reverse_read_at_last_step"):
        text = reached_but_zero + (
            f"only the reverse direction's hidden-to-hidden weights of the bidirectional `{f.where}` get exactly 0. "
            "The loss reads the output at the last time step (`out[:, -1]`), where the reverse direction, which "
            "runs from the end of the sequence to its start, has taken only its first step: from the zero initial "
            "state, which its hidden-to-hidden weights multiply. So that half of the output has seen one input, the "
            "last, and the reverse weights carry nothing over."
        )
        remedies = [
            "Read both directions' final states: `h_n[-2]` (forward) and `h_n[-1]` (reverse) concatenated, or "
            "`torch.cat([out[:, -1, :H], out[:, 0, H:]], dim=-1)`; or pool over time (mean or max of `out`).",
        ]
        return text, remedies
    if e.get("gradient") == "exactly zero" and e.get("blocking_op") and not cuts:
        text = reached_but_zero + (
            "an operation between them and the loss lets (nearly) no gradient through (see the blocked_gradient "
            "finding), so they never learn."
        )
        return text, ["Fix the blocking operation named in the blocked_gradient finding; these then learn."]
    if e.get("cancels_exactly") and not cuts:
        text = reached_but_zero + (
            "gradient reaches their layers' outputs, and still a layer's bias gets exactly 0 as well as its weight: "
            "what arrives cancels exactly, which is what the loss subtracting two identical computations gives, "
            "f(x) - f(x). A PPO ratio exp(new_logp - old_logp) whose old log-probability was recomputed by the current "
            "policy, graph and all, is one: the ratio is 1 at every step, and its gradient 0, so the policy never "
            "learns (a siamese distance between an example and itself is another)."
        )
        remedies = [
            "Compute the subtracted term once, where it belongs, and detach it: the old log-probabilities when the "
            "actions are collected (`old_logp = dist.log_prob(a).detach()`), kept for the update.",
            "If two outputs of the model are compared on purpose, check that they are given different inputs.",
        ]
        return text, remedies
    if e.get("gradient") == "exactly zero" and e.get("gates_shut_exactly") and not cuts:
        gates = ", ".join(f"`{site}`" for site in e["gates_shut_exactly"])
        text = reached_but_zero + (
            f"they have no effect on the loss, so they never learn. A gate beside them is shut for good: {gates} "
            "output exactly 0 on every sampled step. A gate t passes t times what it gates, so with t = 0 the branch "
            "it gates gets no gradient; and hardsigmoid(z) = relu6(z + 3) / 6 is exactly 0, with a derivative of "
            "exactly 0, for every z below -3, so the layer that computes the gate gets none either and can never "
            "open it (a highway's transform bias set to -4, the advice for a sigmoid, where sigmoid(-4) = 0.018 "
            "still passes a gradient)."
        )
        remedies = [
            "Start the gate's bias inside hardsigmoid's slope, above -3: -1 gives a gate of 1/3, mostly carrying "
            "(`nn.init.constant_(self.T.bias, -1.0)`).",
            "Or gate with `torch.sigmoid`, whose derivative is never exactly 0, and keep the -1 to -3 bias of "
            "highway networks.",
        ]
        return text, remedies
    if e.get("gradient") == "exactly zero" and e.get("weights_without_effect") and not cuts:
        after = (
            "Nothing reaches their outputs either: something after them makes the loss blind to them"
            if e.get("output_gradient") == "exactly zero"
            else "Their weights are among them, so no constant cancelling by design explains it"
        )
        text = reached_but_zero + (
            f"they have no effect on the loss, so they never learn. {after}. The usual causes: the loss term they feed "
            "weighted 0 (`loss = ce + 0.0 * aux`: an auxiliary head switched off, fine if meant); their output "
            "multiplied by a factor held at exactly 0 that is not learnt (ReZero's alpha registered as a buffer, or "
            "set under no_grad); a straight-through estimator written `z + (q(z) - z)` without `.detach()` on the "
            "bracket, whose two paths to z cancel exactly; or dead units in front of them (see the other findings)."
        )
        remedies = [
            "Look at what multiplies their output on its way to the loss: a scale meant to be learnt must be an "
            "`nn.Parameter` (`self.alpha = nn.Parameter(torch.zeros(1))`), not a buffer or a plain tensor.",
            "A straight-through estimator detaches the difference: `z + (torch.round(z) - z).detach()`.",
            "A loss term weighted 0 on purpose: leave its parameters out of the optimiser, or skip computing it.",
        ]
        return text, remedies
    if e.get("gradient") == "exactly zero" and not cuts:
        text = reached_but_zero + (
            "they have no effect on the loss, so they never learn. By design when they cancel out (a bias added to "
            "both sides of a difference, as in a siamese distance or a critic's D(fake) - D(real)); otherwise the "
            "units feeding them are dead, or their output is multiplied by zero."
        )
        remedies = [
            "If they cancel by design, drop them (bias=False) or leave them: they cost nothing but parameters.",
            "Otherwise look for dead units or a zero factor between them and the loss (see the other findings).",
        ]
        return text, remedies
    if e.get("custom_backward_returns_none") and not cuts:
        function = e["custom_backward_returns_none"]
        text = (
            f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none received a "
            f"gradient in {e['sampled_steps_checked']} sampled steps. They are given as inputs to the custom autograd "
            f"Function `{function}`, and its backward returns None for them: backprop stops there, since autograd "
            "gives a parameter only what the Function's backward returns for it."
        )
        remedies = [
            f"In `{function}.backward`, return each parameter's gradient in the position of that input (the gradients "
            "`torch.autograd.grad` computed for them), not None.",
            "If the None is meant (the parameters learn through another use of them), that other use is cut: look "
            "there for `.detach()`, `torch.no_grad()` or a round trip through NumPy.",
            f"Check it with `torch.autograd.gradcheck({function}.apply, ...)` in float64 on a small input.",
        ]
        return text, remedies
    if e.get("forward_ran") == "never" and not cuts:
        text = (
            f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none received a "
            f"gradient in {e['sampled_steps_checked']} sampled steps, and its forward did not run on any of them: the "
            "module is not used, so backprop has nothing to send it. By design for a branch that is rarely taken; "
            "a sign of collapse for a mixture-of-experts expert that no token is routed to."
        )
        expert = (
            "If it is an expert of a mixture, balance the routing: a load-balancing loss (or a larger weight on it), "
            "noise in the router's logits, or a capacity limit per expert."
        )
        # (a task's head or a branch never once chosen: the choice is the likely fault; sweep 48's multi-task loop drew
        # its task with `torch.randint(0, n - 1, ...)`, whose upper bound is exclusive: the last head never ran)
        chosen = (
            "If it is meant to run (a task's head, a branch), check the code that chooses it: it was not chosen once. "
            "`torch.randint(0, n - 1, ...)` never draws n - 1 (its upper bound is exclusive, unlike "
            "`random.randint`'s); a condition that is never true skips it for good."
        )
        remedies = [expert, chosen] if "expert" in f.where.lower() else [chosen, expert]
        remedies += [
            "If it is unused on purpose (an old head, a branch for another task), leave its parameters out of the "
            "optimiser, or freeze it with `module.requires_grad_(False)`.",
            "If its parameters are used directly rather than by calling it (F.linear(x, m.weight)), something "
            "between them and the loss cuts the graph: look for `.detach()`, `no_grad` or a round trip through NumPy.",
        ]
        return text, remedies
    if e.get("forward_ran") == "without grad" and not cuts:
        return _explain_run_without_grad(f)
    cleared = e.get("cleared_after_backward")
    if cleared and not cuts:
        text = (
            f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none had a gradient at "
            f"the optimiser step in {e['sampled_steps_checked']} sampled steps, although the backward pass reached "
            f"them (the gradient arriving at `{cleared['layer']}`'s output had norm {cleared['norm']}) and the other "
            "parameters kept theirs: these alone were cleared between `loss.backward()` and `optimizer.step()` "
            "(`p.grad = None`). The optimiser skips a parameter whose gradient is None, weight decay and momentum "
            "included, so they stay where they are: a freeze done by hand, if that was meant."
        )
        remedies = [
            f"If `{f.where}` is meant to stay frozen, freeze it before the forward pass: call `requires_grad_(False)` "
            "on it (the backward pass then does not compute its gradients at all), and leave its parameters out of "
            "the optimiser.",
            "If not, find what clears them after backward() (a loop setting `.grad = None`, a gradient hook, a "
            "callback) and move it before backward() or after step().",
        ]
        return text, remedies
    at_output = e.get("gradient_at_output")
    if at_output and e.get("ran_on_other_tensors") and not cuts:
        return _explain_ran_on_other_tensors(f)
    if (at_output or e.get("gradient_after_backward")) and not cuts:
        reached = (
            f"the gradient arriving at `{at_output['layer']}`'s output had norm {at_output['norm']}"
            if at_output
            else "right after `loss.backward()` they held a gradient"
        )
        text = (
            f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none had a gradient at "
            f"the optimiser step in {e['sampled_steps_checked']} sampled steps, although the backward pass reached "
            f"them: {reached}. The gradients were computed, then cleared before the step, so the step changes nothing "
            "(only weight decay, if any, moves them). The usual cause: `optimizer.zero_grad()` (or "
            "`model.zero_grad()`) called between `loss.backward()` and `optimizer.step()`"
        )
        text += (
            "; or the calls in the wrong order, `zero_grad(); step(); backward()`, where each step() comes before "
            "its backward() and the next zero_grad() clears what that backward computed."
            if not at_output
            else "."
        )
        remedies = [
            "Reset the gradients before the backward pass, not after it, and step after it: zero_grad(), forward, "
            "loss.backward(), step().",
            "If something else sets `.grad` to None between backward() and step() (a callback, a gradient "
            "transform), move it before backward() or after step().",
        ]
        return text, remedies
    if e.get("last_of_stack"):
        return _explain_dead_end_at_stack_end(f)
    text = (
        f"The optimiser updates the {e['parameter_count']} parameter(s) of `{f.where}`, but none received a gradient "
        f"(None or exactly zero) in {e['sampled_steps_checked']} sampled steps: the backward pass never reaches them, "
        "so they never learn (only weight decay, if any, moves them)."
    )
    if cuts:
        cut = cuts[0]
        text += (
            f" The graph is cut between `{cut['from']}` and `{cut['to']}`: `{cut['to']}` receives a tensor that shares "
            f"`{cut['from']}`'s output memory but carries no gradient history, the mark of `.detach()`."
        )
    elif e.get("model_outputs_reached") is False:
        text += (
            " The loss's graph holds none of the model's outputs: the loss was built from values taken out of the "
            "graph, numbers read with `.item()` or `.tolist()` and made into a new tensor "
            "(`torch.tensor(values, requires_grad=True)`), or a `.detach()`/`.data` copy. Its backward starts from "
            "that new tensor, which has no history, and stops there."
        )
        remedies = [
            "Build the loss from the model's output tensors with torch operations, so that it keeps their history: "
            "`torch.stack(per_example_losses).mean()`, not `torch.tensor([l.item() for l in losses])`; drop "
            "`requires_grad=True` on tensors made from numbers, which only hides the cut.",
        ]
        return text, remedies
    else:
        text += (
            " Something between them and the loss cuts the graph: `.detach()`, `torch.no_grad()`, `.item()` or "
            "`.numpy()` and back, an integer cast, a comparison, an index taken from it (`argmax`, the indices of "
            "`topk`: a router that picks an expert by argmax and does not weight the expert's output by its "
            "probability), or the layer's output is simply not used."
        )
    remedies = [
        "Remove the `.detach()` (or `no_grad`, or round trip through Python numbers) between this module and the loss.",
        "If freezing it is intended, say so: `module.requires_grad_(False)` and leave its parameters out of the "
        "optimiser.",
    ]
    if not cuts:  # (no detach seen: as likely, an output nothing reads, such as the last block's unused residual)
        remedies.insert(
            0,
            f"Check that `{f.where}`'s output is used on the way to the loss: a tuple of outputs unpacked in the "
            "wrong order (`emb, logits = model(x)` for a model that returns `(logits, emb)`), or a state computed and "
            "never passed on (an encoder's final state that the decoder is not given), leaves it out. If nothing "
            "should read it (a branch the last block computes), remove the module.",
        )
    if not cuts and not e.get("forward_ran"):  # (it ran, with gradients on: read through an index, perhaps)
        remedies.insert(
            1,
            f"If `{f.where}` chooses by index (argmax, topk), weight what it chooses by the probability it gives: "
            "`p = softmax(scores, -1); idx = p.argmax(-1); out = expert[idx](x) * p.gather(-1, idx[:, None])`.",
        )
    return text, remedies


def _explain_dead_end_at_stack_end(f: Finding):
    stack = f.evidence["last_of_stack"]
    suffix = stack["submodule"]
    text = (
        f"`{f.where}` never gets a gradient, though it runs with gradients on and nothing cuts the graph. It is the "
        f"last of {stack['copies']} copies of `{suffix}` along `{stack['stack']}`, and every copy before it gets "
        "one: each block's copy feeds the next block, and the last block has no next, so what it computes reaches "
        "nothing. A "
        "dead end built into the stack (N-BEATS's last backcast, WaveNet's last residual projection): the rest "
        "learns as it should, and these parameters are wasted work, not a leak."
    )
    remedies = [
        f"Build the last block without `{suffix}` (or skip it in the last block's forward), or leave it: the "
        "training does not depend on it.",
    ]
    return text, remedies


def explain_accumulating_gradient(f: Finding):
    e = f.evidence
    norms = ", ".join(f"{fmt(n)}" for _, n in e.get("grad_norm_by_step", [])) or "n/a"
    if e.get("updated_by_hand"):
        return _explain_accumulating_by_hand(f, norms)
    if e.get("in_closure"):
        return _explain_accumulating_in_closure(f, norms)
    text = (
        f"Gradients were not reset between optimiser steps on {e['steps_not_reset']} of {e['steps_checked']} checked "
        "steps. `backward()` adds each new gradient into `.grad`, so without `zero_grad()` step t applies the sum of "
        f"every gradient since the start, a growing, stale direction. Gradient norm on sampled steps: {norms}."
    )
    modules = e.get("modules_not_reset") or []
    if modules:
        text += f" Not reset: the gradients of {', '.join(f'`{m}`' for m in modules)}."
    remedies = [
        "Call `optimizer.zero_grad()` once per step, before `loss.backward()`; with several optimisers, every one "
        "of them (or `model.zero_grad()` once)"
        + (f": the optimiser that steps {', '.join(f'`{m}`' for m in modules)} is not zeroed." if modules else "."),
        "If you accumulate over micro-batches on purpose, zero after each `optimizer.step()`.",
    ]
    return text, remedies


def _explain_accumulating_in_closure(f: Finding, norms: str):
    e = f.evidence
    text = (
        "The optimiser is stepped with a closure (`optimizer.step(closure)`), which computes the loss and calls "
        "`backward()` itself, and the closure does not reset the gradients: on "
        f"{e['steps_not_reset']} of {e['steps_checked']} checked steps they only grew, one backward pass on top of the "
        "last. The optimiser may call the closure several times in one step (LBFGS: once per iteration and per line "
        "search evaluation), and each call's `backward()` adds into `.grad`: the gradient it reads is the sum of every "
        "evaluation so far, not the gradient at the current weights, so its directions and curvature estimates are "
        f"wrong and the steps grow. Gradient norm on sampled steps: {norms}."
    )
    remedies = [
        "Call `optimizer.zero_grad()` inside the closure, before `loss.backward()`: `def closure(): "
        "optimizer.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); return loss`.",
    ]
    return text, remedies


def _explain_accumulating_by_hand(f: Finding, norms: str):
    e = f.evidence
    if e.get("script_tensors"):
        return _explain_accumulating_in_script_tensors(f, norms)
    text = (
        f"The weights of `{f.where}` are updated by hand (no optimiser steps), and their gradients were not reset "
        f"between one update and the next on {e['steps_not_reset']} of {e['steps_checked']} checked steps. "
        "`backward()` adds each new gradient into `.grad`, so update t applies the sum of every gradient since the "
        f"start, a growing, stale direction. Gradient norm on sampled steps: {norms}."
    )
    remedies = [
        "Reset each gradient after using it: `p.grad = None` (or `p.grad.zero_()`) right after `p -= lr * p.grad`; "
        f"or call `{f.where}.zero_grad()` before each `loss.backward()`.",
        "Or let an optimiser do the update: `torch.optim.SGD(model.parameters(), lr=lr)`, with `zero_grad()` and "
        "`step()`.",
    ]
    return text, remedies


def _explain_accumulating_in_script_tensors(f: Finding, norms: str):
    e = f.evidence
    names = e["script_tensors"]
    first = names[0]
    text = (
        f"The model is made of tensors the script holds itself ({_listed(names)}), updated by hand (`{first} -= lr * "
        f"{first}.grad`, no optimiser), and their gradients were not reset between one update and the next on "
        f"{e['steps_not_reset']} of {e['steps_checked']} checked steps. `backward()` adds each new gradient into "
        "`.grad`, so update t applies the sum of every gradient since the start, a growing, stale direction. "
        f"Gradient norm on sampled steps: {norms}."
    )
    remedies = [
        f"Reset each gradient right after using it, inside the same `torch.no_grad()` block: `{first}.grad = None` "
        f"(or `{first}.grad.zero_()`) after `{first} -= lr * {first}.grad`, for each of {_listed(names)}.",
        f"Or let an optimiser do the update: `opt = torch.optim.SGD([{', '.join(names[:6])}], lr=lr)`, with "
        "`opt.zero_grad()` before `loss.backward()` and `opt.step()` after it.",
    ]
    return text, remedies


def _explain_reset_between_backwards(f: Finding):
    e = f.evidence
    passes, k = e["backward_passes_per_step"], e.get("loss_divided_by")
    if k is None:  # (the losses not divided: step() left outside the loop over batches)
        others = f"the other {fmt(passes - 1)} batches' gradients are"
        others = "the other batch's gradient is" if passes == 2 else others
        share = "half" if passes == 2 else "most"
        text = (
            f"Each optimiser step follows {fmt(passes)} backward passes, and the gradients are reset between them: "
            "`zero_grad()` runs before every `backward()`, but `step()` runs once after them all (dedented out of the "
            "loop over batches, say). Each step applies the last batch's gradient alone, as its backward pass left "
            f"it; {others} computed and thrown away, so the model takes one step where it should take one per batch, "
            f"and {share} of the data teaches nothing."
        )
        remedies = [
            "Call `optimizer.step()` inside the loop, right after each `loss.backward()`.",
            "To accumulate gradients over micro-batches on purpose, call `optimizer.zero_grad()` once per optimiser "
            "step (after `step()`), not before each `backward()`, and divide each loss by the number of micro-batches.",
        ]
        return text, remedies
    text = (
        f"Each optimiser step follows {fmt(passes)} backward passes, each loss divided by {fmt(k)} (gradient "
        "accumulation), but the gradients are reset between them: `zero_grad()` runs inside the loop over "
        "micro-batches. `backward()` was meant to add the micro-batches' gradients into `.grad`; instead each step "
        f"applies the last micro-batch's gradient alone, divided by {fmt(k)}, and the others' are computed and thrown "
        "away: most of the data teaches nothing, and the steps are a fraction of their size."
    )
    remedies = [
        "Call `optimizer.zero_grad()` once per optimiser step, right after `optimizer.step()` (or before the first "
        "micro-batch), not before each `loss.backward()`.",
    ]
    return text, remedies


def _explain_not_a_parameter(f: Finding):
    if f.evidence.get("held_by_script"):
        return _explain_script_tensor_not_stepped(f)
    owner, _, attribute = f.where.rpartition(".")
    text = (
        f"`{f.where}` requires grad and receives a gradient at every step, but it is a plain tensor, not an "
        f"`nn.Parameter`: `{owner}.parameters()` does not return it, so no optimiser updates it. Its value has not "
        f"changed since step {f.first_step}, and its gradient is computed and thrown away (or piles up in its `.grad`, "
        "never reset)."
    )
    remedies = [
        f"Make it a parameter: `self.{attribute} = nn.Parameter(torch.tensor(...))` in `__init__`, before the "
        "optimiser is made over `model.parameters()`.",
    ]
    return text, remedies


def _explain_script_tensor_not_stepped(f: Finding):
    name = f.where
    text = (
        f"`{name}` requires grad and receives a gradient at every step, but no optimiser holds it: the optimisers "
        f"were made over the model's parameters, and `{name}`, a tensor the script keeps beside the model, is not "
        f"among them. Its value has not changed since step {f.first_step}: it is learnt by nobody, its gradient is "
        "computed and thrown away (or piles up in its `.grad`, never reset), and the model fits around its initial "
        "value."
    )
    remedies = [
        f"Give it to the optimiser with the model's parameters: `torch.optim.Adam(list(model.parameters()) + [{name}], "
        "lr=...)` (or as a parameter group of its own, with a rate of its own).",
    ]
    return text, remedies


def _explain_parameter_made_in_forward(f: Finding):
    if f.evidence.get("made_in_forward"):
        return _explain_layer_made_in_forward(f)
    owner, _, attribute = f.where.rpartition(".")
    text = (
        f"`{f.where}` is a new `nn.Parameter` at every step: it is made in `{owner}.forward()` (assigning an "
        f"`nn.Parameter` to `self.{attribute}` registers a new one at each call). The optimiser, made before, never "
        "holds it, and each call starts again from its initial value: its gradient is computed and thrown away, "
        "and it learns nothing."
    )
    remedies = [
        f"Create it once in `__init__` (`self.{attribute} = nn.Parameter(...)`), before the optimiser is made, and "
        "only read it in `forward()`.",
    ]
    return text, remedies


def _explain_layer_made_in_forward(f: Finding):
    text = (
        f"The {f.where.replace('layer made in forward', 'layer')} is built inside a `forward()` "
        "(`return nn.Linear(64, 10)(x)`): a new module with new random weights at every call, held by no module of "
        f"the model (seen on {f.evidence['looks']} sampled steps, a new one each time). `model.parameters()` never "
        "lists it, so no optimiser steps it; its gradient is computed and thrown away, and the layers before it "
        "learn against a random projection that changes at every step."
    )
    remedies = [
        "Create the layer once in `__init__` (`self.out = nn.Linear(64, 10)`), before the optimiser is made, and "
        "only call it in `forward()` (`return self.out(x)`).",
    ]
    return text, remedies


def _explain_optimizer_made_anew(f: Finding):
    e = f.evidence
    kind, state = e["optimizer"], ", ".join(f"`{name}`" for name in e["state_lost"])
    text = (
        f"A new {kind} was made over the same parameters at {e['optimizers_made_anew']} of {e['steps']} steps: each "
        f"steps once and is replaced. What it keeps from step to step ({state}) starts empty every time, so every "
        "update is a first one: the gradients of earlier steps never reach it."
    )
    if "exp_avg_sq" in e["state_lost"]:
        text += (
            f" {kind}'s first update divides the gradient by its own size: lr * g / (|g| + eps), a step of about lr "
            "for every weight whatever its gradient, noise included."
        )
    elif "momentum_buffer" in e["state_lost"]:
        text += " The momentum buffer starts at the gradient each time: momentum never builds up."
    remedies = [
        "Create the optimiser once, before the training loop, and call only `optimizer.zero_grad()` and "
        "`optimizer.step()` inside it.",
        "To change the learning rate during training, set `group['lr']` for each group in `optimizer.param_groups`, "
        "or use a scheduler (`torch.optim.lr_scheduler`), instead of making a new optimiser.",
    ]
    return text, remedies


def _explain_state_loaded(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}.load_state_dict(...)` replaced the model's weights at {e['state_loaded_steps']} of {e['steps']} "
        "steps, while the optimiser trains those same weights: each load overwrites what the optimiser's last update "
        "did. What the gradients teach survives only as far as the copy loaded back follows them; an exponential "
        "moving average (EMA) with decay 0.99 keeps 1% of each update."
    )
    remedies = [
        f"Keep the copy apart: update the EMA from `{f.where}` after each step, and load it into a separate model "
        "for evaluation or at the end of training (`torch.optim.swa_utils.AveragedModel` does this), never back "
        f"into `{f.where}` during training.",
    ]
    return text, remedies


def _explain_rate_overwritten(f: Finding):
    found = f.evidence["rate_overwritten"]
    group, scheduler = found["group"], found["scheduler"]
    text = (
        f"Parameter group {group}'s learning rate was set by hand to {fmt(found['set_by_hand'])} at step "
        f"{f.first_step}, and `{scheduler}`'s next `step()` put its own rate back, {fmt(found['put_back'])}, after "
        f"{found['steps_applied']} optimiser step(s): a scheduler recomputes every group's rate from the group's "
        "base rate (`initial_lr`, set when the scheduler was made) at each step, and knows nothing of the change."
    )
    if found["put_back"] == 0:
        text += " At a rate of 0 the group's gradients are computed at every step and never applied: it does not train."
    remedies = [
        f"Change the rate through the scheduler: set `{scheduler.lower()}.base_lrs[{group}]` (and the group's "
        f"`initial_lr`) as well, or give that group its own lambda (`LambdaLR(optimizer, [f_backbone, f_head])`) that "
        "turns it on at the step meant.",
        "Or freeze with `requires_grad_(False)` and unfreeze with `requires_grad_(True)`, the group kept at its rate.",
    ]
    return text, remedies


def explain_unapplied_gradient(f: Finding):
    if "rate_overwritten" in f.evidence:
        return _explain_rate_overwritten(f)
    if f.evidence.get("updates_undone"):
        return _explain_updates_undone(f)
    text, remedies = _explain_unapplied_kind(f)
    zeroed = f.evidence.get("zero_gradient_modules")
    if zeroed:
        shown = ", ".join(f"`{m}`" for m in zeroed[:4]) + (", ..." if len(zeroed) > 4 else "")
        text += (
            f" And the layers inside those modules ({shown}) get exactly zero gradient: a parameter left out that "
            "multiplies a branch, `x + gamma * branch(x)` with gamma started at 0 (LayerScale, ReZero), is never "
            "stepped, stays 0, and by the chain rule the branch behind it gets gamma times its gradient: 0. So "
            "neither gamma nor the branch ever learns."
        )
        remedies.insert(0, "Put the left-out parameters into a parameter group: with them stepped, gamma leaves 0.")
    return text, remedies


def _explain_reinitialised(f: Finding):
    again = f.evidence["reinitialised"]
    modules = ", ".join(f"`{m}`" for m in again["modules"][:4]) + (" and more" if len(again["modules"]) > 4 else "")
    text = (
        f"The weights of {modules} were initialised again (`torch.nn.init`, `reset_parameters()`) after training had "
        f"begun, {again['times']} times from step {again['first_step']} to step {again['last_step']}. Each time, "
        "every update the optimiser had applied is overwritten: the gradients were computed and applied, and then "
        "thrown away, and the loss starts over from a random network. An initialisation called inside the training "
        "loop does this (`model.apply(init_weights)` at the top of each epoch)."
    )
    if f.evidence.get("folded"):
        text += " The loss's stall (or divergence) is its doing, folded into this finding."
    remedies = [
        "Initialise once, before the training loop: move `model.apply(init_weights)` (or `reset_parameters()`) out of "
        "it."
    ]
    return text, remedies


def _explain_unapplied_kind(f: Finding):
    e = f.evidence
    if e.get("updated_share") is not None:
        return _explain_rounded_away(f)
    if e.get("since_step") is not None:
        return _explain_unapplied_since(f)
    if e.get("scattered"):
        return _explain_unapplied_scattered(f)
    if e.get("unregistered"):
        return _explain_unapplied_unregistered(f)
    if e.get("not_a_parameter"):
        return _explain_not_a_parameter(f)
    if e.get("reset_between_backward_passes"):
        return _explain_reset_between_backwards(f)
    if e.get("reinitialised"):
        return _explain_reinitialised(f)
    if e.get("recreated_each_step"):
        return _explain_parameter_made_in_forward(f)
    if e.get("optimizers_made_anew"):
        return _explain_optimizer_made_anew(f)
    if e.get("state_loaded_steps"):
        return _explain_state_loaded(f)
    text = (
        f"The {e['parameter_count']} parameter(s) of `{f.where}` had a gradient at every one of "
        f"{e['sampled_steps_checked']} sampled optimiser steps, but no optimiser steps them: the backward pass "
        "computes their gradient, and it is thrown away, so they keep their initial values (or whatever changes "
        "them by hand)."
    )
    outside = e.get("stepped_outside_model", 0)
    if e.get("idle_optimizer"):
        idle = e["idle_optimizer"]
        text += (
            f" `{idle}` holds them, but its `step()` is never called: their gradients are computed at every step, "
            "and the update that would use them never happens."
        )
        remedies = [
            f"Call `{idle}.step()` after `loss.backward()`, beside the other optimiser's `step()`.",
            "Or make one optimiser over every model that trains: "
            "`torch.optim.Adam(list(model_a.parameters()) + list(model_b.parameters()))`.",
        ]
        return text, remedies
    if e.get("inputs_optimised"):
        text += (
            f" The optimiser steps {e['inputs_optimised']} tensor(s) outside the model that the backward pass reaches, "
            "and none of the model's parameters: inputs optimised through a model kept fixed (style transfer's image, "
            "an adversarial perturbation), whose gradients are then computed at every step for nothing; or the "
            "model's parameters left out of the optimiser by mistake (given a temperature or an input alone)."
        )
        freeze = (
            "If the model is meant to stay as it is, freeze it, `model.requires_grad_(False)`: the backward pass then "
            "computes only the other tensors' gradient, and the doctor does not report it."
        )
        add = (
            "If the model is meant to learn, give the optimiser its parameters too: "
            "`torch.optim.Adam(list(model.parameters()) + [t])`."
        )
        return text, [add, freeze] if e.get("loss_stalled") else [freeze, add]
    if e.get("parametrized_after_optimizer"):
        text += (
            f" They are a parametrization's (`{e['parameters'][0]}`): `weight_norm` or `spectral_norm` (or "
            "`register_parametrization`) was applied after the optimiser was made. It moves the weight into new "
            "parameters and computes `weight` from them at every call; the optimiser still holds the old weight, "
            "which nothing reads any more, and steps it for nothing."
        )
        remedies = [
            "Apply the parametrization before making the optimiser: `weight_norm(module)` (from "
            "`torch.nn.utils.parametrizations`), then `torch.optim.Adam(model.parameters())`. Adding the new "
            "parameters with `add_param_group` fails where the module's bias is in the optimiser already.",
        ]
        return text, remedies
    if e.get("whole_model") and e.get("script_tensors"):
        names = ", ".join(f"`{name}`" for name in e["parameters"][:6])
        text += (
            " The model is made of tensors the script holds itself, and the optimiser steps none of them"
            + (f", only {outside} other tensor(s) the backward pass never reaches" if outside else "")
            + ": it was given copies (`torch.tensor(w, requires_grad=True)`, `w.clone()`, `w.detach()`), which the "
            "forward pass never uses, so the training changes nothing."
        )
        remedies = [f"Give the optimiser the tensors themselves: `torch.optim.Adam([{names.replace('`', '')}])`."]
        return text, remedies
    if e.get("whole_model"):
        text += (
            " Not one parameter of the model is stepped, so its training changes nothing"
            + (f", while the optimiser steps {outside} parameter(s) that belong to no watched model" if outside else "")
            + ": the optimiser was made over another model's parameters (the model made anew after the optimiser, "
            "a notebook cell run again, or a copy of it)."
        )
        remedies = [
            f"Make the optimiser from the model that is trained, once it is final: from `{f.where}.parameters()`, "
            "right before the loop."
        ]
        return text, remedies
    text += (
        " The usual cause: the module was made or replaced after the optimiser (a new head for fine-tuning), or the "
        "optimiser was given only some of the model's parameters."
    )
    if outside:
        text += (
            f" Meanwhile the optimiser steps {outside} parameter(s) that belong to no watched model: most likely those "
            "of the module this one replaced."
        )
    remedies = [
        "Make the optimiser after the model is final (after replacing its head), or add this module's parameters "
        f"to it: `optimizer.add_param_group({{'params': module.parameters()}})`, where `module` is `{f.where}`.",
        "If they are meant to stay fixed, freeze them with `requires_grad_(False)`: the backward pass then skips "
        "their gradients (less work), and the doctor does not report them.",
    ]
    return text, remedies


def _explain_unapplied_scattered(f: Finding):
    """A few parameters of each of many layers left out of the optimiser: its parameter groups miss them."""
    e = f.evidence
    shown = ", ".join(f"`{p}`" for p in e["parameters"][:6]) + (", ..." if e["parameter_count"] > 6 else "")
    text = (
        f"{e['parameter_count']} parameters spread over {len(e['modules'])} modules of `{f.where}` ({shown}) had a "
        f"gradient at every one of {e['sampled_steps_checked']} sampled optimiser steps, but no optimiser steps "
        "them: the backward pass computes their gradient, and it is thrown away, so they keep their initial values. "
        "Left out one or two per layer, while the rest of each layer trains, they fell through the optimiser's "
        "parameter groups: the filters that sort parameters into groups (weight decay or not, by name or by shape) "
        "together miss them."
    )
    if e.get("biases_and_norms"):
        text += (
            " All of them are biases or normalisation weights, what a no-weight-decay group is meant to hold: its "
            "condition is probably too narrow (`and` where `or` was meant: `n.endswith('bias') and 'norm' in n`)."
        )
    remedies = [
        "Fix the grouping condition, and check that the groups hold every parameter: `assert {id(p) for g in "
        "optimizer.param_groups for p in g['params']} == {id(p) for p in model.parameters() if p.requires_grad}`.",
        "A common split: `decay = [p for p in params if p.ndim >= 2]`, `no_decay = [p for p in params if p.ndim < "
        "2]` (biases and norm weights), which together hold every parameter.",
    ]
    return text, remedies


def _explain_rounded_away(f: Finding):
    """Half-precision weights whose updates round away."""
    e = f.evidence
    shares = ", ".join(f"`{name}` {pct(share)}" for name, share in e["updated_share"].items())
    ratio = e.get("update_ratio_median")
    text = (
        f"The weights are kept in {e['dtype']}, and the optimiser's step changed only part of the entries a nonzero "
        f"gradient pushed ({shares}: the median share over {e['sampled_steps']} sampled steps). "
        f"{e['dtype']} keeps {HALF_BITS.get(e['dtype'], 'few')} significant bits: a weight w moves only when its "
        "update is larger than about half the spacing between the representable numbers around it, "
        f"|w| / {HALF_STEP.get(e['dtype'], 'a few hundred')}"
        + (f"; this run's updates are {fmt(ratio)} of the weights (median update/weight ratio)" if ratio else "")
        + ", so the rest round back to the old value. The backward pass computes the gradient, and rounding throws "
        + ("it away: the layers barely train." if f.severity == "error" else "most of it away: they train slowly.")
    )
    remedies = [
        "Keep the weights in float32 and compute in half precision: `with torch.autocast(device_type, "
        "dtype=torch.bfloat16):` around the forward pass (mixed precision: the optimiser updates float32 weights).",
        "If the weights must stay in half precision, use an optimiser that keeps a float32 master copy (or "
        "stochastic rounding), or updates large enough to move them (Adam's are about the learning rate per weight).",
    ]
    return text, remedies


HALF_BITS = {"bfloat16": 8, "float16": 11}  # significant bits, the implicit one included
HALF_STEP = {"bfloat16": 256, "float16": 2048}  # |w| / this: about half the spacing of the numbers around w


def _explain_unapplied_unregistered(f: Finding):
    """Modules kept in a plain list or dict attribute: PyTorch never registered them, so the optimiser, made from
    `model.parameters()`, does not have them."""
    e = f.evidence
    held = e["unregistered"]
    wrapper = "nn.ModuleDict" if held["container"] == "dict" else "nn.ModuleList"
    text = (
        f"`{f.where}` is a plain Python {held['container']} on `{held['owner']}`, holding {held['modules']} module(s). "
        "PyTorch registers a module assigned to an attribute, or held in nn.ModuleList / nn.ModuleDict, but not one "
        f"inside a plain {held['container']}: `{held['owner']}.parameters()` does not return their "
        f"{e['parameter_count']} parameter(s), so the optimiser made from it does not have them (nor do `.to()`, "
        "`state_dict()` and `train()`/`eval()`). The forward pass uses them all the same, and the backward pass "
        f"computes their gradient at every step ({e['sampled_steps_checked']} sampled optimiser steps checked); "
        "no optimiser applies it, so these layers keep their random initial values while the rest of the model "
        "trains around them."
    )
    remedies = [
        f"Hold them in `{wrapper}`: `self.{f.where.rpartition('.')[2]} = {wrapper}(...)` instead of a plain "
        f"{held['container']}, then make the optimiser; they are then also saved, moved and switched to eval mode "
        "with the model.",
        "If they are meant to stay fixed, freeze them with `requires_grad_(False)`: the backward pass then skips "
        "their gradients.",
    ]
    return text, remedies


def _explain_unapplied_since(f: Finding):
    """Not applied from part-way through: before, the parameters had no gradient (frozen), since, one that no
    optimiser steps."""
    e = f.evidence
    if e.get("replaced_after_optimizer"):
        return _explain_replaced_after_optimizer(f)
    if e.get("model_made_anew"):
        return _explain_model_made_anew_after_optimizer(f)
    text = (
        f"From step {e['since_step']} on, the {e['parameter_count']} parameter(s) of `{f.where}` had a gradient at "
        f"every sampled optimiser step ({e['sampled_steps_since']} of them), but no optimiser steps them: the "
        "backward pass computes their gradient, and it is thrown away, so they keep the values they had. Before "
        "that step they had no gradient. The usual cause: the module was frozen when the optimiser was made over "
        "the trainable parameters only (`filter(lambda p: p.requires_grad, ...)`), then unfrozen part-way "
        "(`requires_grad_(True)`, for a second stage of fine-tuning) without being added to the optimiser."
    )
    remedies = [
        f"Add the unfrozen parameters to the optimiser when you unfreeze them: "
        f"`optimizer.add_param_group({{'params': module.parameters()}})`, where `module` is `{f.where}` (often "
        "with a lower learning rate than the head's).",
        "Or make the optimiser over all of the model's parameters from the start: step() skips a parameter without "
        "a gradient (a frozen one), and steps it once it is unfrozen.",
    ]
    return text, remedies


def _explain_model_made_anew_after_optimizer(f: Finding):
    """A second model met part-way, none of whose parameters is stepped while an earlier model's are."""
    e = f.evidence
    text = (
        f"From step {e['since_step']} on, every parameter of `{f.where}` ({e['parameter_count']} of them) had a "
        f"gradient at each sampled optimiser step ({e['sampled_steps_since']} of them), but no optimiser steps them: "
        f"`{f.where}` is a model made part-way through the run (rebuilt to resume from a checkpoint, or made anew), "
        "and the optimiser is still the one made over the model before it, whose parameters it keeps stepping. The "
        f"backward pass computes `{f.where}`'s gradient, and it is thrown away: it does not train."
    )
    remedies = [
        f"Make the optimiser over the new model, `optimizer = torch.optim.SGD({f.where}.parameters(), ...)`, then "
        "restore its state (`optimizer.load_state_dict(checkpoint['optimizer'])`): build the model, the optimiser "
        "over it, then load both.",
    ]
    return text, remedies


def _explain_replaced_after_optimizer(f: Finding):
    """A module put in place of another part-way, after the optimiser was made over the old one's parameters."""
    e = f.evidence
    text = (
        f"From step {e['since_step']} on, the {e['parameter_count']} parameter(s) of `{f.where}` had a gradient at "
        f"every sampled optimiser step ({e['sampled_steps_since']} of them), but no optimiser steps them, while it "
        f"steps {e['stepped_outside_model']} parameter(s) that belong to no watched model: `{f.where}` was replaced "
        "by a new module after the optimiser was made (a new head for fine-tuning, `model.fc = nn.Linear(...)`), and "
        "the optimiser still holds the old one's parameters, which get no gradient. The backward pass computes the "
        "new module's gradient, and it is thrown away: it keeps its initial values."
    )
    if e.get("old_parameters_frozen"):
        text += (
            " The old module's parameters were frozen with the rest of the model before it was replaced, so the "
            "optimiser steps nothing but frozen parameters: the freeze was right, the optimiser was made too early."
        )
    remedies = [
        "Make the optimiser after replacing the module: `model.fc = nn.Linear(...)`, then "
        "`optimizer = torch.optim.SGD(model.parameters(), ...)`.",
        f"Or add the new module's parameters to it: `optimizer.add_param_group({{'params': module.parameters()}})`, "
        f"where `module` is `{f.where}`.",
    ]
    return text, remedies


# --- the loss ---------------------------------------------------------------------------------------------------------
def _learning_rate_advice(e: dict) -> tuple[str, list[str]]:
    ratio = e.get("update_ratio_median")
    if ratio is None:
        return "", []
    text = f" Median update/weight ratio per step: {fmt(ratio)} (CS231n's rule of thumb: around 1e-3 is healthy)."
    verdict = e.get("learning_rate")
    remedies = []
    if verdict == "zero":
        text += (
            " Not one weight changed in any sampled step: the learning rate is zero (a schedule or warm-up that starts "
            "or ends at 0?), or the optimiser's steps are skipped."
        )
        remedies.append(
            "Print the learning rate the optimiser actually uses, `optimizer.param_groups[0]['lr']`, at a few steps; "
            "check the scheduler, and that `optimizer.step()` is reached."
        )
        return text, remedies
    if verdict == "clipped":
        norm, max_norm = e["grad_norm_before_clip"], e["clip_max_norm"]
        text += (
            f" `clip_grad_norm_` cut the gradient's norm from a median of {fmt(norm)} to max_norm={fmt(max_norm)} at "
            f"the sampled steps: every update is {fmt(norm / max_norm)} times smaller than the gradient asks, so the "
            "clipping, not the learning rate, holds the training back."
        )
        remedies.append(
            f"Raise max_norm to a few times the gradient's usual norm (about {fmt(5 * norm)} here), so that it cuts "
            "only the spikes; or drop the clipping."
        )
        return text, remedies
    if verdict == "scheduled to nothing" and e.get("lr_by_hand"):
        lr, given = e["lr_in_effect"], e["lr_given"]
        below = f"{fmt(given / lr)} times" if lr else "far"
        text += (
            f" No scheduler is attached, but the training loop sets the rate by hand, and holds it at {fmt(lr)} "
            f"(median), {below} below the {fmt(given)} of the first sampled step, from step "
            f"{e.get('lr_cut_from_step', 0)} on: the rate written by hand, not the rate given, holds the training "
            "back. A factor applied to the rate at every step compounds: `g['lr'] *= (step + 1) / warmup` multiplies "
            "the factors of all the steps so far, and falls towards 0 instead of rising to the rate given."
        )
        remedies.append(
            "Set the rate from the base rate at each step, not from the rate in effect: `g['lr'] = base_lr * "
            "min(1, (step + 1) / warmup)`; or let a scheduler do it (`LambdaLR(optimizer, lambda step: min(1, "
            "(step + 1) / warmup))`). Print `optimizer.param_groups[0]['lr']` at a few steps."
        )
        return text, remedies
    if verdict == "scheduled to nothing":
        lr, given = e["lr_in_effect"], e["lr_given"]
        below = f"{fmt(given / lr)} times" if lr else "far"
        text += (
            f" A learning-rate scheduler holds the rate at {fmt(lr)} (median), {below} below the {fmt(given)} the "
            f"optimiser was given, at every sampled step from step {e.get('lr_cut_from_step', 0)} on: the schedule, "
            "not the rate given, is what holds the training back."
        )
        if e.get("lr_exactly_zero"):
            text += (
                " The rate in effect is exactly 0, so no weight moves at all: a warm-up that starts from 0 "
                "(`LambdaLR(optimizer, lambda step: step / warmup)`) whose `scheduler.step()` is never called stays "
                "at its first value, 0."
            )
            remedies.append(
                "Call `scheduler.step()` after each `optimizer.step()` (per batch, for a warm-up counted in steps), "
                "and check that the schedule's first value is not 0 if it is meant to be stepped per epoch."
            )
        if e.get("plateau_calls"):
            calls, cuts = e["plateau_calls"], e["plateau_cuts"]
            text += (
                f" It is a `ReduceLROnPlateau`, stepped {calls} times and cutting the rate {cuts} times: its "
                "`patience` counts `scheduler.step()` calls, so stepped on every batch's loss, a few noisy batches "
                "without a new best are enough for a cut, and the cuts compound."
            )
            remedies.append(
                "Call `scheduler.step(val_loss)` once per epoch, on a validation (or epoch-mean) loss, not on each "
                "batch's loss."
            )
        remedies.append(
            "Check the scheduler: a `LambdaLR` or `MultiplicativeLR` lambda returns a factor of the given rate "
            "(`lambda epoch: 0.95 ** epoch`), not a rate; a step decay's `step_size` counts `scheduler.step()` calls "
            "(per batch or per epoch, as you call it). Print `optimizer.param_groups[0]['lr']` at a few steps."
        )
        return text, remedies
    if verdict == "far too low" and e.get("update_ratio_max") is not None:
        text += f" Even the layer that moves most changes by only {fmt(e['update_ratio_max'])} of its size per step."
    if verdict:
        factor = 1e-3 / (ratio or e.get("update_ratio_max") or 1e-3)  # (a median of 0: most layers never move)
        text += f" The learning rate is {verdict}."
        remedies.append(
            f"Scale the learning rate by about {fmt(factor)} (to bring the ratio near 1e-3), or run a learning-rate "
            "range test: increase it geometrically over a short run and pick a value a few times below where the "
            "loss turns up."
        )
    return text, remedies


def _explain_scheduler_made_anew(f: Finding):
    e = f.evidence
    steps = ", ".join(str(step) for step in e["built_at_steps"][:6])
    text = (
        f"A new `{e['scheduler']}` was built over the training optimiser {e['schedulers_made_anew']} times after the "
        f"training began (at steps {steps}, ...). A scheduler counts its own steps from 0, so each new one starts the "
        "schedule from its beginning: the rate runs through the schedule's first stretch again and again, and what "
        "comes later in it (the peak after a warm-up, the decay) is never reached."
    )
    if e.get("lr_highest") is not None:
        text += (
            f" The highest rate seen on the sampled steps was {fmt(e['lr_highest'])}, for {fmt(e['lr_given'])} given."
        )
    remedies = [
        "Build the scheduler once, before the training loop, and call `scheduler.step()` inside it (once per step or "
        "per epoch, as its schedule counts).",
    ]
    return text, remedies


def _explain_misspelt_setting(f: Finding):
    found = f.evidence["misspelt_setting"]
    group, key, meant = found["param_group"], found["setting"], found["meant"]
    given, in_effect = found["given"], found["in_effect"]
    what = "learning rate" if meant == "lr" else "momentum"
    pace = "slower" if given > in_effect else "faster"
    text = (
        f"Parameter group {group} of the optimiser was given its {what} as `{key}={fmt(given)}`, a key the optimiser "
        f"does not know: torch.optim keeps any key in a group's dict and reads only its own (`{meant}`), without an "
        f"error. That group runs at the optimiser's default `{meant}={fmt(in_effect)}` instead, "
        + (f"{fmt(max(given, in_effect) / min(given, in_effect))} times " if min(given, in_effect) > 0 else "")
        + f"{pace} than written."
    )
    remedies = [
        f"Write `'{meant}': {fmt(given)}` in that group (`{{'params': ..., '{meant}': {fmt(given)}}}`), and print "
        f"`[g['{meant}'] for g in optimizer.param_groups]` to check each group's value.",
    ]
    return text, remedies


def _explain_swapped_betas(f: Finding):
    beta1, beta2 = f.evidence["adam_betas"]
    text = (
        f"The optimiser's betas are ({fmt(beta1)}, {fmt(beta2)}): beta1 > beta2, the wrong way round. Adam's step is "
        "lr * m / sqrt(v), where m averages the gradient over about 1 / (1 - beta1) steps and v its square over about "
        "1 / (1 - beta2). With v the shorter memory, v falls as soon as the recent gradients are small while m still "
        "holds the older, larger ones, and the step grows far past lr: the weights are thrown off again and again."
    )
    text += _folded_sentence(f.evidence)
    remedies = [
        "Swap them back: `betas=(0.9, 0.999)` (the default; beta1 for the gradient's average, beta2 for its "
        "square's), or (0.9, 0.95) as in many transformer recipes.",
    ]
    return text, remedies


def _explain_momentum_not_decaying(f: Finding):
    momentum, dampening = (
        f.evidence["momentum_not_decaying"]["momentum"],
        f.evidence["momentum_not_decaying"]["dampening"],
    )
    if dampening >= 1:
        memory = "with dampening 1 no gradient ever enters it, and the weights keep the first step's direction"
    else:
        memory = (
            "it is the sum of every gradient so far, never forgotten: the steps grow with the run, and keep "
            "pushing the way the weights went long after the gradient turned"
        )
    text = (
        f"The optimiser's momentum is {fmt(momentum)} (dampening {fmt(dampening)}). Its velocity is v = momentum * v + "
        f"(1 - dampening) * g, and a momentum of 1 or more never lets v decay: {memory}. Momentum averages the "
        "gradient over about 1 / (1 - momentum) steps, which needs a momentum below 1 (0.9 is the usual value)."
    )
    text += _folded_sentence(f.evidence)
    remedies = [
        "Give the momentum as a factor below 1, not as a switch: `SGD(params, lr, momentum=0.9)` (0.8 to 0.99).",
    ]
    return text, remedies


def _explain_loss_without_floor(f: Finding):
    e = f.evidence
    text = (
        f"The loss started at {fmt(e['loss_first'])} and fell to {fmt(e['loss_lowest'])} (below -1e6 from step "
        f"{f.first_step}): it is not converging, it runs off. A loss that can fall without end has a term with no "
        "lower bound, and gradient descent follows that term instead of fitting the data: its gradient grows as it "
        "falls, the weights it reaches grow with it, and the layers after them die or saturate. No likelihood or "
        "divergence of a well-posed problem does this: a KL divergence is never negative, a cross-entropy never "
        "below 0, a density's log-likelihood reaches some thousands of nats. Most often a sign: a KL term written "
        "`+0.5 * sum(1 + logvar - mu**2 - exp(logvar))` (that is minus the KL), a log-likelihood added where its "
        "negative belongs, a variance or scale learnt freely inside a log."
    )
    remedies = [
        "Print each term of the loss for a few steps: the one heading to minus infinity has its sign flipped or no "
        "floor. A VAE's KL is `-0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())`.",
        "Give a learnt scale a floor (`F.softplus(raw) + 1e-3`) where the likelihood's log reads it.",
    ]
    return text, remedies


def explain_diverging_loss(f: Finding):
    e = f.evidence
    if e.get("misspelt_setting"):
        return _explain_misspelt_setting(f)
    if e.get("negated"):
        return _explain_negated_loss(f)
    if e.get("maximized"):
        return _explain_maximized_loss(f)
    if e.get("negative_learning_rate") is not None:
        return _explain_negative_learning_rate(f)
    if e.get("adam_betas"):
        return _explain_swapped_betas(f)
    if e.get("momentum_not_decaying"):
        return _explain_momentum_not_decaying(f)
    if e.get("penalty_subtracted"):
        return _explain_subtracted_penalty(f)
    if e.get("log_probabilities_added"):
        return _explain_log_probability_added(f)
    if "target_log_probability_last_third" in e:
        return _explain_wrong_class_rewarded(f)
    if e.get("loss_function") is not None:
        return _explain_loss_below_zero(f)
    if e.get("falls_without_bound"):
        return _explain_loss_without_floor(f)
    if "input_logsumexp_over_classes" in e:
        return _explain_ctc_raw_scores(f)
    if e.get("loss_highest") is not None:  # it blew up and never recovered
        text = (
            f"The loss jumped from {fmt(e['loss_initial'])} at the start to a mean of {fmt(e['loss_highest'])} "
            f"(from step {e['blew_up_at_step']}), and came back only to {fmt(e['loss_end'])}, no better than where it "
            "started: an update far too large threw the weights off, and the run never got over it (units that died "
            "in the jump stay dead). The mark of a learning rate far too high for this model."
        )
        advice, remedies = _learning_rate_advice(e) if e.get("learning_rate") == "far too high" else ("", [])
        # (the update ratios measured after the jump are those of a broken network: no verdict from them)
    elif e.get("loss_initial") is not None:  # (its lowest stretch was its first: it never fell)
        text = (
            f"The loss never fell: it rose from {fmt(e['loss_initial'])} at the first step to a mean of "
            f"{fmt(e['loss_end'])} over the last stretch of the run (a mean of {fmt(e['loss_start'])} over the first, "
            f"up to step {e['lowest_at_step']})."
        )
        advice, remedies = _learning_rate_advice(e)
    else:
        text = (
            f"The loss fell to {fmt(e['loss_lowest'])} (around step {e['lowest_at_step']}) and then rose to "
            f"{fmt(e['loss_end'])}, above where it started ({fmt(e['loss_start'])})."
        )
        advice, remedies = _learning_rate_advice(e)
    text += advice
    if e.get("micro_batches_summed"):
        k = e["micro_batches_summed"]
        text += (
            f" Each optimiser step comes after {fmt(k)} backward passes whose gradients add up, and the losses were "
            f"not divided by {fmt(k)}: every step applies the sum of {fmt(k)} micro-batches' gradients, {fmt(k)} times "
            f"their mean, as if the learning rate were {fmt(k)} times larger."
        )
        remedies.append(
            f"Divide each micro-batch's loss by the number accumulated, `(loss / {fmt(k)}).backward()`, so that a step "
            "applies their mean; or lower the learning rate as many times."
        )
    if e.get("loss_summed_over"):
        n = e["loss_summed_over"]
        text += (
            f' The loss is `{e["summed_loss"]}` with `reduction="sum"`, summed over {n} terms: its gradient is {n} '
            f"times the mean's, and each plain gradient step with it, as if the learning rate were {n} times larger."
        )
        remedies.insert(
            0,
            f'Average the loss (`reduction="mean"`, the default), or divide the learning rate by {n}: a rate '
            "tuned for a mean is far too high for a sum.",
        )
    if e.get("lr_raised") and e["lr_raised"].get("by_hand"):
        raised = e["lr_raised"]
        text += (
            f" The training loop raised the learning rate by hand (`param_groups[...]['lr']` set in the loop; no "
            f"scheduler) from {fmt(raised['lr_given'])} at the first sampled step to {fmt(raised['lr_at_onset'])} by "
            f"then, and kept raising it to the end of the run ({fmt(raised['lr_last'])}): each step scales the "
            "gradient by that rate, so the steps grew until they overshot. A warm-up that multiplies the rate at every "
            "step and is never capped (`g['lr'] *= 1.02`) does this."
        )
        remedies.insert(
            0,
            "Cap the warm-up at its peak (`g['lr'] = min(g['lr'] * 1.02, peak_lr)`, or compute the rate from the step: "
            "`peak_lr * min(1, (step + 1) / warmup_steps)`), or use a scheduler (`LambdaLR`, `LinearLR`).",
        )
    elif e.get("lr_raised"):
        raised = e["lr_raised"]
        text += (
            f" A learning-rate scheduler raised the rate from the {fmt(raised['lr_given'])} it started from "
            f"(`initial_lr`) to {fmt(raised['lr_at_onset'])} by then, and kept raising it to the end of the run "
            f"({fmt(raised['lr_last'])}): each step scales the gradient by that rate, so the steps grew until they "
            "overshot. A warm-up factor never capped at 1 does this (`lambda s: (s + 1) / warmup` keeps growing after "
            "the warm-up), and so does a schedule whose peak is too high."
        )
        remedies.insert(
            0,
            "Lower the schedule's peak: cap a LambdaLR warm-up's factor at 1 (`LambdaLR(optimizer, lambda s: "
            "min(1.0, (s + 1) / warmup))`); for OneCycleLR or CyclicLR, a lower `max_lr`; for ExponentialLR, a gamma "
            "of 1 or less.",
        )
    if e.get("weights_grew_by"):
        text += (
            f" The updates have a normal size, and yet the weights grew {fmt(e['weights_grew_by'])} times over the run "
            "(the median over the layers): steps of a normal size that keep pointing the same way as the weights "
            "compound, as a weight decay applied with the wrong sign does (`w.mul_(1 + lr * wd)` where `1 - lr * wd` "
            "is meant: every step adds a share of the weights to themselves). Gradient steps do not keep that "
            "direction; a loss whose targets move with the model does not grow the weights so."
        )
        remedies.insert(
            0,
            "Check the update written by hand (a custom optimiser's weight decay: `p.mul_(1 - lr * wd)`, or "
            "`p.add_(p, alpha=-lr * wd)`), or use `torch.optim.AdamW` / `SGD(weight_decay=...)`.",
        )
    elif e.get("updates_normal_size"):
        text += (
            " The updates have a normal size, so a learning rate too high is an unlikely cause: a loss whose targets "
            "move with the model rises while it learns (the returns of a reinforcement-learning agent that lives "
            "longer, a bootstrapped value target), and so does one over data whose distribution shifts."
        )
        remedies.append(
            "If the targets move with the model (RL returns, TD targets), judge progress by the task's own measure "
            "(episode return, accuracy), not this loss; normalise the returns or advantages if they grow large."
        )
    remedies += [
        "Lower the learning rate (10x is a good first try), add warm-up, and clip the gradient norm.",
    ]
    return text, remedies


def _explain_decayed_rate(f: Finding):
    e = f.evidence
    decay, given, now = e["lr_decay"], e["lr_given"], e["lr_in_effect"]
    text = (
        f"The optimiser decays its own learning rate: its `lr_decay` is {fmt(decay)}, so step t takes "
        f"lr / (1 + (t - 1) * {fmt(decay)}), and the rate given, {fmt(given)}, is down to {fmt(now)} "
        f"(1/{fmt(given / now)} of it) by the last sampled step. Each update is the gradient's step scaled by that "
        "rate: the weights all but stop, however much gradient arrives. An `lr_decay` this large is rarely meant: "
        "`Adagrad(params, 0.05, 0.9)`, an SGD line (lr, momentum) whose class was renamed, passes the momentum as "
        "Adagrad's third argument, `lr_decay`."
    )
    text += _folded_sentence(e)
    remedies = [
        "Pass Adagrad's arguments by name, and drop the decay: `torch.optim.Adagrad(params, lr=0.05)` (Adagrad has no "
        "momentum; it already shrinks each weight's step as that weight's squared gradients add up).",
        "If a decaying rate is wanted, use a scheduler (`torch.optim.lr_scheduler.CosineAnnealingLR`) whose end you "
        "can see, or an `lr_decay` of about 1 / (the number of steps), which halves the rate by the end.",
    ]
    return text, remedies


def _explain_softmax_over_batch(f: Finding):
    e = f.evidence
    batch, classes = e["logits_shape"]
    text = (
        f"The loss takes a log_softmax of `{e['classes_from']}`'s outputs, shape ({batch}, {classes}), over dim "
        f"{e['softmax_dim']}: over the {batch} examples of the batch, not over the {classes} classes of each example. "
        "Each class's score then competes with the same class's scores for the other examples, and the gradient "
        "teaches which example of the batch is most likely to be of each class, not which class each example is: an "
        "example's prediction depends on the batch it comes in."
    )
    text += _folded_sentence(e)
    remedies = [
        "Normalise over the classes: `torch.log_softmax(logits, dim=1)`, or give the logits to "
        "`F.cross_entropy(logits, y)`, which does.",
    ]
    return text, remedies


def _explain_classes_on_another_axis(f: Finding):
    e = f.evidence
    if e.get("softmax_over_batch"):
        return _explain_softmax_over_batch(f)
    length, classes = e["logits_shape"][1], e["logits_shape"][-1]
    made = (
        f"its steps' scores were stacked on dim 1, each step's {classes} scores (the classes) on the last axis"
        if e.get("stacked")
        else f"a Linear puts its {classes} outputs (the classes) on the last axis"
    )
    text = (
        f"`cross_entropy` was given the logits of `{e['classes_from']}` as they are, shape {tuple(e['logits_shape'])}: "
        f"{made}, and `cross_entropy` takes the classes on "
        f"dim 1, reading the input as (N, C, ...). Axis 1 here holds {length} positions, as many as the classes, so no "
        "shape error stopped it: the softmax runs over the positions of each sequence, and each class's score competes "
        "with the same class's scores at the other positions instead of with the other classes. The gradient teaches "
        "where in the sequence each class is most likely, not which class each position holds. (If a softmax over "
        "the positions is meant, as in learning to sort, where each slot picks one of the items, this is no leak.)"
    )
    text += _folded_sentence(e)
    remedies = [
        "Put the classes on dim 1: `F.cross_entropy(logits.transpose(1, 2), y)`, or flatten the positions into the "
        f"batch: `F.cross_entropy(logits.reshape(-1, {classes}), y.reshape(-1))`.",
    ]
    return text, remedies


def _explain_confined_logits(f: Finding):
    e = f.evidence
    c, classes, best = e["logits_within"], e["classes"], e["max_target_probability"]
    text = (
        f"`cross_entropy`'s scores are cosine similarities (dot products of rows scaled to length 1, each within "
        f"[-1, 1]) times {fmt(c)}: every score lies within +-{fmt(c)}, whatever the weights. The softmax over "
        f"{classes} classes can then give the target class at most {fmt(best)} of the probability, so the loss "
        f"cannot fall below {fmt(e['loss_floor'])} (at chance it is {fmt(e['loss_at_chance'])}), and the gradient "
        f"reaching the embeddings is scaled by {fmt(c)} on its way back: the softmax stays near uniform and the loss "
        "nearly flat. A temperature divides the similarities (CLIP's 0.07 spreads the scores over +-14.3); "
        "multiplied, it squeezes them."
    )
    if e.get("learnt_scale") == "div":  # (a learnt scale that divides: the training pushes it the wrong way)
        text += (
            f" Here the similarities are divided by a learnt scale, now {fmt(1 / c)}, where CLIP's `logit_scale.exp()` "
            "multiplies them: a scale started large (CLIP's 1 / 0.07) squeezes the scores instead of spreading them. "
            "The training can only shrink it, slowly, and a clamp of `logit_scale` at 0 or more (CLIP's) holds the "
            "divisor at 1 or above: the scores stay within +-1 at best."
        )
        remedies = [
            "Multiply by the learnt scale instead of dividing: `logits = self.logit_scale.exp() * z1 @ z2.T`, with "
            "`logit_scale` started at log(1 / 0.07) and clamped to at most log(100), as CLIP does.",
        ]
        return text + _folded_sentence(e), remedies
    if c < 1:  # (divided by a temperature above 1: the scores squeezed, not spread)
        text += (
            f" Here the similarities were divided by a temperature of {fmt(1 / c)}: a temperature is a small number, "
            "0.05 to 0.5, so that dividing spreads the scores."
        )
    text += _folded_sentence(e)
    remedies = [
        "Divide by a small temperature: `logits = z1 @ z2.T / tau` (tau 0.05-0.1), or learn the scale as CLIP does: "
        "`logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))`, `logits = logit_scale.exp() * z1 @ z2.T`.",
        "For a cosine classifier, scale the cosines by s = 10-30 (NormFace, ArcFace).",
    ]
    return text, remedies


def _explain_eps_dominates(f: Finding):
    e = f.evidence
    eps, size, shrunk = e["optimizer_eps"], e["gradient_entry_rms"], e["steps_shrunk_by"]
    text = (
        f"The optimiser divides each step by sqrt(v) + eps, where sqrt(v) is the running size of each weight's "
        f"gradient, about {fmt(size)} for a typical entry here; its eps is {fmt(eps)}, {fmt(shrunk)} times larger. So "
        f"the denominator is eps, and every step is lr * m / eps instead of about lr: {fmt(shrunk)} times smaller, on "
        "every weight alike. Adam (or RMSprop) then works as plain SGD with a learning rate divided by eps, "
        "and the weights barely move."
    )
    text += _folded_sentence(e)
    remedies = [
        "Use the default eps (Adam's 1e-8), or at most about a tenth of the gradients' size (1e-6 to 1e-4 where a "
        "larger one is wanted for stability).",
    ]
    return text, remedies


def _explain_batch_as_sequence(f: Finding):
    e = f.evidence
    shape, batch = e["input_shape"], e["batch"]
    text = (
        f"`{f.where}` takes its input as (sequence, batch, features) (`batch_first=False`, PyTorch's default) and was "
        f"given {tuple(shape)}, whose first axis holds {batch} entries, as many as the targets (the examples), and "
        f"whose second holds {shape[1]}: it takes the batch's examples for the {batch} steps of {shape[1]} sequences. "
        + (
            "The recurrence then runs across the examples, each step's state carried from one example to the next, "
            if e.get("recurrent")
            else "Attention then mixes the examples with one another, "
        )
        + "so each prediction depends on the other examples of the batch, and the gradient of each example's loss "
        "flows into the others' inputs: the model learns relations between unrelated examples instead of within "
        "each sequence."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Create `{f.where}` with `batch_first=True` (inputs (batch, sequence, features)), or give it `x.transpose(0, "
        "1)` and transpose its output back.",
    ]
    return text, remedies


def _explain_one_class_over_pairs(f: Finding):
    e = f.evidence
    n, target = e["rows"], e["target"]
    text = (
        f"`cross_entropy` scores a ({n}, {n}) similarity of two batches, `z1 @ z2.T`, where row i holds example i "
        f"against every example of the other side and its own pair sits on the diagonal, but every row's target is "
        f"class {target}: each example is asked to match example {target} of the batch, whoever it is, and to push its "
        "real pair away. The batch's examples come in a new order every step, so there is nothing to learn: the "
        "loss sits near log N and the embeddings learn no pairing."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Give each row its own pair for target: `labels = torch.arange({n}, device=logits.device)` (CLIP, InfoNCE). "
        "A single class 0 is right only when the positive is put in column 0 on purpose, as MoCo's `cat([l_pos, "
        "l_neg], 1)`.",
    ]
    return text, remedies


def _explain_softmax_over_the_examples(f: Finding):
    e = f.evidence
    shape, batch = tuple(e["input_shape"]), e["batch"]
    text = (
        f"`{f.where}` normalises over dim 0 of a tensor of shape {shape}, whose first axis holds the batch's {batch} "
        "examples: each column's weights sum to 1 across the examples, not each example's across its own entries. "
        "An example's weights then depend on which other examples share its batch (at inference one at a time, each "
        "weight is 1), and the gradient of each example's loss flows into the others' scores: what it learns in "
        "training is not what it computes alone."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Normalise over the example's own axis: `torch.softmax(scores, dim=1)` (or `dim=-1`) for {shape}.",
        "Check it: an example's output must not change when the other examples of its batch do.",
    ]
    return text, remedies


def _explain_examples_mixed(f: Finding):
    e = f.evidence
    if e.get("softmax_dim") == 0:
        return _explain_softmax_over_the_examples(f)
    if e.get("integer_mask"):
        return _explain_integer_mask(f)
    if e.get("summed_over_batch"):
        return _explain_batch_summed_into_each(f)
    if e.get("column_added_to_row"):
        return _explain_column_added_to_row(f)
    shape, out, batch = tuple(e["input_shape"]), tuple(e["output_shape"]), e["batch"]
    if e.get("swapped_by_view"):
        return _explain_axes_swapped_by_view(f)
    axis = shape.index(batch, 1)
    text = (
        f"`{f.where}` turns a tensor of shape {shape}, whose {batch} examples lie along axis {axis}, into {out} "
        "without moving that axis first. A view reads the values in memory order, so row i of the result is not "
        f"example i: it holds pieces of {'several examples' if axis else 'the batch'} (the rows before axis {axis} "
        "run over the whole batch first). Each prediction is made from other examples' features, and the gradient of "
        "each example's loss flows into the others': the model cannot learn a mapping from an input to its label."
    )
    text += _folded_sentence(e)
    order = ", ".join(str(i) for i in [axis] + [i for i in range(len(shape)) if i != axis])
    remedies = [
        f"Move the examples' axis first, then reshape: `x.permute({order}).reshape({batch}, -1)`; for a "
        "bidirectional RNN's last hidden states h_n (layers * 2, N, H), `torch.cat([h_n[-2], h_n[-1]], dim=1)`.",
    ]
    return text, remedies


def _explain_column_added_to_row(f: Finding):
    e = f.evidence
    batch, module = e["batch"], e["module"]
    text = (
        f"`{f.where}` combines `{module}`'s output of shape ({batch}, 1) with a tensor of shape ({batch},): "
        f"broadcasting makes ({batch}, {batch}), entry [a, b] holding example a's value from `{module}` and example "
        f"b's from the other, every example against every other. What follows works on {batch} x {batch} values "
        f"where {batch} were meant, and the backward sums each example's gradient over the whole batch's "
        f"combinations: `{module}` learns from every example's error at once, not from its own."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Give both the same shape: `{module}(...).squeeze(-1)` (or `.view(-1)`) to make it ({batch},), or "
        f"`.unsqueeze(-1)` the other to ({batch}, 1); assert the prediction's shape before the loss.",
    ]
    return text, remedies


def _explain_batch_summed_into_each(f: Finding):
    e = f.evidence
    shape, batch, reduction = tuple(e["input_shape"]), e["batch"], e["reduction"]
    text = (
        f"`{f.where}` reduces a product of shape {shape} over every axis, the {batch} examples' axis too, and the one "
        f"number it gives is added to each of the {batch} rows of {tuple(e['output_shape'])}: every example's "
        f"prediction holds the whole batch's {reduction} of products, not its own. Its backward sends each "
        "example's error, unchanged, to every other example's factors (the derivative of a sum is 1 to each of its "
        "terms), so no factor learns its own example's part."
    )
    text += _folded_sentence(e)
    axes = "1" if len(shape) == 2 else "(" + ", ".join(str(axis) for axis in range(1, len(shape))) + ")"
    remedies = [
        f"Reduce over the features only, keeping one value per example: `.{reduction}(dim={axes})` (for a dot "
        "product of rows, `(a * b).sum(dim=1)` or `torch.einsum('nk,nk->n', a, b)`).",
    ]
    return text, remedies


def _explain_integer_mask(f: Finding):
    e = f.evidence
    text = (
        f"`{f.where}` indexes with a mask of {e['length']} integers, 0s and 1s ({e['ones']} ones), as long as the axis "
        "it indexes: an integer tensor is read as row numbers, so `x[mask]` picks rows 0 and 1 again and again, "
        f"{e['length']} rows in all, not the {e['ones']} rows where the mask is 1. The loss is computed on two rows "
        "(and on targets picked the same way), and every other example gets no gradient."
    )
    text += _folded_sentence(e)
    remedies = [
        "Make the mask boolean: `mask = torch.zeros_like(x, dtype=torch.bool)` (or `mask.bool()` where it is used); "
        "`x[mask]` then keeps the rows where it is True.",
    ]
    return text, remedies


def _explain_axes_swapped_by_view(f: Finding):
    e = f.evidence
    shape, out, batch = tuple(e["input_shape"]), tuple(e["output_shape"]), e["batch"]
    order = ", ".join(str(i) for i in [1, 0] + list(range(2, len(shape))))
    text = (
        f"`{f.where}` turns a tensor of shape {shape}, its {batch} examples along axis 0, into {out}, with the "
        "examples along axis 1: the two axes look swapped, but a view does not move values, it reads them in "
        f"memory order. Entry [t, n] of the result is not position t of example n: each of the {batch} columns "
        "holds pieces of several examples. A layer that works across axis 0 (attention or a recurrent layer given "
        "its input sequence-first) mixes the examples with one another, and each example's loss sends gradient "
        "into the others' features."
    )
    text += _folded_sentence(e)
    remedies = [
        f"Swap the axes instead of viewing: `x.transpose(0, 1)` (or `x.permute({order})`); or build the layer with "
        "`batch_first=True` and give it (N, T, ...) as it is.",
    ]
    return text, remedies


def _explain_plateau_mode(f: Finding):
    e = f.evidence
    mode = e["plateau_mode"]
    other, worse, better = ("max", "rose", "fell") if mode == "min" else ("min", "fell", "rose")
    text = (
        f'`ReduceLROnPlateau(mode="{mode}")` counts a metric that {"falls" if mode == "min" else "rises"} as an '
        f"improvement, but the metric it was given {worse} on {e[f'metric_{worse}']} of its {e['calls']} calls and "
        f"{better} on {e[f'metric_{better}']} (from {fmt(e['metric_first'])} to {fmt(e['metric_last'])}): every "
        "improvement reads as none, so every `patience` + 1 calls it cuts the learning rate, on a schedule, however "
        f"well the training goes. It cut it {e['lr_cuts']} times. The smaller steps slow the training down to a "
        "stall that has nothing to do with the model."
    )
    kind = "an accuracy (or pass it the validation loss instead)" if mode == "min" else "a loss"
    remedies = [
        f'Give the scheduler the mode its metric needs: `ReduceLROnPlateau(optimizer, mode="{other}")` for {kind}.'
    ]
    return text, remedies


def _explain_summed_beside_a_mean(f: Finding):
    found = f.evidence["summed_beside_a_mean"]
    text = (
        f'`{found["summed"]}` is called with `reduction="sum"` over {found["terms"]} terms and added to '
        f"`{found['beside']}`, which takes the mean: the gradient of a sum is its terms' count times that of their "
        f"mean, so, with the weights given, the summed term pulls {fmt(found['weight_ratio'])} times as hard. In every "
        f"layer the two share, the gradient of `{found['beside']}` is a rounding error beside it, and what that loss "
        "was meant to teach (often the task itself) is barely learnt. An adaptive optimiser (Adam) rescales the "
        "total, not the share."
    )
    remedies = [
        f'Use the same reduction for both (`reduction="mean"` for `{found["summed"]}`), or divide the sum by its '
        f"{found['terms']} terms, and weigh the terms on purpose (a coefficient tuned on held-out data).",
    ]
    return text, remedies


def _explain_same_ids_embedded(f: Finding):
    first, second = f.evidence["same_ids_embedded"]
    text = (
        f"The lookups of `{first}` and `{second}` are added, and both read one and the same index tensor: each row "
        "is the sum of two tables' rows for the same ids, which one table holds as well. If one of them was meant "
        f"for the positions (`{second}(torch.arange(T))`), the model is never told where a token stands: attention "
        "without positions sees a bag of tokens, and order-dependent tasks stall."
    )
    if f.evidence.get("folded"):
        text += " The loss's stall is its doing, folded into this finding."
    remedies = [
        f"Look up the positions: `{second}(torch.arange(x.shape[1], device=x.device))[None]` (broadcast over the "
        "batch), added to the tokens' embedding.",
    ]
    return text, remedies


def explain_stalled_loss(f: Finding):
    e = f.evidence
    if "summed_beside_a_mean" in e:
        return _explain_summed_beside_a_mean(f)
    if "same_ids_embedded" in e:
        return _explain_same_ids_embedded(f)
    if "rate_overwritten" in e:
        return _explain_rate_overwritten(f)
    if e.get("schedulers_made_anew"):
        return _explain_scheduler_made_anew(f)
    if e.get("misspelt_setting"):
        return _explain_misspelt_setting(f)
    if "base_rate_entropy" in e:
        return _explain_base_rate(f)
    if "plateau_mode" in e:
        return _explain_plateau_mode(f)
    if e.get("batch_as_sequence"):
        return _explain_batch_as_sequence(f)
    if e.get("examples_mixed"):
        return _explain_examples_mixed(f)
    if "optimizer_eps" in e:
        return _explain_eps_dominates(f)
    if "logits_within" in e:
        return _explain_confined_logits(f)
    if e.get("one_class_over_pairs"):
        return _explain_one_class_over_pairs(f)
    if "lr_decay" in e:
        return _explain_decayed_rate(f)
    if "classes_from" in e:
        return _explain_classes_on_another_axis(f)
    if e.get("across") == "broadcast":
        return _explain_broadcast(f)
    if e.get("across") == "units":
        return _explain_symmetric_units(f)
    run = "the run" if e.get("training_began") is None else f"the training begun at step {e['training_began']}"
    first, last = e["loss_first_third"], e["loss_last_third"]
    if e.get("fell_early"):
        early = e["fell_early"]
        text = (
            f"The loss fell from {fmt(early['loss_initial'])} at the first step to about {fmt(last)} by step "
            f"{early['plateau_from_step']}, and has not improved since (the mean over the last third of {run} is "
            f"within 2% of the mean over the first third, {fmt(first)}). Either the run has converged to the floor "
            "of a noisy task (then nothing leaks: the rest of the run is spent for nothing), or it is stuck at a "
            "trivial solution, such as predicting how often each class occurs."
        )
    elif e.get("stopped_moving_at_step") is not None:
        text = (
            f"The loss fell (a mean of {fmt(first)} over the first third of {run}, {fmt(last)} over the last), but "
            f"from step {e['stopped_moving_at_step']} on the weights barely move, and the loss only wanders with the "
            "batches: training stopped making progress part-way. A learning-rate schedule that cut the rate to "
            "almost nothing does this (`ReduceLROnPlateau` given `mode='max'` for a loss, a step decay applied every "
            "batch instead of every epoch)."
        )
    elif e.get("loss_flat", True):
        text = (
            f"The mean loss over the last third of {run} ({fmt(last)}) is within 2% of the mean over the first third "
            f"({fmt(first)}): training is not making progress."
        )
    else:  # (judged stalled because the weights do not move: the loss only wanders with the batches)
        text = (
            f"The weights did not change at the sampled steps, so the loss of {run} (mean {fmt(first)} over its first "
            f"third, {fmt(last)} over its last) moves only with the batches: training is not making progress."
        )
    advice, remedies = _learning_rate_advice(e)
    text += advice
    if e.get("inputs_alike"):
        alike = e["inputs_alike"]
        text += (
            f" The first layer with weights, `{alike['layer']}`, gives nearly the same output for every example: its "
            f"outputs differ across a batch by {pct(alike['spread'])} of their size (first sampled steps). Its inputs "
            "are far smaller than its bias (scaled down twice, say by 255 and again), or vary little around a large "
            "mean: the network sees almost one input, and the gradient w.r.t. the first layer's weights, input times "
            "output gradient, is as small as the inputs."
        )
        remedies.insert(
            0,
            "Standardise the inputs once, per feature: `x = (x - mean) / std` with the training set's statistics "
            "(check their range: `x.min(), x.max(), x.std()`).",
        )
    if e.get("stopped_moving_at_step") is not None:
        remedies.insert(
            0,
            "Log the learning rate (`optimizer.param_groups[0]['lr']`) around step "
            f"{e['stopped_moving_at_step']}: if a scheduler cut it, fix the schedule (`ReduceLROnPlateau(mode='min')` "
            "for a loss, `scheduler.step()` once per epoch for an epoch schedule) rather than the starting rate.",
        )
    if e.get("weights_shrank_by"):
        text += " " + _weights_shrank(e["weights_shrank_by"])
        remedies.insert(0, _weight_decay_remedy(e))
    if not e.get("learning_rate") and not e.get("weights_shrank_by"):
        median_ratio, largest = e.get("update_ratio_median"), e.get("update_ratio_max")
        if e.get("gradient_vanishes"):
            text += (
                " The updates are tiny because the gradient vanishes on its way down (see the vanishing_gradient "
                "finding): a larger learning rate would only scale what is left of it."
            )
        elif largest == 0 and e.get("gradient_to_weights_max") is not None:
            text += (
                f" Not one weight changed: the largest gradient of any layer was {fmt(e['gradient_to_weights_max'])} "
                "of its weights' size, too small for a step to change a float32 weight at all. A function whose "
                "output rounds to exactly 0 or 1 (a sigmoid or softmax fed very large inputs) has a derivative of "
                "exactly 0 there, and no loss after it can make up for that." + _see_other_findings(e)
            )
            remedies.append(
                "Standardise the inputs, and give the loss the logits instead of probabilities: `BCEWithLogitsLoss` "
                "instead of a sigmoid and `BCELoss`, `cross_entropy` instead of a softmax and a log."
            )
        elif largest == 0:
            text += (
                " Not one weight changed: no gradient reaches them, so there is nothing for the optimiser to apply."
                + _see_other_findings(e)
            )
        elif median_ratio is None and e.get("layers_never_called"):
            layers = e["layers_never_called"]
            text += (
                f" No update was measured layer by layer: the forward of {_listed(layers)} never ran, their weights "
                "being read directly (`F.linear(x, layer.weight * mask)`, a functional call), so the doctor sees "
                "their parameters stepped but no layer around them. Check what the weights are multiplied by on "
                "the way (a pruning mask that keeps too few of them zeroes the rest of their gradient)."
                + _see_other_findings(e)
            )
        elif median_ratio is None and e.get("updated_by_zero"):
            text += (
                " No optimiser steps the model: its weights are updated by hand, in place (the update ran at every "
                "step), and yet their values never changed between the sampled steps: each update moved nothing. "
                "Either the gradient it subtracted was zero by then (reset between `backward()` and `p -= lr * "
                "p.grad`: `p.grad.zero_()` or `zero_grad()` one line too early), or the learning rate it used is 0 "
                "(a warm-up written with integer division, `step // 1000`)." + _see_other_findings(e)
            )
            remedies.insert(
                0,
                "Reset the gradients after the update, not before it: `p -= lr * p.grad`, then `p.grad.zero_()` (or "
                "`p.grad = None`); and check the rate the update uses is not 0.",
            )
        elif median_ratio is None and e.get("without_optimizer") and not e.get("weights_moved"):
            text += (
                " No optimiser steps the model, and no update of its weights was measured between the sampled steps. "
                "A hand-written update `p = p - lr * p.grad` in a loop binds a new tensor to the loop's name and "
                "leaves the parameter as it was; an update in place moves nothing when the gradient it subtracts was "
                "reset before it (`p.grad.zero_()` one line too early) or its rate is 0." + _see_other_findings(e)
            )
            remedies.insert(
                0,
                "Update the parameters in place, under `torch.no_grad()`: `for p in model.parameters(): "
                "p -= lr * p.grad` (then `p.grad = None`), or use `torch.optim.SGD(model.parameters(), lr)`.",
            )
        elif median_ratio is None and e.get("without_optimizer"):  # (updated by hand, and the weights moved)
            text += (
                " No optimiser steps the model: its weights are updated by hand, and they do change between the "
                "sampled steps, but how much an update moves them is measured at an optimiser's step only. A "
                "hand-written learning rate far too low stalls a run so." + _see_other_findings(e)
            )
            remedies.insert(
                0,
                "Print the size of an update next to its weights (`(lr * p.grad).norm() / p.norm()`, around 1e-3 is "
                "healthy), or use `torch.optim.SGD(model.parameters(), lr)`, whose steps the doctor measures.",
            )
        elif median_ratio is None and "nonfinite" in (e.get("other_findings") or []):
            text += (
                " No update of the model's weights could be measured: NaN or inf reached them (see the nonfinite "
                "finding), and a ratio of non-finite sizes is no measure." + _see_other_findings(e)
            )
        elif median_ratio is None:
            text += (
                " No update of the model's weights was measured: the optimiser steps none of them (was it made over "
                "another model's parameters, or a copy?)." + _see_other_findings(e)
            )
            remedies.insert(
                0,
                "Make the optimiser over the tensors the forward computes with: `model.parameters()` of the model "
                "that runs, made after it is final; with `torch.func.stack_module_state` (an ensemble run through "
                "`vmap`), the stacked `params.values()`, not the members' own parameters.",
            )
        elif largest is not None and median_ratio < 1e-4 and largest >= 10 * median_ratio:
            text += (
                f" Most layers barely move, while the layer that moves most changes by {fmt(largest)} of its size per "
                "step: a learning rate too low would hold back every layer alike, so the gradient is not reaching "
                "the others." + _see_other_findings(e)
            )
        elif largest is not None and median_ratio < 1e-4:
            text += (
                f" Every layer moves slowly, and alike: the median layer changes by {fmt(median_ratio)} of its size "
                f"per step, the fastest by {fmt(largest)} (around 1e-3 is healthy). Steps this small everywhere come "
                "from a learning rate on the low side, or from an optimiser setting that damps them (Adam's eps far "
                "above the gradients' size)." + _see_other_findings(e)
            )
        else:
            text += " The updates have a normal size, so the gradient itself carries little signal." + (
                _see_other_findings(e)
            )
        if e.get("fell_early") and not e.get("other_findings"):
            remedies.append(
                "Measure what the task cares about (held-out accuracy): as good as the labels allow, the run has "
                "converged, and early stopping saves the rest; near chance, check that inputs and labels match."
            )
        elif e.get("other_findings"):
            remedies.append("Fix the leak named by the other findings first; then check the data and the labels.")
        else:
            remedies.append(
                "Check that inputs and labels match, and that the model can carry what the task needs (over long "
                "sequences, a gated recurrent layer)."
            )
    return text, remedies


WEIGHT_DECAY_REMEDY = (
    "Check the optimiser's weight_decay: about 1e-4 to 5e-4 is usual for SGD, 0.01 to 0.1 for AdamW (weight_decay=0.5 "
    "where 5e-4 was meant removes lr x 0.5 of every weight at every step)."
)


def _weight_decay_remedy(e: dict) -> str:
    coupled = e.get("coupled_weight_decay")
    if not coupled:
        return WEIGHT_DECAY_REMEDY
    return (
        f"{coupled['optimizer']} adds weight_decay={fmt(coupled['weight_decay'])} times the weights to the gradient "
        "and then divides it by the gradient's running size: where the gradient is small, the decay alone moves each "
        "weight by the full step towards 0. Use `torch.optim.AdamW` for a decoupled decay (0.01 to 0.1 is usual "
        "there), or a weight_decay about 1e-5 to 1e-4 with Adam."
    )


def _weights_shrank(factor) -> str:
    return (
        f"The weights shrank {fmt(factor)} times since the first sampled step (the median over the layers): "
        "something pulls them towards 0 at every step, far harder than the gradient pushes back, usually a weight "
        "decay far too large. With weights that small, each layer passes back almost nothing and every update looks "
        "large next to the weights."
    )


# evidence of a stall's cause that the explanation gives first (explain's _add_cause): no "no other leak" then
STALL_CAUSES = ("identity_activations", "softmax_into_squared_error", "batches_of_one_class")


def _see_other_findings(e: dict) -> str:
    others = e.get("other_findings")
    if others:
        return " See the other findings: " + ", ".join(others) + "."
    if any(e.get(cause) for cause in STALL_CAUSES):
        return ""
    return " No other leak was found at the measured points: check that the inputs and the labels match."


EXPLAINERS = {
    "vanishing_gradient": explain_vanishing_gradient,
    "exploding_gradient": explain_exploding_gradient,
    "dead_relu": explain_dead_relu,
    "saturated_activation": explain_saturated_activation,
    "nonfinite": explain_nonfinite,
    "blocked_gradient": explain_blocked_gradient,
    "wrong_gradient": explain_wrong_gradient,
    "no_gradient": explain_no_gradient,
    "accumulating_gradient": explain_accumulating_gradient,
    "unapplied_gradient": explain_unapplied_gradient,
    "diverging_loss": explain_diverging_loss,
    "stalled_loss": explain_stalled_loss,
}


def explain(finding: Finding) -> Finding:
    """Fill the finding's explanation and remedies from its evidence."""
    finding.explanation, finding.remedies = EXPLAINERS[finding.symptom](finding)
    e = finding.evidence
    if e.get("softmax_into_squared_error"):
        _add_cause(finding, *_softmax_into_squared_error(e["softmax_into_squared_error"]))
    if e.get("identity_activations"):
        _add_cause(finding, *_identity_activations(e["identity_activations"]))
    if e.get("batchnorm_never_estimated"):
        _add_cause(finding, *_batchnorm_never_estimated(e["batchnorm_never_estimated"]))
    if e.get("norm_over_one_value"):
        _add_cause(finding, *_norm_over_one_value(e["norm_over_one_value"]))
    if e.get("changed_outside_autograd"):
        _add_cause(finding, *_changed_outside_autograd(e["changed_outside_autograd"]))
    if e.get("cancelled_straight_through"):
        _add_cause(finding, *_cancelled_straight_through(e["cancelled_straight_through"]))
    if e.get("loss_multiplied_by") and e.get("scaler_never_unscaled"):
        _add_cause(finding, *_scaler_never_unscaled(e["loss_multiplied_by"]))
    elif e.get("loss_multiplied_by"):
        _add_cause(finding, *_loss_multiplied(e["loss_multiplied_by"]))
    if e.get("batches_of_one_class"):
        _add_batches_of_one_class(finding)
    if e.get("lr_by_group"):
        _add_cause(finding, *_group_rates(e["lr_by_group"]))
    if e.get("one_cycle_never_peaked"):
        _add_cause(finding, *_one_cycle_never_peaked(e["one_cycle_never_peaked"]))
    if e.get("updates_far_too_large_before"):
        _add_cause(finding, *_rate_grew_the_weights(e["updates_far_too_large_before"]))
    if e.get("inputs_unscaled") and finding.symptom == "saturated_activation":
        _add_cause(finding, *_inputs_unscaled(e["inputs_unscaled"]))
    if e.get("input_derivative_zero"):
        _add_cause(finding, *_input_derivative_zero(e["input_derivative_zero"]))
    if e.get("gates_shut"):
        _add_cause(finding, *_gates_shut(e["gates_shut"], e.get("gates_shut_count", len(e["gates_shut"]))))
    if e.get("gradient_replaced"):
        _add_cause(finding, *_gradient_replaced(e["gradient_replaced"]))
    if e.get("schedule_not_applied"):
        _add_cause(finding, *_schedule_not_applied(e["schedule_not_applied"]))
    if e.get("after_freeze_not_applied"):
        module = e["after_freeze_not_applied"]
        _add_cause(
            finding,
            f"This came while `{module}`, meant to be frozen, trained on (the `wrong_gradient` finding at `{module}`: "
            "`requires_grad = False` set as an attribute of the module freezes nothing).",
            f"Freeze `{module}` for real first: `{module}.requires_grad_(False)`, then look again.",
        )
    if e.get("after_zero_derivative_draw"):
        _add_cause(
            finding,
            f"The model draws `torch.normal(mean, std)` from what `{e['after_zero_derivative_draw']}` computed (the "
            "`blocked_gradient` finding at `torch.normal`): its derivative to both is 0, so the layers before the draw "
            "get the loss's gradient from its other terms only, and it looks vanished across depth.",
            "Draw with the path kept first (the finding at `torch.normal`: `mean + std * torch.randn_like(std)`), "
            "then look again.",
        )
    if e.get("ctc_targets_too_long") and finding.symptom == "nonfinite":
        too_long = e["ctc_targets_too_long"]
        _add_cause(
            finding,
            f"`ctc_loss` was given {too_long['sequences']} of {too_long['of']} target sequences longer than their "
            f"inputs allow (at step {too_long['step']}): CTC emits at most one label per input frame, and needs a "
            "blank between two equal labels, so L labels with r repeats need L + r frames. No alignment exists for "
            "those, and their loss is -log 0 = inf; its gradient is NaN from then on. The inputs themselves are "
            "finite.",
            "Make every target fit its input: subsample less before the loss (a smaller stride, fewer poolings), or "
            "drop the examples whose `target_lengths` (plus repeats) exceed their `input_lengths`; "
            "`nn.CTCLoss(zero_infinity=True)` only silences them (their loss and gradient are set to 0).",
        )
    if e.get("after_accumulating_gradient"):
        consequence = (
            "and steps that large push a ReLU's inputs below 0 for every example."
            if finding.symptom in ("dead_relu", "blocked_gradient")
            else "until the weights, and the gradients computed from them, overflowed."
        )
        _add_cause(
            finding,
            f"This came while the gradients were never reset (the `accumulating_gradient` finding): each step applied "
            f"the sum of every gradient so far, a step that grows without end, {consequence}",
            "Reset the gradients at every step first (the `accumulating_gradient` finding), then look again.",
        )
    if e.get("after_eval_mode"):
        _add_cause(
            finding,
            f"This came once `{e['after_eval_mode']}` trained in eval mode (the `wrong_gradient` finding): its batch "
            "norms divide by running statistics that no longer follow the activations, so nothing holds their scale, "
            "and the updates grow it until the values overflow. Not the learning rate's doing.",
            f"Put `{e['after_eval_mode']}` back in training mode after each evaluation (`model.train()`, the "
            "`wrong_gradient` finding), then look again.",
        )
    if e.get("after_schedule_not_applied"):
        idle = e["after_schedule_not_applied"]
        _add_cause(
            finding,
            f"This came after the loss diverged under a rate of {fmt(idle['lr'])} that the `{idle['scheduler']}` "
            "meant to scale never reached: it is built over another optimiser, which never steps (the "
            "`diverging_loss` finding). Updates that large wreck the layers: the units and gradients measured since "
            "are a broken network's.",
            "Build the scheduler over the optimiser that steps first (the `diverging_loss` finding), then look again.",
        )
    return finding


def _inputs_unscaled(seen: dict) -> tuple[str, str]:
    return (
        f"The inputs are not standardised: `{seen['layer']}`, the first layer, reads a feature whose root mean "
        f"square is {fmt(seen['largest_column_rms'])} (around 1 is usual). Large inputs make large pre-activations, "
        "and the layers after them, trained on that scale, keep their activations in the flat tails.",
        "Standardise the inputs: `x = (x - mean) / std` per feature, with the training set's mean and std (pixels: "
        "divide by their maximum, 255 or 16).",
    )


def _rate_grew_the_weights(seen: dict) -> tuple[str, str]:
    return (
        f"It was not there at the start: it came after updates far too large (at step {seen['step']} a layer's weights "
        f"changed by {fmt(seen['update_ratio'])} of their size in one step; around 1e-3 is healthy). Steps that large "
        "grow the weights, and the activations with them; a normalisation layer's backward divides by its input's "
        "spread, and a ReLU pushed off its inputs' range passes nothing: the gradient shrinks because the learning "
        "rate is far too high, whatever the depth.",
        "Lower the learning rate (10x is a good first try) and add a warm-up (a transformer under Adam: 1e-4 to 1e-3, "
        "warmed up over the first few hundred steps); clip the gradient norm.",
    )


def _add_cause(finding: Finding, text: str, remedy: str) -> None:
    """A cause found beside a finding's own reading: its explanation and remedy come first."""
    finding.explanation = text + " " + finding.explanation
    finding.remedies = [remedy, *finding.remedies]


def _gradient_replaced(replaced: dict) -> tuple[str, str]:
    ratio, cosine = replaced["norm_ratio"], replaced["cosine"]
    return (
        f"The gradient the optimiser applied is not the one backward computed: it was changed by hand in between "
        f"(`p.grad = ...` before `step()`), and at `{replaced['parameter']}` it is {fmt(ratio)} times backward's in "
        f"norm and points almost at right angles to it (cosine {fmt(cosine)}). What was put in drowns the gradient: "
        "each step is mostly that, a random walk, not descent. DP-SGD that adds its noise N(0, sigma^2 C^2) after "
        "dividing the clipped sum by the batch size does this: the noise is then batch-size times too large.",
        "Make what is added to the gradient small beside it: in DP-SGD add the noise to the clipped sum and then "
        "divide both by the batch size (`(clipped_sum + noise) / B`); scale injected gradient noise down.",
    )


def _schedule_not_applied(idle: dict) -> tuple[str, str]:
    return (
        f"The `{idle['scheduler']}` stepped {idle['scheduler_steps']} times is built over another optimiser of the "
        f"same parameters, one that never steps (its rate is {fmt(idle['scheduled_lr'])} now); the optimiser that "
        f"trains has no scheduler and stays at the {fmt(idle['lr'])} it was given, every step. An optimiser made "
        "twice does this (`LambdaLR(make_optimizer(model), ...)` beside `optimizer = make_optimizer(model)`): a rate "
        "given as 1.0 for a schedule to scale (the Noam warm-up) is then applied as it is.",
        "Build the scheduler over the optimiser that steps: `scheduler = LambdaLR(optimizer, ...)`, with that same "
        "`optimizer` in `optimizer.step()`.",
    )


def _gates_shut(gates: dict, count: int) -> tuple[str, str]:
    shown = ", ".join(f"`{site}` ({fmt(mean)})" for site, mean in list(gates.items())[:4])
    more = f" and {count - 4} more" if count > 4 else ""
    return (
        f"Every gate sits shut: the mean of its output is {shown}{more}. A gate t passes t times what it "
        "gates (a highway layer's t * H(x) + (1 - t) * x), so the branch behind it gets t times the gradient, and the "
        "gate's own derivative t (1 - t) is as small (a hardsigmoid's is exactly 0 below -3): neither learns, and "
        "the layers pass their input through unchanged. A gate's bias started far negative does this (a highway's "
        "transform bias at -10, where -1 to -3 is the advice for a sigmoid; above -3 for a hardsigmoid).",
        "Start the gates' biases near -1 to -3 (or at 0; above -3 for a hardsigmoid), so that the gates' "
        "derivative is not vanishingly small and they can open as the training asks.",
    )


def _input_derivative_zero(seen: dict) -> tuple[str, str]:
    sites = ", ".join(f"`{site}`" for site in seen["activations"])
    return (
        "The loss is made of a derivative of the model with respect to its inputs (`torch.autograd.grad(..., "
        "create_graph=True)`), and one of those derivatives came out exactly 0 everywhere on all "
        f"{seen['sampled_steps']} sampled steps that took one. The network's activations ({sites}) are ReLUs: "
        "piecewise linear, so its first "
        "derivative is piecewise constant and its second is 0 wherever it is defined. A loss term made of it (a PDE "
        "residual u_xx - f) is a constant to the weights, and passes them no gradient.",
        "Use a smooth activation (tanh, SiLU, softplus, GELU) in a network whose loss differentiates it twice with "
        "respect to its inputs (a physics-informed network): its second derivative is not 0.",
    )


def _one_cycle_never_peaked(seen: dict) -> tuple[str, str]:
    return (
        f"`OneCycleLR` never took the learning rate past {fmt(seen['lr_highest'])}, against its max_lr of "
        f"{fmt(seen['max_lr'])}, on any of {seen['sampled_steps']} sampled steps: the schedule never left the start "
        "of its warm-up (max_lr / 25), and the rate stayed low for the whole run. It moves one step per "
        "`scheduler.step()` call, and its `total_steps` (epochs x steps_per_epoch) counts batches: called once per "
        "epoch, it advances one batch per epoch. (Called per batch, the run ends long before the schedule does.)",
        "Call `scheduler.step()` after every `optimizer.step()`, inside the loop over batches (OneCycleLR is a "
        "per-batch schedule); if it is called so already, size the schedule to the run: `total_steps` = the number "
        "of optimiser steps the run takes.",
    )


def _scaler_never_unscaled(factor: float) -> tuple[str, str]:
    factor = f"{factor:g}"
    return (
        f"The loss comes from `scaler.scale(loss)`, which multiplies it by {factor}, but the optimiser steps itself "
        "(`optimizer.step()`), not through `scaler.step(optimizer)`, and no `scaler.unscale_(optimizer)` comes "
        f"before it: by the chain rule every gradient is {factor} times the loss's own, and so is every SGD step. "
        "(The scaler also never gets to skip a step whose gradients overflowed, nor to lower its factor.) What "
        "follows is that step's doing.",
        "Step through the scaler: `scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()` "
        "(`scaler.unscale_(optimizer)` before any gradient clipping): it divides the gradients back before the "
        "update.",
    )


def _loss_multiplied(factor: float) -> tuple[str, str]:
    factor = f"{factor:g}"  # (1024, not 1.02e+03)
    return (
        f"The loss is multiplied by {factor} before `backward()`, and nothing divides the gradients back before "
        f"the optimiser step: by the chain rule every gradient is {factor} times the loss's own, and so is every "
        "SGD step (a float16 loss scale kept in float32 training, say). What follows is that step's doing.",
        f"Divide the gradients by {factor} before `optimizer.step()` (`for p in model.parameters(): "
        f"p.grad.div_({factor})`), or drop the factor: in float32 no loss scaling is needed, and "
        "`torch.amp.GradScaler` does it (and its unscaling) for float16.",
    )


def _group_rates(rates: dict) -> tuple[str, str]:
    modules = ", ".join(f"`{name}`" for name in rates["modules_at_lowest"][:4])
    return (
        f"The optimiser's parameter groups have learning rates from {fmt(rates['lowest'])} to {fmt(rates['highest'])}, "
        f"{fmt(rates['highest'] / rates['lowest'])} times apart, and the layers of the lowest group ({modules}) barely "
        f"move: their weights change by {fmt(rates['update_ratio_at_lowest'])} of their size per step at most. Their "
        "gradient arrives; their own rate holds them.",
        "Check the rates given to each parameter group: layer-wise rates decayed by 0.1 per layer where 0.9 was "
        "meant leave the lowest layers at a millionth of the top one's.",
    )


def _norm_over_one_value(norms: list) -> tuple[str, str]:
    shown = _listed(norms)
    return (
        f"The normalisation layer{'s' if len(norms) > 1 else ''} {shown} take{'' if len(norms) > 1 else 's'} each "
        "mean and variance over one value (a GroupNorm with one channel per group on features with one value per "
        "channel: (N, C), or (N, C, 1, 1) after the last downsampling): that value minus its own mean is 0, whatever "
        "it was, so the output is the layer's bias for every input, and the derivative of the output with respect to "
        "the input is 0. Nothing of the input passes forward, and no gradient passes back to the layers before.",
        "Normalise over several values: fewer groups, `nn.GroupNorm(8, C)` (a helper's `GroupNorm(min(32, C), C)` is "
        "one channel per group for C <= 32), or `nn.LayerNorm(C)`, or `nn.BatchNorm1d(C)`/`nn.BatchNorm2d(C)`.",
    )


def _cancelled_straight_through(ops: dict) -> tuple[str, str]:
    op, after = next(iter(ops.items()))
    return (
        f"A straight-through estimator around `{op}` (after `{after}`) is written without its detach, "
        f"`z + ({op}(z) - z)`: the forward gives {op}(z) as meant, but the gradient reaching z is +g through `z +`, "
        f"0 through `{op}` and -g through `- z`, exactly 0. Nothing before it learns.",
        f"Detach the correction: `z + ({op}(z) - z).detach()` (or `{op}(z) - z.detach() + z`), so that the backward "
        "sees the identity.",
    )


def _changed_outside_autograd(layers: list) -> tuple[str, str]:
    return (
        f"The output{'s' if len(layers) > 1 else ''} of {_listed(layers)} hold{'' if len(layers) > 1 else 's'} exact "
        "zeros that autograd did not make (the `wrong_gradient` finding): the backward treats that activation as the "
        "identity, so the gradients measured here are not the loss's. Fix that first.",
        "Apply the activation with a recorded operation (`h = torch.relu(h)`), not through `.data`.",
    )


def _batchnorm_never_estimated(norms: list) -> tuple[str, str]:
    shown = _listed(norms)
    return (
        f"The batch norm{'s' if len(norms) > 1 else ''} {shown} ran in eval mode on the training steps, with running "
        "statistics never estimated (`num_batches_tracked` is 0): in eval mode a batch norm divides by its running "
        "variance, still the 1 it was made with, after subtracting its running mean, still 0, so it does not "
        "normalise at all, and the deep network behind it trains as if it had none. The model was left in eval mode "
        "(`model.eval()` in an evaluation before the loop, and no `model.train()` after it).",
        "Call `model.train()` before the training steps (after each evaluation that called `model.eval()`).",
    )


def _identity_activations(sites: list) -> tuple[str, str]:
    where = ", ".join(f"`{site}`" for site in sites)
    many = len(sites) > 1
    return (
        f"The LeakyReLU{'s' if many else ''} at {where} {'have' if many else 'has'} a negative slope of 1: "
        f"{'each is' if many else 'it is'} the identity (`nn.LeakyReLU(True)` sets the slope, not inplace), so "
        "its derivative is 1 everywhere and the layers around it compose into one linear map, which cannot fit a "
        "task that is not linear.",
        "Give the slope as a number, and `inplace` by name: `nn.LeakyReLU(0.01, inplace=True)` (or `nn.ReLU()`).",
    )


def _softmax_into_squared_error(site: str) -> tuple[str, str]:
    return (
        f"`mse_loss` compares the probabilities out of `{site}` with the targets: the squared error's gradient "
        "reaches the logits only through the softmax's Jacobian diag(p) - p p^T, which is small wherever the "
        "prediction is confident, right or wrong, so a confidently wrong example hardly teaches anything (with "
        "cross-entropy the gradient at the logits is p - y, whole).",
        "For classification, give `F.cross_entropy` the logits (drop the softmax) and the class indices.",
    )


def _add_batches_of_one_class(finding: Finding) -> None:
    """A finding in a run whose batches each hold one class: that comes first in its explanation and remedies."""
    b = finding.evidence["batches_of_one_class"]
    few = b["classes_per_batch"]
    held = "one class" if few == 1 else f"{fmt(few)} classes"
    finding.explanation = (
        f"The batches each hold {held} (median, batches of {fmt(b['batch_size'])} examples, {b['classes']} "
        "classes), and the classes change from one stretch of steps to the next: the dataset is sorted by class "
        f"and read in order. Each step's gradient then pulls every layer towards predicting the batch's "
        f"{'one class' if few == 1 else 'few classes'}, and the next stretch undoes it; that is what the rest of "
        "this finding measures. " + finding.explanation
    )
    finding.remedies = [
        "Shuffle the training data every epoch: `DataLoader(dataset, batch_size=..., shuffle=True)`, or index the "
        "tensors by `torch.randperm(n)`. (If the order is the point, as in continual learning, this finding is "
        "its cost: keep a replay buffer of earlier classes in each batch.)",
        *finding.remedies,
    ]
