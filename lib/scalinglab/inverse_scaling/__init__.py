"""Inverse scaling: the prize's tasks, prize-faithful scoring, language-model adapters and
trend tests over model families."""
