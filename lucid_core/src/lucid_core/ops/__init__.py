"""The op families; ``lucid_core`` re-exports every public name from here."""
