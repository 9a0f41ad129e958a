"""Issue 36's checks on a lent GPU in one time-boxed run, written to one results JSON.

    python3 bench/gpu/checks.py --out $OUT/gpu_checks.json [--small] [--device cpu] [--stages ...]

`bench/gpu/run.sh` calls this after it has put the TensorFlow stack in place; see bench/gpu/README.md. Stages,
in this order (the acceptance bars first):
  probe    what the machine has: nvidia-smi, TensorFlow's GPU, an XLA-compiled bf16 matmul
  step     bf16 matmul peaks (tf, torch) and the MLM+NSP pretraining step at seq 128 in bf16 at large and base
           (ours XLA, HF torch.compile with bf16 autocast, KerasHub XLA: MLM only) at a batch that fills the GPU,
           through bench/peers' runners (bench/gpu/peer_cases.py); `step_s` shared 2:1:1 (see `in_turn`)
  paths    the training paths with the library's defaults (XLA where TensorFlow sees a GPU), two at once:
           kbl-pretrain (base, bf16, seq 128) for a few hundred steps on the demo's unlabelled reviews, then the
           same command with more steps, which resumes from its checkpoint; and kbl-glue fine-tuning
           all-MiniLM-L6-v2 on the demo's labelled reviews with seeds 1,2,3, compared with
           bench/gpu/cpu_reference.json (`--stages cpu_reference` on a CPU writes it); then kbl-export of that
           model, loaded on the CPU (CUDA_VISIBLE_DEVICES empty) and compared with the GPU model's dev predictions
  forward  the forward at batch 32, 256 and 1 over the presets, highest priority first, each implementation a
           third of the time left; cases not reached are absent, not failed
Every stage runs in subprocesses with a time limit inside `--budget_s`; a failing or timed-out stage records its
error and the log tail, and the next one runs. The JSON is rewritten after every stage.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "bench" / "peers"))

import common  # noqa: E402  (bench/peers/common.py: stdlib only at import)

STAGES = ("probe", "step", "paths", "forward")
SEEDS = "1,2,3"
CPU_REFERENCE = HERE / "cpu_reference.json"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What each stage does: FULL on the GPU, SMALL for a dry run of the plumbing on a CPU."""

    budget_s: int  # the whole run, all stages
    pretrain_preset: str
    pretrain_steps: int  # first run; the resumed run goes on to pretrain_steps + resume_steps
    resume_steps: int
    pretrain_batch: int
    pretrain_seq: int
    pretrain_lr: float
    log_every: int
    train_reviews: int
    dev_reviews: int
    glue_epochs: int
    glue_seeds: str
    step_presets: tuple  # pretraining-step throughput, in this order
    step_batch: int
    forward_presets: tuple  # forward throughput, in this order
    forward_batches: tuple
    peak_n: int
    step_s: int  # the pretraining-step stage's time box
    paths_s: int  # the training paths' time box
    runs: int
    min_seconds: float


FULL = Sizes(
    budget_s=560,
    pretrain_preset="base",
    pretrain_steps=100,
    resume_steps=50,
    pretrain_batch=64,
    pretrain_seq=128,
    pretrain_lr=1e-4,
    log_every=25,
    train_reviews=4000,
    dev_reviews=1000,
    glue_epochs=2,
    glue_seeds=SEEDS,
    step_presets=("large", "base"),
    step_batch=256,
    forward_presets=("base", "large", "small", "mini", "tiny"),
    forward_batches=(32, 256, 1),
    peak_n=8192,
    step_s=520,
    paths_s=200,
    runs=5,
    min_seconds=1.0,
)
SMALL = Sizes(
    budget_s=600,
    pretrain_preset="tiny",
    pretrain_steps=20,
    resume_steps=10,
    pretrain_batch=8,
    pretrain_seq=32,
    pretrain_lr=2e-3,
    log_every=5,
    train_reviews=96,
    dev_reviews=64,
    glue_epochs=1,
    glue_seeds="1,2",
    step_presets=("tiny",),
    step_batch=4,
    forward_presets=("tiny",),
    forward_batches=(4, 1),
    peak_n=256,
    step_s=400,
    paths_s=400,
    runs=2,
    min_seconds=0.0,
)


