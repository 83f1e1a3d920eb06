"""The tick: what is due, which sources to poll, whom to wake, and the source cache between."""
