"""Scripts a review of sweep 49's checks wrote against them (stop 45), each a case one of those checks got wrong
before it was mended: run under the doctor, at every 4 steps, with what must (and must not) be found."""

from pathlib import Path

import pytest

from leakygrad.doctor.runner import run_script

GUARDS = Path(__file__).resolve().parent / "guards"


def run(name: str, capsys, monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = run_script(str(GUARDS / f"{name}.py"), every=4)
    out = capsys.readouterr().out
    assert result.exit_code == 0 and result.doctor.notes == []  # (a division by a constant broke the graph walk)
    return result.doctor, out


def test_a_masked_mean_divided_by_a_constant_leaves_the_rest_of_the_walk_running(capsys, monkeypatch):
    """`(err * mask).sum() / mask.sum()`: the divisor needs no gradient. The check for a weight over its own sum read
    its missing node and failed, on every sampled step, and the softmax over one entry was no longer found."""
    dr, _ = run("masked_mean_hides", capsys, monkeypatch)
    assert any(f.symptom == "blocked_gradient" and f.where == "softmax" for f in dr.findings)


def test_a_learnt_scale_inside_a_checkpoint_is_read_without_recomputing_the_block(capsys, monkeypatch):
    """A cosine head's learnt scale under `checkpoint(use_reentrant=False)`: reading the saved scale ran the unpack
    hook, which recomputes the block, and the batch norm in it counted 240 batches for 120 (the training changed)."""
    plain = run_script(str(GUARDS / "ckpt_learnt_scale.py"), watch=False)
    plain_out = capsys.readouterr().out
    _, watched_out = run("ckpt_learnt_scale", capsys, monkeypatch)
    assert (
        plain.exit_code == 0 and watched_out == plain_out and "bn batches 120" in plain_out
    )  # (recomputed once in backward)


def test_one_time_step_viewed_sequence_first_mixes_no_examples(capsys, monkeypatch):
    """(N, 1, E) viewed as (1, N, E) for a sequence-first GRU moves nothing in memory: no finding."""
    dr, _ = run("seq_decoder_view", capsys, monkeypatch)
    assert [f for f in dr.findings if f.evidence.get("examples_mixed")] == []


def test_an_optimiser_step_before_the_first_forward_leaves_the_models_parameters_its_own(capsys, monkeypatch):
    """`opt.step()` once before training (to quiet the scheduler's warning), the model inside main(): its parameters
    were named as plain tensors (`tensor0`), with the no-module explanation."""
    dr, _ = run("step_before_forward_cut", capsys, monkeypatch)
    assert dr.history.script_tensors == []
    [f] = [f for f in dr.findings if f.symptom == "no_gradient"]
    assert not f.where.startswith("tensor") and "script holds itself" not in f.explanation


def test_clipping_the_heads_gradients_keeps_the_backbones_zeroing_in_view(capsys, monkeypatch):
    """The backbone's gradients zeroed after backward, then only the head's clipped: the clip's own write was taken
    for every parameter's, and the zeroing was lost (told as a computation that cancels)."""
    dr, _ = run("zeroed_then_clip_other", capsys, monkeypatch)
    [f] = [f for f in dr.findings if f.symptom == "no_gradient"]
    assert f.evidence.get("zeroed_after_backward") is True


def test_an_optimiser_for_a_later_phase_is_not_a_forgotten_step(capsys, monkeypatch):
    """A fine-tuning optimiser made up front over the backbone and the head, the head's own stepping now: not an
    optimiser whose `step()` was forgotten (which would step the head twice), and no error."""
    dr, _ = run("phase2_optimizer", capsys, monkeypatch)
    named = [f for f in dr.findings if f.symptom == "unapplied_gradient"]
    assert named and all("idle_optimizer" not in f.evidence and f.severity == "warning" for f in named)


@pytest.mark.parametrize("norm", ["sum", "softmax"])
def test_a_mixture_of_one_component_is_no_renormalised_top_1_gate(capsys, monkeypatch, norm):
    """A mixture density network run with one component: its weight over its own sum is 1 by design, not one picked
    from several (the top-1 gate's mistake)."""
    dr, _ = run("mdn_one_component", capsys, monkeypatch, K="1", NORM=norm)
    assert [f for f in dr.findings if f.evidence.get("own_sum")] == []


# The second review (stop 45), on the models of plain tensors as they are found from the graph and the frames.


def test_a_tensor_the_training_function_deletes_is_freed_under_the_doctor(capsys, monkeypatch):
    """Reading a function's locals for names kept Python's snapshot of them (before 3.13), and with it every tensor
    the function deleted afterwards: a scratch tensor of main() stayed alive to the end of the run."""
    _, out = run("h_locals", capsys, monkeypatch)
    assert "scratch freed: True" in out and "at end, freed: True" in out


def test_an_optimiser_stepped_before_the_first_backward_still_finds_its_tensors(capsys, monkeypatch):
    """`opt.step()` once before training, over plain tensors: the optimiser was taken as known with nothing named,
    and never looked at again ("nothing measured"); W2 read through `.detach()` went unseen."""
    dr, _ = run("m_step_first", capsys, monkeypatch)
    assert dr.history.script_tensors == ["W1", "W2"]
    assert [(f.symptom, f.where) for f in dr.findings if f.symptom == "no_gradient"] == [("no_gradient", "W2")]


def test_an_optimiser_given_copies_inside_main_is_told_so(capsys, monkeypatch):
    """The copies' reading looked for the tensors the backward reached at top level only: inside main() the copies
    were named as the model (`tensor0`) with a graph cut's wording."""
    dr, _ = run("e2_copies_main", capsys, monkeypatch)
    [f] = [f for f in dr.findings if f.symptom == "unapplied_gradient"]
    assert f.where == "weights[0], weights[1]" and f.evidence["script_tensors"]


def test_tensors_held_in_a_list_of_pairs_are_named_by_their_place(capsys, monkeypatch):
    """40 layers of (W, b) pairs in a list: named by the loop variables left holding the last pair, `tensorN` for
    most, and 17 of 81 never watched (64 leaves looked at). By their place in the list now, every one."""
    dr, _ = run("q_many", capsys, monkeypatch)
    names = dr.history.script_tensors
    assert len(names) == 81 and names[:2] == ["layers[0][0]", "layers[0][1]"] and "head" in names
