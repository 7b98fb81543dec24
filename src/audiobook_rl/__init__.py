"""audiobook-rl: agentic RL that turns Chinese novel excerpts into audiobook scripts."""

__version__ = "0.1.0"
