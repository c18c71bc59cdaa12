"""Report stage: renderers, suppressions and the baseline, fixes."""
