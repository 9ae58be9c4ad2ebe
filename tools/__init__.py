"""Project tools that are not part of the installed etu: run from the checkout's root
(``python -m tools.screenshots``); tests and benchmarks import them from there too."""
