"""Train a small GPT-2 language model with Hugging Face's ``Trainer``, as its examples do.

    torchrun --nproc_per_node 2 hf_trainer_clm.py --output_dir out --use_cpu --ddp_backend gloo \
        --per_device_train_batch_size 8 --max_steps 200 --report_to none --save_strategy no

The model is built from a config (random weights: nothing is downloaded), the data is random tokens
of the model's vocabulary, and every ``TrainingArguments`` field comes from the command line
(``HfArgumentParser``, as ``run_clm.py`` takes them). The Trainer wraps the model in
``DistributedDataParallel`` itself, picks its sampler and optimizer (AdamW, a linear schedule) and
prints its own ``train_samples_per_second`` at the end.
"""

from dataclasses import dataclass, field

import torch
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    n_layer: int = field(default=2, metadata={"help": "transformer blocks"})
    n_embd: int = field(default=128, metadata={"help": "width"})
    n_head: int = field(default=2, metadata={"help": "attention heads"})
    vocab_size: int = field(default=1024, metadata={"help": "vocabulary"})
    block_size: int = field(default=64, metadata={"help": "tokens per sample"})
    samples: int = field(default=4096, metadata={"help": "samples in the training set"})


class RandomTokens(torch.utils.data.Dataset):
    """``samples`` sequences of ``block_size`` random tokens, labels = inputs (causal LM)."""

    def __init__(self, samples: int, block_size: int, vocab_size: int, seed: int = 0):
        generator = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, vocab_size, (samples, block_size), generator=generator)

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, index):
        return {"input_ids": self.tokens[index], "labels": self.tokens[index]}


def main():
    model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    config = GPT2Config(n_layer=model_args.n_layer, n_embd=model_args.n_embd, n_head=model_args.n_head,
                        vocab_size=model_args.vocab_size, n_positions=model_args.block_size,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    train = RandomTokens(model_args.samples, model_args.block_size, model_args.vocab_size)
    trainer = Trainer(model=model, args=training_args, train_dataset=train)
    result = trainer.train()
    if training_args.process_index == 0:
        print(result.metrics)


if __name__ == "__main__":
    main()