# ------------------------------------------------------------------------------------------ running things


class Run:
    """The run's settings, clock, work directory and results file."""

    def __init__(self, args, sizes: Sizes):
        self.args, self.s = args, sizes
        self.start = time.monotonic()
        self.budget = args.budget_s or sizes.budget_s
        self.work = Path(tempfile.mkdtemp(prefix="gpu_checks_"))
        self.log_path = Path(args.out).with_suffix(".log")
        self.live: set[int] = set()  # process groups started and not yet reaped (see `stop_all`)
        self.results = {
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "argv": sys.argv[1:],
            "device": args.device,
            "sizes": dataclasses.asdict(sizes),
            "budget_s": self.budget,
            "stages": {},
        }

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def save(self) -> None:
        self.results["elapsed_s"] = round(time.monotonic() - self.start, 1)
        common.write_results(self.args.out, self.results, raw_keys=("times_s",))  # per-call timings: the raw file

    def env(self, side: str, **extra) -> dict:
        """The environment of a TensorFlow ("tf") or torch ("torch") process."""
        env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
        if side == "tf":
            paths = ([self.args.site] if self.args.site else []) + [str(ROOT)]
            env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p])
            if self.args.cuda12:
                env["LD_LIBRARY_PATH"] = os.pathsep.join(
                    [self.args.cuda12] + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p]
                )
            if self.args.cuda_data_dir:
                env["XLA_FLAGS"] = f"--xla_gpu_cuda_data_dir={self.args.cuda_data_dir} " + env.get("XLA_FLAGS", "")
        else:
            env.pop("PYTHONPATH", None)  # torch runs on the image's own packages
        return env

    def python(self, impl: str) -> str:
        return {
            "tf": self.args.tf_python,
            "ours": self.args.tf_python,
            "kerashub": self.args.kerashub_python,
            "hf": self.args.torch_python,
        }[impl]

    def start_process(self, name: str, argv: list[str], env: dict) -> tuple[subprocess.Popen, Path]:
        log = self.work / f"{name}.log"
        handle = open(log, "w")
        process = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
        )
        handle.close()
        self.live.add(process.pid)
        return process, log

    def stop_all(self, *_) -> None:
        """Kills every process group still running: each runs in its own session (so a time box can kill its
        children too), which the device machine would otherwise leave running after the command returns."""
        for pid in list(self.live):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.live.clear()

    def finish(self, name: str, process: subprocess.Popen, log: Path, deadline: float) -> dict:
        """Waits for `process` until `deadline` (monotonic; never past the budget), kills its group past it;
        returns its record."""
        deadline = min(deadline, self.start + self.budget)
        try:
            rc = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            rc = "timeout"
        self.live.discard(process.pid)
        text = log.read_text(errors="replace")
        with open(self.log_path, "a") as f:
            f.write(f"\n===== {name} (rc {rc})\n{text}")
        return {"rc": rc, "log_tail": text[-1500:]}

    def call(self, name: str, argv: list[str], env: dict, timeout: float) -> dict:
        """One subprocess, at most `timeout` seconds and never past the budget; raises on failure."""
        process, log = self.start_process(name, argv, env)
        record = self.finish(name, process, log, time.monotonic() + min(timeout, self.left()))
        if record["rc"] != 0:
            raise StageError(f"{name}: exit {record['rc']}", record["log_tail"])
        return record


class StageError(RuntimeError):
    def __init__(self, message: str, log_tail: str = ""):
        super().__init__(message)
        self.log_tail = log_tail


def stage(run: Run, name: str, fn) -> None:
    """Runs `fn(run)` into results["stages"][name], recording any error, its time, and saving the JSON."""
    started = time.monotonic()
    print(f"[{name}] {run.left():.0f} s of the budget left", file=sys.stderr, flush=True)
    record = run.results["stages"].setdefault(name, {})
    try:
        if run.left() < 5:
            raise StageError("skipped: no time left in the budget")
        record.update(fn(run) or {})
    except Exception as e:  # noqa: BLE001 - recorded; the next stage runs
        record["error"] = f"{type(e).__name__}: {e}"[:2000]
        if getattr(e, "log_tail", ""):
            record["log_tail"] = e.log_tail
    record["wall_s"] = round(time.monotonic() - started, 1)
    run.save()
    print(
        f"[{name}] {record['wall_s']} s" + (f": {record['error']}" if "error" in record else ""),
        file=sys.stderr,
        flush=True,
    )


