"""Rippl adapter."""
