"""What the service says about itself: feature flags, and image search (which needs a provider)."""
