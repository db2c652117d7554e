"""Model providers: a deterministic scripted model and an OpenAI-compatible client."""
