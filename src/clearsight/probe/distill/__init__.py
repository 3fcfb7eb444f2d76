"""Self-distillation (the paper's §4.3, Table 2): a reasoner's successful trajectories as
training data, and LoRA fine-tuning on them."""
