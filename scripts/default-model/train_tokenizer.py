"""Trains the byte-level BPE tokenizer shared by the default model and its draft.

  python3 train_tokenizer.py TRAIN_TXT OUT_DIR [--vocab-size 4096]
Writes tokenizer.json and tokenizer_config.json (with a simple chat template) into OUT_DIR.
"""
import argparse
import json
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

SPECIAL_TOKENS = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] | trim + '<|end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("train_txt")
    parser.add_argument("out_dir")
    parser.add_argument("--vocab-size", type=int, default=4096)
    args = parser.parse_args()

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=args.vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train([args.train_txt], trainer)

    os.makedirs(args.out_dir, exist_ok=True)
    tokenizer.save(os.path.join(args.out_dir, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|endoftext|>",
        "unk_token": None,
        "pad_token": "<|endoftext|>",
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1024,
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(args.out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print("vocabulary: %d tokens" % tokenizer.get_vocab_size())


if __name__ == "__main__":
    main()
