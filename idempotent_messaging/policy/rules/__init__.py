"""The pack's rules, one concern per module; each rule declares its own metadata."""
