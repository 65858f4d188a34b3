"""Shared building blocks for the reproductions: layers, backbones, heads, optimisers, schedules, weight I/O."""
