"""The package's version, in a module of its own so that modules the package's
``__init__`` imports (the tuner's cache, results) can read it without importing the
package back."""

__version__ = "0.1.0"
