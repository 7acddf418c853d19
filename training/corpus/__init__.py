"""Our own embedded-encoder corpus: clips composed from package-carried media, labelled per second (LLP) and
with grounding queries, split by clip so the held-out clips and query wordings are never trained on."""
