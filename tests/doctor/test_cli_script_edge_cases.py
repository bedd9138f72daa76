"""The doctor's command line and runner on scripts that end, fail or use their streams and threads unusually."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

from leakygrad.cli import main
from leakygrad.doctor.runner import run_script

SRC = Path(__file__).resolve().parents[2] / "src"

TRAIN = textwrap.dedent(
    """
    import torch
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(4, 2)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """
)


@pytest.mark.parametrize(
    "pool",
    [
        "from concurrent.futures import ThreadPoolExecutor as Pool",
        "from concurrent.futures import ProcessPoolExecutor as Pool",
    ],
)
def test_an_executor_the_script_never_shut_down_does_not_hang_the_run(tmp_path, pool):
    # Python tells an unclosed executor's idle workers to stop at exit; the doctor waited for them forever.
    path = tmp_path / "pool.py"
    path.write_text(
        f"{pool}\nif __name__ == '__main__':\n    pool = Pool(2)\n    print(pool.submit(pow, 2, 5).result())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    command = [sys.executable, "-m", "leakygrad", "doctor", "--quiet", "--json", str(tmp_path / "r.json"), str(path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "32"


def test_an_executor_the_caller_owns_keeps_working_after_a_run(tmp_path, capsys):
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "pool.py"
    path.write_text("from concurrent.futures import ThreadPoolExecutor\nThreadPoolExecutor(1).submit(print, 'x')\n")
    with ThreadPoolExecutor(1) as mine:
        assert mine.submit(pow, 2, 3).result() == 8
        runs = []
        runner = threading.Thread(target=lambda: runs.append(run_script(path, watch=False)), daemon=True)
        runner.start()
        runner.join(timeout=30)  # (it used to wait forever for the script's idle pool)
        assert runs and runs[0].exit_code == 0
        assert mine.submit(pow, 2, 4).result(timeout=10) == 16


def test_an_exception_whose_str_fails_is_reported_as_python_would(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text(
        "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError('no str')\nraise Odd()\n"
    )
    report = tmp_path / "r.json"
    assert main(["doctor", "--json", str(report), str(path)]) == 1
    err = capsys.readouterr().err
    assert "Odd: <exception str() failed>" in err
    assert "with Odd: <exception str() failed>" in err  # the summary's line
    assert report.exists()
    assert run_script(tmp_path / "bad.py", watch=False).doctor.script_error == "Odd: <exception str() failed>"


def test_an_exception_without_a_message_is_named_without_a_colon(tmp_path, capsys):
    path = tmp_path / "bare.py"
    path.write_text("raise ValueError\n")
    assert run_script(path, watch=False).doctor.script_error == "ValueError"


@pytest.mark.parametrize("action", ["sys.stderr.close()", "sys.stderr = open(os.devnull, 'w'); sys.stderr.close()"])
def test_a_script_that_closes_stderr_keeps_its_exit_status(tmp_path, action):
    path = tmp_path / "quiet.py"
    path.write_text(TRAIN + f"import os, sys\n{action}\n")
    env = dict(os.environ, PYTHONPATH=str(SRC))
    command = [sys.executable, "-m", "leakygrad", "doctor", "--json", str(tmp_path / "r.json"), str(path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr  # as `python quiet.py`
    assert (tmp_path / "r.json").exists()


def test_the_summary_goes_to_the_terminal_when_the_script_redirects_stderr(tmp_path, capsys):
    path = tmp_path / "redirect.py"
    path.write_text(TRAIN + "import io, sys\nsys.stderr = io.StringIO()\n")
    terminal = sys.stderr
    try:
        assert main(["doctor", "--json", str(tmp_path / "r.json"), str(path)]) == 0
    finally:
        sys.stderr = terminal
    assert "leakygrad doctor: 3 steps" in capsys.readouterr().err


def test_a_failure_inside_the_report_writer_leaves_the_scripts_exit_status(tmp_path, capsys, monkeypatch):
    from leakygrad.doctor import report_html

    def broken(doctor, path):
        raise ValueError("a bug in the page")

    monkeypatch.setattr(report_html, "write", broken)
    path = tmp_path / "train.py"
    path.write_text(TRAIN + "raise SystemExit(4)\n")
    html, json_report = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["doctor", "--html", str(html), "--json", str(json_report), str(path)]) == 4
    err = capsys.readouterr().err
    assert f"could not write the report to {html}" in err and "ValueError: a bug in the page" in err
    assert json_report.exists() and "leakygrad doctor: 3 steps" in err and f"full report: {json_report}" in err


def test_a_folder_for_the_script_says_it_is_a_folder(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    assert main(["doctor", str(tmp_path / "project")]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "no script at" not in err


def test_an_unknown_doctor_option_is_named_by_the_doctor(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text("print('ran')\n")
    with pytest.raises(SystemExit) as stop:
        main(["doctor", "-q", str(path)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert "ran" not in captured.out
    assert "usage: leakygrad doctor" in captured.err and "-q" in captured.err
    assert "SCRIPT.py" in captured.err  # what to do: the doctor's options go before the script


@pytest.mark.parametrize("option", ["--steps", "--lr"])
def test_demo_says_what_a_value_that_is_no_number_should_be(option, capsys):
    with pytest.raises(SystemExit):
        main(["demo", option, "abc"])
    err = capsys.readouterr().err
    assert "invalid _" not in err  # not the name of a function inside leakygrad
    assert f"argument {option}" in err and "'abc'" in err


def test_threads_the_caller_started_are_not_waited_for(tmp_path):
    import time

    release = threading.Event()
    other = threading.Thread(target=release.wait, args=(30,))  # the caller's thread, not one the script started
    other.start()
    try:
        path = tmp_path / "plain.py"
        path.write_text("x = 1\n")
        start = time.perf_counter()
        assert run_script(path, watch=False).exit_code == 0
        assert time.perf_counter() - start < 10
    finally:
        release.set()
        other.join()


@pytest.mark.parametrize("flag", ["--json", "--html"])
def test_a_report_path_that_is_the_script_itself_is_refused_before_the_run(tmp_path, flag, capsys):
    script = tmp_path / "train.py"
    source = "print('trained')\n"
    script.write_text(source)
    assert main(["doctor", flag, str(script), str(script)]) == 2
    assert "is the script itself" in capsys.readouterr().err
    assert script.read_text() == source  # not overwritten, and not run


def test_one_path_for_both_reports_is_refused(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("print('trained')\n")
    report = str(tmp_path / "report.out")
    assert main(["doctor", "--json", report, "--html", report, str(script)]) == 2
    captured = capsys.readouterr()
    assert "same file" in captured.err and "trained" not in captured.out


@pytest.mark.parametrize(
    ("edit", "after"),
    [
        ("sys.path.insert(0, 'lib')", ["lib", "ENTRY"]),  # the script's own entry stays, before ours
        ("sys.path.remove(sys.path[0])", ["ENTRY"]),  # the folder removed: ours comes back at the front
        ("pass", ["ENTRY"]),
    ],
)
def test_the_path_entry_the_scripts_folder_replaced_comes_back_whatever_the_script_did(tmp_path, edit, after):
    saved = sys.path[:]
    sys.path.insert(0, "ENTRY")
    try:
        path = tmp_path / "edits_path.py"
        path.write_text(f"import sys\n{edit}\n")
        assert run_script(path, watch=False).exit_code == 0
        assert str(tmp_path) not in sys.path
        assert sys.path[: len(after)] == after
        assert sys.path[len(after) :] == saved
    finally:
        sys.path[:] = saved


def test_ctrl_c_while_the_scripts_threads_run_on_still_writes_the_report(tmp_path):
    """Python waits for a script's non-daemon threads at exit, and so does the doctor; Ctrl-C during that wait
    used to end the doctor without a report. Now the report is written and the exit status is 130."""
    import signal
    import time

    path = tmp_path / "worker.py"
    stop = tmp_path / "stop"  # the thread runs until the test says so (a fixed sleep could end first on a busy machine)
    path.write_text(TRAIN + "import os, threading, time\n"
                    "def work():\n"
                    "    deadline = time.monotonic() + 120\n"
                    f"    while not os.path.exists({str(stop)!r}) and time.monotonic() < deadline:\n"
                    "        time.sleep(0.02)\n"
                    "threading.Thread(target=work).start()\n"
                    "print('main done', flush=True)\n")  # fmt: skip
    report = tmp_path / "r.json"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    command = [sys.executable, "-m", "leakygrad", "doctor", "--quiet", "--json", str(report), str(path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout.readline().strip() == "main done"
        time.sleep(0.5)  # the doctor is waiting for the thread now
        process.send_signal(signal.SIGINT)
        time.sleep(1.0)
        stop.touch()  # (Python's own exit waits for the thread too)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted while the script's threads were still running" in stderr
    assert '"steps": 3' in report.read_text()


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")  # (TorchScript is deprecated; still in use)
def test_a_model_traced_under_the_doctor_passes_the_traces_own_check(tmp_path):
    """`torch.jit.trace` runs the model twice and compares the two graphs. The doctor's forward hooks, looking at the
    first layer's outputs on the first call only, named a value after their own local variable on one run and not the
    other, and the script stopped with "Graphs differed across invocations" (a healthy script of an earlier sweep,
    run again). The hooks do nothing while a trace records."""
    script = tmp_path / "traced.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn
            torch.manual_seed(0)
            net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
            model = torch.jit.trace(net, torch.randn(2, 16))
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
            for _ in range(20):
                loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print("trained")
            """
        )
    )
    run = run_script(str(script))
    assert run.exit_code == 0 and run.doctor.steps == 20
    assert run.doctor.notes == []


