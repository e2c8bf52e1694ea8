"""The knowledge base: documents, chunking, encoders, model files, ingest, KB entities."""
