"""The package version, set from the stofc project version when the wheel is built."""
__version__ = "0.1.0"
