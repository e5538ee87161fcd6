"""The search pipeline: plan, semantic and keyword sides, their fusion, keyword feedback and the learnt second stage."""
