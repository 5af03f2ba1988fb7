"""The fetch stage: sources (Hugging Face, ModelScope, a mirror, a bundle) resolve files to (url, size, sha256,
revision), and the download engine brings them in resumably, segmented and SHA-256 verified.
"""
