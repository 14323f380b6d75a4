"""Building programs: sources, kernel signatures, the on-disk cache, build tiers and the background build helper."""
