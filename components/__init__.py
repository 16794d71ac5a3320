"""The plugin directory of the component package (PulumiPlugin.yaml); not a library package.

This file only gives ``__main__.py`` a package, so type checkers tell it from the stack
program's ``__main__.py`` at the repository root.
"""
