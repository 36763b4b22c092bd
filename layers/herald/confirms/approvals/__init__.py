"""Agents' approvals: the confirm (business type `agent_approval`) and inbox notification an agent's approval shows
its person, and the engine's routes that ask and withdraw (contract §4)."""
