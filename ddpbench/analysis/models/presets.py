"""Large-model parameter layouts for ``whatif --model``: the trainable tensors of a Llama-, GPT-3- or
BART-shaped model, built with plain ``torch.nn`` layers on the meta device (nothing allocated, nothing
downloaded, no transformers needed), in registration order -- what DDP cuts its buckets from.

Each preset is a config (the published shapes; ``--model-args`` overrides any of its keys):

* ``llama-7b``, ``llama-13b``, ``llama-70b``: Touvron et al. 2023 (Llama 2), Table 1 and the released
  configs: RMSNorm, no biases, SwiGLU MLP (gate, up, down), untied output head, grouped-query attention
  at 70B (8 key-value heads); 6.74, 13.0 and 69.0 billion parameters;
* ``gpt3-1.3b``, ``gpt3-175b``: Brown et al. 2020, Table 2.1: LayerNorm, biases, a 4x MLP, learned
  positions (2048), the output head tied to the embedding; 1.3 and 175 billion;
* ``bart-large``: Lewis et al. 2019 (the released facebook/bart-large config): 12 encoder and 12 decoder
  layers of width 1024, 4096 MLP, LayerNorm with biases, 1026 learned positions per stack, tied
  embeddings; 406 million.
"""

from __future__ import annotations

import json

from ddpbench.errors import InputError

#: each preset's shape; ``kind`` says how its layers are laid out
PRESETS: dict[str, dict] = {
    "llama-7b": {"kind": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32, "ffn": 11008,
                 "vocab": 32000},
    "llama-13b": {"kind": "llama", "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 40, "ffn": 13824,
                  "vocab": 32000},
    "llama-70b": {"kind": "llama", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672,
                  "vocab": 32000},
    "gpt3-1.3b": {"kind": "gpt", "layers": 24, "hidden": 2048, "heads": 16, "ffn": 8192, "vocab": 50257,
                  "positions": 2048},
    "gpt3-175b": {"kind": "gpt", "layers": 96, "hidden": 12288, "heads": 96, "ffn": 49152, "vocab": 50257,
                  "positions": 2048},
    "bart-large": {"kind": "bart", "layers": 12, "hidden": 1024, "heads": 16, "ffn": 4096, "vocab": 50265,
                   "positions": 1026},
}


def config(name: str, model_args: str = "") -> dict:
    """The preset's shape with ``model_args`` (canonical JSON text, as ``check_model_args`` gives) over it;
    KeyError naming an argument the preset does not have."""
    shape = dict(PRESETS[name])
    given = json.loads(model_args) if model_args else {}
    unknown = sorted(set(given) - set(shape) - {"kind"})
    if unknown:
        raise KeyError(", ".join(unknown))
    shape.update(given)
    return shape


def _llama(c, nn):
    head_dim = c["hidden"] // c["heads"]
    kv = head_dim * c["kv_heads"]
    blocks = []
    for _ in range(c["layers"]):
        blocks += [nn.Linear(c["hidden"], c["hidden"], bias=False), nn.Linear(c["hidden"], kv, bias=False),
                   nn.Linear(c["hidden"], kv, bias=False), nn.Linear(c["hidden"], c["hidden"], bias=False),
                   nn.Linear(c["hidden"], c["ffn"], bias=False), nn.Linear(c["hidden"], c["ffn"], bias=False),
                   nn.Linear(c["ffn"], c["hidden"], bias=False), _norm(c["hidden"], nn), _norm(c["hidden"], nn)]
    return [nn.Embedding(c["vocab"], c["hidden"]), *blocks, _norm(c["hidden"], nn),
            nn.Linear(c["hidden"], c["vocab"], bias=False)]


def _gpt_block(c, nn, cross: bool = False):
    d, f = c["hidden"], c["ffn"]
    attention = [nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)]
    cross_attention = [nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)] if cross else []
    return [*attention, *cross_attention, nn.Linear(d, f), nn.Linear(f, d), nn.LayerNorm(d)]


def _gpt(c, nn):
    blocks = [m for _ in range(c["layers"]) for m in _gpt_block(c, nn)]
    return [nn.Embedding(c["vocab"], c["hidden"]), nn.Embedding(c["positions"], c["hidden"]), *blocks,
            nn.LayerNorm(c["hidden"])]  # the head is the embedding, tied


def _bart(c, nn):
    d = c["hidden"]
    encoder = [m for _ in range(c["layers"]) for m in _gpt_block(c, nn)]
    decoder = [m for _ in range(c["layers"]) for m in _gpt_block(c, nn, cross=True)]
    return [nn.Embedding(c["vocab"], d), nn.Embedding(c["positions"], d), nn.LayerNorm(d), *encoder,
            nn.Embedding(c["positions"], d), nn.LayerNorm(d), *decoder]  # shared token embedding, tied head


def _norm(width: int, nn):
    """RMSNorm's one weight vector (torch.nn.RMSNorm where the installed torch has it)."""
    return nn.RMSNorm(width) if hasattr(nn, "RMSNorm") else nn.LayerNorm(width, bias=False)


def tensor_bytes(name: str, model_args: str = "") -> tuple[int, ...]:
    """The fp32 gradient bytes of each trainable tensor of the preset, in registration order, from its layers
    built on the meta device."""
    import torch
    from torch import nn

    from ddpbench.workloads.catalog import uninitialised

    c = config(name, model_args)
    with torch.device("meta"), uninitialised():  # shapes only: nothing to fill
        layers = {"llama": _llama, "gpt": _gpt, "bart": _bart}[c["kind"]](c, nn)
        model = nn.ModuleList(layers)
    return tuple(p.numel() * 4 for p in model.parameters() if p.requires_grad)


def layout(name: str, model_args: str = "") -> tuple[tuple[int, ...], str]:
    """(:func:`tensor_bytes`, a label) of a preset for ``whatif --model``; InputError naming ``--model-args``
    and what the preset takes where an argument is not one of its shape's."""
    try:
        tensors = tensor_bytes(name, model_args)
    except KeyError as err:
        raise InputError("command line", "--model-args", f"{name} has no {err.args[0]}; it takes "
                         f"{', '.join(k for k in PRESETS[name] if k != 'kind')}") from None
    return tensors, name + (f"({model_args})" if model_args else "")
