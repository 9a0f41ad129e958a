"""Fine-tuning tasks, one small `FinetuneTask` class each: sentence (pair) classification and regression,
word tagging (NER), extractive question answering (SQuAD), multiple choice (SWAG)."""
