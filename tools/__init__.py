"""Developer tools shipped with convc: benchmarks."""
