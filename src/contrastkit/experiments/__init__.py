"""Reproductions of the papers' experiments: recipes, their runner, statistics and reports."""
