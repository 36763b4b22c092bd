"""Test helpers shared by every level: fakes, tokens, the local cloud and DynamoDB Local as fixtures."""
