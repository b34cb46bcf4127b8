"""Generate a small random text for minGPT-ddp's char_dataset.py (not part of pytorch/examples).

pytorch/examples' minGPT-ddp reads a text file (data_config.path: upstream, tiny Shakespeare,
downloaded) and trains on every block_size + 1 characters of it. This writes random text instead,
data/input.txt beside this file, sized so that with data_config.block_size=32 and the upstream
train_split 0.9 the training set is 1024 sequences (int(0.9 * (1170 - 32)) = 1024): an epoch of
32 steps of 32 at one rank, 16 at two.

    python prepare.py [--chars 1170]
"""
import argparse
import os
import random
import string

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--chars", type=int, default=1170)
args = parser.parse_args()
folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
os.makedirs(folder, exist_ok=True)
rng = random.Random(0)
alphabet = string.ascii_lowercase + " \n.,"
text = "".join(rng.choice(alphabet) for _ in range(args.chars))
with open(os.path.join(folder, "input.txt"), "w") as f:
    f.write(text)
print(f"wrote {folder}/input.txt: {args.chars} characters, {len(set(text))} distinct")
