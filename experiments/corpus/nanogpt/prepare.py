"""Generate a small random token data set for nanoGPT's train.py (not part of nanoGPT).

nanoGPT reads data/<dataset>/train.bin and val.bin (uint16 token ids) and, where present,
data/<dataset>/meta.pkl (its vocab_size). Its prepare scripts download text; this writes
random tokens instead, enough for a few hundred small iterations:

    python prepare.py [--dataset corpus] [--tokens 200000] [--vocab 256]
"""
import argparse
import os
import pickle

import numpy as np

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dataset", default="corpus")
parser.add_argument("--tokens", type=int, default=200_000)
parser.add_argument("--vocab", type=int, default=256)
args = parser.parse_args()
folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", args.dataset)
os.makedirs(folder, exist_ok=True)
rng = np.random.default_rng(0)
for split, size in (("train", args.tokens), ("val", args.tokens // 10)):
    rng.integers(0, args.vocab, size, dtype=np.uint16).tofile(os.path.join(folder, f"{split}.bin"))
with open(os.path.join(folder, "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": args.vocab}, f)
print(f"wrote {folder}: {args.tokens} training tokens, vocabulary {args.vocab}")