def test_a_network_run_with_generated_weights_through_functional_call_prints_no_warning(tmp_path):
    """Sweep 48: a hypernetwork's output run as another network's weights, `torch.func.functional_call(target,
    generated, x)`. The target was first met inside that call, where its parameters are the generated tensors, and
    named them as its parameters: reading their `.grad` made PyTorch print a UserWarning on the script's stderr (a
    non-leaf's .grad is never filled). Only leaves are named as parameters."""
    script = tmp_path / "hyper.py"
    script.write_text(
        textwrap.dedent(
            """
            import warnings
            warnings.simplefilter("always")  # (each warning printed, however often it comes)
            import torch
            from torch import nn
            from torch.func import functional_call
            torch.manual_seed(0)
            target = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
            shapes = {n: p.shape for n, p in target.named_parameters()}
            hyper = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, sum(s.numel() for s in shapes.values())))
            optimizer = torch.optim.Adam(hyper.parameters(), lr=1e-3)
            for step in range(20):
                task = torch.rand(2)
                flat, generated, i = hyper(task), {}, 0
                for name, shape in shapes.items():
                    generated[name] = flat[i : i + shape.numel()].view(shape)
                    i += shape.numel()
                x = torch.rand(32, 1)
                loss = ((functional_call(target, generated, (x,)) - task[0] * torch.sin(x)) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print("trained")
            """
        )
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_script(str(script), every=1)
    assert run.exit_code == 0 and run.doctor.steps == 20 and run.doctor.notes == []
    assert [str(w.message) for w in caught if "not a leaf" in str(w.message)] == []


@pytest.mark.parametrize("optimizer", ["kept from before", "made over the restored model"])
def test_a_model_restored_from_a_checkpoint_under_the_old_optimiser_is_told_as_made_anew(tmp_path, optimizer):
    """Sweep 48: training resumed from a checkpoint into a model built anew, while the optimiser made over the model
    before it is kept (its state restored): the new model never trains. Found as an `unapplied_gradient` warning at
    it, told as a module unfrozen part-way (`add_param_group` first, which would throw the restored momentum away)."""
    script = tmp_path / "resume.py"
    keep = "pass" if optimizer == "kept from before" else "opt = torch.optim.SGD(model.parameters(), lr=0.05)"
    script.write_text(
        textwrap.dedent(
            f"""
            import torch
            from torch import nn
            torch.manual_seed(0)
            x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
            def build():
                return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
            def train(model, opt, steps):
                for step in range(steps):
                    batch = slice(32 * (step % 8), 32 * (step % 8 + 1))
                    loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            model = build()
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            train(model, opt, 20)
            checkpoint = {{"model": model.state_dict(), "opt": opt.state_dict()}}
            model = build()
            model.load_state_dict(checkpoint["model"])
            {keep}
            opt.load_state_dict(checkpoint["opt"])
            train(model, opt, 60)
            """
        )
    )
    run = run_script(str(script), every=4)
    assert run.exit_code == 0 and run.doctor.notes == []
    named = [f for f in run.doctor.findings if f.symptom == "unapplied_gradient"]
    if optimizer != "kept from before":
        assert named == []
        return
    [f] = named
    assert (f.where, f.severity, f.evidence.get("model_made_anew")) == ("model_2", "error", True)
    assert "a model made part-way through the run" in f.explanation
    assert f.remedies[0].startswith("Make the optimiser over the new model")


def test_threads_training_models_at_once_are_not_mixed_and_the_first_is_followed(tmp_path):
    """Threads each training a model at the same time: the probe mixed their steps into one and read gradients another
    thread's autograd was writing, or freed objects of its graph, which crashed the process (a segfault in 3 of 9 runs
    with `--every 1`, sweep 31) or left internal notes. Now one thread's training is followed, and the others' are left
    alone. (Run twice: the crash came in some runs only.)"""
    path = tmp_path / "threads.py"
    path.write_text(
        textwrap.dedent(
            """
            import threading
            import torch
            torch.set_num_threads(1)
            results = {}
            made = threading.Lock()
            in_step = threading.Barrier(4)  # (all four train at once, step by step, however loaded the machine)
            def train(name, seed):
                generator = torch.Generator().manual_seed(seed)
                with made:
                    torch.manual_seed(seed)
                    model = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
                optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
                for _ in range(200):
                    in_step.wait()
                    x = torch.randn(64, 4, generator=generator)
                    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
                    optimizer.zero_grad(); loss.backward(); optimizer.step()
                results[name] = [p.detach().clone() for p in model.parameters()]
            threads = [threading.Thread(target=train, args=(i, i)) for i in range(4)]
            for thread in threads: thread.start()
            for thread in threads: thread.join()
            torch.save(results, "weights.pt")
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    report = tmp_path / "r.json"
    command = [sys.executable, "-m", "leakygrad", "doctor", "--every", "1", "--json", str(report), str(path)]
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        written = json.loads(report.read_text())
        # one thread's 200 steps, not the four threads' 800 mixed; 199 when another thread's backward took the
        # following over during the first thread's first step, by design, its own first step begun unseen (1 run in
        # ~20); up to 203 when the thread followed ended a step before the others, each of which then took the following
        # over in turn for its own last step (the threads step together: at most one step apart)
        assert 199 <= written["steps"] <= 203 and "notes" not in written
    (tmp_path / "weights.pt").rename(tmp_path / "watched.pt")
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert plain.returncode == 0, plain.stderr
    import torch

    watched, alone = torch.load(tmp_path / "watched.pt"), torch.load(tmp_path / "weights.pt")
    assert all(torch.equal(a, b) for i in range(4) for a, b in zip(watched[i], alone[i]))


@pytest.mark.parametrize("first", ["a thread per epoch", "a sanity check's backward in the main thread"])
def test_training_that_moves_to_another_thread_is_followed_there(tmp_path, first):
    """The thread followed is released when it has ended (each epoch in a thread of its own), or taken over by one that
    goes further in a step (a one-batch backward in the main thread to check the loss, then training in a worker
    while the main thread waits): a review of stop 30 found the rest of such a training silently unwatched."""
    path = tmp_path / "moves.py"
    body = textwrap.dedent(
        """
        import threading
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        def epoch():
            for _ in range(8):
                loss = model(torch.randn(4, 2)).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """
    )
    if first != "a thread per epoch":
        body += "model(torch.randn(4, 2)).pow(2).mean().backward()\noptimizer.zero_grad()\n"
    body += "for _ in range(3):\n    worker = threading.Thread(target=epoch)\n    worker.start()\n    worker.join()\n"
    path.write_text(body)
    run = run_script(path, every=1)
    assert run.exit_code == 0 and run.doctor.notes == [] and run.doctor.steps == 24


def test_a_forward_in_the_main_thread_then_training_in_another_follows_the_training(tmp_path):
    """The script looks at its model's output once in the main thread (with gradients on), then trains it in a thread
    of its own: the thread that trains is followed, and every step counted."""
    path = tmp_path / "background.py"
    path.write_text(
        textwrap.dedent(
            """
            import threading
            import torch
            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            print(model(torch.zeros(1, 2)).shape)
            def train():
                for _ in range(6):
                    loss = model(torch.randn(4, 2)).pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            thread = threading.Thread(target=train)
            thread.start()
            thread.join()
            """
        )
    )
    run = run_script(path, every=1)
    assert run.exit_code == 0 and run.doctor.steps == 6 and run.doctor.notes == []
    # (the first step's forward ran while the main thread was followed: that step has no record, the other five do)
    assert run.doctor.history.models == ["model"] and len(run.doctor.history.records) == 5


@pytest.mark.parametrize("caught", [False, True])
def test_ctrl_c_the_script_does_not_catch_ends_the_doctor_by_sigint_as_python_would(tmp_path, caught):
    """Python ends a process whose Ctrl-C was not caught by SIGINT itself (a parent sees "killed by SIGINT", and a
    shell loop stops), not with exit status 130 as the doctor did (sweep 31). A script that catches it exits as it
    says, and the report is written either way."""
    import signal

    path = tmp_path / "interrupted.py"
    handled = "try:\n    wait()\nexcept KeyboardInterrupt:\n    print('stopped')\n" if caught else "wait()\n"
    path.write_text(TRAIN + "import time\n"
                    "def wait():\n"
                    "    print('ready', flush=True)\n"
                    "    time.sleep(120)\n" + handled)  # fmt: skip
    report = tmp_path / "r.json"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    results = []
    for command in ([sys.executable, str(path)], [sys.executable, "-m", "leakygrad", "doctor", "--quiet", "--json",
                                                  str(report), str(path)]):  # fmt: skip
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert process.stdout.readline().strip() == "ready"
            process.send_signal(signal.SIGINT)
            stdout, _ = process.communicate(timeout=120)
        finally:
            process.kill()
        results.append((process.returncode, stdout))
    plain, watched = results
    assert watched == plain == ((0, "stopped\n") if caught else (-signal.SIGINT, ""))
    assert '"steps": 3' in report.read_text()


def test_an_error_raised_inside_backward_shows_the_traceback_python_would(tmp_path):
    """PyTorch's error from a second backward through a freed graph passed through the doctor's wrapper of
    `torch.autograd.backward`, whose frame showed in the script's traceback (sweep 31). The traceback, cause and all,
    is now the one Python prints."""
    path = tmp_path / "twice.py"
    path.write_text(TRAIN + textwrap.dedent(
        """
        def differentiate(value):
            value.backward()
        loss = model(torch.randn(4, 2)).pow(2).mean()
        differentiate(loss)
        try:
            differentiate(loss)
        except RuntimeError as error:
            raise ValueError("the second pass failed") from error
        """
    ))  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(SRC))
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    command = [sys.executable, "-m", "leakygrad", "doctor", "--quiet", "--json", str(tmp_path / "r.json"), str(path)]
    watched = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert plain.returncode == watched.returncode == 1
    assert "Trying to backward through the graph a second time" in plain.stderr
    assert watched.stderr == plain.stderr
