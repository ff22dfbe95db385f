"""Adapters to training frameworks, each in an optional extra: import the submodule you need
(``contrastkit.integrations.lightning``: ``pip install 'contrastkit[lightning]'``)."""
