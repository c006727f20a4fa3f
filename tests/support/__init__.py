"""Helpers shared by test packages: real processes and raw remoting clients."""
