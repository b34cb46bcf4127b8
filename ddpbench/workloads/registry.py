"""The names a job's ``model`` may take, and what each one builds -- without importing torch or
anything of the user's.

* a preset: ``mlp``, ``cnn``, ``transformer`` (sized by ``model_size``, :mod:`.models`);
* a reference model people compare with (:data:`REFERENCE`): ResNet-50, BERT, GPT-2 and their
  small configurations for a CPU sweep (:mod:`.reference`);
* a workload another package registers under the entry-point group ``ddpbench.workloads``
  (``name = "package.module:function"``);
* any factory by its import path, ``"package.module:function"``.

Every name but a preset is a factory returning a :class:`~ddpbench.workloads.workload.Workload`,
called with the job's ``model_args`` (on top of the name's own defaults).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

#: the built-in models a job sizes with ``model_size`` (xs to xl): ddpbench's presets of a model (the cost
#: model's large-model layouts are :data:`ddpbench.analysis.models.PRESETS`, another thing)
SIZED_MODELS = ("mlp", "cnn", "transformer")
ENTRY_POINT_GROUP = "ddpbench.workloads"
#: ``package.module:function`` (the function may be an attribute path: ``module:Class.make``)
FACTORY_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Entry:
    """A named factory: where it lives, the arguments the name stands for, and what it is."""

    target: str
    defaults: dict = field(default_factory=dict)
    about: str = ""
    #: the optional extra it needs, if any
    extra: str = ""


_MINI_BERT = {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024, "seq_len": 64}
REFERENCE: dict[str, Entry] = {
    "resnet50": Entry("ddpbench.workloads.reference:resnet50", {},
                      "ResNet-50 (torchvision's architecture), 224x224 images, 1000 classes"),
    "resnet50-small": Entry("ddpbench.workloads.reference:resnet50", {"image_size": 64},
                            "the same ResNet-50 on 64x64 images, for a CPU sweep"),
    "bert-base": Entry("ddpbench.workloads.reference:bert", {},
                       "BERT-base sequence classification, 128 tokens (Hugging Face, random weights)", "hf"),
    "bert-mini": Entry("ddpbench.workloads.reference:bert", _MINI_BERT,
                       "BERT-Mini (4 layers, 256 wide), 64 tokens, for a CPU sweep", "hf"),
    "gpt2": Entry("ddpbench.workloads.reference:gpt2", {},
                  "GPT-2 (124M) language modelling, 128 tokens (Hugging Face, random weights)", "hf"),
    "gpt2-mini": Entry("ddpbench.workloads.reference:gpt2",
                       {"layers": 4, "hidden": 256, "heads": 4, "seq_len": 64, "vocab": 8192},
                       "GPT-2 at 4 layers, 256 wide, 64 tokens, 8192-token vocabulary, for a CPU sweep", "hf"),
}


def _plugins() -> dict[str, Entry]:
    """Workloads other packages register (entry points never replace a built-in name)."""
    found: dict[str, Entry] = {}
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if FACTORY_PATH.fullmatch(ep.value) and ep.name not in SIZED_MODELS and ep.name not in REFERENCE:
                found[ep.name] = Entry(ep.value, {}, f"registered by {ep.dist.name if ep.dist else 'a package'}")
    except Exception:  # noqa: BLE001 - broken metadata of another package must not stop ddpbench
        pass
    return found


PLUGINS: dict[str, Entry] = _plugins()
NAMED: dict[str, Entry] = {**REFERENCE, **PLUGINS}
MODEL_NAMES: tuple[str, ...] = (*SIZED_MODELS, *NAMED)


def entry(model: str) -> Entry:
    """The factory behind a model name that is not a preset."""
    if model in NAMED:
        return NAMED[model]
    if FACTORY_PATH.fullmatch(model):
        return Entry(model)
    raise ValueError(f"unknown model {model!r}")


def check_model(value) -> str:
    """A job's ``model``, checked by its spelling only (nothing is imported); ValueError if bad."""
    if not isinstance(value, str) or not (value in MODEL_NAMES or FACTORY_PATH.fullmatch(value)):
        raise ValueError(value)
    return value


ARG_SCALARS = (str, int, float, bool)


def check_model_args(value) -> str:
    """A job's ``model_args`` -- a table of keyword arguments (or its JSON text, as stored) -- as
    canonical JSON text: the job's identity must not depend on the order keys were written in.
    Values are strings, numbers, booleans or lists of them. ValueError if bad."""
    if isinstance(value, str):
        if value.strip() in ("", "{}"):
            return ""
        value = _parse_table(value)
    if not isinstance(value, dict) or not all(isinstance(k, str) and k.isidentifier() for k in value):
        raise ValueError(value)
    for item in value.values():
        items = item if isinstance(item, list) else [item]
        if not all(isinstance(i, ARG_SCALARS) for i in items) or any(isinstance(i, float) and not math.isfinite(i)
                                                                      for i in items):
            raise ValueError(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if value else ""


def _parse_table(text: str) -> dict:
    """A table as JSON text (``{"hidden": 256}``, as stored) or as a TOML inline table
    (``{ hidden = 256 }``, as written in an experiment); ValueError if it is neither."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(f"table = {text}")["table"]
    except (tomllib.TOMLDecodeError, KeyError):
        raise ValueError(text) from None


def model_arguments(model: str, model_args: str) -> dict:
    """The keyword arguments a job's factory is called with: the name's defaults, then the job's."""
    return {**entry(model).defaults, **(json.loads(model_args) if model_args else {})}


def model_label(model: str, model_size: str, model_args: str = "") -> str:
    """How tables and figures name a job's model: ``mlp-s``, ``resnet50``, ``gpt2-mini(seq_len=128)``."""
    if model in SIZED_MODELS:
        return f"{model}-{model_size}"
    if not model_args:
        return model
    args = json.loads(model_args)
    return f"{model}(" + ", ".join(f"{k}={v}" for k, v in args.items()) + ")"
