"""Training shared by local and distributed runs: FeedForward, optimizers, metrics, initializers, data input."""
