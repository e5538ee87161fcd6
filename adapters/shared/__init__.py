"""What the storage backends share: store-name rules, the error boundary, batching, durable files, keyword words."""
