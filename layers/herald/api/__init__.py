"""The HTTP API: one FastAPI app (behind Mangum in AWS, uvicorn locally)."""
