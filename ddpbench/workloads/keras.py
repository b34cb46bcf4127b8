"""The presets as Keras models, for the TensorFlow strategies: the same layers, shapes and parameter
count as the PyTorch model a ``ddp`` job trains (the rank checks the counts before it trains).

``mlp``: the same Dense layers and ReLUs; ``cnn``: the same 3x3 convolutions ('same' padding),
ReLUs, 2x2 max pooling and dense head, on channels-last images (TensorFlow's CPU convolutions take
NHWC; the PyTorch model's NCHW samples are transposed, not changed). TensorFlow is imported when a
model is built.
"""

from __future__ import annotations

from ddpbench.workloads.models import CNN_PRESETS, IMAGE_SHAPE, MLP_IN, MLP_PRESETS, NUM_CLASSES

#: the presets that have a Keras twin
KERAS_MODELS = ("mlp", "cnn")


def keras_model(model: str, size: str):
    """The Keras twin of preset ``model`` at ``size`` (a ``keras.Sequential``), unbuilt weights seeded by TF."""
    import tensorflow as tf

    layers = tf.keras.layers
    if model == "mlp":
        width, depth = MLP_PRESETS[size]["width"], 4
        stack = [tf.keras.Input((MLP_IN,)), layers.Dense(width, activation="relu")]
        stack += [layers.Dense(width, activation="relu") for _ in range(depth - 1)]
        return tf.keras.Sequential([*stack, layers.Dense(NUM_CLASSES)])
    if model == "cnn":
        c, hidden = CNN_PRESETS[size]["channels"], CNN_PRESETS[size]["hidden"]
        channels, height, width = IMAGE_SHAPE
        stack = [tf.keras.Input((height, width, channels))]
        for cout in (c, 2 * c, 4 * c):
            stack += [layers.Conv2D(cout, 3, padding="same", activation="relu"), layers.MaxPooling2D(2)]
        return tf.keras.Sequential([*stack, layers.Flatten(), layers.Dense(hidden, activation="relu"),
                                    layers.Dense(NUM_CLASSES)])
    raise ValueError(f"no Keras twin of {model!r}; allowed: {', '.join(KERAS_MODELS)}")


def keras_inputs(model: str, inputs):
    """A batch of the PyTorch model's inputs (a numpy array) as the Keras twin takes them."""
    return inputs.transpose(0, 2, 3, 1) if model == "cnn" else inputs
