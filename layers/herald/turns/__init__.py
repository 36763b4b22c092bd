"""Agent turn message queue: messages sent to a conversational agent while its turn runs wait durably (at
most ten), cancellable by their sender, and become one turn together when the turn finishes."""
