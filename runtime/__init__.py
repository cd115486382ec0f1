"""clawlane package."""