def read_json(path: Path):
    return json.loads(path.read_text())


# ------------------------------------------------------------------------------------------ probe

PROBE = """
import json, time, tensorflow as tf
gpus = tf.config.list_physical_devices("GPU")
out = {"tensorflow": tf.__version__, "gpus": [g.name for g in gpus],
       "built_with_cuda": tf.test.is_built_with_cuda(), "build": dict(tf.sysconfig.get_build_info())}
if gpus:
    out["device_name"] = tf.config.experimental.get_device_details(gpus[0]).get("device_name")
    with tf.device("/GPU:0"):
        a = tf.random.normal((4096, 4096), dtype=tf.bfloat16)
        f = tf.function(lambda x: tf.matmul(x, x), jit_compile=True)
        t = time.perf_counter(); f(a).numpy(); out["xla_compile_s"] = time.perf_counter() - t
        t = time.perf_counter(); [f(a) for _ in range(20)]; f(a).numpy()
        out["xla_bf16_4096_tflops"] = 21 * 2 * 4096 ** 3 / (time.perf_counter() - t) / 1e12
print("PROBE " + json.dumps(out, default=str))
"""


def probe(run: Run) -> dict:
    out = {}
    smi = shutil.which("nvidia-smi")
    if smi:
        q = subprocess.run(
            [smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        out["nvidia_smi"] = q.stdout.strip() or q.stderr.strip()
    record = run.call("probe", [run.python("tf"), "-c", PROBE], run.env("tf"), 120)
    line = next(x for x in record["log_tail"].splitlines()[::-1] if x.startswith("PROBE "))
    out.update(json.loads(line[len("PROBE ") :]))
    if run.args.device == "gpu" and not out.get("gpus"):
        out["log_tail"] = record["log_tail"]
        raise StageError("TensorFlow sees no GPU", record["log_tail"])
    return out


# ------------------------------------------------------------------------------------------ training paths


def paths_py(run: Run, *args) -> list[str]:
    return [run.python("tf"), str(HERE / "paths.py"), *map(str, args)]


def pretrain_argv(run: Run, data: dict, model_dir: Path, steps: int) -> list[str]:
    s = run.s
    return [
        "--input_files",
        data["unlabeled_file"],
        "--vocab",
        data["vocab"],
        "--preset",
        s.pretrain_preset,
        "--seq_length",
        str(s.pretrain_seq),
        "--max_predictions",
        str(max(2, round(0.15 * s.pretrain_seq))),
        "--batch_size",
        str(s.pretrain_batch),
        "--steps",
        str(steps),
        "--learning_rate",
        str(s.pretrain_lr),
        "--log_every",
        str(s.log_every),
        "--checkpoint_every",
        str(s.log_every * 2),
        "--mixed_precision",
        "bf16",
        "--seed",
        "1",
        "--model_dir",
        str(model_dir),
        "--quiet",
    ]


def loss_of(entry: dict) -> float:
    return entry["loss"] if "loss" in entry else next(v for k, v in entry.items() if "loss" in k)


def pretrain_result(first: list[dict], second: list[dict], steps: int) -> dict:
    """Loss falls over the first run; the second resumed from the first's last checkpoint (its logs start past
    `steps` and its loss did not go back to the start)."""
    losses = [round(loss_of(h), 4) for h in first]
    resumed = [round(loss_of(h), 4) for h in second]
    return {
        "losses": losses,
        "resumed_losses": resumed,
        "steps": [h["step"] for h in first],
        "resumed_steps": [h["step"] for h in second],
        "steps_per_second": [round(h.get("steps_per_second", 0), 2) for h in first + second],
        "loss_falls": bool(losses) and losses[-1] <= 0.9 * losses[0],
        "resumed": bool(second) and min(h["step"] for h in second) > steps and resumed[0] <= 0.9 * losses[0],
    }


def glue_argv(run: Run, data: dict, model_dir: Path) -> list[str]:
    return [
        "--train_file",
        data["train_file"],
        "--dev_file",
        data["dev_file"],
        "--text_a",
        "text",
        "--label",
        "label",
        "--seq_length",
        "64",
        "--batch_size",
        "32",
        "--seeds",
        run.s.glue_seeds,
        "--init",
        data["minilm_dir"],
        "--epochs",
        str(run.s.glue_epochs),
        "--learning_rate",
        "5e-5",
        "--model_dir",
        str(model_dir),
        "--quiet",
    ]


def dev_probabilities(path: Path) -> list[list[float]]:
    """The p_<label> columns of a kbl-glue dev_predictions.tsv, in file order."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    columns = [c for c in rows[0] if c.startswith("p_")]
    return [[float(r[c]) for c in columns] for r in rows]


def compare_predictions(gpu: list[list[float]], cpu: list[list[float]]) -> dict:
    """Same predicted class on every example whose GPU top probability is not within 0.02 of a tie, and the
    largest probability difference; `passed` when both hold (difference <= 0.02)."""
    if len(gpu) != len(cpu):
        return {"passed": False, "error": f"{len(gpu)} GPU predictions, {len(cpu)} CPU ones"}
    diffs = [max(abs(a - b) for a, b in zip(g, c)) for g, c in zip(gpu, cpu)]
    flips = [i for i, (g, c) in enumerate(zip(gpu, cpu)) if g.index(max(g)) != c.index(max(c))]
    hard = [i for i in flips if sorted(gpu[i])[-1] - sorted(gpu[i])[-2] > 0.04]
    return {
        "examples": len(gpu),
        "max_abs_diff": max(diffs),
        "mean_abs_diff": sum(diffs) / len(diffs),
        "label_flips": len(flips),
        "flips_away_from_ties": len(hard),
        "passed": not hard and max(diffs) <= 0.02,
    }


def accuracy_vs_reference(summary: dict, device: str) -> dict:
    """GPU mean dev accuracy over the seeds against the CPU reference's, same seeds; within 1 point passes."""
    mine = {
        "accuracy": summary["metrics"]["accuracy"],
        "std": summary.get("std", {}).get("accuracy"),
        "seeds": summary.get("seeds"),
    }
    if not CPU_REFERENCE.exists():
        return {
            **mine,
            "reference": None,
            "passed": None,
            "note": f"no {CPU_REFERENCE.name}: run `checks.py --device cpu --stages cpu_reference` on a CPU first",
        }
    ref = read_json(CPU_REFERENCE)
    same = ref.get("seeds") == mine["seeds"]
    diff = mine["accuracy"] - ref["accuracy"]
    return {
        **mine,
        "reference": ref,
        "difference": diff,
        "same_seeds": same,
        "passed": same and abs(diff) <= 0.01 if device == "gpu" else None,
    }


def training_paths(run: Run) -> dict:
    """kbl-pretrain (then resumed) alongside kbl-glue; then kbl-export, loaded on the CPU."""
    s, env = run.s, run.env("tf", TF_FORCE_GPU_ALLOW_GROWTH="true")
    run.call("data", paths_py(run, "data", run.work / "reviews", s.train_reviews, s.dev_reviews), env, 120)
    data = read_json(run.work / "reviews" / "data.json")
    deadline = time.monotonic() + min(s.paths_s, run.left()) - 30  # 30 s: export and its CPU load
    pre_dir, glue_dir = run.work / "pretrain", run.work / "glue"
    pre = run.start_process(
        "pretrain",
        paths_py(
            run, "pretrain", run.work / "pretrain1.json", "--", *pretrain_argv(run, data, pre_dir, s.pretrain_steps)
        ),
        env,
    )
    glue = run.start_process(
        "glue", paths_py(run, "glue", run.work / "glue.json", "--", *glue_argv(run, data, glue_dir)), env
    )
    out = {"data": {k: data[k] for k in ("unique_reviews", "unlabeled_reviews") if k in data}}
    # kbl-pretrain: first run, then the same command with more steps resumes from its checkpoint.
    try:
        record = run.finish("pretrain", *pre, deadline)
        if record["rc"] != 0:
            raise StageError(f"pretrain: exit {record['rc']}", record["log_tail"])
        first = read_json(run.work / "pretrain1.json")["result"]
        out["pretrain"] = pretrain_result(first, [], s.pretrain_steps)
        total = s.pretrain_steps + s.resume_steps
        run.call(
            "pretrain_resume",
            paths_py(run, "pretrain", run.work / "pretrain2.json", "--", *pretrain_argv(run, data, pre_dir, total)),
            env,
            deadline - time.monotonic(),
        )
        out["pretrain"] = pretrain_result(first, read_json(run.work / "pretrain2.json")["result"], s.pretrain_steps)
        out["pretrain"]["passed"] = out["pretrain"]["loss_falls"] and out["pretrain"]["resumed"]
    except Exception as e:  # noqa: BLE001 - recorded (with the first run's losses if it finished); fine-tuning goes on
        out["pretrain"] = {**out.get("pretrain", {}), "error": str(e), "log_tail": getattr(e, "log_tail", "")}
    record = run.finish("glue", *glue, deadline)
    if record["rc"] != 0:
        out["glue"] = {"error": f"glue: exit {record['rc']}", "log_tail": record["log_tail"]}
        return out
    out["glue"] = accuracy_vs_reference(read_json(run.work / "glue.json")["result"], run.args.device)
    out["export"] = export_check(run, glue_dir, data)
    return out


def export_check(run: Run, glue_dir: Path, data: dict) -> dict:
    """kbl-export of the fine-tuned model; the SavedModel run on the CPU against the GPU model's predictions."""
    try:
        base = run.work / "exports" / "reviews"
        run.call(
            "export",
            paths_py(run, "export", run.work / "export.json", "--", "--model", glue_dir, "--model_base_path", base),
            run.env("tf"),
            120,
        )
        run.call(
            "predict_cpu",
            paths_py(run, "predict", run.work / "cpu.json", base, data["dev_file"]),
            run.env("tf", CUDA_VISIBLE_DEVICES=""),
            120,
        )
        cpu = read_json(run.work / "cpu.json")
        result = compare_predictions(dev_probabilities(glue_dir / "dev_predictions.tsv"), cpu["probabilities"])
        return {
            **result,
            "loaded_on": "CPU" if not cpu["gpus"] else f"GPU?! {cpu['gpus']}",
            "saved_model": read_json(run.work / "export.json")["result"],
        }
    except Exception as e:  # noqa: BLE001
        return {"error": str(e), "log_tail": getattr(e, "log_tail", "")}


def cpu_reference(run: Run) -> dict:
    """kbl-glue on this CPU with the GPU run's data and seeds: writes bench/gpu/cpu_reference.json."""
    s, env = run.s, run.env("tf", CUDA_VISIBLE_DEVICES="")
    run.call("data", paths_py(run, "data", run.work / "reviews", s.train_reviews, s.dev_reviews), env, 120)
    data = read_json(run.work / "reviews" / "data.json")
    run.call(
        "glue_cpu",
        paths_py(run, "glue", run.work / "glue.json", "--", *glue_argv(run, data, run.work / "glue")),
        env,
        run.left(),
    )
    summary = read_json(run.work / "glue.json")["result"]
    reference = {
        "accuracy": summary["metrics"]["accuracy"],
        "std": summary.get("std", {}).get("accuracy"),
        "per_seed": summary.get("per_seed"),
        "seeds": summary.get("seeds"),
        "argv": glue_argv(
            run, {"train_file": "train.csv", "dev_file": "dev.csv", "minilm_dir": "all-MiniLM-L6-v2"}, Path("DIR")
        ),
        "reviews": [s.train_reviews, s.dev_reviews],
        "made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if run.s is FULL:
        common.write_json_atomic(str(CPU_REFERENCE), reference)
    return reference


# ------------------------------------------------------------------------------------------ throughput


def pretrain_flops(preset: str, seq: int, predictions: int) -> float:
    """Training FLOPs per sequence: 3x the forward (the backward twice the forward) of the encoder and of the
    masked-LM head at `predictions` positions (transform H x H, decoder H x vocab); BERT-large at seq 128 with
    20 predictions: ~241 GFLOP, the issue's count."""
    h = common.shape(preset)["hidden"]
    return 3 * (common.forward_flops(preset, seq) + 2 * predictions * (h * h + h * common.VOCAB_SIZE))


def spec(run: Run, bench: str, preset: str | None, mode: str, batch: int, key: str) -> dict:
    s = run.s
    return {
        "bench": bench,
        "preset": preset,
        "modes": [mode],
        "key": key,
        "device": run.args.device,
        "precision": "bfloat16",
        "batch": batch,
        "seq": 128,
        "predictions": 20,
        "peak_n": s.peak_n,
        "runs": s.runs if bench != "peak" else 10,
        "warmup": 2,
        "min_seconds": s.min_seconds,
    }


IMPL_MODES = {"ours": "xla", "hf": "compile", "kerashub": "xla"}
PEAK_MODES = {"ours": "tf.matmul", "hf": "torch.matmul"}


def run_cases(run: Run, impl: str, cases: list[dict], seconds: float, name: str) -> dict:
    """peer_cases.py for `impl` with `cases`, at most `seconds`; the cases it finished (maybe none)."""
    path = run.work / f"{name}_{impl}.json"
    (run.work / f"{name}_{impl}_cases.json").write_text(json.dumps(cases))
    side = "torch" if impl == "hf" else "tf"
    process, log = run.start_process(
        f"{name}_{impl}",
        [run.python(impl), str(HERE / "peer_cases.py"), impl, str(run.work / f"{name}_{impl}_cases.json"), str(path)],
        run.env(side),
    )
    record = run.finish(f"{name}_{impl}", process, log, time.monotonic() + min(seconds, run.left()))
    got = read_json(path) if path.exists() else {}
    if record["rc"] != 0:
        got["error"] = f"exit {record['rc']}"
        got["log_tail"] = record["log_tail"]
    return got


SHARE = {"ours": 2, "hf": 1, "kerashub": 1}  # ours compiles its whole training step with XLA first


def in_turn(run: Run, name: str, order: tuple, seconds: float, cases_for, out: dict) -> dict:
    """Runs each implementation of `order` on `cases_for(impl)`, one after another within `seconds`: each gets its
    `SHARE` of the time left among those still to run, so time one leaves unused goes to the next
    (bench/gpu/README.md: the H200 run). Adds each one's results, then the table, to `out`."""
    deadline = time.monotonic() + seconds
    for i, impl in enumerate(order):
        left = max(0.0, deadline - time.monotonic())
        out[impl] = run_cases(run, impl, cases_for(impl), left * SHARE[impl] / sum(SHARE[j] for j in order[i:]), name)
        run.save()
    out["table"] = summarize(run.results["stages"], out)
    return out


def step_throughput(run: Run) -> dict:
    """The matmul peaks and the pretraining step, in turn within the stage's time box."""
    s = run.s

    def cases_for(impl):
        peak = [spec(run, "peak", None, PEAK_MODES[impl], 0, "peak")] if impl in PEAK_MODES else []
        return peak + [
            spec(run, "pretrain", p, IMPL_MODES[impl], s.step_batch, f"pretrain/{p}") for p in s.step_presets
        ]

    return in_turn(
        run,
        "step",
        ("ours", "hf", "kerashub"),
        min(s.step_s, run.left()),
        cases_for,
        {"batch": s.step_batch, "seq": 128, "precision": "bfloat16", "predictions": 20},
    )


def forward_throughput(run: Run) -> dict:
    """The forward over presets and batches in priority order, in turn within the time left."""
    s = run.s

    def cases_for(impl):
        return [
            spec(run, "forward", p, IMPL_MODES[impl], b, f"forward/{p}/b{b}")
            for p in s.forward_presets
            for b in s.forward_batches
        ]

    return in_turn(
        run, "forward", ("ours", "kerashub", "hf"), run.left(), cases_for, {"seq": 128, "precision": "bfloat16"}
    )


def summarize(stages: dict, current: dict) -> dict:
    """seq/s per case and implementation (this run's step and forward stages), ours over the best peer, and the
    pretraining step's MFU against the larger matmul peak of the run."""
    value = {impl: {} for impl in IMPL_MODES}
    for stage_out in [stages.get("step", {}), stages.get("forward", {}), current]:
        for impl in IMPL_MODES:
            for key, cell in stage_out.get(impl, {}).get("cases", {}).items():
                if cell.get("value"):
                    value[impl][key] = cell["value"]
    peaks = [value[i].get("peak") for i in PEAK_MODES if value[i].get("peak")]
    peak = max(peaks) if peaks else None
    rows = {}
    for key in dict.fromkeys(k for impl in IMPL_MODES for k in value[impl] if k != "peak"):
        cells = {impl: value[impl].get(key) for impl in IMPL_MODES}
        peers = {i: v for i, v in cells.items() if i != "ours" and v}
        best = max(peers, key=peers.get) if peers else None
        row = {
            "seq_per_s": cells,
            "best_peer": best,
            "ours_over_best": cells["ours"] / peers[best] if best and cells["ours"] else None,
        }
        bench, preset = key.split("/")[:2]
        if bench == "pretrain" and peak:
            flops = pretrain_flops(preset, 128, 20)
            row["gflop_per_seq"] = flops / 1e9
            row["mfu"] = {i: v * flops / peak for i, v in cells.items() if v}
        rows[key] = row
    return {"matmul_peak_tflops": peak / 1e12 if peak else None, "rows": rows}


# ------------------------------------------------------------------------------------------ main


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the results JSON (its .log beside it gets every log)")
    parser.add_argument("--small", action="store_true", help="tiny sizes: a dry run of the plumbing")
    parser.add_argument(
        "--device", choices=("gpu", "cpu"), default="gpu", help="cpu: a dry run, or the CPU reference (default gpu)"
    )
    parser.add_argument(
        "--stages",
        default=",".join(STAGES),
        help=f"comma-separated, of {','.join(STAGES)},cpu_reference (default {','.join(STAGES)})",
    )
    parser.add_argument("--budget_s", type=int, help="the whole run's time box (default 560; --small 600)")
    parser.add_argument("--step_presets", help="the pretraining-step presets, comma-separated (default large,base)")
    parser.add_argument("--step_s", type=int, help="the pretraining-step stage's time box (default 520)")
    parser.add_argument("--site", help="the TensorFlow stack's site-packages (run.sh: .gpu_stack/site)")
    parser.add_argument("--cuda12", help="folder of the CUDA 12 sonames TensorFlow opens (run.sh makes it)")
    parser.add_argument("--cuda_data_dir", help="the CUDA folder XLA takes ptxas and libdevice from")
    parser.add_argument("--tf_python", default=sys.executable, help="Python of ours (default this one)")
    parser.add_argument("--kerashub_python", default=sys.executable, help="Python of KerasHub (default this one)")
    parser.add_argument("--torch_python", default=sys.executable, help="Python of HF torch (default this one)")
    args = parser.parse_args(argv)
    stages = [x for x in args.stages.split(",") if x]
    unknown = set(stages) - set(STAGES) - {"cpu_reference"}
    if unknown:
        parser.error(f"unknown stages {sorted(unknown)}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    sizes = SMALL if args.small else FULL
    if args.step_presets:
        sizes = dataclasses.replace(sizes, step_presets=tuple(args.step_presets.split(",")))
    if args.step_s:
        sizes = dataclasses.replace(sizes, step_s=args.step_s)
    run = Run(args, sizes)
    signal.signal(signal.SIGTERM, lambda *_: (run.stop_all(), sys.exit(143)))
    functions = {
        "probe": probe,
        "step": step_throughput,
        "paths": training_paths,
        "forward": forward_throughput,
        "cpu_reference": cpu_reference,
    }
    try:
        for name in stages:
            stage(run, name, functions[name])
            if name == "probe" and "error" in run.results["stages"]["probe"] and args.device == "gpu":
                print("[probe] failed: the other stages would not run on the GPU; stopping", file=sys.stderr)
                break
    finally:
        run.stop_all()
    run.results["complete"] = True
    run.save()
    shutil.rmtree(run.work, ignore_errors=True)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
