"""What a job trains: the model presets (:mod:`.models`) and the synthetic data they learn from
(:mod:`.data`), through a real DataLoader with a DistributedSampler. The bottom of the flow:
strategies, ranks and the command line build on it; it imports nothing of ddpbench.
"""
