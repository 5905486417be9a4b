"""The plugin host: the hook specifications, the spec types plugins register, and the pluggy manager."""
