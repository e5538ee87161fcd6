"""Adapters: the ports implemented over real libraries (ChromaDB, Qdrant, files, ONNX) and in memory."""
