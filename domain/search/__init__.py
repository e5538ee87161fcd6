"""The search pipeline: plan, semantic and keyword sides, their fusion and the learnt second stage."""
