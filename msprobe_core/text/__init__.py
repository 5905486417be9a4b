"""The text of result cells: how msprobe spells numbers, lean columns spelled only when written, CSV rows."""
