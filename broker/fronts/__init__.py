"""The fronts: each dialect's wire translated into the core's typed operations and its
notifications into the dialect's messages. They decide nothing; see broker/README.md."""
