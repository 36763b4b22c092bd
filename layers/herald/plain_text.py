"""Text a person reads in a chat as plain text, from a party Herald does not fully trust (an owner service):
no control characters, no markup, and nothing that reads as a link or an address unless the party was
allowed links. The same rule as an invitation's agency name, widened to the punctuation a sentence needs."""

from __future__ import annotations

import re

# A scheme (`https://`, `tel:`-like `xx://`), `www.`, an e-mail address, or a dotted host name with a
# letter TLD and no space after the dot (`evil.example`, `bit.ly/x`): each reads as somewhere to go.
_LINK = re.compile(r"(?i)(?:[a-z][a-z0-9+.-]*://|\bwww\.|[\w.+-]+@[\w-]+\.|\b(?:[a-z0-9-]+\.)+[a-z][a-z0-9-]{1,62}\b)")
# Markup a client might render: HTML tags, Markdown links and code, and zero-width or direction controls.
_MARKUP = re.compile(r"[<>`\[\]]|[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def plain_text_problem(text: str, *, links_allowed: bool = False) -> str | None:
    """Why `text` is not plain text a person may be shown (None when it is)."""
    if not text.isprintable():
        return "holds a control character"
    if _MARKUP.search(text):
        return "holds markup (< > ` [ ]) or an invisible formatting character"
    if not links_allowed and _LINK.search(text):
        return "reads as a link or an address (the registration does not allow links)"
    return None
