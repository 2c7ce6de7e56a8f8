"""LangGraph checkpointers storing checkpoints in FalkorDB, next to the causal memory."""

from rippl_langgraph.checkpoint.saver import AsyncFalkorDBSaver, FalkorDBSaver

__all__ = ["AsyncFalkorDBSaver", "FalkorDBSaver"]
