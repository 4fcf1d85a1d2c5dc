"""Tests that run Lucid as a user does: examples, docs, installs into fresh environments."""
