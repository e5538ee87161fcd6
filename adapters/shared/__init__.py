"""What the storage backends share: store names, error boundary, batching, durable files, timestamps, cosines."""
