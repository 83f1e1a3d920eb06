"""The turn engine: steps, model attempts and the typed outcomes a turn ends with."""
