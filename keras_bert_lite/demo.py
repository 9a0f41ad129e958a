"""`make demo`: the whole BERT story on shipped data. Not built yet (see the project's demo issue)."""

if __name__ == "__main__":
    print("make demo: not yet — the end-to-end demo (vocab, pretraining, fine-tuning, export, serving) is being "
          "built. Run `make test` to exercise the library meanwhile.")
