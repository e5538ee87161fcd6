"""What is embedded for each memory, by variant (all derived from memories in insertion order)."""

from __future__ import annotations

from common import Conversation

SEP = "\n"


def doc_texts(conv: Conversation, variant: str) -> list[str]:
    """Texts embedded for each memory of a conversation.

    plain  : the memory's content
    prev1  : previous memory in the same space (insertion order) + SEP + content  (causal: known at add time)
    prev2  : two previous memories + content                                  (causal)
    next1  : content + SEP + next memory     (NOT causal: needs re-embedding when the next arrives; analysis only)
    nospk  : content without the leading "Speaker: " (analysis only; the product does not know the format)
    """
    texts = [m.text for m in conv.memories]
    if variant == "plain":
        return texts
    if variant == "prev1":
        return [texts[i] if i == 0 else texts[i - 1] + SEP + texts[i] for i in range(len(texts))]
    if variant == "prev2":
        return [SEP.join(texts[max(0, i - 2) : i + 1]) for i in range(len(texts))]
    if variant == "next1":
        return [texts[i] if i == len(texts) - 1 else texts[i] + SEP + texts[i + 1] for i in range(len(texts))]
    if variant == "nospk":
        return [t.split(": ", 1)[1] if ": " in t else t for t in texts]
    raise KeyError(variant)
