"""The demo's last stage: what each stage showed, where its files are, and each step's command."""


def print_summary(results: dict, commands: list[str], run_dir: str, sentences: int, tiny_imdb: dict) -> None:
    """Prints the summary of a demo run.

    Args:
        results: The demo's results, by stage (data, vocab, pretrain, finetune, export, serve).
        commands: Each step's command line, to do it by hand.
        run_dir: The run directory.
        sentences: How many sentences the served model classified.
        tiny_imdb: The shipped longer-pretrained BERT's pretraining record (steps, reviews, masked_lm_accuracy).
    """
    r, longer = results, tiny_imdb
    p, f, serve = r["pretrain"], r["finetune"], r["serve"]
    baseline = f["majority_baseline"]
    gain = f["pretrained"]["accuracy"] - f["scratch"]["accuracy"]
    print(f"run directory: {run_dir}")
    print(
        f"  reviews/         {f['train']} labelled training reviews, {f['dev']} held-out dev reviews, "
        f"{r['data']['unlabeled_reviews']} unlabelled ones (unlabeled.txt)"
    )
    print(f"  vocab.txt        {r['vocab']['tokens']} WordPiece tokens (uncased) trained on the unlabelled reviews")
    print(
        f"  pretrain/        tiny BERT, steps {p['steps'][0]} -> {p['steps'][1]}: masked-LM accuracy "
        f"{p['masked_lm_accuracy'][0]:.3f} -> {p['masked_lm_accuracy'][1]:.3f}, next-sentence accuracy "
        f"{p['next_sentence_accuracy'][0]:.3f} -> {p['next_sentence_accuracy'][1]:.3f}"
    )
    print(
        f"  dev accuracy on {f['dev']} held-out reviews (majority-class baseline {baseline:.4f}: "
        f"'{f['majority_class']}' always):"
    )
    gain_longer = f["pretrained_longer"]["accuracy"] - f["scratch"]["accuracy"]
    print(f"    reviews-scratch/            {f['scratch']['accuracy']:.4f}   tiny BERT, no pretraining")
    print(
        f"    reviews-pretrained/         {f['pretrained']['accuracy']:.4f}   pretrained above ({p['steps'][1]} "
        f"steps on {r['data']['unlabeled_reviews']} reviews): {gain:+.4f} from pretraining"
    )
    print(
        f"    reviews-pretrained_longer/  {f['pretrained_longer']['accuracy']:.4f}   pretrained longer "
        f"({longer['steps']} steps on {longer['reviews']} IMDB reviews, masked-LM accuracy "
        f"{longer['masked_lm_accuracy']:.2f}): {gain_longer:+.4f} from pretraining"
    )
    if gain < 0.01 <= gain_longer:
        print(
            "                                (the stage-2 run is too short to give the encoder features "
            "sentiment can use; the longer one does)"
        )
    print(
        f"    reviews-minilm/             {f['minilm']['accuracy']:.4f}   all-MiniLM-L6-v2 real weights: "
        f"{f['minilm']['accuracy'] - baseline:+.4f} over the baseline"
    )
    print(
        f"  exports/reviews/ SavedModel versions {r['export']['versions']} (raw text in; stock TF Serving: "
        f"see docs/serving.md)"
    )
    print(f"  logs/server.log  the gRPC server's log; it classified {serve['right']} of {sentences} sentences right")
    print("\nEach step by hand (the same code paths; in a checkout, tasks/*.py and export/*.py are the same tools):")
    for command in commands:
        print(f"  {command}")
