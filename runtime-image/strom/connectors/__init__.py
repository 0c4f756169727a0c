"""Sources and sinks. Each connector module is independent of the others."""
