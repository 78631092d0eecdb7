"""Pure analysis of measured numbers: statistics, rates, ceilings, roofline, the compare gate."""
