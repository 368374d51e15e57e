"""The networks the exercises train, kept identical to the course's own scripts."""
