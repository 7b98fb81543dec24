"""Fake model servers on 127.0.0.1 that speak the subsets of the provider APIs the pipeline uses."""

from .server import Loopback, Reply, anthropic_message, chat_completion

__all__ = ["Loopback", "Reply", "anthropic_message", "chat_completion"]
