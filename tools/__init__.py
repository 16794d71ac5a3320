"""Developer tools: offline preview of a stack (and, later, the emulator demo)."""
