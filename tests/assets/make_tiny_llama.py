"""Make tests/assets/tiny-llama: a random-init Llama (hidden 32, 2 layers) with a small BPE tokenizer.

    .venv/bin/python tests/assets/make_tiny_llama.py

Fast tests load it in place of the real backbone: same code path, milliseconds instead of seconds.
"""

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

OUT = Path(__file__).parent / "tiny-llama"
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
CORPUS = [
    "You choose tools for a user's request. Convert a PDF document to text. Weather forecast for a city.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}} send an email message translate',
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 {}[]():;,.!?\"'-_/ <>=+*&%$#@",
]


def main() -> None:
    torch.manual_seed(0)
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    fast.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(OUT, safe_serialization=True)
    fast.save_pretrained(OUT)
    print(f"wrote {OUT} ({sum(p.numel() for p in model.parameters()):,} parameters, vocab {len(fast)})")


if __name__ == "__main__":
    main()
