"""What a job trains: a :class:`~.workload.Workload` -- a model, its dataset and its loss. The bottom
of the flow: strategies, ranks and the command line build on it; it imports nothing of ddpbench.

  workload    the public ``ddpbench.Workload`` (no torch)
  registry    the names a job's ``model`` may take, and what each builds (no torch)
  build       a job's workload, built where it trains: presets here, factories imported and called
  probe       ``python -m ddpbench.workloads.probe``: build workloads in a child process, say what they are
  catalog     what a job's workload is (parameters, tensors, samples) without building it in this process
  models      the presets mlp, cnn, transformer and their sizes
  keras       the presets as Keras models, for the TensorFlow strategies
  reference   ResNet-50 (:mod:`.resnet`), VGG-16 (:mod:`.vgg`), BERT and GPT-2 (Hugging Face ``transformers``)
  data        the DistributedSampler loader over any workload's dataset; the presets' synthetic data
  disk        a dataset written once as files, read and decoded per sample
"""
