"""Program -> graphs: transformations -> StreamGraph -> JobGraph (operator chaining)."""
