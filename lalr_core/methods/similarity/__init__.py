"""Similarity of representations and components: linear CKA between layers, cosine sets within a layer."""
